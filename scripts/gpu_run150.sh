#!/usr/bin/env bash
# Session 27 call 3: issue 6's matrix at ctx 4096 (B 8 / 32 / 128, pages of 16 and 64, Hq 32 / 64, peers) with pages
# of 16 on the 2-warp Gluon rule (pages of 16 now on it, after call 2), then the decode GPU tests.
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
el matrix-ctx4096
timeout 200 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --repeats 3 2>&1 | tail -8
save
el tests
pytest_v 200 -n 8 tests/test_decode_gluon.py tests/test_decode_gpu.py
save
el done
