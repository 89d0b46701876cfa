#!/usr/bin/env bash
# Session 22, call 5: the decode GPU tests with the session's heuristic and the l2hint pass.
source scripts/gpu_common.sh
el tests
pytest_v 400 -n 4 tests/test_decode_gpu.py tests/test_decode.py tests/test_decode_tma.py
el done
