#!/usr/bin/env bash
# Session 31 call 6 (an H100 80GB HBM3): the H100 table as committed (the precise M >= 1024 entries removed after two
# paired runs showed the heuristic's 128x256 Gluon config faster there): the table's GPU test, then `bench gemm`
# over the 27 shapes in the three modes against cuBLAS, the numbers for the H100.
source scripts/gpu_common.sh
require_gpu H100
el table-test
pytest_v 120 tests/test_gemm_gpu.py -k tuned_table
el bench-gemm
timeout 300 python3 -m tritonfp8 bench gemm --no-name-ab --no-bf16 2>&1 | tail -9
save
el done
