#!/usr/bin/env bash
# Prepared in session 17 (not run): hd256 on 128 x 128 tiles of the Gluon forward (serial, 2 stages; offline 548
# instructions per 64 x 128 block = 8.6 per score vs the default's 12.8; the causal form spills), its GPU tests,
# then hd256 timing against the default (Gluon 128 x 64, overlapped) and the Triton kernel.
source scripts/gpu_common.sh
el tests
pytest_v 100 -n 4 tests/test_attention_gluon.py -k "hd256_bn128 or glws_sass"
el attention-hd256
timeout 200 python3 -m tritonfp8 bench attention --head-dim 256 --no-varlen --repeats 3 \
  --variants triton,glws256bn128 2>&1 | tail -20
save
el done
