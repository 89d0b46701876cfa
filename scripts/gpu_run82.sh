#!/usr/bin/env bash
# Session 13, call 3: the inline merge's rounds (merge_chunk 8 / 16 at GQA 4, 4 at GQA 8), the combine kernel and
# 8 splits at B 8 (16-split merges: 6.8 us of split machinery at seq_len 0, call 2), B 8 ctx 32768 Hq 64 (84% of
# copy, the target 85%), B 32 ctx 4096 step shapes; the combine kernel as a programmatic dependent launch
# (DecodeConfig(pdl=True)), its GPU tests first; graph and eager (scripts/gpu_decode_merge2.py).
source scripts/gpu_common.sh
el tests
pytest_v 150 tests/test_decode_gpu.py tests/test_decode.py -k "split_paths or graph or pdl or split_and"
el decode-merge2
timeout 400 python3 scripts/gpu_decode_merge2.py 2>&1 | tail -40
save
el done
