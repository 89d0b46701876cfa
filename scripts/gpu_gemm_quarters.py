"""Issues 3 / 4, session 14: the 128 x 256 promoting Gluon GEMM in four 64-wide quarters with two products in flight
(``gemm_gluon.QUARTERS``) against the two 128-wide halves it runs now.

Why: in the halves form each consumer warp group's chain is wgmma -> wait -> promotion (64 FADD / FFMA) -> next
wgmma, the product registers reused, so the group's own promotion never overlaps its own wgmma; only the other
group's wgmmas cover it (precise: 86.6% tensor-pipe busy, block 75.5%, ncu session 11). With quarters (32
registers per product, two of them) the next quarter runs while the previous one is promoted, in the same 192
registers. Session 14 call 3 ruled out shared-memory bandwidth (a from registers, fewer operand reads, ran
0.955 / 0.974x: ``gemm-quarters-20261202-182232.json``): the chain's latency is what is left.

Times, interleaved over rounds (eager do_bench, as the bench suites), QUARTERS off / on and the cuBLAS peer
(precise: _scaled_mm exact; block: _scaled_mm blockwise), plus the grouped G 8 x 1024 calls; compares the two
variants' outputs (bit-identical expected: the same 128-K products per element) and checks no NaN. Shapes whose
plan is not the 128x256 Gluon kernel run the same kernel in both variants (the run's noise). Prints a table,
writes benchmarks/results/gemm-quarters-<stamp>.json."""

from __future__ import annotations

import importlib
import json
import math
import statistics
import time

import torch
import triton

import tritonfp8
from tritonfp8.bench import harness as H
from tritonfp8._kernels import gemm as kgemm
from tritonfp8._kernels import gemm_gluon as gg
from tritonfp8.bench.suites.gemm import BlockScales, cublas_block
from tritonfp8.tune import Problem, cublas

G = importlib.import_module("tritonfp8.gemm")  # the module (the package's ``gemm`` is the function)

ROUNDS = 3
SHAPES = [(4096, 7168, 16384), (8192, 7168, 16384), (4096, 24576, 1536), (4096, 18432, 7168), (8192, 18432, 7168),
          (4096, 4096, 7168), (4096, 7168, 2048), (4096, 10240, 8192), (8192, 8192, 8192), (1024, 10240, 8192)]


DEFAULT = gg.QUARTERS  # the library default ("block"), restored after each case


def _set(flag):
    gg.QUARTERS = flag
    G._PLANS.clear()
    kgemm._TEMPLATES.clear()


def main():
    rows = []
    for M, N, K in SHAPES:
        p = Problem.make(M, N, K)
        bs = BlockScales(p)
        for mode in ("precise", "block"):
            outs = {v: torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for v in ("off", "on")}
            if mode == "block":
                args = (p.a, p.b, bs.sa, bs.sb)
                peer = cublas_block(bs)
            else:
                args = (p.a, p.b, p.sa, p.sb)
                peer = cublas(p, fast=False)

            def ours(v, flag):
                def fn():
                    if gg.QUARTERS != flag:
                        _set(flag)
                    return tritonfp8.gemm(*args, out=outs[v], accumulate="precise")
                return fn

            fns = {"off": ours("off", False), "on": ours("on", True), "cublas": peer}
            for fn in fns.values():
                fn()
            torch.cuda.synchronize()
            cfg = next(iter(G._PLANS.values())).config.short() if G._PLANS else "?"
            same = torch.equal(outs["off"], outs["on"]) and not outs["on"].isnan().any().item()
            diff = ((outs["off"].float() - outs["on"].float()).abs().max() / outs["off"].float().abs().max()).item()
            res = {k: [] for k in fns}
            for _ in range(ROUNDS):
                for k, fn in fns.items():
                    res[k].append(triton.testing.do_bench(fn))
            _set(DEFAULT)
            flops = 2.0 * M * N * K
            ms = {k: statistics.median(v) for k, v in res.items()}
            row = {"shape": f"{M}x{N}x{K}", "mode": mode, "config_on": cfg, "bit_identical": same, "max_rel_diff": diff,
                   **{f"{k}_ms": v for k, v in ms.items()}, **{f"{k}_tflops": flops / v / 1e9 for k, v in ms.items()},
                   "on_over_off": ms["off"] / ms["on"], "off_vs_cublas": ms["cublas"] / ms["off"],
                   "on_vs_cublas": ms["cublas"] / ms["on"], "rounds": res}
            rows.append(row)
            print(f"{row['shape']:18s} {mode:8s} {cfg:34s} same={same} off {row['off_tflops']:.0f} on "
                  f"{row['on_tflops']:.0f} cublas {row['cublas_tflops']:.0f} TF  on/off {row['on_over_off']:.3f}",
                  flush=True)
    # Grouped G 8 x 1024 (issue 4's grouped target: >= 0.9x one dense per-tensor cuBLAS GEMM of the same total
    # shape, the peer here).
    from tritonfp8.bench.suites import grouped as gsuite
    for scaling in ("block", "tensor"):
        for N, K in ((4096, 7168), (7168, 2048)):
            x = gsuite.make_inputs(8, N, K, [1024] * 8, scaling, "cuda")
            outs = {v: torch.empty(x.M, N, device="cuda", dtype=torch.bfloat16) for v in ("off", "on")}
            one = torch.ones((), device="cuda")
            bt = x.b[0].t()

            def grouped(v, flag):
                def fn():
                    if gg.QUARTERS != flag:
                        _set(flag)
                    return tritonfp8.grouped_gemm(x.a, x.b, x.sa, x.sb, m_sizes=x.m_sizes, out=outs[v],
                                                  accumulate="precise", check=False)
                return fn

            fns = {"off": grouped("off", False), "on": grouped("on", True),
                   "cublas": lambda: torch._scaled_mm(x.a, bt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                      use_fast_accum=True)}
            for fn in fns.values():
                fn()
            torch.cuda.synchronize()
            same = torch.equal(outs["off"], outs["on"]) and not outs["on"].isnan().any().item()
            res = {k: [] for k in fns}
            for _ in range(ROUNDS):
                for k, fn in fns.items():
                    res[k].append(triton.testing.do_bench(fn))
            _set(DEFAULT)
            flops = 2.0 * x.M * N * K
            ms = {k: statistics.median(v) for k, v in res.items()}
            row = {"shape": f"G8x1024 {N}x{K}", "mode": f"grouped-{scaling}", "config_on": "grouped", "bit_identical": same,
                   **{f"{k}_ms": v for k, v in ms.items()}, **{f"{k}_tflops": flops / v / 1e9 for k, v in ms.items()},
                   "on_over_off": ms["off"] / ms["on"], "off_vs_cublas": ms["cublas"] / ms["off"],
                   "on_vs_cublas": ms["cublas"] / ms["on"], "rounds": res}
            rows.append(row)
            print(f"{row['shape']:18s} {row['mode']:8s} same={same} off {row['off_tflops']:.0f} on "
                  f"{row['on_tflops']:.0f} dense per-tensor cuBLAS {row['cublas_tflops']:.0f} TF  on/off "
                  f"{row['on_over_off']:.3f}", flush=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    env = {**H.environment_info(), "command": H.command_line()}  # GPU, versions, date
    geo = {}
    for mode in ("precise", "block", "grouped-block", "grouped-tensor"):
        for k in ("on_over_off", "off_vs_cublas", "on_vs_cublas"):
            xs = [r[k] for r in rows if r["mode"] == mode]
            geo[f"{mode}_{k}"] = math.exp(sum(map(math.log, xs)) / len(xs))
    with open(f"benchmarks/results/gemm-quarters-{stamp}.json", "w") as f:
        json.dump({"env": env, "rows": rows, "geomeans": geo}, f, indent=1)
    print(f"{'shape':18s} {'mode':14s} {'off TF':>7s} {'on TF':>7s} {'cuBLAS':>7s} {'on/off':>7s} {'off/cub':>7s} {'on/cub':>7s}")
    for r in rows:
        print(f"{r['shape']:18s} {r['mode']:14s} {r['off_tflops']:7.0f} {r['on_tflops']:7.0f} {r['cublas_tflops']:7.0f} "
              f"{r['on_over_off']:7.3f} {r['off_vs_cublas']:7.3f} {r['on_vs_cublas']:7.3f}")
    print("geomeans", {k: round(v, 3) for k, v in geo.items()})


if __name__ == "__main__":
    main()
