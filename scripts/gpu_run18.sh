#!/usr/bin/env bash
# Session 4, device call 4: the one-warp TMA decode variant's neighbourhood (splits, stages, box, warps, gather
# twin) at ctx 4096 / 16384 / 32768; the TMA decode GPU tests (call 3 ran out of its test step time).
source scripts/gpu_common.sh
el decode-variants
timeout 240 python3 -m tritonfp8 bench decode --variants-only --variant-names tmaw1bn32s4splitsx4,tmaw1bn32s4splitsx2,tmaw1bn32s4splitsx8,tmaw1bn32s3splitsx4,tmaw1bn32s6splitsx4,tmaw1bn64s4splitsx4,tmaw2bn32s4splitsx4,w1bn32s4splitsx4 \
  --variant-cases 8:4096:32:64,32:4096:32:64,128:4096:32:64,8:16384:32:64,32:16384:32:64,128:16384:32:64,8:32768:32:64,32:32768:32:64,128:32768:32:64 2>&1 | tee $OUT/bench_decode.log | tail -4
save
el decode-tma-tests
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py 2>&1 | tail -4
el done
