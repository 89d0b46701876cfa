#!/usr/bin/env bash
# Session 31 call 2 (the same warm H100, with call 1's table carried in the tree): `bench gemm` over the 27 shapes in
# the fast, precise and rowwise modes against cuBLAS, with the H100 table in use; then the decode GPU suites
# (test_decode_gluon.py was last run in session 29).
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
ls src/tritonfp8/configs/
el bench-gemm
timeout 300 python3 -m tritonfp8 bench gemm --no-name-ab --no-bf16 2>&1 | tail -9
save
el decode-tests
pytest_v 200 tests/test_decode_gluon.py tests/test_decode_gpu.py -n 8
el done
