#!/usr/bin/env bash
# Session 16, call 1: (1) the M = 128 fast GEMM candidates with 256-deep K steps and swap-AB 128 x 64 (tune.candidates),
# explored interleaved with cuBLAS and merged into the H200 table, then the 27-shape fast bench on that table;
# (2) session 15's prepared gpu_run96.sh (removed: its steps are here): ncu of the hd128 row sums, the lse /
# launch-plan GPU tests of session 15's last host change.
source scripts/gpu_common.sh
M128="128x10240x8192;128x8192x8192;128x8192x28672"
el explore-m128
timeout 240 python3 scripts/gpu_gemm_explore.py --shapes "$M128" --modes fast --repeats 3 --write-table 2>&1 \
  | grep -v "^    .*FAILED" | tail -70
cp src/tritonfp8/configs/gemm_*h200*.json "$OUT/" 2>/dev/null
el bench-fast-set
timeout 200 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab --modes fast 2>&1 | tail -35
save
el profile-rowsums
PROFILE_GROUP=rowsums timeout 120 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -20
save
el tests
pytest_v 120 -n 4 tests/test_attention_launch.py tests/test_attention.py tests/test_attention_gpu.py -k "lse or launch or replay or row_sums"
el done
