#!/usr/bin/env bash
# Session 7, device calls 6 and 8: glws launches through the cached/direct launcher (the stock dispatch's host time
# made ~0.1 ms GEMMs bimodal: 4096^3 precise 0.75-0.98x); GPU tests of the Gluon kernel, then the precise 27-shape
# set and the block-scaled set again.
source scripts/gpu_common.sh
el tests
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py tests/test_launch.py tests/test_direct.py 2>&1 | tail -3
el bench-precise-set
timeout 120 python3 -m tritonfp8 bench gemm --modes precise --no-bf16 --no-name-ab > $OUT/bench_precise.log 2>&1; grep -E "^┃ mode|^│ precise|results|Error|error" $OUT/bench_precise.log | cut -c1-160 | tail -4
save
el bench-block
timeout 90 python3 -m tritonfp8 bench gemm --scaling block --no-bf16 --no-name-ab \
  --shapes "$BLOCK_SHAPES" \
  > $OUT/bench_block.log 2>&1; grep -E "^┃ mode|^│ block|results|Error|error" $OUT/bench_block.log | cut -c1-160 | tail -4
rm -f benchmarks/results/*.png; save
el done
