#!/usr/bin/env bash
# Session 7, device call 5: the GPU tests that call 4's 140 s step cut short (glws GEMM, tuned table, block scales,
# the decode TMA rules incl. the one-wave rule for pages of 16, now from 2^20 cached tokens).
source scripts/gpu_common.sh
el tests-gemm
timeout 250 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py tests/test_gemm_gpu.py tests/test_gemm_block.py -k "glws or gpu or large_shapes or error_matches or table" 2>&1 | tail -4
el tests-decode
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py tests/test_decode_gpu.py -k "heuristic_tma_rules_on_gpu or large_matches or split_paths" 2>&1 | tail -4
el done
