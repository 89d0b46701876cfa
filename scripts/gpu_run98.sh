#!/usr/bin/env bash
# Session 16, call 2: the GEMM GPU tests on the new M = 128 table entries and heuristic; the rowwise bench (rowwise
# reads the fast table); 128 CTAs x 128 columns (128x16384x8192, every M = 128 candidate) against 128 CTAs x 64
# columns (128x8192x8192) to see how a CTA's time grows with its columns: the case for 80-column tiles at N = 10240.
source scripts/gpu_common.sh
el gemm-gpu-tests
pytest_v 240 tests/test_gemm_gpu.py
el bench-rowwise
timeout 120 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab --modes rowwise 2>&1 | tail -8
save
el explore-n-per-cta
timeout 200 python3 scripts/gpu_gemm_explore.py --shapes "128x16384x8192;128x8192x8192" --modes fast --repeats 3 2>&1 \
  | grep -v "^    .*FAILED" | tail -62
cp "$OUT/gemm_explore.json" "$OUT/results/gemm-explore-ncols-$(date +%Y%m%d-%H%M%S).json" 2>/dev/null
el done
