#!/usr/bin/env bash
# Prepared in session 10 (not run): the attention forward through _launch (attention._FAST_FWD, off by default):
# bit-equality GPU tests, then the public call's time with and without it (scripts/gpu_attn_launch.py). If equal
# and faster beyond the spread, turn the switch on by default (attention.py, _FAST_FWD).
source scripts/gpu_common.sh
el tests
pytest_v 200 tests/test_attention_launch.py
el timing
timeout 300 python3 scripts/gpu_attn_launch.py 2>&1 | tail -8
save
el done
