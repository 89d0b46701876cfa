#!/usr/bin/env bash
# Session 18, call 3: the attention GPU suites on the new defaults (hd256: Gluon 128 x 128 serial 2 stages; causal:
# grouped heaviest-first order), test_attention.py on the GPU, then the full attention bench for the record, with
# the per-head causal order (hg1) beside the default.
source scripts/gpu_common.sh
el attention-tests
pytest_v 240 -n 8 tests/test_attention.py tests/test_attention_gpu.py tests/test_attention_launch.py \
  tests/test_attention_gluon.py -k "not api_with_glws or bn256fadd or hd256"
el attention-bench
timeout 300 python3 -m tritonfp8 bench attention --repeats 3 --variants hg1 2>&1 | tail -3
save
el done
