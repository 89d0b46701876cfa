#!/usr/bin/env bash
# Session 21, call 4: issue 5's final side-by-side run (every config, causal and not, the varlen batch; errors vs
# attention_torch; public call and kernel ratios; PNGs), then the persistent kernel's dense variants against the
# default kernel (its causal and single-block tiles fault: s21-call1-3-log.txt) for the record, then the attention
# GPU tests that read the bench's reference.
source scripts/gpu_common.sh
el bench-full
timeout 300 python3 -m tritonfp8 bench attention --repeats 3 --variants none 2>&1 | tail -30
SAVE_PNG=1 save
el persistent-dense
timeout 150 python3 -m tritonfp8 bench attention --head-dim 128 --head-dim 256 --no-causal --no-varlen --no-peers \
  --repeats 3 --variants glwsbn256p,glws256bn128p 2>&1 | tail -12
save
el tests
pytest_v 200 -n 8 tests/test_attention_gpu.py
el done
