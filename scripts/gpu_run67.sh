#!/usr/bin/env bash
# Session 10 call 6: the hd256 winner's tile shape (128 x 64, overlapped + fp32 P carry) at hd128 / hd64, next to
# the serial 128 x 128 Gluon form and the Triton default (offline: 168 registers, no spills, 136 MUFU.EX2 under
# P·V). Peers skipped (measured in call 2, same day); errors vs the fp32 reference in the table.
source scripts/gpu_common.sh
el bench-bn64
timeout 420 python3 -m tritonfp8 bench attention --no-varlen --no-peers --head-dim 128 --head-dim 64 --repeats 3 \
  --variants glws,glws64,glws64pc1,glws64pc1s4 2>&1 | grep -E "results:|^│ B[0-9]" | head -14
save
el done
