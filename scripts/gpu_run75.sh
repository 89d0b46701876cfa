#!/usr/bin/env bash
# Session 11, call 4: attention launch plans (attention._PLANS, with _FAST_FWD on): the bit-equality GPU tests
# (first call, replay, replay with other tensors), the attention GPU suites with the switch on, then the public
# call's time with and without it (scripts/gpu_attn_launch.py).
source scripts/gpu_common.sh
nx=""; python3 -c "import xdist" 2>/dev/null && nx="-n 4"
el tests-launch
pytest_v 150 tests/test_attention_launch.py
el tests-suites-fast-launch-on
TRITONFP8_ATTN_FAST_LAUNCH=1 pytest_v 210 $nx tests/test_attention_gpu.py tests/test_attention_gluon.py::test_default_hd256_is_the_gluon_forward tests/test_attention_gluon.py::test_attention_api_with_glws tests/test_attention_gluon.py::test_attention_api_with_glws_e4m3_out
el timing
timeout 150 python3 scripts/gpu_attn_launch.py 2>&1 | tail -9
save
el done
