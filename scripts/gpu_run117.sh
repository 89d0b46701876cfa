#!/usr/bin/env bash
# Session 19, call 1: the warp-split decode kernel (DecodeConfig(warp_split=True): a program's warps on slices of
# each step, one softmax each, merged on chip). GPU tests, then the eager sweep at B 32 ctx 4096 (one program per
# (sequence, KV head): no global merge) and B 8 ctx 4096 (2-8 splits) against the heuristic's one-warp TMA kernels.
source scripts/gpu_common.sh
el tests
pytest_v 200 -n 4 tests/test_decode_wsplit.py
el b32
decode_variants ws4bn128s3x1,ws4bn128s3x1plain,ws4bn128s4x1,ws4bn256s2x1,ws8bn256s3x1,ws4bn128s3x1nv,ws4bn64s4x1 \
  32:4096:32:64,32:4096:64:16 20
save
el b8
decode_variants ws4bn128s3x4,ws4bn128s3x2,ws4bn128s3x4plain,ws4bn128s4x4,ws4bn256s2x4,ws8bn256s3x2,ws4bn64s4x4,ws4bn128s3x8,ws4bn64s4x8 \
  8:4096:32:64,8:4096:32:16 24
save
el done
