#!/usr/bin/env bash
# Session 7, device call 3: block scales of a through TMA with the tiles (glws), the fp32-output stage fix; GPU
# tests; the block-scaled set against cuBLAS blockwise; fast glws tiles on the N = 10240 shapes (the default's
# weakest); then the decode leads prepared in session 6 (gpu_run42: pages of 16 in one wave; gpu_run41: merge
# chunks), each under its own timeout.
source scripts/gpu_common.sh
el tests
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py tests/test_gemm_gpu.py tests/test_gemm_block.py -x -k "glws or large_shapes or error_matches or gpu" 2>&1 | tail -6
el bench-block
timeout 150 python3 -m tritonfp8 bench gemm --scaling block --no-bf16 --no-name-ab \
  --shapes "$BLOCK_SHAPES" \
  > $OUT/bench_block.log 2>&1; grep -E "^┃ mode|^│ block|results|Error|error" $OUT/bench_block.log | cut -c1-160 | tail -6
save
el bench-fast-n10240
timeout 100 python3 -m tritonfp8 bench gemm --modes fast --variants glwsfast128,glwsfast --no-bf16 --no-name-ab \
  --shapes "1024x10240x8192;4096x10240x8192;8192x10240x8192;1024x8192x8192;4096x8192x8192" \
  > $OUT/bench_fast.log 2>&1; grep -E "^┃ mode|^│ fast|results|Error|error" $OUT/bench_fast.log | cut -c1-160 | tail -6
save
el decode-p16-one-wave
timeout 150 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmabw1bn32s4splitsx4vs,tmabw1bn32s3splitsx4vs,tmabw1bn32s3splitsx2vs,tmabw1bn32s4splitsx3vs --variant-cases 32:32768:32:16,32:4096:32:16,8:32768:32:16,8:4096:32:16 > $OUT/bench_decode42.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_decode42.log | cut -c1-150 | tail -20
save
el done
