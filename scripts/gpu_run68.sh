#!/usr/bin/env bash
# Session 10 call 7 (last ~8 min of device time): issue 4's benches. (1) bench grouped, per-tensor, the full set
# (G 8 / 64, both (N, K), 128..8192 tokens per group, uneven with empty groups: G = 64 never measured before).
# (2) bench gemm --scaling block with the new per-tensor cuBLAS peer on 9 of the dense block shapes, 2 rounds.
source scripts/gpu_common.sh
el grouped-tensor
timeout 210 python3 -m tritonfp8 bench grouped 2>&1 | grep -E "wrote|results|FAIL|geomean|summary|^│ G" | head -40
save
el block
timeout 150 python3 -m tritonfp8 bench gemm --scaling block --no-bf16 --no-name-ab --repeats 2 \
  --shapes "4096x7168x16384;4096x24576x1536;4096x32768x512;4096x7168x18432;4096x18432x7168;4096x4096x7168;4096x7168x2048;128x7168x16384;16x7168x16384" \
  2>&1 | grep -E "wrote|FAIL|^│ (block|[0-9])" | head -30
save
el done
