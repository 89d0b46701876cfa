#!/usr/bin/env bash
# Session 13, call 4: the inline merge's chunk doubled for one-warp programs of <= 8 rows (kern.merge_chunk; call 3:
# 1.038-1.073x at 16 splits from graphs, no spills offline): the decode GPU suites, then issue 6's matrix eager
# (with the peers) and from graphs (ours and the copy); decode host time per call and its profile
# (scripts/gpu_host_overhead.py --decode: B 8 is host-bound eager, call 3).
source scripts/gpu_common.sh
el tests
pytest_v 150 -n 4 tests/test_decode_gpu.py tests/test_decode_tma.py tests/test_decode.py
el decode-eager-matrix
timeout 175 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --context 32768 --hq 32 --hq 64 --page 16 --page 64 --repeats 3 > /tmp/bench_decode_eager.log 2>&1; grep -E "^│ B|results|Error" /tmp/bench_decode_eager.log | cut -c1-190 | tail -30
save
el decode-graph-matrix
timeout 150 python3 -m tritonfp8 bench --graph decode --no-peers --batch 8 --batch 32 --batch 128 --context 4096 --context 32768 --hq 32 --hq 64 --page 16 --page 64 --repeats 3 > /tmp/bench_decode_graph.log 2>&1; grep -E "^│ B|results|Error" /tmp/bench_decode_graph.log | cut -c1-190 | tail -30
save
el host-decode
timeout 90 python3 scripts/gpu_host_overhead.py --decode 2>&1 | tail -45
save
el done
