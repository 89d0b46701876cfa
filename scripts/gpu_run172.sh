#!/usr/bin/env bash
# Session 37: at B 8 ctx 4096 (issue 6's cells under target), scripts/gpu_decode_s34.py with the library's Gluon
# kernel also timed alone (S34_SPLIT=1: the step less that is the merge tail under do_bench); then issue 6's matrix
# at ctx 4096, 32768 and 1024 (with peers) as far as time allows, and last the Gluon GPU tests.
# Usage: bash scripts/gpu_run172.sh [S34_SECONDS=120] [CTX4096_END=300] [CTX32768_END=430] [CTX1024_END=500]
#        [SUITE_SECONDS=80]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el s34-split
S34_SPLIT=1 S34_ROUNDS=4 S34_CASES=8:4096:64:64,8:4096:32:64,8:4096:64:16,8:4096:32:16 \
  timeout "${1:-120}" python3 scripts/gpu_decode_s34.py 2>&1 | grep "us .*x_sdpa\|mismatch\|not the"
save
matrix_until "${2:-300}" 4096
matrix_until "${3:-430}" 32768
matrix_until "${4:-500}" 1024
el gluon-tests
[ "${5:-80}" -gt 0 ] && pytest_v "${5:-80}" -n 8 tests/test_decode_gluon.py
el done
