#!/usr/bin/env bash
# Prepared in session 9 (not run; device time spent): the overlapped Gluon attention with fp32 P carried into
# the next step (P_CARRY 1: offline loop body 682 -> 517 instructions, no byte repacking of the E4M3 operand, the
# same 66 MUFU.EX2 under P·V). Correctness of every form, then scripts/gpu_attn_glws.py (Triton kernel, serial,
# overlapped P_CARRY 0 / 1, ping-pong; one causal case). The GPU tests include causal + lse (compiled offline
# only so far). Carry a cudnn-frontend wheel in .whl/ for the cuDNN FP8 column.
source scripts/gpu_common.sh
el tests-attn-glws
timeout 260 python3 -m pytest -v -p no:cacheprovider tests/test_attention_gluon.py > /tmp/t.log 2>&1
for w in PASSED FAILED SKIPPED ERROR; do echo "$w $(grep -c " $w" /tmp/t.log)"; done
grep -E "FAILED|^E  " /tmp/t.log | head -20; tail -2 /tmp/t.log
el time-attn-glws
timeout 200 python3 scripts/gpu_attn_glws.py 2>&1 | grep -v "^notes" | tail -8
save
el done
