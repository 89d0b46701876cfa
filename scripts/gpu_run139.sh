#!/usr/bin/env bash
# Session 23, call 8: the Gluon rule with the combine kernel as a programmatic dependent launch (the heuristic now)
# against the plain launch (nopdl) at the rule's splits (5 rounds), then the Gluon tests (graph capture with PDL).
source scripts/gpu_common.sh
el pdl
timeout 150 python3 -m tritonfp8 bench decode --variants-only --repeats 5 --variant-names "nopdl" \
  --variant-cases "8:32768:32:16,8:32768:64:16,8:32768:32:64,8:32768:64:64,32:32768:32:16,8:16384:32:64" 2>&1 | grep -E "│" | cut -c1-200
save
el tests
pytest_v 150 -n 4 tests/test_decode_gluon.py
el done
