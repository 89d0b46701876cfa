#!/usr/bin/env bash
# Session 38, call 8: a second run of the heads forms that beat the library in calls 1-7 (w4 x8 s2 at B 8 ctx 4096,
# w8 x16 s2 at B 8 ctx 32768), with w4 x16 s2, on every B 8 cell at ctx 4096 and 32768 and on the other cells of 64
# and 128 pairs the hinted Gluon rule covers (B 8 ctx 8192, B 16 ctx 4096): the evidence for a heuristic rule. Each
# heads form also unhinted and the library's config also hinted (S38_HINTS=1: at ctx 32768 the library is unhinted).
# Usage: bash scripts/gpu_run176.sh [SECONDS=420]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el s38
S38_CASES=8:4096:64:64,8:4096:32:64,8:4096:64:16,8:4096:32:16,8:32768:64:64,8:32768:32:64,8:32768:64:16,\
8:32768:32:16,8:8192:64:64,8:8192:32:16,16:4096:64:64,16:4096:32:16 S38_FORMS=4:8:2,8:16:2,4:16:2 S38_HINTS=1 \
  timeout "${1:-420}" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -100
save
el done
