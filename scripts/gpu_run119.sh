#!/usr/bin/env bash
# Session 19, call 7: B 32 ctx 4096 is latency-bound after do_bench's write flush (gpu_decode_l2.py: 9.5-11 us of
# dirty write-backs cost the kernel, 1-1.6 us the copy). More bytes in flight per SM in one wave: the per-box TMA
# kernel with 2 / 3 page boxes in flight per program (6 / 4 programs per SM) and the splits that fill the slots.
source scripts/gpu_common.sh
el b32
decode_variants tmabw1bn64s3splitsx3vs,tmabw1bn64s4splitsx2vs,tmabw1bn64s2splitsx4vs 32:4096:32:64,32:4096:64:64,32:4096:32:16 16
save
el done
