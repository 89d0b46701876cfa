#!/usr/bin/env bash
# Prepared in session 6 for the next device session (not yet run): pages of 16 below B x Hkv = 512, the per-box
# kernel (v_stage) in one wave (3 stages: 8 programs per SM; or 3 splits at 4 stages: 768 programs <= 924 slots)
# against the gather kernel the heuristic picks there; graph-timed. If it wins, the pages-of-16 rule (TMAB_*) can
# take B 8 / 32 like the pages-of-64 rule (fewest splits for ~1 wave).
source scripts/gpu_common.sh
el p16-one-wave
timeout 300 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmabw1bn32s4splitsx4vs,tmabw1bn32s3splitsx4vs,tmabw1bn32s3splitsx2vs,tmabw1bn32s4splitsx3vs --variant-cases 32:32768:32:16,32:4096:32:16,8:32768:32:16,8:4096:32:16,128:4096:32:16,128:32768:32:16 > $OUT/bench_decode.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_decode.log | cut -c1-150 | tail -32
save
el done
