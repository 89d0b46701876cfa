#!/usr/bin/env bash
# Session 33 (H200 or H100): gpu_run159.sh with the decisive step first. scripts/gpu_decode_b8.py (B 8 ctx 4096:
# the read floors with and without L2 evict-first hints, the heuristic +- hints, the Gluon kernel +- hints, copy
# and SDPA, one interleaved run per case) and then the Gluon evict-first GPU test, both bounded so that the call
# ends inside the 600 s limit.
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el b8
timeout 390 python3 scripts/gpu_decode_b8.py 2>&1 | tail -75; save
el gluon-l2ef-tests
pytest_v 140 tests/test_decode_gluon.py -k l2_evict
save
el done
