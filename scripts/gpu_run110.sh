#!/usr/bin/env bash
# Session 18, call 1: the causal launch order (AttnConfig.head_group: heaviest query blocks first across groups of
# heads, instead of head after head). Tests (order map, bit-equal outputs across orders, Triton and Gluon; the
# launch cache's keyword path from session 17), then causal timing: the new default (auto groups) against the
# per-head order (hg1, glws256hg1) and the Gluon tiles on the new order; then hd256 on Gluon 128 x 128 tiles
# (prepared in session 17 as gpu_run109.sh).
source scripts/gpu_common.sh
el tests
pytest_v 120 -n 8 tests/test_attention.py tests/test_attention_gluon.py tests/test_launch.py \
  -k "causal_order or head_group or hd256_bn128 or replay or launch"
el causal-order hd128 + hd64
timeout 300 python3 -m tritonfp8 bench attention --head-dim 128 --head-dim 64 --causal-only --no-varlen \
  --repeats 3 --variants hg1,glws,glwsbn256,glwspp 2>&1 | tail -16
save
el hd256 both masks
timeout 150 python3 -m tritonfp8 bench attention --head-dim 256 --no-varlen --repeats 3 \
  --variants glws256hg1,glws256bn128 2>&1 | tail -10
save
el done
