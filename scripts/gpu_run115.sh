#!/usr/bin/env bash
# Session 18, call 6: the E4M3 Vᵀ relayout (the public call's pass before the forward) at 32 / 64 / 128 sequence
# rows per program, permuted keys and not: bit-equal outputs and GB/s (read + write).
source scripts/gpu_common.sh
el vt-relayout
timeout 150 python3 scripts/gpu_vt_relayout.py 2>&1 | tail -8
save
el done
