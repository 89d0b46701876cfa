#!/usr/bin/env bash
# Session 10 call 2 (as run; prepared in session 9 with the row-sum variants, which failed their tests in call 1):
# the bench suite with the Gluon variants next to the Triton default and the peers (cuDNN FP8 through the carried
# cudnn-frontend wheel in .whl/). Result: attention-nvidia-h200-20261202-042400.json.
source scripts/gpu_common.sh
el bench-attn-glws
timeout 540 python3 -m tritonfp8 bench attention --no-varlen --repeats 3 --variants glws,glwspc1,glws256 2>&1 | tail -32
save
el done
