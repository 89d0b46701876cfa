#!/usr/bin/env bash
# Session 21, call 5: after the persistent kernel's removal and the new tests (the full CPU acceptance product and
# the SDPA fallback's tests, compiled on the GPU here; the attention calibration through transformers), the
# attention and transformers GPU tests.
source scripts/gpu_common.sh
el tests
pytest_v 420 -n 8 tests/test_attention.py tests/test_attention_gpu.py tests/test_attention_gluon.py \
  tests/test_transformers.py tests/test_nn.py tests/test_guard.py
el done
