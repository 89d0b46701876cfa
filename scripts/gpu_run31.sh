#!/usr/bin/env bash
# Session 5, device call 6: the revised TMA rules (pages of 64: fewest splits for >= 1024 programs, >= 1024 tokens
# per split; pages of 16: tmab with 4 splits at B x Hkv >= 512, >= 4096 tokens per split). GPU tests of the TMA
# paths (tmab included), then the decode matrix (eager) at B 32/128 and B 64, pages 16/64.
source scripts/gpu_common.sh
el tests
timeout 110 python3 -m pytest -q -p no:cacheprovider tests/test_decode_tma.py -k "tmab_matches or heuristic or repeat" 2>&1 | tail -3 > $OUT/pytest.log; cat $OUT/pytest.log
el matrix
timeout 160 python3 -m tritonfp8 bench decode --batch 32 --batch 64 --batch 128 --context 4096 --context 32768 --hq 32 --page 16 --page 64 --repeats 3 > $OUT/bench_decode.log 2>&1; grep -E "^│ B|results" $OUT/bench_decode.log | cut -c1-170 | tail -14
save
el done
