#!/usr/bin/env bash
# Session 4, device call 11: column-strip col casts with more, shorter programs (r64) against the bimodal r16 forms
# (call 10: static 57.5-74.8 us, two-pass 101-121 us between rounds).
source scripts/gpu_common.sh
el quant-col
timeout 100 python3 -m tritonfp8 bench quant --quick --repeats 5 --granularity col --variants colstrip256r64c16w8pf,colstrip512r64pf,colstrip256r64pf,colstrip512r16pf 2>&1 | tee $OUT/bench_quant_col.log | tail -6
save
el done
