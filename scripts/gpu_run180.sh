#!/usr/bin/env bash
# Session 39: the speculative prologue (kg.SPEC_PROLOGUE, off in the library): its GPU test (same bits as without,
# hits and misses, bad pages, NaN past the end) with the heads / plan tests, then gpu_decode_s38.py S38_SPEC=1 on
# the four B 8 ctx 4096 cells and two B 8 ctx 32768 ones (6 rounds: the library's config replayed with and without
# it, whole and split kernel alone), then the ctx 4096 matrix (the library as it is) and, given ends, the 32768
# and 1024 ones.
# Usage: [REQ=H200] [S180_CASES=B:ctx:Hq:page,...] [S180_ROUNDS=6] bash scripts/gpu_run180.sh [TEST_SECONDS=90]
#   [S38_END=250] [END4096=290] [END32768=0] [END1024=0]
source scripts/gpu_common.sh
if [ -n "${REQ:-}" ]; then require_gpu "$REQ"; else nvidia-smi --query-gpu=name --format=csv,noheader; fi
el tests
pytest_v "${1:-90}" -n 8 tests/test_decode_gluon.py -k "spec_prologue or heads or plan_fields"
el s38
left=$(( ${2:-250} - $(date +%s) + T0 ))
S38_CASES=${S180_CASES:-8:4096:64:64,8:4096:32:64,8:4096:64:16,8:4096:32:16,8:32768:32:64,8:32768:64:16} \
  S38_FORMS=4:16:2 S38_SPEC=1 S38_ROUNDS=${S180_ROUNDS:-6} timeout "$left" python3 scripts/gpu_decode_s38.py 2>&1 \
  | grep "us .*x_sdpa\|mismatch\|MISMATCH\|Error\|error" | grep -v "heads w4\|read heads\|triton:" | tail -40
if [ -n "${OUT:-}" ] && ls "$OUT"/results/decode-s38-2*.json >/dev/null 2>&1; then
  rm -f "$OUT"/results/decode-s38-partial-*.json
fi
save
matrix_until "${3:-290}" 4096
matrix_until "${4:-0}" 32768
matrix_until "${5:-0}" 1024
el done
