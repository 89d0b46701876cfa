#!/usr/bin/env bash
# Session 25 call 4: on the H200, the 2-warp rule against the Triton heuristic in one run on pages of 64 (call 3's
# same-run comparison covered pages of 16 only): B 32 ctx 4096 (Hq 32 / 64), B 64 ctx 4096, B 32 ctx 8192.
source scripts/gpu_common.sh
el variants-p64
timeout 150 python3 -m tritonfp8 bench decode --variants-only --repeats 3 --variant-names triton,glw2x1s2,glw4x1s2 \
  --variant-cases 32:4096:32:64,32:4096:64:64,64:4096:32:64,32:8192:32:64 2>&1 | tail -16
save
el done
