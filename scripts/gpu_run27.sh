#!/usr/bin/env bash
# Session 5, device call 2: (1) GPU tests + host A/B of the decode launch through the direct launcher (descriptors
# encoded once per cache address/geometry); (2) decode long-context rule beyond B x Hkv >= 256 (B8) and on pages of
# 16 / Hq 64, kernel time from CUDA graphs; (3) precise GEMM at M <= 128, eager, first run since the direct launcher.
source scripts/gpu_common.sh
el tests
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py tests/test_direct.py 2>&1 | tail -4 | tee $OUT/pytest.log
el host-ab
timeout 100 python3 scripts/gpu_host_overhead.py --decode --rounds 5 2>&1 | tee $OUT/decode_host_ab.log | tail -22
save
el decode
timeout 170 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmaw1bn64s4splitsx4,tmaw1bn32s4splitsx4,tmaw1bn16s4splitsx4,tmaw1bn64s4splitsx2 --variant-cases 8:16384:32:64,8:32768:32:64,32:32768:32:16,128:32768:32:16,32:32768:64:64,8:32768:64:16 2>&1 | tee $OUT/bench_decode_graph.log | tail -30
save
el gemm-precise
timeout 150 python3 -m tritonfp8 bench gemm --no-bf16 --no-name-ab --modes precise --shapes '16x10240x8192;64x10240x8192;16x8192x8192;64x8192x8192;16x57344x8192;64x57344x8192;16x8192x28672;64x8192x28672;128x8192x8192;128x10240x8192' 2>&1 | tee $OUT/bench_gemm_precise_smallm.log | tail -25
save
el done
