#!/usr/bin/env bash
# Session 29, last device try with ~400 s of budget left: gpu_run152.sh's B 8 ctx 4096 sweep cut to pages of 64 (the
# larger gap in call 1: 67.2-67.6% of copy against 72-75% on pages of 16) and four forms.
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
el variants-b8-p64
timeout 170 python3 -m tritonfp8 bench decode --variants-only --repeats 3 \
  --variant-cases 8:4096:32:64,8:4096:64:64 \
  --variant-names tmabw1bn64s3splitsx2vsl2ef,tmaw1bn32s3splitsx2vsl2ef,hx8,glx8s2 2>&1 | tail -30
save
el done
