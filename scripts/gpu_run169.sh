#!/usr/bin/env bash
# Session 35: scripts/gpu_decode_s34.py (the library with the row stores and the hinted Gluon rule against the Triton
# heuristic and against rows off, B 8 ctx 4096 and the neighbouring cells; every split Gluon form also with the
# in-kernel merge, merge="inline"), then the Gluon GPU tests (the inline merge's among them).
# Usage: bash scripts/gpu_run169.sh [BENCH_SECONDS=260] [SUITE_SECONDS=150] [ROUNDS=3]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el s34
S34_ROUNDS="${3:-3}" timeout "${1:-260}" python3 scripts/gpu_decode_s34.py 2>&1 | grep -v "^│\|^┃\|^┡\|^└\|^┏" \
  | tail -60; save
el gluon-tests
pytest_v "${2:-150}" -n 8 tests/test_decode_gluon.py
el done
