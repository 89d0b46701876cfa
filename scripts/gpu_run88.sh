#!/usr/bin/env bash
# Session 14, call 4: the 128x256 promoting Gluon GEMM in four quarters with two products in flight (QUARTERS;
# scripts/gpu_gemm_quarters.py: dense precise / block, grouped G 8), then the Gluon GEMM GPU tests (default off).
source scripts/gpu_common.sh
el quarters
timeout 300 python3 scripts/gpu_gemm_quarters.py 2>&1 | tail -30
save
el tests
pytest_v 120 -n 4 tests/test_gemm_gluon.py tests/test_grouped_gluon.py tests/test_launch.py
el done
