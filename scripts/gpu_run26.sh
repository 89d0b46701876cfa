#!/usr/bin/env bash
# Session 5, device call 1: (1) warp-specialized GEMM schedules, one config per child process with its own timeout
# (session 1's all-in-one canary hung: which config was never known); precise / block on 128x128 tiles (2 consumer
# warp groups that can promote while the other's wgmma runs), fast on 128x256. (2) decode at ctx 4096: split counts
# between the powers of two, kernel time from CUDA graphs.
source scripts/gpu_common.sh
el ws-probe
timeout 420 python3 scripts/gpu_ws_probe.py --timeout 110 2>&1 | tee $OUT/ws_probe.log | tail -30
save
el decode
timeout 150 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmaw1bn64s4splitsx4,tmaw1bn64s4splitsx3,tmaw1bn64s4splitsx6,tmaw1bn32s4splitsx3,tmaw1bn32s4splitsx6,tmaw1bn64s4splitsx2 --variant-cases 8:4096:32:64,32:4096:32:64,128:4096:32:64 2>&1 | tee $OUT/bench_decode_graph.log | tail -30
save
el done
