#!/usr/bin/env bash
# Session 26 call 2: issue 6's matrix at ctx 4096 and 32768 (B 8 / 32 / 128, pages of 16 and 64, Hq 32 / 64) with the
# peers (SDPA on the BF16 cache, our BF16-cache kernel), after the kernel change of call 1; each step bounded so the
# call ends inside its 600 s.
source scripts/gpu_common.sh
left() { echo $(( 570 - $(date +%s) + T0 )); }
el matrix-ctx4096
timeout 240 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --repeats 3 2>&1 | tail -18
save
el matrix-ctx32768 "$(left) s left"
timeout "$(left)" python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 32768 --repeats 3 2>&1 \
  | tail -18
save
el done
