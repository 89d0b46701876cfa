#!/usr/bin/env bash
# Session 10 call 5: the Gluon forward is now attention()'s hd256 default on sm_90 (GLWS_DEFAULTS, from calls 2
# and 4). GPU tests of every attention suite on the new default (dense / causal / GQA / varlen / padded D /
# E4M3 out at hd256 now run the Gluon kernel), then the hd256 bench again: "ours" = the public call on the new
# default, "triton" = the Triton kernel's default_config, cuDNN FP8 in the same run.
source scripts/gpu_common.sh
nx=""; python3 -c "import xdist" 2>/dev/null && nx="-n 4"
el tests-attention
pytest_v 330 $nx tests/test_attention.py tests/test_attention_gpu.py tests/test_attention_gluon.py -k "not lmma"
el bench-hd256
timeout 200 python3 -m tritonfp8 bench attention --no-varlen --head-dim 256 --repeats 5 --variants triton \
  2>&1 | grep -E "results:|^│ B[0-9]|cuDNN" | head -12
save
el done
