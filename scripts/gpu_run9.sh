#!/usr/bin/env bash
# Session 2, device call 6 (last): launch templates checked on the GPU and their host cost measured (+ a profile),
# eager GEMM on host-bound shapes, model decode under CUDA graphs, the fp8t decode variant.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p benchmarks/results
T0=$(date +%s); el() { echo "=== $(( $(date +%s) - T0 )) s: $*"; }
el tests
timeout 45 python3 -m pytest -q -p no:cacheprovider --timeout=40 tests/test_launch.py tests/test_gemm.py \
  tests/test_guard.py tests/test_transformers.py -k "gpu or repeat" 2>&1 | tee $OUT/pytest.log | tail -4
el host-overhead
timeout 35 python3 scripts/gpu_host_overhead.py 2>&1 | tee $OUT/host_overhead.log | tail -32
el model-decode
timeout 75 python3 -m tritonfp8 bench model --quick --decode-only --no-compile 2>&1 | tee $OUT/bench_model.log | tail -14
el decode-fp8t
timeout 45 python3 -m tritonfp8 bench decode --variants-only --variant-names fp8t \
  --variant-cases 32:4096:32:16,128:4096:32:16 2>&1 | tee $OUT/bench_decode.log | tail -10
el gemm-eager
timeout 30 python3 -m tritonfp8 bench gemm --no-name-ab --no-bf16 --modes fast,rowwise --repeats 2 \
  --shapes "16x8192x8192;64x8192x28672;128x8192x28672;1024x8192x8192;4096x4096x4096" 2>&1 | tee $OUT/bench_gemm_eager.log | tail -7
tar czf $OUT/results9.tgz benchmarks/results 2>/dev/null
el done
