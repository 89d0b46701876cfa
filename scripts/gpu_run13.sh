#!/usr/bin/env bash
# Session 3, device call 5: quantization variants (fast exact division, 128x128 tilings, col amax prefetch) with
# their GPU exactness tests; model prefill with fused projections; grouped GEMM and the GEMM set (fast, rowwise)
# with the direct launcher.
source scripts/gpu_common.sh
el quant-variants
timeout 100 python3 -m tritonfp8 bench quant --quick --repeats 3 --granularity 128x128 --granularity col --granularity tensor \
  --variants legacyfd,g1w16fd,g1w8fd,g1w8r80fd,g1w8r80fdev,g1w16p1l2fd,atomicpf,atomicfd,atomicpffd 2>&1 | tee $OUT/bench_quant.log | tail -24
timeout 50 python3 -m tritonfp8 bench quant --quick --repeats 3 --granularity 1x128 --granularity row --variants g64w8fd 2>&1 | tee $OUT/bench_quant1x128.log | tail -8
el quant-gpu-tests
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_quantize_tiles.py tests/test_quantize_fastdiv.py -k gpu 2>&1 | tail -3
el model-prefill
timeout 110 python3 -m tritonfp8 bench model --quick --prefill-only --no-compile 2>&1 | tee $OUT/bench_model.log | tail -8
el grouped
timeout 70 python3 -m tritonfp8 bench grouped --quick 2>&1 | tee $OUT/bench_grouped.log | tail -10
el gemm-eager
timeout 90 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab --modes fast,rowwise 2>&1 | tee $OUT/bench_gemm.log | tail -8
tar czf $OUT/results13.tgz benchmarks/results 2>/dev/null
el done
