#!/usr/bin/env bash
# Session 28 (prepared, not run: no device was lent in session 28). First session 27's call 3 (scripts/gpu_run150.sh:
# the ctx 4096 matrix with pages of 16 on the 2-warp Gluon rule, the decode GPU tests), then the paged-read
# experiment of scripts/gpu_decode_heads.py (one KV head per program vs a page's heads together).
bash scripts/gpu_run150.sh
source scripts/gpu_common.sh
el heads
timeout 150 python3 scripts/gpu_decode_heads.py 2>&1 | tail -45
save
el done
