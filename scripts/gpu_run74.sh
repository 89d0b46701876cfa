#!/usr/bin/env bash
# Session 11, call 3: host time per call of attention / gemm under cProfile (gpu_host_profile.py; call 2 stopped
# on an import), then issue 4's grouped bench with row and block scales (prepared in session 10).
source scripts/gpu_common.sh
el host-profile
timeout 150 python3 scripts/gpu_host_profile.py 2>&1 | tail -120
save
el grouped-row
timeout 170 python3 -m tritonfp8 bench grouped --scaling row 2>&1 | grep -E "results|FAIL|note|geomean|x" | tail -30
save
el grouped-block
timeout 170 python3 -m tritonfp8 bench grouped --scaling block 2>&1 | grep -E "results|FAIL|note|geomean|x" | tail -30
save
el done
