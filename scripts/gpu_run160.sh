#!/usr/bin/env bash
# Session 32, the last ~270 s of device time: gpu_run159.sh cut down: the Gluon evict-first form's same-bits GPU tests,
# then scripts/gpu_decode_b8.py with B8_QUICK=1 (Hq 32 pages of 64 only, 3 rounds, Gluon at 16 splits +- hints).
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el gluon-l2ef-gpu-tests
pytest_v 60 tests/test_decode_gluon.py -k l2_evict_first_gives
el b8-quick
B8_QUICK=1 timeout 170 python3 scripts/gpu_decode_b8.py 2>&1 | tail -30
save
el done
