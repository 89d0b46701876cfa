#!/usr/bin/env bash
# Session 40 (prepared, not run: the device time ran out): on an H200 first the matrix at ctx 4096 and
# 32768 (none since session 30); on any card scripts/gpu_decode_pairs.py (the Gluon rules under 64 pairs against the
# library: B 8 Hkv 4 and B 1 Hkv 8, ctx 4096 / 32768, pages of 16 / 64), bounded to END_PAIRS seconds after the
# matrices (or the start); SM clocks logged every 250 ms.
# Usage: [PAIRS_CASES=...] [PAIRS_ROUNDS=4] bash scripts/gpu_run182.sh [END_PAIRS=+180] [END4096=55] [END32768=110]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
smi_start
h200_matrices "${2:-55}" "${3:-110}"
t=$MATRIX_END
el pairs
timeout $(( t + ${1:-180} - $(date +%s) + T0 )) python3 scripts/gpu_decode_pairs.py 2>&1 \
  | grep "us .*x_sdpa\|mismatch\|MISMATCH\|Error\|error"
drop_partials decode-pairs
save
smi_stop s40
el done
