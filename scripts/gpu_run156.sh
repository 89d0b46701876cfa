#!/usr/bin/env bash
# Session 31 call 1 (an H100 80GB HBM3, asked for by kind): issue 3's H100 tuned GEMM table, blocked since session 16
# for want of an H100. `tune gemm` over the issue's 27 shapes in both accumulate modes writes
# src/tritonfp8/configs/gemm_h100_80gb_hbm3.json (and a copy plus the full timing log under $OUT); then the GPU test
# that loads this GPU's shipped table, runs every entry on its own shape against the fp64 reference and checks that
# the library selects it.
source scripts/gpu_common.sh
require_gpu H100
el tune
timeout 420 python3 -m tritonfp8 tune gemm 2>&1 | tr '\r' '\n' | grep -v "tune gemm: .*%|" | tail -75
el table-test
pytest_v 120 tests/test_gemm_gpu.py -k tuned_table
el done
