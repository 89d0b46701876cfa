#!/usr/bin/env bash
# Session 25 call 3: decode_config's 2-warp Gluon rule (256-512 pairs, 4096 <= ctx < 16384): the issue matrix's
# B 8 / 32 ctx 4096 rows with the peers (SDPA on the BF16 cache, our BF16-cache kernel), the decode GPU tests,
# 4 warps on pages of 16, then B 128 ctx 4096 and the ctx 32768 rows in the time left (each step bounded so the
# call ends inside its 600 s).
source scripts/gpu_common.sh
left() { echo $(( 570 - $(date +%s) + T0 )); }
el matrix-ctx4096
timeout 200 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --context 4096 --repeats 3 2>&1 | tail -14
save
el tests
pytest_v 200 -n 4 tests/test_decode_gluon.py tests/test_decode_gpu.py
save
el variants-p16
# pages of 16 at 256-512 pairs: 4 warps against the rule's 2 (call 2: 4 warps 1.01-1.08x the Triton heuristic,
# within a percent of 2 warps at B 32, 0.94x them at B 64), 5 rounds
timeout 150 python3 -m tritonfp8 bench decode --variants-only --repeats 5 --variant-names glw4x1s2,glw2x1s3,triton \
  --variant-cases 32:4096:32:16,32:4096:64:16,64:4096:64:16,32:8192:64:16 2>&1 | tail -20
save
el matrix-b128-ctx4096
timeout 120 python3 -m tritonfp8 bench decode --batch 128 --context 4096 --repeats 3 2>&1 | tail -8
save
el matrix-ctx32768 "$(left) s left"
timeout "$(left)" python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 32768 --repeats 3 2>&1 \
  | tail -20
save
el done
