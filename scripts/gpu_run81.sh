#!/usr/bin/env bash
# Session 13, call 2: the bench grouped GPU test after its fix (cuBLAS blockwise refuses uneven groups), then where
# the short decode steps' fixed cost goes (scripts/gpu_decode_fixed.py: seq_len swept on a pinned config, an empty
# launch and the prologue's dependent-load chain at the same grid).
source scripts/gpu_common.sh
el tests
pytest_v 120 tests/test_bench_grouped.py -k gpu
el decode-fixed
timeout 300 python3 scripts/gpu_decode_fixed.py 2>&1 | tail -60
save
el done
