#!/usr/bin/env bash
# Session 16, call 5: the decode rule change (pages of 16 at >= 512 pairs without 4096 tokens per split for the
# 4-split rule take the one-wave per-box form): the decode GPU suites; the eager matrix at ctx 4096 with the SDPA
# peer; the new rule against the gather kernel at ctx 8192 (B 64: 2 splits, B 128: 1 split), unmeasured before.
source scripts/gpu_common.sh
el decode-tests
pytest_v 200 -n 4 tests/test_decode_gpu.py tests/test_decode_tma.py tests/test_decode.py
el decode-matrix-ctx4096
timeout 200 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --hq 32 --hq 64 \
  --page 16 --page 64 --repeats 3 2>&1 | tail -22
save
el decode-rule-ctx8192
timeout 120 python3 -m tritonfp8 bench decode --variants-only --repeats 3 --variant-names gather \
  --variant-cases 64:8192:32:16,128:8192:32:16 2>&1 | tail -8
save
el done
