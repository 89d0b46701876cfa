#!/usr/bin/env bash
# Session 19, call 2: does the work buffered at the end of a program (steps in flight, computed after the last
# bytes arrive) set the fixed ~15 us the short decode cases lose to the copy? Fewer steps in flight at B 32 and B 8
# ctx 4096, pages of 64: the per-box TMA kernel (one page box per step) at 2 / 3 stages, the 32-token sub-box, and
# the warp-split kernel at 2 / 3 stages.
source scripts/gpu_common.sh
el b32
decode_variants tmabw1bn64s2splitsx4vs,tmabw1bn64s3splitsx4vs,tmaw1bn32s4splitsx4vs,tmaw1bn64s4splitsx4vs,ws4bn128s3x1,ws4bn128s2x1,ws4bn64s3x1,ws4bn64s2x1 \
  32:4096:32:64 12
save
el b8
decode_variants tmabw1bn64s2splitsx4vs,tmabw1bn64s3splitsx4vs,tmaw1bn32s4splitsx4vs,ws4bn128s2x1,ws4bn64s2x1 8:4096:32:64 9
save
el done
