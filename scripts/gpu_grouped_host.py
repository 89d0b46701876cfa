"""Is the grouped GEMM at G = 8 (a ~0.5 ms call) host-bound? One case (issue 4's G8 x 1024 rows, block scales and
precise per-group scales, 4096x7168 and 7168x2048): our grouped call and our dense GEMM of the same total shape,
each timed three ways, interleaved over rounds: do_bench (eager, as the bench suite), do_bench_cudagraph (the
kernels replayed from a CUDA graph: no host time), and the host's wall time per call over a burst of 50 calls
without a sync in between (perf_counter; above the eager time when the host is the bound). Prints a table, writes
benchmarks/results/grouped-host-<stamp>.json."""

from __future__ import annotations

import json
import statistics
import time

import torch
import triton

import tritonfp8
from tritonfp8.bench.suites import grouped as suite

ROUNDS = 3


def main():
    rows = []
    for scaling, acc in (("block", "precise"), ("tensor", "precise")):
        for N, K in ((4096, 7168), (7168, 2048)):
            x = suite.make_inputs(8, N, K, [1024] * 8, scaling, "cuda")
            out = torch.empty(x.M, N, device="cuda", dtype=torch.bfloat16)
            dout = torch.empty_like(out)
            if scaling == "block":
                od = (x.sa, x.sb[0])
            else:
                od = (torch.ones((), device="cuda"), torch.ones((), device="cuda"))
            fns = {
                "grouped": lambda: tritonfp8.grouped_gemm(x.a, x.b, x.sa, x.sb, m_sizes=x.m_sizes, out=out,
                                                          accumulate=acc, check=False),
                "dense": lambda: tritonfp8.gemm(x.a, x.b[0], *od, out=dout, accumulate=acc),
            }
            res = {k: {"eager": [], "graph": [], "host": []} for k in fns}
            for fn in fns.values():
                fn()
            torch.cuda.synchronize()
            for _ in range(ROUNDS):
                for k, fn in fns.items():
                    res[k]["eager"].append(triton.testing.do_bench(fn))
                    res[k]["graph"].append(triton.testing.do_bench_cudagraph(fn))
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(50):
                        fn()
                    t1 = time.perf_counter()
                    torch.cuda.synchronize()
                    res[k]["host"].append((t1 - t0) / 50 * 1e3)
            flops = 2.0 * x.M * N * K
            row = {"case": f"G8x1024 {N}x{K} {scaling} {acc}"}
            for k in fns:
                for m in ("eager", "graph", "host"):
                    row[f"{k}_{m}_ms"] = statistics.median(res[k][m])
                row[f"{k}_graph_tflops"] = flops / row[f"{k}_graph_ms"] / 1e9
                row[f"{k}_rounds"] = res[k]
            rows.append(row)
    print(f"{'case':36s} {'grp eager':>9s} {'grp graph':>9s} {'grp host':>9s} {'dns eager':>9s} {'dns graph':>9s} "
          f"{'dns host':>9s}  graph TF g/d")
    for r in rows:
        print(f"{r['case']:36s} {r['grouped_eager_ms']:9.4f} {r['grouped_graph_ms']:9.4f} {r['grouped_host_ms']:9.4f} "
              f"{r['dense_eager_ms']:9.4f} {r['dense_graph_ms']:9.4f} {r['dense_host_ms']:9.4f}  "
              f"{r['grouped_graph_tflops']:.0f}/{r['dense_graph_tflops']:.0f}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "cuda": torch.version.cuda, "date": stamp, "command": "python3 scripts/gpu_grouped_host.py"}
    with open(f"benchmarks/results/grouped-host-{stamp}.json", "w") as f:
        json.dump({"env": env, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
