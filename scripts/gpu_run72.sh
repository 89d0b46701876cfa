#!/usr/bin/env bash
# Session 11, call 1: Nsight Compute on the open pairs (scripts/gpu_profile_pairs.py: GEMM block vs precise vs
# cuBLAS blockwise / per-tensor at 4096x7168x16384; attention Triton default vs Gluon serial vs overlapped at hd128
# S8192; details page + per-SASS stall samples exported), then the attention fast launch (the steps prepared in session 10).
source scripts/gpu_common.sh
el ncu-check
(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu) 2>&1 | head -2
el profile-pairs
timeout 330 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -45
el fast-launch-tests
pytest_v 100 tests/test_attention_launch.py
el fast-launch-timing
timeout 120 python3 scripts/gpu_attn_launch.py 2>&1 | tail -8
save
el done
