#!/usr/bin/env bash
# Session 38: the Gluon decode kernel's heads form (DecodeConfig(heads=True): the warps on KV heads of the same
# tokens, 3-D TMA boxes). First its GPU tests and the rest of the Gluon suite (the kernel's other forms share the
# changed step and issue code), then scripts/gpu_decode_s38.py on issue 6's B 8 ctx 4096 cells (heads forms against
# the library's choice, the heads reader's floor, copy, SDPA), then, with time left, the Gluon rule's matrix cells at
# ctx 4096 (the peers' numbers for the same run).
# Usage: bash scripts/gpu_run174.sh [SUITE_SECONDS=170] [S38_SECONDS=300] [CTX4096_END=0]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el gluon-tests
pytest_v "${1:-170}" -n 8 tests/test_decode_gluon.py
el s38
timeout "${2:-300}" python3 scripts/gpu_decode_s38.py 2>&1 | grep "us .*x_sdpa\|mismatch\|Error\|error" | tail -40
save
matrix_until "${3:-0}" 4096
el done
