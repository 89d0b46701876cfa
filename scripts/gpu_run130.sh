#!/usr/bin/env bash
# Session 22, call 7: B 8 ctx 4096 Hq 64 pages of 16 gave 64.0% (call 3), 47.6% (call 4, two disturbed rounds) and
# 46.2% (call 6) with the per-box rule; the gather kernel it replaced 49.8% (call 3). Two fresh processes, 7 rounds,
# the heuristic (per-box + hints) against the gather kernel and the per-box kernel without hints, Hq 64 then Hq 32.
source scripts/gpu_common.sh
for i in 1 2; do
  el "run $i"
  timeout 120 python3 -m tritonfp8 bench decode --variants-only --repeats 7 \
    --variant-names gather,tmabw1bn32s3splitsx2vs --variant-cases 8:4096:64:16,8:4096:32:16 2>&1 | tail -10
  save
done
el done
