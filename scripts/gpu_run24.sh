#!/usr/bin/env bash
# Session 4, device call 10: the quantize suite with the new col defaults (column strips) for the README table, and
# the quantize GPU acceptance tests on the new col paths (NaN, 1e30, zero columns, column-major, both formats).
source scripts/gpu_common.sh
el quant-gpu-tests
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_quantize.py -k "gpu" 2>&1 | tail -2
el quant-suite
timeout 100 python3 -m tritonfp8 bench quant --quick --repeats 5 2>&1 | tee $OUT/bench_quant.log | tail -9
save
el done
