#!/usr/bin/env bash
# Session 4, device call 8: decode variants at ctx 4096 / 8192 timed from CUDA graphs (kernel time, no host cost:
# the eager rounds of calls 3-5 were bimodal there), to see whether the one-warp TMA kernel's long-context win
# extends to shorter contexts once the per-call descriptor cost is out of the picture.
source scripts/gpu_common.sh
el decode-graph
timeout 300 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 \
  --variant-names tmaw1bn64s4splitsx4,tmaw1bn64s4splitsx2,tmaw1bn64s4splitsx8,tmaw1bn32s4splitsx4,tmat,w1bn32s4splitsx4 \
  --variant-cases 8:4096:32:64,32:4096:32:64,128:4096:32:64,8:8192:32:64,32:8192:32:64,128:8192:32:64,32:16384:32:64 2>&1 | tee $OUT/bench_decode_graph.log | tail -3
save
el done
