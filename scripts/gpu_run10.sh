#!/usr/bin/env bash
# Prepared for session 3, device call 1 (not run yet): the measurements session 2 had no device time left for.
# The whole GEMM shape set with the new host path (eager) and as CUDA-graph replays, a re-tune under graph timing
# and the 3-CTA precise/block variants (p64), (writes src/tritonfp8/configs/gemm_h200.json; a copy lands in $OUT), the GPU test never reached, the fused-QKV
# model timing.
# About 12 minutes in all: run it as two device calls, `bash scripts/gpu_run10.sh gemm` then `... other`.
set -u
PART=${1:-gemm}
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p benchmarks/results
T0=$(date +%s); el() { echo "=== $(( $(date +%s) - T0 )) s: $*"; }
if [ "$PART" = gemm ]; then
el precise-3cta
timeout 90 python3 -m tritonfp8 bench gemm --modes precise --variants p64,p64lag,lagnp --quick --no-bf16 2>&1 | tee $OUT/bench_precise.log | tail -10
timeout 90 python3 -m tritonfp8 bench gemm --scaling block --variants p64,p64lag,lagnp --quick --no-bf16 2>&1 | tee $OUT/bench_block.log | tail -10
el gemm-eager
timeout 120 python3 -m tritonfp8 bench gemm --no-bf16 2>&1 | tee $OUT/bench_gemm.log | tail -12
el gemm-graph
timeout 120 python3 -m tritonfp8 bench --graph gemm --no-bf16 --no-name-ab 2>&1 | tee $OUT/bench_gemm_graph.log | tail -12
el tune-graph
timeout 120 python3 -m tritonfp8 tune gemm --graph --shapes "16x10240x8192;64x10240x8192;128x10240x8192;16x8192x8192;64x8192x8192;128x8192x8192;16x8192x28672;64x8192x28672;128x8192x28672" 2>&1 | tee $OUT/tune.log | tail -25
fi
if [ "$PART" = other ]; then
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
el decode-variants
timeout 70 python3 -m tritonfp8 bench decode --variants-only --variant-names tail,tails2,tailplainname,plainname,s2 \
  --variant-cases 32:4096:32:16,128:4096:32:16,8:32768:64:64 2>&1 | tee $OUT/bench_decode.log | tail -20
el attention-variants
timeout 120 python3 -m tritonfp8 bench attention --variants bm64w4,s2,bm64w4r168s3 --no-varlen --no-causal 2>&1 | tee $OUT/bench_attention.log | tail -6
el tests
timeout 60 python3 -m pytest -q -p no:cacheprovider --timeout=55 tests/test_transformers.py -k gpu 2>&1 | tail -3
el fuse-llama
timeout 80 python3 -m tritonfp8.bench.fuse_llama --layers 4 --seq 2048,8192 --reps 20 2>&1 | tee $OUT/fuse_llama.log | tail -8
fi
tar czf $OUT/results10-$PART.tgz benchmarks/results src/tritonfp8/configs 2>/dev/null
el done
