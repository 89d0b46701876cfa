#!/usr/bin/env bash
# Session 6, call 6: the one-warp kernels with registers capped at 168 (DecodeConfig.maxnreg: 12 programs per SM
# instead of 8-9), A/B against the same configs uncapped, graph-timed; the new short-context GPU test.
source scripts/gpu_common.sh
el tests
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py -k "heuristic_tma_rules_on_gpu" 2>&1 | tail -2
el pages16
timeout 200 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmabw1bn32s4splitsx1,tmabw1bn32s4splitsx1r168,tmabw1bn32s4splitsx2,tmabw1bn32s4splitsx2r168,tmabw1bn32s4splitsx4,tmabw1bn32s4splitsx4r168 --variant-cases 128:32768:32:16,32:32768:32:16,8:32768:32:16,32:4096:32:16 > $OUT/bench_p16.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_p16.log | cut -c1-150 | tail -30
save
el pages64
timeout 200 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmaw1bn64s4splitsx1,tmaw1bn64s4splitsx1r168,tmaw1bn64s4splitsx4,tmaw1bn64s4splitsx4r168,tmaw1bn32s4splitsx4r168,tmaw1bn16s4splitsx4r168 --variant-cases 32:4096:32:64,8:4096:32:64,128:32768:32:64,8:32768:32:64 > $OUT/bench_p64.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_p64.log | cut -c1-150 | tail -30
save
el done
