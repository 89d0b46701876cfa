#!/usr/bin/env bash
# Prepared in session 9 (not run; device time spent): GPU tests of the Gluon attention forward after the last GPU
# run: P_CARRY 1 (offline loop body 682 -> 517 instructions, no byte repacking of the carried E4M3 operand), the
# row sums on the tensor core (row_sum_mma / L_BY_MMA: 517 -> 456), causal + lse, varlen, per-tensor descales, and
# attention(config=AttnConfig(kernel="glws")). Verbose, so that a hang names its case. Timing: gpu_run63.sh.
source scripts/gpu_common.sh
el tests-attn-glws
pytest_v 500 tests/test_attention_gluon.py
el done
