#!/usr/bin/env bash
# Session 33 (prepared; its cuts never got a machine): the Gluon GPU suite, with session 33's row-store epilogue and
# PDL signal switched on by its test of those forms, then B 8 ctx 4096 with the hinted Gluon kernel's sweep
# (B8_SWEEP=1: splits, ring depth, step, warps; the row-store / PDL-signal forms against the library's default on
# three configs), the heuristic +- hints, copy, SDPA and the hinted read floors, one interleaved run per case (Hq 64
# pages of 64 first; each case's rows saved as it ends).
# Usage: bash scripts/gpu_run162.sh [SUITE_SECONDS=150] [SWEEP_SECONDS=400]  (session 33's cuts: 100 270, 80 190,
# 75 125, 70 60).
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el gluon-suite
pytest_v "${1:-150}" -n 8 tests/test_decode_gluon.py
el b8-sweep
B8_SWEEP=1 timeout "${2:-400}" python3 scripts/gpu_decode_b8.py 2>&1 | tail -120; save
el done
