#!/usr/bin/env bash
# Device call 1: quantization + decode on the H200 (GPU tests, then bandwidth suites). Results -> benchmarks/results.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p benchmarks/results
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)"
python3 -m tritonfp8 doctor 2>&1 | tail -30
timeout 200 python3 -m pytest -q -p no:cacheprovider --timeout=180 tests/test_quantize.py tests/test_decode.py tests/test_decode_gpu.py 2>&1 | tee $OUT/tests1.log | tail -15
timeout 120 python3 -m tritonfp8 bench quant 2>&1 | tee $OUT/bench_quant.log | tail -30
timeout 200 python3 -m tritonfp8 bench decode --variants 2>&1 | tee $OUT/bench_decode.log | tail -45
tar czf $OUT/results1.tgz benchmarks/results
