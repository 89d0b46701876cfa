#!/usr/bin/env bash
# Session 38, call 2: the heads form's ring depth at B 8 ctx 4096 (bytes in flight per SM from 128 to 768 head-tokens
# of 256 bytes: heads x splits x slots), each form whole, alone (no combine launch) and as the no-arithmetic reader
# of the same boxes, then the heads form on the other cells near the target: B 8 ctx 32768 and B 32 ctx 4096.
# Usage: bash scripts/gpu_run175.sh [DEPTH_SECONDS=260] [LONG_SECONDS=120] [B32_SECONDS=90]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el depth
S38_FORMS=8:16:2,8:16:3,4:16:2,4:8:2,4:8:3,2:4:3,2:4:4 S38_SPLIT_ONLY=1 S38_READERS=1 \
  timeout "${1:-260}" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -90
save
el long
S38_CASES=8:32768:64:16,8:32768:32:64 S38_FORMS=8:16:2,8:16:3,4:16:3 \
  timeout "${2:-120}" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -20
save
el b32
S38_CASES=32:4096:32:64,32:4096:64:16 S38_FORMS=8:4:2,8:4:3,4:4:3 \
  timeout "${3:-90}" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -20
save
el done
