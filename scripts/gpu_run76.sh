#!/usr/bin/env bash
# Session 11, call 5: issue 4's grouped bench with block scales again (call 3's JSON did not come back: $OUT's
# 8-file limit), Nsight Compute on issue 3's per-tensor fast pair (ours vs cuBLAS fast), then the attention table
# with the session's defaults (launch plans on; no extra variants).
source scripts/gpu_common.sh
el grouped-block
timeout 150 python3 -m tritonfp8 bench grouped --scaling block 2>&1 | grep -E "^results|geomean|target" | head -6
save
el profile-fast
PROFILE_GROUP=fast timeout 150 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -16
el bench-attention
timeout 330 python3 -m tritonfp8 bench attention --variants none --repeats 3 2>&1 | grep -E "^results|target|geomean" | head -8
save
el done
