#!/usr/bin/env bash
# Session 23, call 4: the Gluon decode kernel (DecodeConfig(kernel="gluon"), cache tokens as M) on the GPU for the
# first time: its GPU tests (reference rule, the Triton kernel within 2^-9, bad pages, NaN garbage, refusals), then
# timed against the heuristic at the short and near-miss steps (eager, 3 rounds; the bench checks each variant's
# output against the heuristic's).
source scripts/gpu_common.sh
el gluon-tests
pytest_v 240 -x tests/test_decode_gluon.py
el gluon-bench
timeout 250 python3 -m tritonfp8 bench decode --variants-only --repeats 3 \
  --variant-names "gl32s3,gl64s2,gl64s2h,gl32s3h,gl32s3pdl" \
  --variant-cases "8:4096:32:64,8:4096:64:16,8:32768:32:16,32:4096:32:64,128:4096:32:16" 2>&1 | tail -34
save
el done
