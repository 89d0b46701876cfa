#!/usr/bin/env bash
# Session 8, device call 4: the new defaults measured as issue tables. glws heuristics: 128x256 where its waves
# finish first (precise, block), block scales below 2 tiles per SM in one wave (128x7168x16384: split-K 2); glws
# launches from the plans' Templates. GPU tests (Gluon kernel, GEMM GPU suites incl. the heuristics' choices),
# host time per call, then the 27-shape set in all three modes and issue 4's block set.
source scripts/gpu_common.sh
el tests
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py tests/test_gemm_gpu.py tests/test_gemm_block.py -k "glws or gpu or large_shapes or error_matches or table" 2>&1 | tail -4
el host
timeout 60 python3 scripts/gpu_glws_host.py 2>&1 | tail -5
save
el bench-set
timeout 200 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab > $OUT/bench_gemm.log 2>&1
grep -E "^┃ mode|^│ (fast|precise|rowwise) |results|Error|error" $OUT/bench_gemm.log | cut -c1-160 | tail -6
save
el bench-block
timeout 90 python3 -m tritonfp8 bench gemm --scaling block --no-bf16 --no-name-ab --shapes "$BLOCK_SHAPES" \
  > $OUT/bench_block.log 2>&1; grep -E "^┃ mode|^│ block |results|Error|error" $OUT/bench_block.log | cut -c1-160 | tail -4
rm -f benchmarks/results/*.png; save
el done
