#!/usr/bin/env bash
# Session 9 call 3 (call 2 hung: the overlapped form deadlocks with 2 stages, which the hd256 cases used): GPU
# correctness of the Gluon attention launch forms (verbose, so a hang names its case), then
# scripts/gpu_attn_glws.py (Triton kernel, Gluon serial / overlapped, cuDNN FP8; dense non-causal).
source scripts/gpu_common.sh
el tests-attn-glws
pytest_v 120 tests/test_attention_gluon.py  # (inline in the run itself; same commands)
el time-attn-glws
timeout 300 python3 scripts/gpu_attn_glws.py 2>&1 | tail -9
save
el done
