#!/usr/bin/env bash
# Session 24 call 1: the Gluon decode tests added after session 23's last device call (strided block table, empty
# sequences, Sq > 1 refusal); the read floors of the short steps (scripts/gpu_decode_floor.py); the Gluon kernel
# at ctx 4096 with more programs per SM; Nsight Compute of the Gluon kernel at B 8 ctx 4096.
source scripts/gpu_common.sh
el tests
pytest_v 200 -n 4 tests/test_decode_gluon.py
save
el floor
(cd scripts && timeout 200 python3 gpu_decode_floor.py 2>&1 | tail -45)
save
el variants
decode_variants glx4s3,glx8s2,glx16s2,glx16s3,glx24s2,glx32s2 8:4096:32:64,8:4096:32:16,32:4096:32:64 30
save
el ncu-gluon
PROFILE_GROUP=decode PROFILE_DECODE=gluon timeout 150 python3 scripts/gpu_profile_pairs.py 2>&1 | tail -30
save
el done
