#!/usr/bin/env bash
# Session 25 call 2: the multi-warp Gluon forms under the bench protocol (eager, 3 interleaved rounds, outputs
# checked against the heuristic's) at B 32 ctx 4096 (Hq 32 / 64, pages of 16 / 64), B 64 ctx 4096, B 32 ctx 8192,
# B 16 ctx 4096.
source scripts/gpu_common.sh
el variants
timeout 420 python3 -m tritonfp8 bench decode --variants-only --repeats 3 \
  --variant-names glw2x1s2,glw2x1s3,glw4x1s2,glw2x2s3,glx8s2 \
  --variant-cases 32:4096:32:64,32:4096:64:64,32:4096:32:16,32:4096:64:16,64:4096:32:16,32:8192:32:16,16:4096:32:64 \
  2>&1 | tail -60
save
el done
