#!/usr/bin/env bash
# Session 37, H200 only (issue 6's GPU; stops at once on another part): scripts/gpu_run172.sh's steps, shorter: the
# B 8 ctx 4096 cells with the library's Gluon kernel also timed alone (S34_SPLIT=1), issue 6's matrix at ctx 4096 and
# 32768, then the Gluon GPU tests.
# Usage: bash scripts/gpu_run173.sh [S34_SECONDS=90] [CTX4096_END=170] [CTX32768_END=240] [SUITE_SECONDS=60]
source scripts/gpu_common.sh
require_gpu H200
el s34-split
S34_SPLIT=1 S34_ROUNDS=4 S34_CASES=8:4096:64:64,8:4096:32:64,8:4096:64:16,8:4096:32:16 \
  timeout "${1:-90}" python3 scripts/gpu_decode_s34.py 2>&1 | grep "us .*x_sdpa\|mismatch\|not the"
save
matrix_until "${2:-170}" 4096
matrix_until "${3:-240}" 32768
el gluon-tests
pytest_v "${4:-60}" -n 8 tests/test_decode_gluon.py
el done
