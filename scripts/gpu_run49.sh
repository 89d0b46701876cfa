#!/usr/bin/env bash
# Session 8, device call 1: promoting glws on 128x256 tiles (two 128-wide column halves per consumer group:
# 3 x 64 fp32 registers, the first half's promotion fenced before the second wgmma; offline no spills). GPU tests
# of the Gluon kernel (incl. the new n256 cases), then precise (M >= 1024 shapes of issue 3) and block (issue 4's
# M >= 4096 shapes) with the variants glwsn256 (4 stages, bf16) and glwsn256s3 next to the default 128x128.
source scripts/gpu_common.sh
el tests
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py 2>&1 | tail -4
el bench-precise
SH="1024x10240x8192;4096x10240x8192;8192x10240x8192;1024x8192x8192;4096x8192x8192;8192x8192x8192;1024x57344x8192;4096x57344x8192;8192x57344x8192;1024x8192x28672;4096x8192x28672;8192x8192x28672;4096x4096x4096;16384x16384x16384"
timeout 200 python3 -m tritonfp8 bench gemm --modes precise --variants glwsn256,glwsn256s3 --no-bf16 --no-name-ab \
  --shapes "$SH" > $OUT/bench_precise.log 2>&1; grep -E "^┃ mode|^│ precise|results|Error|error" $OUT/bench_precise.log | cut -c1-160 | tail -4
save
el bench-block
timeout 170 python3 -m tritonfp8 bench gemm --scaling block --variants glwsn256,glwsn256s3 --no-bf16 --no-name-ab \
  --shapes "$(echo $BLOCK_SHAPES | tr ';' '\n' | grep -v -E '^(16|128)x' | paste -sd';')" \
  > $OUT/bench_block.log 2>&1; grep -E "^┃ mode|^│ block|results|Error|error" $OUT/bench_block.log | cut -c1-160 | tail -4
rm -f benchmarks/results/*.png; save
el done
