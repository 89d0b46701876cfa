#!/usr/bin/env bash
# Session 6, call 7: DecodeConfig.v_stage (V read as whole rows with permuted columns; offline 1362 -> 1210
# instructions per 64-token step): GPU check against the default, then A/B against the unchanged twins (graphs);
# pages of 16 at B 8/32 with the one-warp gather kernel and more splits.
source scripts/gpu_common.sh
el tests
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py -k "v_stage" 2>&1 | tail -2
el vstage
timeout 200 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names tmaw1bn64s4splitsx4,tmaw1bn64s4splitsx4vs,tmaw1bn64s4splitsx1,tmaw1bn64s4splitsx1vs,tmabw1bn32s4splitsx4,tmabw1bn32s4splitsx4vs,tmabw1bn32s4splitsx1,tmabw1bn32s4splitsx1vs --variant-cases 32:4096:32:64,128:4096:32:64,8:32768:32:64,128:32768:32:16,32:32768:32:16 > $OUT/bench_vstage.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_vstage.log | cut -c1-150 | tail -45
save
el p16-variants
timeout 150 python3 -m tritonfp8 bench --graph decode --variants-only --repeats 3 --variant-names w1bn32s4splitsx2,w1bn32s4splitsx4,w1bn64s4splitsx2,w1bn64s4splitsx4 --variant-cases 8:4096:32:16,32:4096:32:16,8:32768:32:16 > $OUT/bench_p16.log 2>&1; grep -E "^│|results|disagree|Error" $OUT/bench_p16.log | cut -c1-150 | tail -16
save
el done
