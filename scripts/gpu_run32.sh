#!/usr/bin/env bash
# Prepared in session 5 for the next device session (not yet run): the page-64 one-box-per-step kernel through the
# per-box step (kv_load="tmab": the pipeliner multi-buffers its boxes, offline 53 KB of shared memory at 4 stages
# against the tma kernel's 21 KB) where short programs are latency-bound: ctx 4096 at B 8/32/128, and B 8 ctx 32768.
source scripts/gpu_common.sh
el decode
timeout 200 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmabw1bn64s4splitsx1,tmabw1bn64s3splitsx1,tmabw1bn64s4splitsx4,tmabw1bn64s3splitsx4,tmaw1bn64s4splitsx4 --variant-cases 32:4096:32:64,8:4096:32:64,128:4096:32:64,8:32768:32:64,32:32768:32:64 > $OUT/bench_decode.log 2>&1; grep -E "^│|results|disagree" $OUT/bench_decode.log | cut -c1-200 | tail -30
save
el done
