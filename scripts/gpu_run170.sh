#!/usr/bin/env bash
# Session 35, after the H100 runs: scripts/gpu_decode_s34.py on its default cells with the in-kernel merge also at
# twice and half the splits (S34_EXTRA=1), then issue 6's ctx 4096 matrix with the widened hinted Gluon rule, then the
# Gluon GPU tests. Usage: bash scripts/gpu_run170.sh [BENCH_SECONDS=200] [MATRIX_END=330] [SUITE_SECONDS=120]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el s34
S34_EXTRA=1 S34_ROUNDS=3 timeout "${1:-200}" python3 scripts/gpu_decode_s34.py 2>&1 | grep "us .*x_sdpa\|mismatch\|not the"
save
matrix_until "${2:-330}" 4096
el gluon-tests
pytest_v "${3:-120}" -n 8 tests/test_decode_gluon.py
el done
