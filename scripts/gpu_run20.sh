#!/usr/bin/env bash
# Session 4, device call 6: the TMA quantize tilings timed under CUDA graphs (call 5's eager rounds drifted 129 ->
# 59 us for one variant: the host-side descriptors dominate an eager call), and the decode heuristic's GPU test
# (call 5's test step ran out of time compiling the variant matrix).
source scripts/gpu_common.sh
el decode-heuristic-test
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py -k heuristic_long_context 2>&1 | tail -2
el quant-graph
timeout 150 python3 -m tritonfp8 bench --graph quant --quick --repeats 5 --granularity 128x128 --granularity 1x128 --variants g1w16t4p1fd,g1w16t6p1fd,g1w16t4sp1fd,g1w8m64t4p2fd 2>&1 | tee $OUT/bench_quant_graph.log | tail -12
save
el quant-eager
timeout 100 python3 -m tritonfp8 bench quant --quick --repeats 5 --granularity 128x128 --variants g1w16t6p1fd 2>&1 | tee $OUT/bench_quant_eager.log | tail -5
save
el done
