#!/usr/bin/env bash
# Session 14, call 6: the quarters form as the dense block-scaled default (gemm_gluon.QUARTERS = "block"): the GEMM
# GPU suites (Gluon, block, GEMM GPU) on the new default, then issue 4's dense block table (bench gemm --scaling
# block over the 16 shapes, ours vs cuBLAS blockwise).
source scripts/gpu_common.sh
el tests
pytest_v 170 -n 4 tests/test_gemm_gluon.py tests/test_gemm_block.py tests/test_gemm_gpu.py -k "glws or gpu or large_shapes or error_matches or table"
el bench-block
timeout 120 python3 -m tritonfp8 bench gemm --scaling block --no-bf16 --no-name-ab --shapes "$BLOCK_SHAPES" \
  > /tmp/bench_block.log 2>&1; grep -E "^┃ mode|^│ block |results|geomean|Error|error" /tmp/bench_block.log | cut -c1-170 | tail -22
cp /tmp/bench_block.log $OUT/ 2>/dev/null
save
el done
