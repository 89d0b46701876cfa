#!/usr/bin/env bash
# Prepared in session 8 (not run): first GPU run of the Gluon FP8 attention forward: correctness
# (tests/test_attention_gluon.py), then timing against the Triton forward kernel (scripts/gpu_attn_glws.py);
# then the 9 GPU-machine failures of session 8 call 9 with their full output.
source scripts/gpu_common.sh
el tests-attn-glws
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_attention_gluon.py 2>&1 | tail -15
el time-attn-glws
timeout 150 python3 scripts/gpu_attn_glws.py 2>&1 | tail -6
save
el gpu-failures
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_nn.py tests/test_ops.py tests/test_grouped.py \
  tests/test_qkv.py tests/test_fuse_qkv.py 2>&1 | grep -E "^(FAILED|ERROR|E  )|passed|failed" | head -60
el done
