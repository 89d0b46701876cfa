#!/usr/bin/env bash
# Session 17, call 3: the Gluon forward at hd128 with 256-key blocks and tensor-core row sums, and the serial
# ping-pong loop (128- and 256-key blocks), against the default and cuDNN; then their GPU tests.
source scripts/gpu_common.sh
el attention-glws-forms
timeout 300 python3 -m tritonfp8 bench attention --head-dim 128 --no-varlen --repeats 3 \
  --variants glwsbn256,glwsbn256rs,glwsrs,glwsrspp,glwsrspps2,glwsbn256pp 2>&1 | tail -60
save
el glws-tests
pytest_v 220 -n 6 tests/test_attention_gluon.py -k "row_sums or bn256 or pp"
el done
