#!/usr/bin/env bash
# Session 22, call 8: after the review mend (l2hint.check warns, decode plans re-install the pass), the decode GPU
# tests that run the hinted kernels (the replay tests take the heuristic's hinted configs at B 8 ctx 4096).
source scripts/gpu_common.sh
el tests
pytest_v 200 -n 4 tests/test_decode_gpu.py -W "error:kernel:RuntimeWarning"
el done
