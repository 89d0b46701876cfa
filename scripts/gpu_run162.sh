#!/usr/bin/env bash
# Session 33: B 8 ctx 4096 with the hinted Gluon kernel's sweep (B8_SWEEP=1: splits, ring depth, step, warps),
# the heuristic +- hints, copy, SDPA and the hinted read floors, one interleaved run per case.
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el b8-sweep
B8_SWEEP=1 timeout 540 python3 scripts/gpu_decode_b8.py 2>&1 | tail -100; save
el done
