#!/usr/bin/env bash
# Session 30 call 3: write_kv_cache's host path, session 29's against this tree's in one run (eager, interleaved),
# then the GPU tests that go through write_kv_cache (custom ops, torch.compile, the decode GPU tests' write cases).
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
el write-ab
timeout 90 python3 scripts/gpu_write_host_ab.py 2>&1 | tail -6
el tests
timeout 120 python3 -m pytest -q -n 8 tests/test_ops.py tests/test_nn.py tests/test_decode_gpu.py \
  -k "kv or decode or write or paged" 2>&1 | tail -4
el done
