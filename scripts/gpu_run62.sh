#!/usr/bin/env bash
# Prepared in session 9 (not run; device time spent). The Gluon attention forward after the last GPU run:
# P_CARRY 1 (offline loop body 682 -> 517 instructions: no byte repacking of the carried E4M3 operand), causal +
# lse, per-tensor descales, and AttnConfig(kernel="glws") through tritonfp8.attention. First the GPU tests of all
# of it (verbose: a hang names its case), then the bench suite with the glws variants next to the Triton default
# (dense and causal). Carry a cudnn-frontend wheel in .whl/ for the cuDNN FP8 column (missing in session 9).
source scripts/gpu_common.sh
el tests-attn-glws
pytest_v 280 tests/test_attention_gluon.py
el bench-attn-glws
timeout 300 python3 -m tritonfp8 bench attention --no-varlen --repeats 3 \
  --variants glws,glwsperm,glwspc1,glwspc1pp,glws256 2>&1 | tail -30
save
el done
