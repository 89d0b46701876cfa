#!/usr/bin/env bash
# Session 11, call 6: the GPU suites that call attention() with the fast path now on by default (ops / torch.compile,
# fused QKV, the transformers integration), and the launch-plan tests again.
source scripts/gpu_common.sh
nx=""; python3 -c "import xdist" 2>/dev/null && nx="-n 4"
el tests
pytest_v 300 $nx tests/test_attention_launch.py tests/test_ops.py tests/test_qkv.py tests/test_transformers.py tests/test_nn.py
el done
