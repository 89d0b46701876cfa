#!/usr/bin/env bash
# Session 17, call 4: the Gluon forward's tensor-core row sums with the ones loaded by TMA (call 3's register-stored
# ones gave wrong sums), the serial ping-pong loop with FADD and tensor-core row sums, and the new hd128 dense
# default (Gluon 128 x 256): GPU tests first, then hd128 timing against the Triton kernel's default (variant triton).
source scripts/gpu_common.sh
el glws-tests
pytest_v 200 -n 8 tests/test_attention_gluon.py -k "row_sums or e4m3_out or default_hd"
el attention-glws-forms
timeout 300 python3 -m tritonfp8 bench attention --head-dim 128 --no-varlen --repeats 3 \
  --variants triton,glwsbn256rs,glwspp,glwsbn256pp,glwsrspp,glwsbn256rspp 2>&1 | tail -60
save
el done
