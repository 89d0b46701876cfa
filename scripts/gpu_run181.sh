#!/usr/bin/env bash
# Session 40: on an H200 first the matrix at ctx 4096 and 32768 (the library as of session 38; the last H200
# matrix is session 30's); on any card, the heuristic at KV head counts other than 8 (bench decode --hkv; never
# timed before): Hkv 4 with Hq 28 / 32 (GQA 7 / 8) at B 8 / 32 / 128, and Hkv 32 with Hq 32 (MHA) at B 8 / 32,
# ctx 4096 and 32768, pages of 16 and 64, peers in the same run. SM clocks logged every 250 ms.
# Usage: bash scripts/gpu_run181.sh [END4096=55] [END32768=110] [END_HKV4=+120] [END_HKV32=+190] (the last two:
# seconds after the matrices' end, or after the start on another card)
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
smi_start
h200_matrices "${1:-55}" "${2:-110}"
t=$MATRIX_END
bench_until $(( t + ${3:-120} )) --hkv 4 --hq 28 --hq 32 --batch 8 --batch 32 --batch 128 --context 4096 \
  --context 32768
bench_until $(( t + ${4:-190} )) --hkv 32 --hq 32 --batch 8 --batch 32 --context 4096 --context 32768
smi_stop s40
el done
