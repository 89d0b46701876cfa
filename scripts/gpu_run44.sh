#!/usr/bin/env bash
# Session 7, device call 2: the Gluon kernel after call 1 (fp32 stage fit, block scales loaded one K block ahead,
# fast accumulation at 128x256), now the precise default at >= 2 tiles per SM. GPU tests, then the fast variants
# against the default and cuBLAS, the precise 27-shape set with the new default, and block scales (new default
# 4 stages vs the 6-stage variant).
source scripts/gpu_common.sh
el glws-tests
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py tests/test_gemm_gpu.py -x -k "glws or large_shapes or error_matches" 2>&1 | tail -6
el bench-fast
timeout 170 python3 -m tritonfp8 bench gemm --modes fast --variants glwsfast,glwsfast128 --no-bf16 --no-name-ab \
  --shapes "1024x8192x8192;1024x10240x8192;1024x57344x8192;4096x4096x4096;4096x8192x28672;8192x8192x8192;8192x10240x8192;4096x57344x8192;16384x16384x16384" \
  > $OUT/bench_fast.log 2>&1; grep -E "^┃|results|Error|error" $OUT/bench_fast.log | cut -c1-160 | tail -8
save
el bench-precise-set
timeout 170 python3 -m tritonfp8 bench gemm --modes precise --no-bf16 --no-name-ab > $OUT/bench_precise.log 2>&1; grep -E "^┃ mode|^│ precise|results|Error|error" $OUT/bench_precise.log | cut -c1-160 | tail -6
save
el bench-block
timeout 190 python3 -m tritonfp8 bench gemm --scaling block --variants glws --no-bf16 --no-name-ab \
  --shapes "$BLOCK_SHAPES" \
  > $OUT/bench_block.log 2>&1; grep -E "^┃ mode|^│ block|results|Error|error" $OUT/bench_block.log | cut -c1-160 | tail -6
save
el done
