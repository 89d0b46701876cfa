#!/usr/bin/env bash
# Session 17, call 6: the fixes after calls 1 and 5 on the GPU: the launch cache with the GEMM's y2 descriptor
# passed by keyword (tests/test_launch.py), and the profiler-name test on the new hd128 default.
source scripts/gpu_common.sh
el tests
pytest_v 150 -n 4 tests/test_launch.py tests/test_attention_gpu.py::test_kernel_names_reach_the_profiler
el done
