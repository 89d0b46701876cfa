#!/usr/bin/env bash
# Session 11, call 2: the profile pairs again (call 1 stopped at cuBLAS blockwise: scale_a must be outer-dim-major),
# then the host time per call of attention / gemm (scripts/gpu_host_profile.py).
source scripts/gpu_common.sh
el profile-pairs
timeout 330 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -40
el host-profile
timeout 150 python3 scripts/gpu_host_profile.py 2>&1 | tail -150
save
el done
