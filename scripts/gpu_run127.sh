#!/usr/bin/env bash
# Session 22, call 4: the decode matrix of issue 6 with the session's heuristic (L2 evict-first hints up to 128 MiB
# per step, the one-wave per-box rule from 2^18 tokens), eager (do_bench), 3 interleaved rounds, peers included;
# the decode GPU tests follow in gpu_run128.sh.
source scripts/gpu_common.sh
el matrix-target
timeout 330 python3 -m tritonfp8 bench decode --batch 8 --batch 32 --batch 128 --context 4096 --context 32768 \
  --hq 32 --hq 64 --page 16 --page 64 --repeats 3 2>&1 | tail -34
save
el matrix-ctx1024
timeout 170 python3 -m tritonfp8 bench decode --batch 1 --batch 8 --batch 32 --batch 128 --context 1024 \
  --hq 32 --hq 64 --page 16 --page 64 --repeats 3 2>&1 | tail -22
save
el matrix-b1
timeout 120 python3 -m tritonfp8 bench decode --batch 1 --context 4096 --context 32768 \
  --hq 32 --hq 64 --page 16 --page 64 --repeats 3 2>&1 | tail -14
save
el done
