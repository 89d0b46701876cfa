#!/usr/bin/env bash
# Session 16, call 4: the table's 4096x10240x8192 fast entry moved to the Gluon kernel (glwsfast: 1.07-1.09x the old
# entry in two session-14 runs): the fast and rowwise sets on the new table, and the GEMM GPU tests.
# Then the decode variants of pages of 16 at B 128 ctx 4096 (the per-box kernel unsplit).
source scripts/gpu_common.sh
el gemm-gpu-tests
pytest_v 240 -n 4 tests/test_gemm_gpu.py tests/test_gemm.py
el bench-fast-rowwise
timeout 300 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab --modes fast,rowwise 2>&1 | tail -8
save
el gemm-done
# Decode, pages of 16 at B 128 ctx 4096 (1024 pairs: the gather kernel at 75% of copy): the per-box kernel unsplit.
el decode-variants
decode_variants tmabw1bn32s4splitsx1vs,tmabw1bn32s3splitsx1vs,tmabw1bn64s3splitsx1vs,tmabw1bn32s3splitsx2vs,tmabw1bn32s4splitsx4vs \
  128:4096:32:16,128:4096:64:16 22
save
el done2
