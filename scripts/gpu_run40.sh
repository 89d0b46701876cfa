#!/usr/bin/env bash
# Prepared in session 6 for the next device session (not yet run): attention's lazy rescale in the plain key loop
# (AttnConfig(lazy_rescale=True), overlap 0; offline sm_90 per block and thread: hd128 491 -> 517 when the rescale
# runs, 453 when skipped; hd256 404 -> 432 / 304; a CPU simulation skips 59% of blocks at S 8192) interleaved
# against the default tiles, then the GPU tests of the attention loop variants.
source scripts/gpu_common.sh
el lazy
timeout 300 python3 -m tritonfp8 bench attention --variants lazy,lazy64,lazy256 --no-peers --no-varlen > $OUT/bench_attn_lazy.log 2>&1; grep -E "^│|results|Error" $OUT/bench_attn_lazy.log | cut -c1-170 | tail -30
save
el tests
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_attention_gpu.py -k "loop_variants" 2>&1 | tail -2
el done
