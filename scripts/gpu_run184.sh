#!/usr/bin/env bash
# Session 41, second call: (1) gpu_decode_part16.py with PART16_ORDER=aa (fp32, fp16, fp32 again: call 2 timed the
# whole fp16 form slower than the fp32 one, 0.3-1.9 us, while its split kernel alone was faster; an A/A pair tells
# whether the round's first position did it); (2) gpu_decode_pairs.py on the smaller pair counts and contexts that
# lowering GLUON_MIN_PAIRS would also reach (call 2 measured 32 pairs at ctx 4096 / 32768 and 8 at ctx 32768: the
# Gluon forms 1.27-1.44x the library); on an H200 first the matrix at ctx 4096 and 32768.
# Prepared at call 3 (refused, as were calls 4-7; then lending paused): session 41 lowered the pair bounds from call
# 2 alone (GLUON_MIN_PAIRS 32, GLUON_LONG_MIN_PAIRS 8), so "library" is now the Gluon rule at 2:4:32768 and
# 16:2:4096 (a check of the rule) and still the Triton kernels at the other cases (the bound's next candidates).
# Usage: bash scripts/gpu_run184.sh [END_PART16=120] [END_PAIRS=220] [END4096=50] [END32768=60]
source scripts/gpu_common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
smi_start
h200_matrices "${3:-50}" $(( ${3:-50} + ${4:-60} ))
el part16-aa
PART16_ORDER=aa PART16_SPLIT=1 PART16_CASES=${PART16_CASES:-8:8:4096:64:64,32:4:4096:32:64,8:8:4096:32:16} \
  timeout "${1:-120}" python3 scripts/gpu_decode_part16.py 2>&1 | grep "us .*x_sdpa\|mismatch\|MISMATCH\|Error\|error"
drop_partials decode-part16
save
el pairs
PAIRS_CASES=${PAIRS_CASES:-1:8:4096:64:64,2:8:4096:32:16,4:8:4096:64:64,1:8:8192:32:64,2:4:32768:32:64,1:4:32768:32:16,4:8:8192:64:16,16:2:4096:16:64} \
  timeout "${2:-220}" python3 scripts/gpu_decode_pairs.py 2>&1 | grep "us .*x_sdpa\|mismatch\|MISMATCH\|Error\|error"
drop_partials decode-pairs
save
smi_stop s41b
el done
