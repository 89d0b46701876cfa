#!/usr/bin/env bash
# Session 2, device call 2: GEMM host overhead vs kernel time (events vs CUDA-graph replay), the GPU tests the
# first call did not reach, attention variants vs cuDNN, decode config sweep, grouped GEMM, end-to-end model bench.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
mkdir -p benchmarks/results
T0=$(date +%s); el() { echo "=== $(( $(date +%s) - T0 )) s: $*"; }
el host-overhead
timeout 90 python3 scripts/gpu_host_overhead.py 2>&1 | tee $OUT/host_overhead.log | tail -16
el tests
timeout 140 python3 -m pytest -q -p no:cacheprovider --timeout=100 --durations=8 tests/test_quantize_tiles.py \
  tests/test_transformers.py tests/test_harness.py -k "gpu or graph" 2>&1 | tee $OUT/pytest_gpu2.log | tail -16
el attention
timeout 120 python3 -m tritonfp8 bench attention --variants s3,r128,bm64w4r168 --no-varlen 2>&1 | tee $OUT/bench_attention.log | tail -30
el decode-variants
timeout 70 python3 -m tritonfp8 bench decode --variants-only 2>&1 | tee $OUT/bench_decode_variants.log | tail -25
el grouped
timeout 50 python3 -m tritonfp8 bench grouped --quick 2>&1 | tee $OUT/bench_grouped.log | tail -12
el model
timeout 100 python3 -m tritonfp8 bench model --quick 2>&1 | tee $OUT/bench_model.log | tail -25
tar czf $OUT/results5.tgz benchmarks/results 2>/dev/null
el done
