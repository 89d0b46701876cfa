#!/usr/bin/env bash
# Session 11, call 7: launch plans for bf16 inputs (the fused quantize launches replayed): the launch tests, then
# the host time per call (gpu_host_profile.py; call 3 measured 484 us for the bf16-in public call before plans).
source scripts/gpu_common.sh
el tests
pytest_v 150 tests/test_attention_launch.py
el host-profile
timeout 120 python3 scripts/gpu_host_profile.py 2>&1 | grep "us/call"
save
el done
