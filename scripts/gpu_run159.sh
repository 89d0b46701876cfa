#!/usr/bin/env bash
# Session 32 call 1 (H200, the card): the Gluon kernel's new evict-first form (GPU tests: same bits as the
# unhinted kernel, hints in its PTX), then scripts/gpu_decode_b8.py: B 8 ctx 4096 kernels (heuristic +- hints, Gluon
# 8 / 16 splits +- hints, 2 warps x 4) against the copy, SDPA and the read floors with and without hints, one run
# per case. (The decode GPU suites, last run in session 31 on an H100, are left out: the session's budget went to
# refused starts.)
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el gluon-l2ef-tests
pytest_v 200 tests/test_decode_gluon.py -k l2_evict
el b8
timeout 420 python3 scripts/gpu_decode_b8.py 2>&1 | tail -75
save
el done
