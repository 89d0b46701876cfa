#!/usr/bin/env bash
# Session 5, device call 4, kernel time from CUDA graphs: (1) pages of 16 through separate TMA boxes and products
# (kv_load="tmab", helper build) against the gather heuristic and the one-box-per-step TMA form; (2) the inline
# merge's chunk: 1 split per step at one warp (now) against the 4-warp chunk of 4 (198 spill stores offline).
source scripts/gpu_common.sh
el decode-p16
timeout 230 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmabw1bn64s4splitsx4,tmabw1bn64s3splitsx4,tmabw1bn32s4splitsx4,tmabw1bn64s4splitsx2,tmabw2bn64s4splitsx4 --variant-cases 32:32768:32:16,128:32768:32:16,8:32768:64:16,128:4096:32:16 > $OUT/bench_decode_p16.log 2>&1; grep -E "^│|results" $OUT/bench_decode_p16.log | cut -c1-200 | tail -30
save
el decode-merge-chunk
timeout 130 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmaw1bn64s4splitsx4mc4,tmaw1bn64s4splitsx2mc4,tmaw1bn64s4splitsx4 --variant-cases 32:8192:32:64,128:4096:32:64,8:32768:32:64,32:4096:32:64 > $OUT/bench_decode_mc.log 2>&1; grep -E "^│|results" $OUT/bench_decode_mc.log | cut -c1-200 | tail -16
save
el done
