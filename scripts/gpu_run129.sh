#!/usr/bin/env bash
# Session 22, call 6: B 8 ctx 4096 (the matrix's weakest TMA case, 48-66% of copy in call 4) with the hints on:
# 8 splits on pages of 64, the per-box kernel with 64-token boxes (8 / 16 splits), 4 stages on pages of 16;
# 5 interleaved eager rounds.
source scripts/gpu_common.sh
el sweep
timeout 250 python3 -m tritonfp8 bench decode --variants-only --repeats 5 \
  --variant-names tmaw1bn64s4splitsx2vsl2ef,tmabw1bn64s3splitsx4vsl2ef,tmabw1bn64s3splitsx2vsl2ef,tmabw1bn32s4splitsx2vsl2ef,tmabw1bn32s3splitsx4vsl2ef \
  --variant-cases 8:4096:32:64,8:4096:64:64,8:4096:32:16,8:4096:64:16 2>&1 | tail -28
save
el done
