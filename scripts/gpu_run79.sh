#!/usr/bin/env bash
# Session 12, call 1: the grouped GEMM on the Gluon warp-specialized kernel (block and precise modes; issue 4's
# grouped block measured 0.64-0.70x our dense block GEMM on the Triton kernel in session 11). GPU tests of the grouped
# and the dense Gluon paths, then bench grouped with --vs-triton (the old kernel, interleaved in the same run).
source scripts/gpu_common.sh
el tests
pytest_v 330 -n 4 tests/test_grouped_gluon.py tests/test_grouped.py tests/test_gemm_gluon.py
el bench-block
timeout 200 python3 -m tritonfp8 bench grouped --scaling block --vs-triton --groups 8,64 --dists uniform1024,uneven 2>&1 | tail -22
save
el bench-precise
timeout 110 python3 -m tritonfp8 bench grouped --scaling tensor --accumulate precise --vs-triton --groups 8 --dists uniform1024,uneven 2>&1 | tail -14
save
el done
