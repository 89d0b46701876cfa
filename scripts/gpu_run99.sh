#!/usr/bin/env bash
# Session 16, call 3: 80-column tiles (GemmConfig.block_n2 = 16: 64 + 16 columns, 128 CTAs at N = 10240) for the
# one M = 128 shape that 64- and 128-wide tiles leave at 0.84x cuBLAS; explored with every M = 128 candidate and
# merged into the table; the GEMM GPU tests (the two-piece kernel, its launch-plan replay, the table); the fast set.
source scripts/gpu_common.sh
el explore-10240
timeout 150 python3 scripts/gpu_gemm_explore.py --shapes "128x10240x8192" --modes fast --repeats 3 --write-table 2>&1 \
  | grep -v "^    .*FAILED" | tail -40
cp "$OUT/gemm_explore.json" "$OUT/results/gemm-explore-n80-$(date +%Y%m%d-%H%M%S).json" 2>/dev/null
cp src/tritonfp8/configs/gemm_h200.json "$OUT/"
el gemm-gpu-tests
pytest_v 240 -n 4 tests/test_gemm_gpu.py tests/test_gemm.py
el bench-fast-set
timeout 150 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab --modes fast 2>&1 | tail -6
save
el done
