#!/usr/bin/env bash
# Session 22, call 2 (call 1, gpu_run124.sh, died: the hints on cp.async gave an illegal instruction; the pass now
# hints the TMA loads only): DecodeConfig(l2_evict_first=True)'s GPU tests, then the heuristic with / without the
# hints on the issue-6 TMA shapes, eager and graph-timed after write and read flushes.
source scripts/gpu_common.sh
el tests
pytest_v 150 tests/test_decode_gpu.py -k "l2_evict"
el l2ef
(cd scripts && timeout 400 python3 gpu_decode_l2ef.py) 2>&1 | tail -40
save
el done
