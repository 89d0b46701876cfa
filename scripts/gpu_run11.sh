#!/usr/bin/env bash
# Session 3, device call 3: where the 8B decode step spends its time (BF16 vs FP8 graphs), the new hd64 attention
# default against the previous one (causal too) + its GPU tests, the full GEMM set with the graph-tuned M<=128 table.
source scripts/gpu_common.sh
el decode-profile
timeout 120 python3 scripts/gpu_decode_profile.py 2>&1 | tee $OUT/decode_profile.log | tail -40
el attention-gpu-tests
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_attention_gpu.py -x 2>&1 | tail -3
el attention-hd64
timeout 150 python3 -m tritonfp8 bench attention --variants prev64r128 --no-varlen 2>&1 | tee $OUT/bench_attention.log | tail -4
el gemm-eager
timeout 120 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab 2>&1 | tee $OUT/bench_gemm.log | tail -9
tar czf $OUT/results11.tgz benchmarks/results 2>/dev/null
el done
