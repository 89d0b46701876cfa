#!/usr/bin/env bash
# Session 39: issue 6's matrix through the library as of session 38 (the heads rule at 64-128 pairs, row stores,
# the hinted Gluon rules) on whatever card comes, meant for an H200 (the card; last matrix there: session
# 30): ctx 4096, 32768, 1024, then gpu_decode_s38.py's B 8 ctx 4096 A/B (library = heads form, the one-warp config it
# replaced, split kernel alone, heads reader; 4 rounds), and B 16 ctx 32768 (128 pairs past ctx 4096: the rule's
# cells not timed in session 38). SM clocks, power and throttle reasons logged every 250 ms
# to $OUT/results/smi-s39-*.csv. The s38 script's partial saves are dropped from $OUT once its final file exists
# (at most 8 files come back).
# Usage: [REQ=H200] bash scripts/gpu_run179.sh [END4096=45] [END32768=90] [END1024=130] [S38_END=230] (REQ: stop at
# once, exit 3, on a card whose name lacks it)
source scripts/gpu_common.sh
if [ -n "${REQ:-}" ]; then require_gpu "$REQ"; else nvidia-smi --query-gpu=name --format=csv,noheader; fi
smi_start
matrix_until "${1:-45}" 4096
matrix_until "${2:-90}" 32768
matrix_until "${3:-130}" 1024
el s38
left=$(( ${4:-230} - $(date +%s) + T0 ))
if [ "$left" -gt 0 ]; then
  S38_CASES=8:4096:64:64,8:4096:32:64,8:4096:64:16,8:4096:32:16,16:32768:64:64,16:32768:32:16 S38_FORMS=4:16:2 \
    S38_ROUNDS=4 \
    timeout "$left" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -40
fi
drop_partials decode-s38
save
smi_stop s39
el done
