#!/usr/bin/env bash
# Session 18, call 4: the Gluon serial loop with its causal masked steps unrolled (no spills in any causal serial
# form offline; hd128 128 x 256 causal had 160 spill stores, the hd256 default 158). GPU tests of every causal
# Gluon form (incl. 256- and 64-key tiles, long offsets), then causal timing: Gluon 128 x 256 at hd128 against
# the Triton default, the hd256 default (now spill-free causal) against the 128 x 64 overlapped form, hd64.
source scripts/gpu_common.sh
el tests
pytest_v 170 -n 8 tests/test_attention_gluon.py -k "causal or hd256 or varlen"
el hd128 causal
timeout 160 python3 -m tritonfp8 bench attention --head-dim 128 --causal-only --no-varlen --repeats 3 \
  --variants glwsbn256,glwsbn256s3,glws 2>&1 | tail -3
save
el hd256 + hd64
timeout 140 python3 -m tritonfp8 bench attention --head-dim 256 --head-dim 64 --no-varlen --repeats 3 \
  --variants glws256hg1,glws64bn256 2>&1 | tail -3
save
el done
