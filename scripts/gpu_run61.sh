#!/usr/bin/env bash
# Session 9 call 6 (last, ~6 min of device time left): ping-pong between the Gluon attention's consumer groups
# (an mbarrier per group orders their wgmma issue, on the overlapped loop): GPU correctness of every form, then
# scripts/gpu_attn_glws.py with the pp variants.
source scripts/gpu_common.sh
el tests-attn-glws
timeout 130 python3 -m pytest -v -p no:cacheprovider tests/test_attention_gluon.py > /tmp/t.log 2>&1
for w in PASSED FAILED SKIPPED ERROR; do echo "$w $(grep -c " $w" /tmp/t.log)"; done
grep -E "FAILED|^E  " /tmp/t.log | head -20; tail -2 /tmp/t.log
el time-attn-glws
timeout 120 python3 scripts/gpu_attn_glws.py 2>&1 | grep -v "^notes" | tail -8
save
el done
