#!/usr/bin/env bash
# Session 17, call 2: 256-key blocks at hd128 (bench variants bm128bn256, glwsbn256, glwsbn256s3) against the
# default (64 x 128, three CTAs per SM) and the Gluon 128 x 128 serial form, with cuDNN FP8 / BF16, hd128 cases.
source scripts/gpu_common.sh
el attention-bn256
timeout 420 python3 -m tritonfp8 bench attention --head-dim 128 --no-varlen --repeats 3 \
  --variants bm128bn256,glwsbn256,glwsbn256s3,glws 2>&1 | tail -60
save
el done
