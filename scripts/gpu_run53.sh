#!/usr/bin/env bash
# Session 8, device call 6: block-scaled glws 128x256 with b's scales one K block ahead (A/B, direct launches,
# scripts/gpu_sb_ahead.py), then the Gluon kernel's GPU tests again (the Triton-config comparison fixed).
source scripts/gpu_common.sh
el sb-ahead
timeout 200 python3 scripts/gpu_sb_ahead.py 2>&1 | tail -8
save
el tests
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py 2>&1 | tail -3
el done
