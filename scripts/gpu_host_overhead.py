"""Host launch overhead vs kernel time of the FP8 GEMM (device diagnostic; writes JSON under $OUT and
benchmarks/results/).

For a few shapes it measures, for our public op (tritonfp8.gemm), our implementation called directly
(tritonfp8.gemm module), and torch._scaled_mm:
- host_us: wall-clock microseconds per call of the Python call alone (200 asynchronous calls, no sync inside);
- events_ms: do_bench median (CUDA events around each eager call, L2 flushed before each);
- graph_ms: the same calls replayed from a CUDA graph (harness.time_graph, L2 flushed): the kernel time.
If events_ms is well above graph_ms, the eager number is host-bound: the GPU waits for the Python launch path.
"""

import importlib
import json
import os
import time

import torch

import tritonfp8
from tritonfp8.bench import harness as H

G = importlib.import_module("tritonfp8.gemm")
SHAPES = [(16, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (16, 10240, 8192), (4096, 4096, 4096)]


def host_us(fn, n=200):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


rows = []
for (M, N, K) in SHAPES:
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    fns = {
        "public": lambda: tritonfp8.gemm(a, b, one, one, out=out),
        "impl": lambda: G.gemm(a, b, one, one, out=out),
        "cublas": lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                           use_fast_accum=True, out=out),
    }
    for name, fn in fns.items():
        h = host_us(fn)
        ev = H.time_once(fn, warmup_ms=10, rep_ms=50)
        gr = H.time_graph(fn)
        r = {"shape": f"{M}x{N}x{K}", "fn": name, "host_us": h, "events_ms": ev, "graph_ms": gr,
             "graph_tflops": 2 * M * N * K / (gr * 1e-3) / 1e12}
        rows.append(r)
        print(f"{r['shape']:>16} {name:>7}  host {h:7.1f} us   events {ev * 1e3:7.1f} us   graph {gr * 1e3:7.1f} us"
              f"   ({r['graph_tflops']:.0f} TFLOPS)", flush=True)

env = H.environment_info()
data = {"suite": "gemm-host-overhead", "command": "python scripts/gpu_host_overhead.py", "env": env, "rows": rows}
stamp = time.strftime("%Y%m%d-%H%M%S")
for d in ("benchmarks/results", os.environ.get("OUT")):
    if d:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"gemm-host-overhead-{stamp}.json"), "w") as f:
            json.dump(data, f, indent=1)

# Where the eager host time goes: cProfile of 300 calls of the implementation at the first shape.
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402

M, N, K = SHAPES[0]
a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
one = torch.ones((), device="cuda")
out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
for _ in range(5):
    G.gemm(a, b, one, one, out=out)
torch.cuda.synchronize()
pr = cProfile.Profile()
pr.enable()
for _ in range(300):
    G.gemm(a, b, one, one, out=out)
pr.disable()
torch.cuda.synchronize()
buf = io.StringIO()
pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(14)
print(buf.getvalue())
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], "gemm_host_profile.txt"), "w") as f:
        f.write(buf.getvalue())
