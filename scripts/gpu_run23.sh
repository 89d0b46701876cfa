#!/usr/bin/env bash
# Session 4, device call 9 (last): column-strip col quantize variants (static and two-pass; the bench's "ours" is the
# true default again: earlier colcast runs left the variant selected), colcast64x256 re-timed; decode at ctx 8192
# eager with the TMA rule now from 8192 (vs the gather heuristic) and the matrix row for the README.
source scripts/gpu_common.sh
el quant-col
timeout 150 python3 -m tritonfp8 bench quant --quick --repeats 5 --granularity col --variants colstrip256r8,colstrip256r16,colstrip256r8pf,colstrip256r16c16w8pf,colstrip512r16pf,colstrip256r16c16w8fd,colcast64x256 2>&1 | tee $OUT/bench_quant_col.log | tail -10
save
el decode-8192
timeout 120 python3 -m tritonfp8 bench decode --variants-only --repeats 3 --variant-names gather --variant-cases 8:8192:32:64,32:8192:32:64,128:8192:32:64 2>&1 | tee $OUT/bench_decode_sweep.log | tail -9
save
timeout 150 python3 -m tritonfp8 bench decode --batch 32 --batch 128 --context 8192 --hq 32 --page 64 --repeats 3 2>&1 | tee $OUT/bench_decode.log | grep -E "B32|B128|ctx|results" | head -12
save
el done
