#!/usr/bin/env bash
# Session 21, call 1: which persistent Gluon attention cases go wrong, each case in its own process
# (scripts/gpu_persist_debug.py; session 20's GPU tests of the persistent forms ended in an illegal address that
# took the rest of each pytest worker with it), then the attention GPU tests without the persistent forms.
source scripts/gpu_common.sh
el debug
timeout 300 python3 scripts/gpu_persist_debug.py
el tests
pytest_v 330 -n 8 tests/test_attention_gpu.py tests/test_attention_gluon.py -k "not persistent and not bn256p and not bn128p and not bn64p"
el done
