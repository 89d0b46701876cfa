#!/usr/bin/env bash
# Prepared in session 16 for the next device session (not run):
# (1) the GEMM tests on the GPU (two column pieces in the precise mode now: tests/test_gemm.py), then the precise
#     M = 128 shapes explored with the 80-column candidates (128x10240x8192 precise ran 0.87x on 128x128 tiles);
# (2) decode B 32 ctx 4096 (76-81% of copy eager, target 85%): splits and kernels around the 4-split defaults;
# (3) below.
source scripts/gpu_common.sh
el gemm-tests
pytest_v 200 -n 4 tests/test_gemm.py tests/test_gemm_gpu.py tests/test_launch.py
el explore-precise-m128
timeout 200 python3 scripts/gpu_gemm_explore.py --shapes "128x10240x8192;128x8192x8192" --modes precise --repeats 3 2>&1 \
  | grep -v "^    .*FAILED" | tail -50
cp "$OUT/gemm_explore.json" "$OUT/results/gemm-explore-precise-m128-$(date +%Y%m%d-%H%M%S).json" 2>/dev/null
# (3) the Gluon fast kernel against the table at the shapes where it was close (4096x4096x4096: 1.036x in one
#     session-14 run) or is the entry now (4096x10240x8192, 1024x10240x8192)
el gemm-glwsfast
timeout 120 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab --modes fast --variants glwsfast,glwsfast128 \
  --shapes "4096x4096x4096;4096x10240x8192;1024x10240x8192" --repeats 4 2>&1 | tail -14
save
el decode-b32
decode_variants tmaw1bn64s4splitsx2vs,tmaw1bn64s4splitsx3vs,tmatbn64,tmabw1bn32s3splitsx2vs,tmabw1bn32s4splitsx4vs \
  32:4096:32:64,32:4096:32:16 16
save
el done
