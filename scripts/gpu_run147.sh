#!/usr/bin/env bash
# Session 26 call 1: the Gluon decode kernel with its block-table entries loaded a step ahead against session 25's
# (scripts/gpu_decode_ahead.py; the reference module carried in .ab/, see that script), then the decode GPU tests.
source scripts/gpu_common.sh
el ahead
(cd scripts && timeout 330 python3 gpu_decode_ahead.py ../.ab/decode_gluon_s25.py 2>&1 | tail -130)
save
el tests
pytest_v 200 -n 8 tests/test_decode_gluon.py tests/test_decode_gpu.py
save
el done
