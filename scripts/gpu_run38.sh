#!/usr/bin/env bash
# Session 6, call 8 (last): the heuristic with v_stage on both TMA rules; GPU tests of the rules; the decode matrix
# from CUDA graphs and eager, B 8/32/128 x ctx 4096/32768 x Hq 32/64 x pages 16/64.
source scripts/gpu_common.sh
el tests
timeout 80 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py -k "heuristic_tma_rules_on_gpu or v_stage_matches" 2>&1 | tail -2
el graph-matrix
timeout 200 python3 -m tritonfp8 bench --graph decode --batch 8 --batch 32 --batch 128 --context 4096 --context 32768 --hq 32 --hq 64 --page 16 --page 64 --repeats 3 > $OUT/bench_decode_graph.log 2>&1; grep -E "^│ B|results" $OUT/bench_decode_graph.log | cut -c1-150 | tail -30
save
el eager-matrix
timeout 150 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --context 32768 --hq 32 --hq 64 --page 16 --page 64 --repeats 3 > $OUT/bench_decode_eager.log 2>&1; grep -E "^│ B|results" $OUT/bench_decode_eager.log | cut -c1-150 | tail -30
save
el done
