#!/usr/bin/env bash
# Session 10 call 7 (the last ~4 min of device time): issue 4's benches, reduced to fit. (1) bench grouped,
# per-tensor, G = 64 (never measured before) at 1024 / 4096 tokens per group and uneven with empty groups, both
# (N, K). (2) bench gemm --scaling block with the new per-tensor cuBLAS peer on 3 dense block shapes, 2 rounds.
source scripts/gpu_common.sh
el grouped-tensor-g64
timeout 80 python3 -m tritonfp8 bench grouped --groups 64 --dists uniform1024,uniform4096,uneven --repeats 2 \
  2>&1 | grep -E "wrote|results|FAIL|^│ " | head -20
save
el block
timeout 70 python3 -m tritonfp8 bench gemm --scaling block --no-bf16 --no-name-ab --repeats 2 \
  --shapes "4096x7168x16384;4096x18432x7168;128x7168x16384" 2>&1 | grep -E "wrote|FAIL|^│ " | head -12
save
el done
