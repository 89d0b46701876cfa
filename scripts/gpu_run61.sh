#!/usr/bin/env bash
# Session 9 call 6 (last, ~6 min of device time left): ping-pong between the Gluon attention's consumer groups
# (an mbarrier per group orders their wgmma issue, on the overlapped loop): GPU correctness of every form, then
# scripts/gpu_attn_glws.py with the pp variants.
source scripts/gpu_common.sh
el tests-attn-glws
pytest_v 130 tests/test_attention_gluon.py  # (inline in the run itself; same commands)
el time-attn-glws
timeout 120 python3 scripts/gpu_attn_glws.py 2>&1 | grep -v "^notes" | tail -8
save
el done
