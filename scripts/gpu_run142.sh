#!/usr/bin/env bash
# Session 24 call 2: the short steps' time above the read floor, by part (scripts/gpu_decode_parts.py): the Gluon
# kernel's full call, its split kernel alone, the reader with the same grid, at B 32 / 8 ctx 4096 and B 8 ctx 32768.
source scripts/gpu_common.sh
el parts
(cd scripts && timeout 300 python3 gpu_decode_parts.py 2>&1 | tail -40)
save
el done
