#!/usr/bin/env bash
# Session 15, call 1: the softmax row sums on the tensor core (AttnConfig(row_sum_mma=True): a wgmma of the E4M3
# P with a block of ones instead of 64 FADD per thread and 64 x 128 block; offline sm_90 the unmasked loop runs
# 421 instructions per block against 491, and the wgmma chains are no longer serialized one wait per QGMMA).
# GPU correctness first (the row-sum and polynomial tests on CUDA tensors, the bench variants against the fp32
# reference), then the attention table with cuDNN FP8 / BF16 peers and the variants interleaved with the default.
# Needs scripts/fetch_wheels.sh here first and carry=[".whl"] (cudnn-frontend, pytest-xdist).
source scripts/gpu_common.sh
el tests
pytest_v 150 -n 4 tests/test_attention.py tests/test_attention_gpu.py \
  -k "row_sums or polynomial or validated or (loop_variants and (rsmma or px4))"
el bench-attention
set -o pipefail
timeout 330 python3 -m tritonfp8 bench attention --variants rsmma,rsmmapx4,rsmmapx8,rsmma256,triton --repeats 3 2>&1 \
  | tee /tmp/bench.log | tail -50
save
el done
