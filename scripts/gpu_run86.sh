#!/usr/bin/env bash
# Session 14, call 2: issue 4's grouped G 8 gap after call 1's ncu profile (28% more instructions than the dense
# GEMM: the K loop's addresses in vector registers with 8-wide group vectors): the grouped call with the group
# vectors padded to >= 32 (gemm.group_pad) vs the old padding vs dense, then bench grouped with block scales, then
# the grouped GPU tests.
source scripts/gpu_common.sh
el grouped-pad
timeout 230 python3 scripts/gpu_grouped_pad.py 2>&1 | tail -12
save
el bench-block
timeout 170 python3 -m tritonfp8 bench grouped --scaling block --groups 8,64 --dists uniform1024,uneven 2>&1 | grep -E "^│ G|results|target"
save
el tests
pytest_v 150 -n 4 tests/test_grouped_gluon.py tests/test_grouped.py tests/test_bench_grouped.py
el done
