#!/usr/bin/env bash
# Session 23, call 6: decode_config's Gluon rule (about 512 programs, contexts >= 16384). (1) GPU tests of the
# decode suite with it (the replay / graph tests take the heuristic). (2) The context bound: the heuristic vs the
# Triton heuristic vs the Gluon rule's form at ctx 8192 / 16384 and at B 1. (3) Issue 6's matrix rows that change
# (ctx 32768, B 8 / 32 / 128, peers).
source scripts/gpu_common.sh
el tests
pytest_v 300 -n 4 tests/test_decode_gluon.py tests/test_decode_gpu.py tests/test_decode_tma.py
el bound
timeout 200 python3 -m tritonfp8 bench decode --variants-only --repeats 3 --variant-names "triton,glp512" \
  --variant-cases "8:8192:32:16,8:8192:32:64,8:16384:32:16,8:16384:32:64,32:8192:32:16,32:8192:32:64,32:16384:32:16,1:32768:32:16,1:32768:32:64,16:16384:64:16" 2>&1 | grep -E "│" | cut -c1-200
save
el matrix-32768
timeout 250 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 32768 --repeats 3 2>&1 | tail -22
save
el done
