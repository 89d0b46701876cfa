#!/usr/bin/env bash
# Session 33, gpu_run162.sh cut to the device time left (~600 s): the Gluon GPU suite (the row-store epilogue and the
# PDL signal against the reference and the Triton kernel), then the B 8 ctx 4096 sweep (B8_SWEEP=1, Hq 64 pages of 64 first;
# each case's rows saved as it ends), bounded at 270 s.
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
el gluon-suite
pytest_v 100 -n 8 tests/test_decode_gluon.py
el b8-sweep
B8_SWEEP=1 timeout 270 python3 scripts/gpu_decode_b8.py 2>&1 | tail -120; save
el done
