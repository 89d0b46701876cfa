#!/usr/bin/env bash
# Session 37: at B 8 ctx 4096 (issue 6's cells under target), scripts/gpu_decode_s34.py with the library's Gluon
# kernel also timed alone and at twice the splits (S34_SPLIT=1: the step less that is the merge tail under
# do_bench); then issue 6's matrix at ctx 4096, 32768 and 1024 (with peers) as far as time allows, and last the Gluon
# GPU tests. On an H200 only (issue 6's GPU: it stops at once on another part) unless ANY_GPU=1. Session 37's call
# 12 ran these steps as gpu_run172.sh (without the twice-the-splits forms), which this replaced.
# Usage: [ANY_GPU=1] bash scripts/gpu_run173.sh [S34_SECONDS=120] [CTX4096_END=210] [CTX32768_END=280]
#        [CTX1024_END=0] [SUITE_SECONDS=60]
source scripts/gpu_common.sh
if [ "${ANY_GPU:-0}" = 1 ]; then nvidia-smi --query-gpu=name --format=csv,noheader; else require_gpu H200; fi
el s34-split
S34_SPLIT=1 S34_ROUNDS=4 S34_CASES=8:4096:64:64,8:4096:32:64,8:4096:64:16,8:4096:32:16 \
  timeout "${1:-120}" python3 scripts/gpu_decode_s34.py 2>&1 | grep "us .*x_sdpa\|mismatch\|not the"
save
matrix_until "${2:-210}" 4096
matrix_until "${3:-280}" 32768
matrix_until "${4:-0}" 1024
el gluon-tests
[ "${5:-60}" -gt 0 ] && pytest_v "${5:-60}" -n 8 tests/test_decode_gluon.py
el done
