#!/usr/bin/env bash
# Session 27 call 2: the 2-warp Gluon rule (1 split x 2 warps, 2 slots) and its 4-warp form against the Triton
# heuristic in one run, pages of 16 and 64, B 32 / 64 at ctx 4096 and B 32 at ctx 8192 (call 1, on an H100: pages of
# 16 at B 32 ctx 4096 1.09x the heuristic, which keeps them off the rule after session 25's H200 run); then issue 6's
# matrix at ctx 4096 with the peers.
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
el variants
timeout 220 python3 -m tritonfp8 bench decode --variants-only --repeats 3 --variant-names triton,glw2x1s2,glw4x1s2 \
  --variant-cases 32:4096:32:16,32:4096:64:16,64:4096:32:16,32:8192:32:16,32:4096:32:64,64:4096:32:64,32:8192:32:64 \
  2>&1 | tail -26
save
el matrix-ctx4096
timeout 200 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --repeats 3 2>&1 | tail -18
save
el done
