#!/usr/bin/env bash
# Session 15, call 5 (if the device allows): the lse / launch-plan paths on the hd128 default after moving the
# row_sum_mma lse rule to where the config is chosen.
source scripts/gpu_common.sh
el tests
pytest_v 120 -n 4 tests/test_attention_launch.py tests/test_attention.py tests/test_attention_gpu.py -k "lse or launch or replay or row_sums"
el done
