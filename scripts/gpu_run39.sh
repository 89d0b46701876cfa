#!/usr/bin/env bash
# Session 6, call 9: v_stage on the 4-warp gather kernel (pages of 16 below B x Hkv = 512), with and without a
# 168-register cap, graph-timed against the heuristic; GPU check of the gather case against v_stage=False.
source scripts/gpu_common.sh
el tests
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py -k "v_stage_matches and gather" 2>&1 | tail -2
el gather-vs
timeout 120 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names vs,vsr168 --variant-cases 8:4096:32:16,32:4096:32:16,8:32768:32:16,32:32768:32:16,32:4096:64:16 > $OUT/bench_gather_vs.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_gather_vs.log | cut -c1-150 | tail -16
save
el done
