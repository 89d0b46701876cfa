#!/usr/bin/env bash
# Session 14, call 3: a's block from registers in the 128x256 promoting Gluon GEMM (A_REGS; scripts/gpu_gemm_aregs.py),
# then the p16 B 8 ctx 4096 decode case that ran slow eager as the first case of session 13's matrix (Hq 64 first
# here, then Hq 32: is it the case or the position), then the Gluon GEMM / grouped GPU tests.
source scripts/gpu_common.sh
el aregs
timeout 300 python3 scripts/gpu_gemm_aregs.py 2>&1 | tail -24
save
el decode-p16
timeout 100 python3 -m tritonfp8 bench decode --batch 8 --context 4096 --page 16 --hq 64 --hq 32 --repeats 3 2>&1 | grep -E "^│|results" | head -12
save
el tests
pytest_v 120 -n 4 tests/test_gemm_gluon.py tests/test_grouped_gluon.py
el done
