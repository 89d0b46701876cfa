#!/usr/bin/env bash
# Session 34, with the Gluon kernel's row stores on by default (kg.ROW_STORE) and the hinted Gluon rule for short
# contexts (decode.GLUON_L2EF_*): the decode GPU suites, then scripts/gpu_decode_s34.py (the library against the
# Triton heuristic and against its own config with the row stores off, B 8 ctx 4096 and the neighbouring cells).
# Usage: bash scripts/gpu_run168.sh [SUITE_SECONDS=200] [BENCH_SECONDS=300]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el decode-suites
pytest_v "${1:-200}" -n 8 tests/test_decode_gluon.py tests/test_decode_gpu.py
el s34
timeout "${2:-300}" python3 scripts/gpu_decode_s34.py 2>&1 | grep -v "^│\|^┃\|^┡\|^└\|^┏" | tail -40; save
el done
