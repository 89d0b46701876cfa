#!/usr/bin/env bash
# Session 17, call 5: the attention GPU suites on the new hd128 dense default (Gluon 128 x 256), then the full
# attention bench (every head dim, causal, GQA, varlen, cuDNN FP8 / BF16 and flash peers) for the record.
source scripts/gpu_common.sh
el attention-tests
pytest_v 230 -n 8 tests/test_attention_gpu.py tests/test_attention_launch.py tests/test_attention_gluon.py \
  -k "not api_with_glws or bn256fadd"
el attention-bench
timeout 260 python3 -m tritonfp8 bench attention --repeats 3 --variants triton 2>&1 | tail -40
save
el done
