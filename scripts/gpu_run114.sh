#!/usr/bin/env bash
# Session 18, call 5: the causal launch order's group size (a runtime argument: no compiles): pinned 1 / 2 / 4 /
# 16 / all heads against the auto rule (16 MB of K and Vᵀ per group), Triton kernel, hd128 and hd64.
source scripts/gpu_common.sh
el causal group sizes
timeout 200 python3 -m tritonfp8 bench attention --head-dim 128 --head-dim 64 --causal-only --no-varlen --no-peers \
  --repeats 5 --variants hg1,hg2,hg4,hg16,hgall 2>&1 | tail -3
save
el done
