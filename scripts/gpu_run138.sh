#!/usr/bin/env bash
# Session 23, call 7: the final code's decode GPU tests (the Gluon kernel's tests, the replay / graph tests with the
# Gluon rule, the TMA and heuristic tests), then issue 6's ctx 4096 rows (B 8 / 32, peers) with the final heuristic.
source scripts/gpu_common.sh
el tests
pytest_v 300 -n 4 tests/test_decode_gluon.py tests/test_decode_gpu.py tests/test_decode_tma.py tests/test_decode.py
el matrix-4096
timeout 200 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --context 4096 --repeats 3 2>&1 | grep -E "results:|rows" | tail -3
save
el done
