#!/usr/bin/env bash
# Session 6, call 3: the inline merge on the compact rows (A/B against the 16-row merge and the combine kernel,
# graph-timed) and the decode GPU tests (the new merge against the reference on the GPU).
source scripts/gpu_common.sh
el tests
timeout 240 python3 -m pytest -q -x tests/test_decode.py -k "merge or split or tma" 2>&1 | tail -4
el merge
cd scripts && timeout 300 python3 gpu_decode_merge.py 2>&1 | grep -v Warning | tail -45; cd ..
el done
