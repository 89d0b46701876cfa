#!/usr/bin/env bash
# Session 8, device call 3: the Gluon kernel's launches recorded in the launch plans (gemm_gluon.Template: a repeat
# call rebuilds only the runtime arguments). Call 2 found every glws variant at M = 128 at 100-190 us per call, i.e.
# host-bound. Again: issue 3's M = 128 shapes (fast, precise) and 128x7168x16384 (block) with glws without and with
# split-K, and the GPU tests of the repeat and split paths.
source scripts/gpu_common.sh
el tests
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py -k "repeat or sk or n256-block" 2>&1 | tail -3
V=glwss4,glwsn256s3,glwssk2,glwssk3,glwssk4,glwsn256sk2,glwsn256sk4,glwsfast128
el bench-m128
timeout 200 python3 -m tritonfp8 bench gemm --modes fast,precise --variants $V --no-bf16 --no-name-ab \
  --shapes "128x10240x8192;128x8192x8192;128x57344x8192;128x8192x28672" > $OUT/bench_m128.log 2>&1
grep -E "^┃ mode|^│ (fast|precise)|results|Error|error" $OUT/bench_m128.log | cut -c1-160 | tail -22
save
el bench-block-m128
timeout 80 python3 -m tritonfp8 bench gemm --scaling block --variants $V --no-bf16 --no-name-ab \
  --shapes "128x7168x16384;512x7168x16384" > $OUT/bench_block_m128.log 2>&1
grep -E "^┃ mode|^│ block|results|Error|error" $OUT/bench_block_m128.log | cut -c1-160 | tail -12
rm -f benchmarks/results/*.png; save
el done
