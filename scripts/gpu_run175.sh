#!/usr/bin/env bash
# Session 38, call 2: at B 8 ctx 4096, (1) the heads form's ring depth (bytes in flight per SM from 128 to 512
# head-tokens of 256 bytes: heads x splits x slots), each form whole, alone (no combine launch) and as the
# no-arithmetic reader of the same boxes; (2) the token-split form at 8 warps, unsplit (no combine launch, 64
# programs) and at 2 splits; then the heads form on the other cells near the target (B 8 ctx 32768, B 32 ctx 4096).
# First the GPU tests of the 8-warp forms (new in session 38). Call 6 (commit f44ef0e) also ran the token split at
# 8 warps (S38_TOKEN=8:1:2,8:1:3,8:2:2,4:1:3), removed after it (0.55-0.86x the library); only 4:1:3 is left here.
# Usage: bash scripts/gpu_run175.sh [TEST_SECONDS=90] [DEPTH_SECONDS=240] [LONG_SECONDS=110] [B32_SECONDS=80]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
pytest_v "${1:-90}" -n 8 tests/test_decode_gluon.py -k "reference_and_triton and not session33"
el depth
S38_FORMS=8:16:2,4:8:2,4:8:3,2:4:4 S38_SPLIT_ONLY=1 S38_READERS=1 S38_TOKEN=4:1:3 \
  timeout "${2:-240}" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -90
save
el long
S38_CASES=8:32768:64:16,8:32768:32:64 S38_FORMS=8:16:2,8:16:3,4:16:3 \
  timeout "${3:-110}" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -20
save
el b32
S38_CASES=32:4096:32:64,32:4096:64:16 S38_FORMS=8:4:2,8:4:3,4:4:3 \
  timeout "${4:-80}" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -20
save
el done
