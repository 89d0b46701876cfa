#!/usr/bin/env bash
# Session 4, device call 5: TMA-pipelined quantize tilings ((128,128) and (1,128)) vs the defaults and their GPU
# bit-exact tests; the decode long-context TMA rule: GPU tests, then the decode matrix at page 64 (the heuristic now
# picks TMA at B >= 32, ctx >= 16384) with the SDPA / copy peers.
source scripts/gpu_common.sh
el quant-128
timeout 100 python3 -m tritonfp8 bench quant --quick --repeats 3 --granularity 128x128 --variants legacyfd,g1w16t3p1fd,g1w16t4p1fd,g1w16t6p1fd,g1w16t4sp1fd 2>&1 | tee $OUT/bench_quant128.log | tail -8
save
el quant-1x128
timeout 80 python3 -m tritonfp8 bench quant --quick --repeats 3 --granularity 1x128 --variants g1w8m64t4p2fd,g1w8m64t4sp2fd,g1w16m128t4p1fd 2>&1 | tee $OUT/bench_quant1x128.log | tail -6
save
el tests
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_quantize_tiles.py -k "gpu_tilings and (t3p1 or t4p1 or t6p1 or t4sp or m64t4 or m128t4)" 2>&1 | tail -2
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py -k "gpu" 2>&1 | tail -2
el decode-matrix
timeout 200 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --context 16384 --context 32768 --hq 32 --page 64 --repeats 3 2>&1 | tee $OUT/bench_decode.log | tail -30
save
el done
