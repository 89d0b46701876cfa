#!/usr/bin/env bash
# Prepared in session 23 (not run): the Gluon decode tests added after the session's last device call (strided block
# table, Sq > 1 refusal), then Nsight Compute of the Gluon kernel at B 8 ctx 4096 (pinned) next to the Triton
# heuristic there and the Gluon pick at B 8 ctx 32768: where its short steps lose (PROFILE_DECODE=gluon).
source scripts/gpu_common.sh
el tests
pytest_v 200 -n 4 tests/test_decode_gluon.py
el ncu-gluon
PROFILE_GROUP=decode PROFILE_DECODE=gluon timeout 200 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -30
el done
