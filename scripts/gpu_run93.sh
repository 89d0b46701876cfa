#!/usr/bin/env bash
# RAN ON THE REVERTED COMMIT 92135eb (Gluon row sums by wgmma): 19 GPU tests failed (68% error in every rsmma form, 94% at
# the hd256 default it had switched on), no speed gain; reverted in 14a8bef. Kept as the record of session 15 call 3.
# Session 15, call 3: the row sums by wgmma in the Gluon forward (fresh per key block, added in fp32), now in the
# hd256 default (GLWS_DEFAULTS[256].row_sum_mma): the Gluon GPU suites (every form incl. rsmma / ovlpc1rs, 16384
# keys) and the hd256 default's callers, then hd256 / hd128 timing with cuDNN: the previous hd256 default
# (glws256) and the Gluon serial forms (glws, glwsrs) interleaved.
# Needs scripts/fetch_wheels.sh here first and carry=[".whl"].
source scripts/gpu_common.sh
el tests
pytest_v 200 -n 4 tests/test_attention_gluon.py tests/test_attention_launch.py tests/test_attention_gpu.py
el bench-attention
set -o pipefail
timeout 240 python3 -m tritonfp8 bench attention --head-dim 256 --head-dim 128 --no-varlen \
  --variants glws256,glws,glwsrs --repeats 3 2>&1 | tee /tmp/bench.log | grep -E "results:|target" | head -5
save
el done
