#!/usr/bin/env bash
# Device call 3 (final of the session): GEMM bench over the shape set (+ name A/B), quantization bandwidth after
# the host-overhead cut, decode bandwidth and kernel variants, and the GPU tests that failed or hung in call 2.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p benchmarks/results
T0=$(date +%s); el() { echo "=== $(( $(date +%s) - T0 )) s: $*"; }
el gemm-bench
timeout 190 python3 -m tritonfp8 bench gemm --variants nonpersistent 2>&1 | tee $OUT/bench_gemm.log | tail -45
el quant-bench
timeout 80 python3 -m tritonfp8 bench quant 2>&1 | tee $OUT/bench_quant.log | tail -12
el decode-bench
timeout 100 python3 -m tritonfp8 bench decode 2>&1 | tee $OUT/bench_decode.log | tail -20
el tests
timeout 70 python3 -m pytest -q -p no:cacheprovider --timeout=60 tests/test_gemm_gpu.py tests/test_attention_gpu.py -k "not canary and not tuned_table" 2>&1 | tail -5
el decode-variants
timeout 75 python3 -m tritonfp8 bench decode --variants-only 2>&1 | tee $OUT/bench_decode_variants.log | tail -25
tar czf $OUT/results3.tgz benchmarks/results 2>/dev/null
el done
