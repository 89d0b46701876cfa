#!/usr/bin/env bash
# Session 2, device call 4: GEMM launch-plan cache (host overhead, eager bench on host-bound shapes), attention with
# the new per-head-dim defaults vs the previous ones, quantization variants (atomic two-pass, tilings), model bench.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
mkdir -p benchmarks/results
T0=$(date +%s); el() { echo "=== $(( $(date +%s) - T0 )) s: $*"; }
el tests
timeout 60 python3 -m pytest -q -p no:cacheprovider --timeout=50 tests/test_launch.py tests/test_gemm.py -k "gpu or repeat" 2>&1 | tail -3
el host-overhead
timeout 50 python3 scripts/gpu_host_overhead.py 2>&1 | tee $OUT/host_overhead.log | tail -15
el gemm-eager
timeout 70 python3 -m tritonfp8 bench gemm --no-name-ab --no-bf16 --modes fast,rowwise \
  --shapes "16x8192x8192;64x8192x28672;128x8192x28672;1024x8192x8192;4096x4096x4096" 2>&1 | tee $OUT/bench_gemm_eager.log | tail -8
el quant
timeout 90 python3 -m tritonfp8 bench quant --quick --shape 8192x8192 --repeats 3 \
  --variants atomic,atomicp3,atomicwide,wide,g64w16m2,g8w8,g1w16,g2w16,g1w16c32,g1w16c64,g2w16c32,g1w8c32 2>&1 | tee $OUT/bench_quant.log | tail -30
el attention
timeout 120 python3 -m tritonfp8 bench attention --no-varlen 2>&1 | tee $OUT/bench_attention.log | tail -4
el model
timeout 110 python3 -m tritonfp8 bench model --quick 2>&1 | tee $OUT/bench_model.log | tail -20
tar czf $OUT/results7.tgz benchmarks/results 2>/dev/null
el done
