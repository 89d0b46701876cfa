#!/usr/bin/env bash
# Session 13, call 5: the decode suites after the fix of call 4's one failure (the full path launched the recorded
# kernels of a plan for a misaligned q: now only the replay path, which checks alignment, does).
source scripts/gpu_common.sh
el tests
pytest_v 150 -n 4 tests/test_decode_gpu.py tests/test_decode_tma.py tests/test_decode.py tests/test_launch.py
el done
