#!/usr/bin/env bash
# Session 38, last call: the heuristic's heads rule (decode.GLUON_HEADS_*: the heads form at 64-128 pairs) through
# the library's own path: the Gluon GPU tests of the heads forms and the heuristic (plans, CUDA-graph capture) and
# tests/test_decode_gpu.py (the heuristic's choices at large shapes, replays), then issue 6's matrix at ctx 4096
# (bench decode: the library's choice against copy and SDPA) and, with time left, 32768.
# Usage: bash scripts/gpu_run177.sh [GLUON_SECONDS=70] [GPU_SECONDS=40] [CTX4096_END=270] [CTX32768_END=0]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el gluon-tests
pytest_v "${1:-70}" -n 8 tests/test_decode_gluon.py -k "heads or heuristic or matches_reference_and_triton"
el gpu-tests
pytest_v "${2:-40}" -n 8 tests/test_decode_gpu.py
matrix_until "${3:-270}" 4096
matrix_until "${4:-0}" 32768
el done
