#!/usr/bin/env bash
# Session 4, device call 3: decode with TMA page loads (kv_load "tma" / "tmat") — GPU correctness tests, then the
# variant sweep interleaved with the default heuristic and the copy ceiling.
source scripts/gpu_common.sh
el decode-tests
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py tests/test_decode_gpu.py 2>&1 | tail -6
el decode-variants
timeout 300 python3 -m tritonfp8 bench decode --variants-only --variant-names tma,tmat,tmabn64,tmatbn64,tmatbn64splitsx1.5,tmaw2splitsx2,tmaw1bn32s4splitsx4 \
  --variant-cases 8:4096:32:64,32:4096:32:64,128:4096:32:64,8:32768:32:64,32:32768:32:64,128:32768:32:64 2>&1 | tee $OUT/bench_decode.log | tail -40
save
el done
