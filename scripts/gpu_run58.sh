#!/usr/bin/env bash
# Session 9 call 3 (call 2 hung: the overlapped form deadlocks with 2 stages, which the hd256 cases used): GPU
# correctness of the Gluon attention launch forms (verbose, so a hang names its case), then
# scripts/gpu_attn_glws.py (Triton kernel, Gluon serial / overlapped, cuDNN FP8; dense non-causal).
source scripts/gpu_common.sh
el tests-attn-glws
timeout 120 python3 -m pytest -v -p no:cacheprovider tests/test_attention_gluon.py > /tmp/t.log 2>&1
for w in PASSED FAILED SKIPPED ERROR; do echo "$w $(grep -c " $w" /tmp/t.log)"; done
grep -E "FAILED|^E  " /tmp/t.log | head -20; tail -2 /tmp/t.log
el time-attn-glws
timeout 300 python3 scripts/gpu_attn_glws.py 2>&1 | tail -9
save
el done
