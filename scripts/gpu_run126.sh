#!/usr/bin/env bash
# Session 22, call 3. Call 2 (decode-l2ef-20261204-155452.json): the evict-first hints gain 7-8% at B 8 ctx 4096
# pages of 64 (67 MB of K/V) and lose 3-7% from 268 MB up, after a write flush; nothing after a read flush.
# (a) B 8 ctx 4096 pages of 16 (the gather kernel, 50-54%): the per-box TMA kernel in one wave with 8 / 16 splits,
#     with and without the hints (eager, the bench's timer);
# (b) where the hints turn from gain to loss: steps of 67 and 134 MB on the TMA kernels (pages of 64).
source scripts/gpu_common.sh
el p16
decode_variants tmabw1bn32s3splitsx2vs,tmabw1bn32s3splitsx4vs,tmabw1bn32s3splitsx2vsl2ef,tmabw1bn32s3splitsx4vsl2ef \
  8:4096:32:16,8:4096:64:16 16
save
el threshold
decode_variants l2ef 8:4096:32:64,8:4096:64:64,32:1024:32:64,16:4096:32:64,8:8192:32:64 16
save
el done
