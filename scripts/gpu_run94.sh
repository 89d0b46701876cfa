#!/usr/bin/env bash
# Session 15, call 4: after reverting the Gluon row sums (call 3: wrong on the GPU, no faster), the Gluon and
# attention GPU suites on the restored hd256 default, then hd128 timing once more (the row_sum_mma default vs
# fadd, with cuDNN) for a third interleaved measurement.
# Needs scripts/fetch_wheels.sh here first and carry=[".whl"].
source scripts/gpu_common.sh
el tests
pytest_v 170 -n 4 tests/test_attention_gluon.py tests/test_attention_gpu.py
el bench-attention
set -o pipefail
timeout 150 python3 -m tritonfp8 bench attention --head-dim 128 --no-varlen --variants fadd --repeats 3 2>&1 \
  | tee /tmp/bench.log | grep -E "results:|target" | head -5
save
el done
