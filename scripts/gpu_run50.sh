#!/usr/bin/env bash
# Session 8, device call 2: split-K on the Gluon kernel for the few-tile shapes (M = 128: 56-448 tiles on 132 SMs).
# GPU tests of the Gluon kernel (incl. split-K cases), then issue 3's M = 128 shapes in fast and precise and issue 4's
# 128x7168x16384 with split variants (128x128: glwssk2/3/4/8; 128x256: glwsn256sk2/3/4) next to the defaults.
source scripts/gpu_common.sh
el tests
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_gluon.py 2>&1 | tail -4
V=glwssk2,glwssk3,glwssk4,glwssk8,glwsn256sk2,glwsn256sk3,glwsn256sk4,glwsn256s3
el bench-m128
timeout 230 python3 -m tritonfp8 bench gemm --modes fast,precise --variants $V --no-bf16 --no-name-ab \
  --shapes "128x10240x8192;128x8192x8192;128x57344x8192;128x8192x28672" > $OUT/bench_m128.log 2>&1
grep -E "^┃ mode|^│ (fast|precise)|results|Error|error" $OUT/bench_m128.log | cut -c1-160 | tail -22
save
el bench-block-m128
timeout 90 python3 -m tritonfp8 bench gemm --scaling block --variants $V --no-bf16 --no-name-ab \
  --shapes "128x7168x16384;256x7168x16384" > $OUT/bench_block_m128.log 2>&1
grep -E "^┃ mode|^│ block|results|Error|error" $OUT/bench_block_m128.log | cut -c1-160 | tail -12
rm -f benchmarks/results/*.png; save
el done
