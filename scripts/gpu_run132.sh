#!/usr/bin/env bash
# Session 23, call 1: issue 6's short and near-miss decode steps. (1) Nsight Compute of the heuristic's kernels at
# B 8 ctx 4096 (pages of 64 and 16), B 8 ctx 32768 pages of 16, B 32 ctx 4096 pages of 64: stall reasons per SASS
# line (scripts/gpu_profile_pairs.py, PROFILE_GROUP=decode). (2) Overrides of the heuristic's config (bench decode
# variants h*): 64-token per-box steps at 2 / 3 stages, 4 stages, hints off, 8 / 12 splits.
source scripts/gpu_common.sh
el ncu-decode
PROFILE_GROUP=decode timeout 200 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -70
el variants-ctx32768
decode_variants "hbn64s2,hbn64s3,hs4,hx12,hbn64s2x12" "8:32768:32:16,8:32768:64:16" 16
save
el variants-ctx4096
decode_variants "hbn64s2,hbn64s3,hs4,hnol2ef,hx8" "8:4096:32:16,8:4096:32:64,32:4096:32:16" 22
save
el done
