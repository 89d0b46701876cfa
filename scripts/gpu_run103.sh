#!/usr/bin/env bash
# Session 16, call 6 (the last ~4 min of device time): the code changed after call 5 on the GPU: two column pieces
# in the precise mode and the launch templates' y2 found by name (launch-cache cases, the pieces test); then
# 128x10240x8192 precise explored with the 80-column candidates if time is left.
source scripts/gpu_common.sh
el tests
pytest_v 90 -n 4 tests/test_launch.py tests/test_gemm.py -k "cached_launches or two_column or schedules or repeat"
el explore-precise-10240
timeout 60 python3 scripts/gpu_gemm_explore.py --shapes "128x10240x8192" --modes precise --repeats 2 2>&1 \
  | grep -v "^    .*FAILED" | tail -30
cp "$OUT/gemm_explore.json" "$OUT/results/gemm-explore-precise-10240-$(date +%Y%m%d-%H%M%S).json" 2>/dev/null
el done
