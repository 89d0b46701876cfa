#!/usr/bin/env bash
# Session 10 call 3: row_sum_mma (P·1 on the tensor core) failed its GPU tests in call 1 (46 failures, all of them
# lmma forms; one key passes) while its PTX / SASS read right offline. (1) A probe: register-A E4M3 wgmma with
# N = 8 and 16 against exact integer products (tests/test_attention_gluon.py::test_wgmma_small_n_register_a).
# (2) The lmma attention tests with N = 16 (TRITONFP8_GLWS_ROWSUM_N, a temporary switch of this experiment).
# (3) If they pass: the hd128 bench with the serial / overlapped lmma forms at N = 16 beside glws and the default.
# Outcome: the probe passed (9), the N = 16 forms failed as N = 8 did (46): the row sums were removed afterwards,
# with the switch and the test forms this script names (it ran against the tree of call 3, not this one).
source scripts/gpu_common.sh
nx=""; python3 -c "import xdist" 2>/dev/null && nx="-n 4"
el probe
pytest_v 200 $nx tests/test_attention_gluon.py -k "wgmma_small_n or refuses"
el lmma-n16
TRITONFP8_GLWS_ROWSUM_N=16 pytest_v 240 $nx tests/test_attention_gluon.py -k "lmma"
if grep -q " FAILED" /tmp/t.log; then el "lmma n16 fails: no bench"; exit 0; fi
el bench-n16
TRITONFP8_GLWS_ROWSUM_N=16 timeout 300 python3 -m tritonfp8 bench attention --no-varlen --no-peers --head-dim 128 \
  --repeats 3 --variants glws,glwsl,glwspc1,glwspc1l 2>&1 | grep -E "results:|^│ B|x = " | head -20
save
el done
