#!/usr/bin/env bash
# Session 3, device call 4: the direct launcher (GPU tests + host us/call A/B), remaining attention GPU tests, a
# graph-timed tune of the 8B decode GEMM shapes (M=32), the model decode step with fused projections, and the
# model agreement report (exact-FP8 reference, FP32 baselines, per-module check).
source scripts/gpu_common.sh
el gpu-tests
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_direct.py tests/test_launch.py tests/test_attention_gpu.py 2>&1 | tee $OUT/pytest.log | tail -4
el host-ab
timeout 80 python3 scripts/gpu_host_overhead.py --ab --rounds 5 2>&1 | tee $OUT/host_ab.log | tail -25
el tune-decode-shapes
timeout 90 python3 -m tritonfp8 tune gemm --graph --shapes "32x6144x4096;32x4096x4096;32x28672x4096;32x4096x14336" 2>&1 | tee $OUT/tune.log | tail -12
el model-decode
timeout 120 python3 -m tritonfp8 bench model --quick --decode-only --no-compile 2>&1 | tee $OUT/bench_model.log | tail -8
el agreement
timeout 100 python3 -m tritonfp8 bench model --agreement-only --agree-recipe tensor --agree-recipe row --agree-recipe block 2>&1 | tee $OUT/agreement.log | tail -30
tar czf $OUT/results12.tgz benchmarks/results src/tritonfp8/configs 2>/dev/null
el done
