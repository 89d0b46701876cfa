#!/usr/bin/env bash
# Session 34, with the Gluon kernel's row stores on by default (kg.ROW_STORE) and the hinted Gluon rule for short
# contexts (decode.GLUON_L2EF_*): scripts/gpu_decode_s34.py (the library against the Triton heuristic and against its
# own config with the row stores off, B 8 ctx 4096 and the neighbouring cells), then the Gluon GPU tests.
# Usage: bash scripts/gpu_run168.sh [BENCH_SECONDS=230] [SUITE_SECONDS=130] [ROUNDS=3]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el s34
S34_ROUNDS="${3:-3}" timeout "${1:-230}" python3 scripts/gpu_decode_s34.py 2>&1 | grep -v "^│\|^┃\|^┡\|^└\|^┏" \
  | tail -40; save
el gluon-tests
pytest_v "${2:-130}" -n 8 tests/test_decode_gluon.py
el done
