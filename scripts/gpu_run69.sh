#!/usr/bin/env bash
# Prepared in session 10 (not run): Nsight Compute on the two open pairs (scripts/gpu_profile_pairs.py): GEMM block
# vs precise on the same Gluon kernel (issue 4's limiting factor), attention serial vs overlapped (issue 5). Try
# ncu first (KINDS.md: it reads counters on Firecracker machines only).
source scripts/gpu_common.sh
el ncu-check
(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu) 2>&1 | head -2
el profile-pairs
timeout 560 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -40
el done
