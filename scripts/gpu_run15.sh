#!/usr/bin/env bash
# Session 4, device call 1: quantize baseline with the new static-scale and traffic columns (all granularities),
# hd256 attention one-warpgroup variants (64-row tiles, 2-3 CTAs/SM) vs the 128x64 8-warp default.
source scripts/gpu_common.sh
el quant
timeout 120 python3 -m tritonfp8 bench quant --quick --repeats 3 2>&1 | tee $OUT/bench_quant.log | tail -14
save
el attention-hd256
timeout 200 python3 -m tritonfp8 bench attention --head-dim 256 --no-varlen --variants bm64w4,bm64w4s2,bm64w4bn32,bm64w4bn32r168 2>&1 | tee $OUT/bench_attention.log | tail -30
save
el done
