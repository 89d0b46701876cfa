#!/usr/bin/env bash
# Session 4, device call 7 (last): the quantize GPU acceptance tests with the new (128, 128) default (TMA tiling:
# NaN, 1e30, zero blocks, both formats), the full quantize suite for the README table, the decode GPU tests
# (with the long-context TMA rule in the heuristic).
source scripts/gpu_common.sh
el quant-gpu-tests
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_quantize.py -k "gpu" 2>&1 | tail -2
el quant-suite
timeout 120 python3 -m tritonfp8 bench quant --quick --repeats 5 2>&1 | tee $OUT/bench_quant.log | tail -14
save
el decode-gpu-tests
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_decode_gpu.py 2>&1 | tail -3
el done
