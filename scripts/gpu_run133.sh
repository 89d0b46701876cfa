#!/usr/bin/env bash
# Session 23, call 2: the per-box kernel (pages of 16) with registers capped at 192 / 168 so that 10 one-warp
# programs share an SM (call 1's profile: the loop waits on fixed-latency dependencies at 2 warps per scheduler),
# with the splits that fill those slots; B 8 ctx 32768 (83% of copy), B 8 / 32 ctx 4096. Then call 1's noisy
# B 8 ctx 4096 pages of 64 per-box 64-token step again, 5 rounds.
source scripts/gpu_common.sh
el variants-ctx32768
decode_variants "hr192,hr192x20,hr168x20,hx20" "8:32768:32:16,8:32768:64:16" 12
save
el variants-ctx4096-p16
timeout 200 python3 -m tritonfp8 bench decode --variants-only --repeats 5 --variant-names "hr192,hr192x16,hr192x20,hx16,hr192x5,hx5" \
  --variant-cases "8:4096:32:16,8:4096:64:16,32:4096:32:16" 2>&1 | tail -20
save
el variants-ctx4096-p64
timeout 150 python3 -m tritonfp8 bench decode --variants-only --repeats 5 --variant-names "hbn64s2,hnol2ef" \
  --variant-cases "8:4096:32:64,8:4096:64:64" 2>&1 | tail -9
save
el done
