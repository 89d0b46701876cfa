#!/usr/bin/env bash
# Session 10 call 1 (prepared in session 9): GPU tests of the Gluon attention forward: P_CARRY 1 (offline loop body
# 682 -> 517 instructions, no byte repacking of the carried E4M3 operand), the row sums on the tensor core
# (row_sum_mma / L_BY_MMA: 517 -> 456), causal + lse, varlen, per-tensor descales, E4M3 output, and
# attention(config=AttnConfig(kernel="glws")). 215 cases at ~2.3 s each (session 9: 35 in 82 s, compile-bound) ->
# four pytest-xdist workers (the wheel carried in .whl/). Verbose, so that a hang names its case. Also checks that
# the carried cudnn-frontend wheel imports (the cuDNN FP8 peer of gpu_run63.sh). Timing: gpu_run63.sh.
source scripts/gpu_common.sh
el cudnn-frontend
python3 -c "import cudnn; print('cudnn frontend', cudnn.__version__, 'backend', cudnn.backend_version())" 2>&1 | tail -1
el tests-attn-glws
nx=""; python3 -c "import xdist" 2>/dev/null && nx="-n 4"
pytest_v 500 $nx tests/test_attention_gluon.py
el done
