#!/usr/bin/env bash
# Session 2, device call 3 (GEMM): the fast launch path checked (GPU tests) and measured (host overhead, events
# vs CUDA graph), the whole GEMM shape set with it, block-scaled GEMM with the lagged-promotion variants.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p benchmarks/results
T0=$(date +%s); el() { echo "=== $(( $(date +%s) - T0 )) s: $*"; }
el tests
timeout 110 python3 -m pytest -q -p no:cacheprovider --timeout=60 tests/test_launch.py tests/test_gemm_gpu.py \
  -k "not canary" 2>&1 | tee $OUT/pytest_gemm.log | tail -8
el host-overhead
timeout 60 python3 scripts/gpu_host_overhead.py 2>&1 | tee $OUT/host_overhead.log | tail -16
el gemm-bench
timeout 230 python3 -m tritonfp8 bench gemm 2>&1 | tee $OUT/bench_gemm.log | grep -v "^│ *│\|^└\|^┌" | tail -40
el block-bench
timeout 110 python3 -m tritonfp8 bench gemm --scaling block --variants lag,lagnp 2>&1 | tee $OUT/bench_block.log | tail -14
tar czf $OUT/results6.tgz benchmarks/results 2>/dev/null
el done
