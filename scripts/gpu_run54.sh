#!/usr/bin/env bash
# Session 8, device call 7: fast accumulation on the Gluon kernel now that its launches are templated (session 7
# timed it at 0.98-1.02x the Triton kernel with ~100 us of host per call): glwsfast (128x256) and glwsfast128 on
# issue 3's M >= 1024 shapes, interleaved with the defaults and cuBLAS fast.
source scripts/gpu_common.sh
SH="1024x10240x8192;4096x10240x8192;8192x10240x8192;1024x8192x8192;4096x8192x8192;8192x8192x8192;1024x57344x8192;4096x57344x8192;8192x57344x8192;1024x8192x28672;4096x8192x28672;8192x8192x28672;4096x4096x4096;16384x16384x16384"
el bench-fast
timeout 200 python3 -m tritonfp8 bench gemm --modes fast --variants glwsfast,glwsfast128 --no-bf16 --no-name-ab \
  --shapes "$SH" > $OUT/bench_fast.log 2>&1; grep -E "^┃ mode|^│ fast|results|Error|error" $OUT/bench_fast.log | cut -c1-160 | tail -5
rm -f benchmarks/results/*.png; save
el done
