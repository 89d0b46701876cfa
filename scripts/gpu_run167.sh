#!/usr/bin/env bash
# Session 34, after gpu_run162.sh on an H100 (its suite's outcome scrolled out of the call's output): the Gluon GPU
# tests of session 33's forms and the evict-first hints, then B8_AB=1 (the row-store / PDL-signal forms against their
# defaults, alternated in the timing order, 8 rounds).
# Usage: bash scripts/gpu_run167.sh [SUITE_SECONDS=120] [AB_SECONDS=300]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el gluon-tests
pytest_v "${1:-120}" -n 8 tests/test_decode_gluon.py -k "session33 or l2ef or plan"
el b8-ab
B8_AB=1 timeout "${2:-300}" python3 scripts/gpu_decode_b8.py 2>&1 | grep -v "x SDPA" | tail -48; save
el done
