#!/usr/bin/env bash
# Session 6, call 5: the decode matrix with the compact inline merge and TMA splits down to 256 tokens, from CUDA
# graphs (kernel time, as serving engines run decode) and eager (do_bench), B 8/32/128, pages 16/64, Hq 32.
source scripts/gpu_common.sh
el tests
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py -k "heuristic or repeat or matches" 2>&1 | tail -2
el graph-matrix
timeout 250 python3 -m tritonfp8 bench --graph decode --batch 8 --batch 32 --batch 128 --context 1024 --context 4096 --context 32768 --hq 32 --page 16 --page 64 --repeats 3 > $OUT/bench_decode_graph.log 2>&1; grep -E "^│ B|results" $OUT/bench_decode_graph.log | cut -c1-170 | tail -20
save
el eager-matrix
timeout 200 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --context 32768 --hq 32 --page 16 --page 64 --repeats 3 > $OUT/bench_decode_eager.log 2>&1; grep -E "^│ B|results" $OUT/bench_decode_eager.log | cut -c1-170 | tail -14
save
el done
