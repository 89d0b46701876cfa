#!/usr/bin/env bash
# Session 33, the last ~260 s of device time: the Gluon GPU suite (row stores, PDL signal; 70 s), then the B 8 ctx
# 4096 sweep (B8_SWEEP=1, Hq 64 pages of 64 first, each case saved as it ends) for what is left of the call.
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el gluon-suite
pytest_v 70 -n 8 tests/test_decode_gluon.py
el b8-sweep
B8_SWEEP=1 timeout 60 python3 scripts/gpu_decode_b8.py 2>&1 | tail -40; save
el done
