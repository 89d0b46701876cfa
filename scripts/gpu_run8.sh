#!/usr/bin/env bash
# Session 2, device call 5: quantization with the new defaults, the end-to-end model bench after the recompile fix.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p benchmarks/results
T0=$(date +%s); el() { echo "=== $(( $(date +%s) - T0 )) s: $*"; }
el quant
timeout 50 python3 -m tritonfp8 bench quant --quick --shape 8192x8192 --repeats 3 2>&1 | tee $OUT/bench_quant.log | tail -7
el model
timeout 150 python3 -m tritonfp8 bench model --quick 2>&1 | tee $OUT/bench_model.log | tail -22
tar czf $OUT/results8.tgz benchmarks/results 2>/dev/null
el done
