#!/usr/bin/env bash
# Session 9 call 2: the overlapped Gluon attention forward (softmax of block j under P_{j-1}·V; offline sm_90:
# 12 waited chains / 48 QGMMA, 264 MUFU.EX2 in flight, no spills): correctness of every launch form on the GPU,
# then the bench suite's dense non-causal cases with the Gluon variants next to the Triton kernel and cuDNN FP8.
source scripts/gpu_common.sh
el tests-attn-glws
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_attention_gluon.py 2>&1 | grep -E "^(FAILED|ERROR|E  )|passed|failed" | head -30
el bench-attn-glws
timeout 330 python3 -m tritonfp8 bench attention --no-causal --no-varlen --repeats 3 \
  --variants glws,glwsovl,glwsovls4,glwsovlperm,glwsovl256 2>&1 | tail -30
save
el done
