#!/usr/bin/env bash
# Prepared in session 15 for the next device session: Nsight Compute of the hd128 attention default (row sums on
# the tensor core) vs the FADD form (PROFILE_GROUP=rowsums in scripts/gpu_profile_pairs.py), then the lse /
# launch-plan GPU tests of gpu_run95.sh (not run in session 15: no device time left).
source scripts/gpu_common.sh
el profile-rowsums
PROFILE_GROUP=rowsums timeout 150 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -20
save
el tests
pytest_v 120 -n 4 tests/test_attention_launch.py tests/test_attention.py tests/test_attention_gpu.py -k "lse or launch or replay or row_sums"
el done
