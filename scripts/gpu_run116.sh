#!/usr/bin/env bash
# Session 18, call 7: the full attention bench on the session's final defaults (hd256 Gluon 128 x 128 with the
# unrolled causal masked steps, causal launch order, Vᵀ relayout at 64 rows), for the record.
source scripts/gpu_common.sh
el attention-bench
timeout 150 python3 -m tritonfp8 bench attention --repeats 3 --variants none 2>&1 | tail -3
save
el done
