#!/usr/bin/env bash
# Session 35, after the H100 runs: scripts/gpu_decode_s34.py on its default cells with the in-kernel merge also at
# twice and half the splits (S34_EXTRA=1), then issue 6's ctx 4096 matrix with the widened hinted Gluon rule, then the
# Gluon GPU tests, then (0 seconds: skipped) Nsight Compute profiles of the B 8 ctx 4096 forms (gpu_profile_pairs.py,
# PROFILE_DECODE=s35). Usage: bash scripts/gpu_run170.sh [BENCH_SECONDS=200] [MATRIX_END=330] [SUITE_SECONDS=120]
# [PROFILE_SECONDS=150]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el s34
S34_EXTRA=1 S34_ROUNDS=3 timeout "${1:-200}" python3 scripts/gpu_decode_s34.py 2>&1 | grep "us .*x_sdpa\|mismatch\|not the"
save
matrix_until "${2:-330}" 4096
el gluon-tests
pytest_v "${3:-120}" -n 8 tests/test_decode_gluon.py
if [ "${4:-150}" -gt 0 ]; then
  el profile-b8
  PROFILE_GROUP=decode PROFILE_DECODE=s35 timeout "${4:-150}" python3 scripts/gpu_profile_pairs.py 2>&1 | tail -30
  save
fi
el done
