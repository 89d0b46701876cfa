#!/usr/bin/env bash
# Session 20, call 1: the persistent Gluon forward (AttnConfig(kernel="glws", persistent=True): one program per SM,
# tile after tile, causal tiles heaviest first zig-zag over the programs). GPU tests of every persistent form
# (bit-equal to the one-tile-per-program kernel with 1-7 programs, the causal / lse / Sq > Sk cases, the API),
# then hd128 (dense and causal, with the peers) and hd256 timed against the defaults.
source scripts/gpu_common.sh
el tests
pytest_v 200 -n 8 tests/test_attention_gluon.py -k "persistent or bn256p or bn128p or bn64p or validation"
el hd128
timeout 220 python3 -m tritonfp8 bench attention --head-dim 128 --no-varlen --repeats 3 --variants glwsbn256p \
  2>&1 | tail -3
save
el hd256
timeout 120 python3 -m tritonfp8 bench attention --head-dim 256 --no-varlen --repeats 3 --variants glws256bn128p \
  2>&1 | tail -3
save
el done
