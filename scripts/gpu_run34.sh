#!/usr/bin/env bash
# Session 6, call 4: with the compact inline merge (call 3: 1.08-1.37x at 16 splits), where the TMA kernel beats
# the gather kernel at short contexts (graph-timed): TMA splits of 1024/256 tokens at ctx 4096, ctx 1024, and the
# per-box kernel with more splits on pages of 16 at B8/B32.
source scripts/gpu_common.sh
el decode-variants
timeout 420 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names gather,tmaw1bn64s4splitsx1,tmaw1bn64s4splitsx2,tmaw1bn64s4splitsx4,tmabw1bn32s4splitsx1,tmabw1bn32s4splitsx2,tmabw1bn32s4splitsx4 --variant-cases 8:4096:32:64,32:4096:32:64,8:1024:32:64,32:1024:32:64,128:1024:32:64,8:4096:32:16,8:32768:32:16,32:32768:32:16,32:4096:32:16 > $OUT/bench_decode.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_decode.log | cut -c1-150 | tail -75
save
el done
