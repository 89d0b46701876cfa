#!/usr/bin/env bash
# Session 5, device call 3: (1) the issue-6 decode matrix (eager, as the bench defaults) with the TMA rule by tokens
# per split and programs; (2) precise GEMM at M = 128 (0.67-0.86x cuBLAS exact in call 2): other schedules / tiles.
source scripts/gpu_common.sh
el decode
timeout 300 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --context 32768 --hq 32 --hq 64 --page 16 --page 64 --repeats 3 2>&1 > $OUT/bench_decode.log; tail -45 $OUT/bench_decode.log
save
el gemm-precise-m128
timeout 110 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab --modes precise --shapes '128x8192x8192;128x8192x28672;128x57344x8192' --variants nonpersistent,persistent,tile128,p64 2>&1 > $OUT/bench_gemm_m128.log; tail -20 $OUT/bench_gemm_m128.log
save
el done
