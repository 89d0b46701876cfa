#!/usr/bin/env bash
# Session 10 call 4: is the Gluon forward the better hd256 default? Call 2 measured glws256 (128 x 64 tiles,
# overlapped, fp32 P carried) at 904 vs the Triton default's 847 TFLOPS dense (every round faster, 4-7%) and 849
# vs 812 causal (rounds overlap). Five interleaved rounds, with cuDNN FP8 in the same run, and its neighbours:
# 4 stages (s4), ping-pong (pp), the serial loop (ser).
source scripts/gpu_common.sh
el bench-hd256
timeout 400 python3 -m tritonfp8 bench attention --no-varlen --head-dim 256 --repeats 5 \
  --variants glws256,glws256s4,glws256pp,glws256ser 2>&1 | grep -E "results:|^│ B[0-9]|cuDNN" | head -12
save
el done
