#!/usr/bin/env bash
# Session 4, device call 2: stream-K GEMM variants (sk, sk2) on the wave-quantized shapes; its GPU tests; col cast
# tiles for the static and two-pass col quantization.
source scripts/gpu_common.sh
el streamk-tests
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_streamk.py 2>&1 | tail -4
el gemm-streamk
timeout 200 python3 -m tritonfp8 bench gemm --shapes "128x10240x8192;1024x10240x8192;4096x10240x8192;4096x4096x4096;8192x8192x8192;128x8192x8192;1024x57344x8192" \
  --modes fast,rowwise --variants sk,sk2 --no-bf16 --no-name-ab --repeats 5 2>&1 | tee $OUT/bench_gemm.log | tail -40
save
el quant-col
timeout 120 python3 -m tritonfp8 bench quant --quick --repeats 3 --granularity col --variants colcast32x256,colcast64x256,colcast128x128,colcast16x512,colcast64x128 2>&1 | tee $OUT/bench_quant_col.log | tail -12
save
el done
