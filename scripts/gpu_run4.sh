#!/usr/bin/env bash
# Session 2, device call 1: tune the GEMM over the shape set (writes src/tritonfp8/configs/gemm_h200.json,
# a copy under $OUT), then every GPU test with the table in place, then the untimed block-scaled and grouped GEMMs.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p benchmarks/results
T0=$(date +%s); el() { echo "=== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
el tune
timeout 330 python3 -m tritonfp8 tune gemm 2>&1 | tee $OUT/tune.log | grep -v "it/s\]" | tail -75
el tests
timeout 130 python3 -m pytest -q -p no:cacheprovider --timeout=90 tests -k "gpu or cublas" 2>&1 | tee $OUT/pytest_gpu.log | tail -25
el block
timeout 60 python3 -m tritonfp8 bench gemm --scaling block --quick 2>&1 | tee $OUT/bench_block.log | tail -16
el grouped
timeout 45 python3 -m tritonfp8 bench grouped --quick 2>&1 | tee $OUT/bench_grouped.log | tail -12
tar czf $OUT/results4.tgz benchmarks/results src/tritonfp8/configs 2>/dev/null
el done
