"""Warp-specialized GEMM schedules on the H200, one config per child process (a hang costs one timeout, not the run).

Session 1's canary (every warp-specialized config in one process) hung as a whole, so nothing was learnt about which
config hangs. Here each config runs in its own subprocess with its own timeout: it checks the result against the
fp64 reference on a partial-tile shape and on the timed shapes, then times itself interleaved with the library's
default for that mode and the cuBLAS peer (5 rounds, L2 flushed). The parent prints a table and writes JSON.

    python scripts/gpu_ws_probe.py [--out DIR] [--timeout 150] [--only LABEL,...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# label -> (mode, GemmConfig kwargs, shapes)
PRECISE_SHAPES = ["8192x8192x8192", "4096x57344x8192", "1024x10240x8192"]
BLOCK_SHAPES = ["4096x7168x16384", "8192x24576x1536", "4096x18432x7168"]
FAST_SHAPES = ["8192x8192x8192", "1024x10240x8192"]
PROBES = {
    "precise_ws_128x128_s5": ("precise", dict(block_m=128, block_n=128, block_k=128, num_warps=4, num_stages=5,
                                              schedule="tmaws"), PRECISE_SHAPES),
    "precise_wsp_128x128_s5": ("precise", dict(block_m=128, block_n=128, block_k=128, num_warps=4, num_stages=5,
                                               schedule="tmawspersistent"), PRECISE_SHAPES),
    "block_ws_128x128_s5": ("block", dict(block_m=128, block_n=128, block_k=128, num_warps=4, num_stages=5,
                                          schedule="tmaws"), BLOCK_SHAPES),
    "block_wsp_128x128_s5": ("block", dict(block_m=128, block_n=128, block_k=128, num_warps=4, num_stages=5,
                                           schedule="tmawspersistent"), BLOCK_SHAPES),
    "fast_ws_128x256_s4": ("fast", dict(block_m=128, block_n=256, block_k=128, num_warps=4, num_stages=4,
                                        schedule="tmaws"), FAST_SHAPES),
}


def child(label: str) -> None:
    import torch

    from tritonfp8._kernels.gemm_configs import GemmConfig
    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites.gemm import BlockScales, cublas_block
    from tritonfp8.gemm import error_bound, gemm
    from tritonfp8 import tune as T
    from tritonfp8.tune import Problem, cublas, parse_shapes, rel_error_gpu

    mode, kw, shapes = PROBES[label]
    first = (700, 1040, 1024)
    if os.environ.get("PROBE_SMOKE"):  # CPU smoke test of this script (interpreter): tiny shapes
        first, shapes = (100, 144, 256), ["128x256x256"]
        T._DEVICE = "cpu"
        T._TIMER = lambda fn, *a: (fn(), 1.0)[1]
    cfg = GemmConfig(**kw)
    precise = mode != "fast"

    def fns_for(p):
        fns, ref = _fns_for(p)
        if T._DEVICE == "cpu":  # no cuBLAS on CPU: the smoke test stands the default in for it
            fns["cublas"] = fns["default"]
        return fns, ref

    def _fns_for(p):
        if mode == "block":
            bs = BlockScales(p)
            return ({"variant": lambda: gemm(p.a, p.b, bs.sa, bs.sb, out=p.out, config=cfg),
                     "default": lambda: gemm(p.a, p.b, bs.sa, bs.sb, out=p.out),
                     "cublas": cublas_block(bs)}, bs.ref)
        acc = "precise" if precise else "fast"
        return ({"variant": lambda: gemm(p.a, p.b, p.sa, p.sb, accumulate=acc, out=p.out, config=cfg),
                 "default": lambda: gemm(p.a, p.b, p.sa, p.sb, accumulate=acc, out=p.out),
                 "cublas": cublas(p, fast=not precise)}, p.ref)

    t0 = time.time()
    # Partial tiles first (M, N, K not multiples of the tile): wrong masking shows here.
    for (M, N, K) in [first, *parse_shapes(";".join(shapes))]:
        p = Problem.make(M, N, K)
        fns, ref_fn = fns_for(p)
        ref = ref_fn()
        bound = error_bound(torch.bfloat16, K, "precise" if precise else "fast", tensor_core=True)
        errs = {}
        for k, fn in fns.items():
            p.out.fill_(float("nan"))
            errs[k] = rel_error_gpu(fn(), ref)
        T._sync()
        del ref
        ok = errs["variant"] <= bound
        rec = {"label": label, "mode": mode, "config": cfg.short(), "shape": f"{M}x{N}x{K}", "err": errs,
               "bound": bound, "ok": ok, "t_s": round(time.time() - t0, 1)}
        if not ok:
            print("PROBE " + json.dumps(rec), flush=True)
            return
        if (M, N, K) != first:
            times = H.bench_interleaved(fns, repeats=1 if os.environ.get("PROBE_SMOKE") else 5, timer=T._TIMER)
            med = {k: H.summarize(v).median for k, v in times.items()}
            rec.update(ms=med, rounds=times, tflops={k: H.tflops(p.flops, v) for k, v in med.items()},
                       vs_default=med["default"] / med["variant"], vs_cublas=med["cublas"] / med["variant"],
                       default_vs_cublas=med["cublas"] / med["default"])
        print("PROBE " + json.dumps(rec), flush=True)


def _write(path: str, status: dict, results: list) -> None:
    from tritonfp8.bench import harness as H

    with open(path, "w") as f:
        json.dump({"suite": "gemm-ws-probe", "command": " ".join(sys.argv), "env": H.environment_info(),
                   "status": status, "rows": results}, f, indent=1)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--timeout", type=float, default=150)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return 0
    from rich.console import Console
    from rich.table import Table

    labels = [s for s in args.only.split(",") if s] or list(PROBES)
    results, status = [], {}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"gemm-ws-probe-{time.strftime('%Y%m%d-%H%M%S')}.json")
    for label in labels:
        t0 = time.time()
        proc = subprocess.Popen([sys.executable, __file__, "--child", label], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            out, _ = proc.communicate(timeout=args.timeout)
            recs = [json.loads(l[6:]) for l in out.splitlines() if l.startswith("PROBE ")]
            results += recs
            bad = [r for r in recs if not r["ok"]]
            status[label] = ("wrong result" if bad else "ok" if proc.returncode == 0 else
                             f"exit {proc.returncode}: {out[-400:]}")
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            results += [json.loads(l[6:]) for l in out.splitlines() if l.startswith("PROBE ")]
            status[label] = f"TIMEOUT after {args.timeout:.0f} s (hang?)"
        print(f"{label}: {status[label]} ({time.time() - t0:.0f} s)", flush=True)
        _write(path, status, results)  # after every config: an outer timeout keeps what was learnt
    t = Table(title="warp-specialized GEMM probe (x = time ratio, > 1: the variant is faster)")
    for c in ("probe", "shape", "variant TF", "default TF", "cuBLAS TF", "x default", "x cuBLAS", "default x cuBLAS",
              "err / cuBLAS err"):
        t.add_column(c)
    for r in results:
        if "ms" not in r:
            continue
        tf = r["tflops"]
        t.add_row(r["label"], r["shape"], f"{tf['variant']:.0f}", f"{tf['default']:.0f}", f"{tf['cublas']:.0f}",
                  f"{r['vs_default']:.3f}", f"{r['vs_cublas']:.3f}", f"{r['default_vs_cublas']:.3f}",
                  f"{r['err']['variant'] / r['err']['cublas']:.2f}")
    Console(width=160).print(t)
    print(json.dumps(status, indent=1))
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
