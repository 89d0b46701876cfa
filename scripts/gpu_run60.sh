#!/usr/bin/env bash
# Session 9 call 5: the decode kernel with a one-page cache (num_blocks = 1 was specialized into a constexpr and
# the page-range check failed to compile: call 4's one remaining failure), the decode GPU suite and that test.
source scripts/gpu_common.sh
el gpu-decode
timeout 400 python3 -m pytest -q -p no:cacheprovider tests/test_decode.py \
  tests/test_nn.py::test_model_bench_decode_matches_prefill 2>&1 | grep -E "^(FAILED|ERROR|E  )|passed|failed" | head -30
el done
