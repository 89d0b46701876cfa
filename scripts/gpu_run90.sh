#!/usr/bin/env bash
# Session 14, call 7: Nsight Compute of the promoting 128x256 kernel's halves vs quarters forms (block, precise;
# PROFILE_GROUP=quarters), then the GPU suites that reach the block-scaled GEMM through other entry points
# (FP8Linear, custom ops, launch paths, split-K) on the quarters default.
source scripts/gpu_common.sh
el profile-quarters
PROFILE_GROUP=quarters timeout 110 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -16
el tests
pytest_v 160 -n 4 tests/test_nn.py tests/test_ops.py tests/test_gemm_paths.py tests/test_gemm_split.py tests/test_gemm_block.py
el done
