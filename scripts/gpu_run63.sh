#!/usr/bin/env bash
# Prepared in session 9 (not run): the bench suite with the Gluon variants next to the Triton default (dense and
# causal; glwsl / glwspc1l: row sums on the tensor core). Carry a cudnn-frontend wheel in .whl/ for the cuDNN FP8
# column (missing in session 9).
source scripts/gpu_common.sh
el bench-attn-glws
timeout 520 python3 -m tritonfp8 bench attention --no-varlen --repeats 3 \
  --variants glws,glwsl,glwspc1,glwspc1l,glwspc1pp,glws256 2>&1 | tail -30
save
el done
