#!/usr/bin/env bash
# Session 23, call 3: the split merge out of the split kernel (combine kernel, plain and as a programmatic dependent
# launch) against the inline merge, eager, at the short and near-miss steps (5 rounds).
source scripts/gpu_common.sh
el merge-variants
timeout 280 python3 -m tritonfp8 bench decode --variants-only --repeats 5 --variant-names "hmk,hmkpdl" \
  --variant-cases "8:4096:32:64,8:4096:64:64,8:4096:32:16,8:4096:64:16,8:32768:32:16,8:32768:64:64,32:4096:32:64" 2>&1 | tail -25
save
el done
