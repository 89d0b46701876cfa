#!/usr/bin/env bash
# Session 7, device call 5: the GPU tests that call 4's 140 s step cut short (glws GEMM, tuned table, block scales,
# the decode TMA rules incl. the one-wave rule for pages of 16, now from 2^20 cached tokens), then glws at M = 128
# (the precise set's weakest shapes: 0.81-0.87x cuBLAS exact on the Triton kernel) with 128- and 64-wide tiles.
source scripts/gpu_common.sh
el bench-precise-smallm
timeout 90 python3 -m tritonfp8 bench gemm --modes precise --variants glws,glwsbn64 --no-bf16 --no-name-ab \
  --shapes "128x8192x8192;128x10240x8192;128x57344x8192;128x8192x28672;256x8192x8192;512x10240x8192" \
  > $OUT/bench_precise_smallm.log 2>&1; grep -E "^┃ mode|^│ precise|results|Error|error" $OUT/bench_precise_smallm.log | cut -c1-160 | tail -6
save
el tests-gemm
timeout 220 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py tests/test_gemm_gpu.py tests/test_gemm_block.py -k "glws or gpu or large_shapes or error_matches or table" 2>&1 | tail -4
el tests-decode
timeout 130 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py tests/test_decode_gpu.py -k "heuristic_tma_rules_on_gpu or large_matches or split_paths" 2>&1 | tail -4
el done
