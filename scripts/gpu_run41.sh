#!/usr/bin/env bash
# Prepared in session 6 for the next device session (not yet run): the inline merge's chunk on the v_stage one-warp
# TMA kernel (offline no spills up to a 128-register merge tile: GQA 4 chunk 8, GQA 8 chunk 4) and the combine
# kernel, where 16 splits are merged (B 8) and at B 32 ctx 4096 (4 splits); graph-timed.
source scripts/gpu_common.sh
el merge-chunk
timeout 300 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmaw1bn64s4splitsx4vs,tmaw1bn64s4splitsx4vsmk,tmaw1bn64s4splitsx4vsmc4,tmaw1bn64s4splitsx4vsmc8 --variant-cases 8:32768:64:64,8:32768:32:64,8:4096:32:64,8:4096:64:64,32:4096:32:64 > $OUT/bench_decode.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_decode.log | cut -c1-150 | tail -30
save
el done
