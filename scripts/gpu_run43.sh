#!/usr/bin/env bash
# Session 7, device call 1: the Gluon precise / block-scaled GEMM (schedule "glws": TMA loader warp + two consumer
# warp groups, promotion under the other group's wgmma). First its GPU tests (poisoned outputs, partial tiles,
# odd K-block counts, every scaling, against the fp64 reference and the Triton kernel), then the timing against
# cuBLAS exact / blockwise and the current defaults, interleaved. A hang is cut by each step's timeout.
source scripts/gpu_common.sh
el glws-tests
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py -x 2>&1 | tail -12
el bench-precise
timeout 210 python3 -m tritonfp8 bench gemm --modes precise --variants glws,glwss4 --no-bf16 --no-name-ab \
  --shapes "128x8192x8192;128x10240x8192;1024x8192x8192;1024x10240x8192;1024x8192x28672;1024x57344x8192;4096x4096x4096;8192x8192x8192;8192x10240x8192;8192x8192x28672;4096x57344x8192;16384x16384x16384" \
  > $OUT/bench_precise.log 2>&1; grep -E "^│|results|geomean|Error|error" $OUT/bench_precise.log | cut -c1-160 | tail -45
save
el bench-block
timeout 200 python3 -m tritonfp8 bench gemm --scaling block --variants glws --no-bf16 --no-name-ab \
  --shapes "4096x7168x16384;8192x7168x16384;4096x24576x1536;8192x24576x1536;4096x32768x512;8192x32768x512;4096x7168x18432;8192x7168x18432;4096x18432x7168;8192x18432x7168;4096x4096x7168;8192x4096x7168;4096x7168x2048;8192x7168x2048;128x7168x16384" \
  > $OUT/bench_block.log 2>&1; grep -E "^│|results|geomean|Error|error" $OUT/bench_block.log | cut -c1-160 | tail -40
save
el done
