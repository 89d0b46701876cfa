#!/usr/bin/env bash
# Session 28 (prepared, not run: no device was lent in session 28). First: session 27's call 3 (scripts/gpu_run150.sh:
# the ctx 4096 matrix with pages of 16 on the 2-warp Gluon rule, the decode GPU tests); then the paged-read
# experiment of scripts/gpu_decode_heads.py (one KV head per program vs a page's heads together).
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
el matrix-ctx4096
timeout 200 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --repeats 3 2>&1 | tail -8
save
el tests
pytest_v 200 -n 8 tests/test_decode_gluon.py tests/test_decode_gpu.py
save
el heads
timeout 150 python3 scripts/gpu_decode_heads.py 2>&1 | tail -45
save
el done
