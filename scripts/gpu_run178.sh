#!/usr/bin/env bash
# Session 39, call 1: session 39's first matrix (gpu_run177.sh, H100) ran B 8 ctx 4096 through the heads rule with
# whole rounds ~10 us slow (45-48 us against 34-36 us, 7 of 12 rounds; ours on the BF16 cache too, the copy and
# SDPA not), right after the GPU tests; session 37's one-warp rule ran 36-38 us steady in the same matrix. Here:
# the SM / memory clocks, power and throttle reasons logged every 250 ms ($OUT/results/smi-s39-*.csv) through
# (1) the ctx 4096 matrix, (2) gpu_decode_s38.py on the four B 8 ctx 4096 cells, 6 rounds (the library's heads
# config, the one-warp config it replaced, the same heads config pinned, its split kernel alone, the heads reader),
# (3) the ctx 4096 matrix again, then (4) with time left the ctx 32768 and 1024 matrices.
# Usage: bash scripts/gpu_run178.sh [END1=70] [S38_END=230] [END2=270] [END32768=310] [END1024=350]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
date +%T
smi_start
matrix_until "${1:-70}" 4096
el s38
left=$(( ${2:-230} - $(date +%s) + T0 ))
S38_CASES=8:4096:64:64,8:4096:32:64,8:4096:64:16,8:4096:32:16 S38_FORMS=4:16:2 S38_ROUNDS=6 \
  timeout "$left" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -40
drop_partials decode-s38
save
matrix_until "${3:-270}" 4096
matrix_until "${4:-310}" 32768
matrix_until "${5:-350}" 1024
smi_stop s39
el done
