#!/usr/bin/env bash
# Session 5, device call 5, CUDA graphs: how few splits the one-warp TMA kernel wants once there are >= 1024
# programs (x1 / x2 / x4 at B128, ctx 4096-32768; B32 ctx 4096 with 1024-token splits), and tmab on pages of 16
# beyond B128 ctx32768 (B128 ctx16384, B64 ctx32768).
source scripts/gpu_common.sh
el decode
timeout 200 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmaw1bn64s4splitsx1,tmaw1bn64s4splitsx2,tmaw1bn64s4splitsx4,tmabw1bn32s4splitsx4,tmabw1bn32s4splitsx2 --variant-cases 128:4096:32:64,128:8192:32:64,128:32768:32:64,32:4096:32:64,128:16384:32:16,64:32768:32:16,128:32768:64:16 > $OUT/bench_decode.log 2>&1; grep -E "^│|results|disagree" $OUT/bench_decode.log | cut -c1-200 | tail -40
save
el done
