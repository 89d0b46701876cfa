#!/usr/bin/env bash
# Session 8, device calls 8-9: the GPU suites that reach the GEMM through other entry points (FP8Linear, custom ops /
# torch.compile, grouped GEMM, fused QKV, the GEMM and block suites) with the session's new heuristics (glws 128x256,
# block scales on glws split-K at small M, launch templates). Call 8 stopped at test_gemm_block's bad-input case 6
# (CPU tensors on a GPU machine: fixed); call 9 runs that test and the files call 8 did not reach.
source scripts/gpu_common.sh
el tests
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_block.py tests/test_nn.py \
  tests/test_ops.py tests/test_grouped.py tests/test_qkv.py tests/test_fuse_qkv.py 2>&1 | tail -6
el done
