#!/usr/bin/env bash
# Session 6, call 7: pages of 16 at B 8/32 with the one-warp gather kernel and more splits (cheap merge now), graphs;
# then the decode matrix from CUDA graphs with a results file (call 5's graph run stopped at write_kv_cache),
# Hq 32 and 64.
source scripts/gpu_common.sh
el p16-variants
timeout 150 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names w1bn32s4splitsx2,w1bn32s4splitsx4,w1bn64s4splitsx2,w1bn64s4splitsx4,tmabw1bn32s4splitsx2 --variant-cases 8:4096:32:16,32:4096:32:16,8:32768:32:16,32:32768:32:16 > $OUT/bench_p16.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_p16.log | cut -c1-150 | tail -26
save
el graph-matrix
timeout 330 python3 -m tritonfp8 bench --graph decode --batch 8 --batch 32 --batch 128 --context 4096 --context 32768 --hq 32 --hq 64 --page 16 --page 64 --repeats 3 > $OUT/bench_decode_graph.log 2>&1; grep -E "^│ B|results" $OUT/bench_decode_graph.log | cut -c1-170 | tail -26
save
el done
