#!/usr/bin/env bash
# Session 18, call 2: hd256 on Gluon 128 x 128 tiles again (call 1: 1.11x the default dense, 1.12x causal), now also
# with 3 stages (229,648 B of shared memory); hd64 on Gluon 128 x 256 tiles (2 / 3 stages) against the Triton
# default; the GPU tests of the 3-stage hd256 form.
source scripts/gpu_common.sh
el tests
pytest_v 90 -n 8 tests/test_attention_gluon.py -k "hd256_bn128"
el hd256 both masks
timeout 150 python3 -m tritonfp8 bench attention --head-dim 256 --no-varlen --repeats 3 \
  --variants glws256bn128,glws256bn128s3 2>&1 | tail -4
save
el hd64 both masks
timeout 200 python3 -m tritonfp8 bench attention --head-dim 64 --no-varlen --repeats 3 \
  --variants glws,glws64bn256,glws64bn256s3 2>&1 | tail -4
save
el done
