#!/usr/bin/env bash
# Session 30 call 2: write_kv_cache through _launch with its constexprs cached (host path 63 -> 28 us per call on
# the CI-class CPU, launch stubbed): the write GPU tests, then B 8 ctx 4096 (issue 6's matrix rows under the
# targets, with the write rows, eager as the matrix always is), then pages of 64 at B 8 again (call 1's sweep had
# 74-89% spreads on the heuristic and the per-box form: heuristic vs 8 splits vs the double-buffered per-box form).
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
el tests-write
timeout 100 python3 -m pytest -q -n 4 tests/test_decode_gpu.py -k "write" 2>&1 | tail -3
el matrix-b8
timeout 130 python3 -m tritonfp8 bench decode --batch 8 --context 4096 --repeats 3 2>&1 | tail -22
save
el p64-b8
timeout 110 python3 -m tritonfp8 bench decode --variants-only --repeats 6 \
  --variant-cases 8:4096:32:64,8:4096:64:64 --variant-names tmabw1bn64s3splitsx2vsl2ef,hx8 2>&1 | tail -10
save
el done
