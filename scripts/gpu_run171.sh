#!/usr/bin/env bash
# Session 36: scripts/gpu_decode_s34.py on its default cells with the in-kernel merge also at twice and half the
# splits (S34_EXTRA=1) and, at B 8 ctx 4096, 4 warps x 2 splits without / with a 168-register cap that takes the row
# stores (S34_W4=1); then the Gluon GPU tests (the capped 4-warp form's included), issue 6's ctx 4096 matrix, and
# (if time is left) Nsight Compute profiles of the B 8 ctx 4096 forms (gpu_profile_pairs.py, PROFILE_DECODE=s35).
# Usage: bash scripts/gpu_run171.sh [BENCH_SECONDS=220] [SUITE_SECONDS=120] [MATRIX_END=420] [PROFILE_SECONDS=0]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el s34
S34_EXTRA=1 S34_W4=1 S34_ROUNDS=3 timeout "${1:-220}" python3 scripts/gpu_decode_s34.py 2>&1 \
  | grep "us .*x_sdpa\|mismatch\|not the"
save
el gluon-tests
pytest_v "${2:-120}" -n 8 tests/test_decode_gluon.py
matrix_until "${3:-420}" 4096
if [ "${4:-0}" -gt 0 ]; then
  el profile-b8
  PROFILE_GROUP=decode PROFILE_DECODE=s35 timeout "$4" python3 scripts/gpu_profile_pairs.py 2>&1 | tail -30
  save
fi
el done
