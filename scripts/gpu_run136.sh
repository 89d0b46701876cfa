#!/usr/bin/env bash
# Session 23, call 5: the Gluon decode kernel (32-token steps) over issue 6's split cases, at the heuristic's splits,
# half and a quarter of them, 4 stages at half (eager, 3 rounds, outputs checked against the heuristic's).
source scripts/gpu_common.sh
el gluon-matrix-long
timeout 280 python3 -m tritonfp8 bench decode --variants-only --repeats 3 --variant-names "gl32s3,gl32s3h,gl32s3q,gl32s4h" \
  --variant-cases "8:32768:32:16,8:32768:64:16,8:32768:32:64,8:32768:64:64,32:32768:32:16,32:32768:64:16,32:32768:32:64,32:32768:64:64,128:32768:32:16,128:32768:32:64" 2>&1 | grep -E "│" | cut -c1-200
save
el gluon-matrix-4096
timeout 250 python3 -m tritonfp8 bench decode --variants-only --repeats 3 --variant-names "gl32s3,gl32s3h,gl32s3q,gl32s4h" \
  --variant-cases "32:4096:32:16,32:4096:64:16,32:4096:64:64,8:4096:32:16,8:4096:32:64,8:4096:64:64" 2>&1 | grep -E "│" | cut -c1-200
save
el done
