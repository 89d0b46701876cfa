#!/usr/bin/env bash
# Session 33: the Gluon decode kernel's row-store epilogue (16-byte stores of O / the partials after a layout
# conversion, instead of 4-byte stores in the accumulator's layout) checked by the Gluon GPU suite, then B 8 ctx 4096
# with the hinted Gluon kernel's sweep (B8_SWEEP=1: splits, ring depth, step, warps; the row stores against the
# scattered ones on three configs), the heuristic +- hints, copy, SDPA and the hinted read floors, one interleaved
# run per case.
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el gluon-suite
pytest_v 150 -n 8 tests/test_decode_gluon.py
el b8-sweep
B8_SWEEP=1 timeout 400 python3 scripts/gpu_decode_b8.py 2>&1 | tail -120; save
el done
