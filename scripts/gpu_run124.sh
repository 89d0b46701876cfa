#!/usr/bin/env bash
# Session 22, call 1: DecodeConfig(l2_evict_first=True) (the K/V copies with L2 evict-first hints, _kernels/l2hint.py):
# its GPU tests (same bits as the heuristic, hints in the compiled PTX), then the heuristic with / without the hints
# on the issue-6 shapes, eager and graph-timed after write and read flushes.
source scripts/gpu_common.sh
el tests
pytest_v 150 tests/test_decode_gpu.py -k "l2_evict or replay_matches"
el l2ef
(cd scripts && timeout 380 python3 gpu_decode_l2ef.py) 2>&1 | tail -40
save
el done
