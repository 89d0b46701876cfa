#!/usr/bin/env bash
# Session 12 (prepared), run as session 13 call 1: grouped Gluon kernel with a's block scales loaded one K block ahead in the 128x256 loop
# (call 1: 1.32-1.48x the Triton grouped kernel, 0.88-1.04x our dense block GEMM); grouped fast accumulation on the
# Gluon kernel (--ours-glws) vs the Triton kernel it uses by default. GPU tests of the grouped paths first.
# Prepared in session 12, not run there (no device): the prefetch is kept as a patch until it has passed the GPU tests.
patch -p1 < scripts/prepared/s12-sa-prefetch.diff || exit 1
source scripts/gpu_common.sh
el tests
pytest_v 170 -n 4 tests/test_grouped_gluon.py tests/test_grouped.py tests/test_bench_grouped.py
el bench-block
timeout 170 python3 -m tritonfp8 bench grouped --scaling block --vs-triton --groups 8,64 --dists uniform1024,uneven 2>&1 | grep -E "^│ G|results"
save
el bench-fast-glws
timeout 130 python3 -m tritonfp8 bench grouped --scaling tensor --ours-glws --vs-triton --groups 8,64 --dists uniform1024,uneven 2>&1 | grep -E "^│ G|results|target"
save
el host-vs-graph
timeout 120 python3 scripts/gpu_grouped_host.py 2>&1 | tail -6
save
el done
