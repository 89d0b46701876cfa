#!/usr/bin/env bash
# Session 40: scripts/gpu_decode_pairs.py (the Gluon rules under 64 pairs against the library: B 8 Hkv 4 and B 1
# Hkv 8, ctx 4096 / 32768, pages of 16 / 64), bounded to END seconds; SM clocks logged every 250 ms.
# Usage: [PAIRS_CASES=...] [PAIRS_ROUNDS=4] bash scripts/gpu_run182.sh [END=210]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
smi_start
el pairs
timeout $(( ${1:-210} - $(date +%s) + T0 )) python3 scripts/gpu_decode_pairs.py 2>&1 \
  | grep "us .*x_sdpa\|mismatch\|MISMATCH\|Error\|error\|: triton"
drop_partials decode-pairs
save
smi_stop s40
el done
