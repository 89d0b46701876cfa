#!/usr/bin/env bash
# Session 15, call 2: the hd128 default now sums the softmax rows on the tensor core (row_sum_mma, each key
# block's sum fresh and added in fp32: call 1's first form accumulated across the sequence in the FP8 wgmma and
# its error grew to 32% at 16384 keys). The attention GPU suites and the callers' (ops, qkv, transformers) on the
# new default, then the table with cuDNN peers and the previous default (fadd) interleaved.
# Needs scripts/fetch_wheels.sh here first and carry=[".whl"].
source scripts/gpu_common.sh
el tests
pytest_v 240 -n 4 tests/test_attention_gpu.py tests/test_attention.py tests/test_attention_launch.py \
  tests/test_ops.py tests/test_qkv.py tests/test_transformers.py
el bench-attention
set -o pipefail
timeout 300 python3 -m tritonfp8 bench attention --variants fadd,rsmmapx8 --repeats 3 2>&1 \
  | tee /tmp/bench.log | grep -E "results:|target" | head -5
save
el done
