#!/usr/bin/env bash
# Session 41: the decode GPU suites (the fp16 partials run in every bf16 split case with the combine kernel), then
# scripts/gpu_decode_part16.py (fp16 against fp32 partials, PART16_SPLIT=1 by default here: the split kernels alone
# too), then on an H200 the matrix at ctx 4096 and 32768 (none since session 30), then
# scripts/gpu_decode_pairs.py (session 40's prepared A/B under 64 pairs) with what is left; SM clocks every 250 ms.
# Each END_* is seconds after the previous step's end (the matrices: after the A/B).
# Usage: bash scripts/gpu_run183.sh [TESTS_S=150] [END_PART16=200] [END4096=50] [END32768=60] [END_PAIRS=150]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
smi_start
el tests
pytest_v "${1:-150}" -n 8 tests/test_decode_gluon.py tests/test_decode_gpu.py
el part16
PART16_SPLIT=${PART16_SPLIT:-1} timeout "${2:-200}" python3 scripts/gpu_decode_part16.py 2>&1 \
  | grep "us .*x_sdpa\|mismatch\|MISMATCH\|Error\|error"
drop_partials decode-part16
save
t=$(( $(date +%s) - T0 ))
h200_matrices $(( t + ${3:-50} )) $(( t + ${3:-50} + ${4:-60} ))
el pairs
timeout "${5:-150}" python3 scripts/gpu_decode_pairs.py 2>&1 | grep "us .*x_sdpa\|mismatch\|MISMATCH\|Error\|error"
drop_partials decode-pairs
save
smi_stop s41
el done
