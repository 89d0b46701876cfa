#!/usr/bin/env bash
# Device call 2: GEMM (tune quick -> table, bench with schedule variants) and attention (bench with variants), then
# the GPU tests of both. Each step has its own time limit so the call ends inside the device tool's 10 minutes.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
python3 -c "import cudnn; print('cudnn frontend', cudnn.__version__)" 2>&1 | tail -1
mkdir -p benchmarks/results
T0=$(date +%s)
timeout 150 python3 -m tritonfp8 tune gemm --quick --out $OUT/gemm_h200.json 2>&1 | tee $OUT/tune.log | tail -25
[ -f $OUT/gemm_h200.json ] && cp $OUT/gemm_h200.json src/tritonfp8/configs/gemm_h200.json
timeout 110 python3 -m tritonfp8 bench gemm --quick --variants ws,wspersistent,nonpersistent,tile128 2>&1 | tee $OUT/bench_gemm.log | tail -30
timeout 100 python3 -m tritonfp8 bench attention --quick 2>&1 | tee $OUT/bench_attn.log | tail -30
echo "elapsed $(( $(date +%s) - T0 ))"
timeout 90 python3 -m pytest -q -x -p no:cacheprovider --timeout=80 tests/test_gemm_gpu.py 2>&1 | tee $OUT/test_gemm_gpu.log | tail -6
timeout 90 python3 -m pytest -q -p no:cacheprovider --timeout=80 tests/test_attention_gpu.py 2>&1 | tee $OUT/test_attn_gpu.log | tail -8
tar czf $OUT/results2.tgz benchmarks/results src/tritonfp8/configs 2>/dev/null
echo "elapsed $(( $(date +%s) - T0 ))"
