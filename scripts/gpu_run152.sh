#!/usr/bin/env bash
# Session 29 call 2: issue 6's matrix at ctx 32768 on this card (call 1 ran ctx 4096), then a variant sweep at
# B 8 ctx 4096 (the only cells under the targets in call 1: 67-75% of copy, 1.49-1.69x SDPA): pages of 64 in the
# pages-of-16 wave form (per-box, 3 stages, 8 splits), fewer splits, the Gluon kernel's split forms.
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
el variants-b8
timeout 220 python3 -m tritonfp8 bench decode --variants-only --repeats 4 \
  --variant-cases 8:4096:32:64,8:4096:64:64,8:4096:32:16,8:4096:64:16 \
  --variant-names tmabw1bn64s3splitsx2vsl2ef,tmaw1bn32s3splitsx2vsl2ef,hbn64s3,hx8,hmkpdl,glx8s2,glx16s2,glw2x4s3 \
  2>&1 | tail -70
save
matrix_until 570 32768
el done
