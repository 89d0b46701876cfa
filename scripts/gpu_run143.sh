#!/usr/bin/env bash
# Session 25 call 1 (session 24's planned call 3): the Gluon decode kernel with 2 / 4 warps per program (each warp
# on its own split of the program's tokens, merged on chip) -- the GPU tests, then its parts against the one-warp
# kernel and the read floor at B 32 / 8 ctx 4096 and B 8 ctx 32768 (scripts/gpu_decode_parts.py).
source scripts/gpu_common.sh
el tests
pytest_v 300 -n 4 tests/test_decode_gluon.py tests/test_decode_gpu.py
save
el parts
(cd scripts && timeout 280 python3 gpu_decode_parts.py 2>&1 | tail -50)
save
el done
