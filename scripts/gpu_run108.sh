#!/usr/bin/env bash
# Session 17, call 7: the hd128 dense Gluon default with keys permuted in P and Vᵀ (offline: 724 instead of 821
# instructions per 64 x 256 block, no SEL / PRMT, SHFL 40 -> 8): its GPU tests, then dense hd128 timing against
# the default (ours_kernel) and the Triton kernel.
source scripts/gpu_common.sh
el tests
pytest_v 70 -n 8 tests/test_attention_gluon.py -k "bn256perm or default_hd"
el attention-perm
timeout 110 python3 -m tritonfp8 bench attention --head-dim 128 --no-causal --no-varlen --repeats 3 \
  --variants triton,glwsbn256perm,glwsbn256perms3 2>&1 | tail -30
save
el done
