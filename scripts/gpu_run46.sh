#!/usr/bin/env bash
# Session 7, device call 4 (last): GPU tests of everything changed this session (glws with the padded TMA scale
# column, the tuned-table fast glws entry, the decode one-wave rule for pages of 16), then the issue tables with
# the new defaults: GEMM fast/precise/rowwise over the 27 shapes, block scales over the DeepSeek-V3 set,
# the decode matrix (eager, pages of 16 and 64).
source scripts/gpu_common.sh
el tests
timeout 140 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py tests/test_gemm_gpu.py tests/test_gemm_block.py tests/test_decode_tma.py -k "glws or gpu or large_shapes or error_matches or table" 2>&1 | tail -5
el bench-gemm-set
timeout 160 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab > $OUT/bench_gemm.log 2>&1; grep -E "^┃ mode|^│ (fast|precise|rowwise) |results|Error|error" $OUT/bench_gemm.log | cut -c1-160 | tail -8
save
el bench-block
timeout 80 python3 -m tritonfp8 bench gemm --scaling block --no-bf16 --no-name-ab \
  --shapes "$BLOCK_SHAPES" \
  > $OUT/bench_block.log 2>&1; grep -E "^┃ mode|^│ block|results|Error|error" $OUT/bench_block.log | cut -c1-160 | tail -6
save
el decode-eager-matrix
timeout 170 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --context 32768 --hq 32 --hq 64 --page 16 --page 64 --repeats 3 > $OUT/bench_decode_eager.log 2>&1; grep -E "^│ B|results" $OUT/bench_decode_eager.log | cut -c1-150 | tail -30
save
el done
