#!/usr/bin/env bash
# Prepared in session 13 (not run: no device time left). Issue 4's grouped G 8 gap under Nsight Compute (grouped
# G 8 x 1024 vs the dense GEMM of the same total shape, same Gluon kernel: DRAM bytes, L2 hit rates, cycles), then
# the GPU test whose expectation session 13 corrected without a GPU run (test_launch's block case: the Gluon kernel)
# and decode's replay GPU tests after the review mend (replays recorded through _launch.recording).
source scripts/gpu_common.sh
el profile-grouped
PROFILE_GROUP=grouped timeout 300 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -40
el tests
pytest_v 150 -n 4 tests/test_launch.py tests/test_decode_gpu.py -k "gpu or replay or alignment or split_paths or graph"
el done
