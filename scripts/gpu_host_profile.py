"""Host time per call of the public ops, where the GPU work is small enough that the host is the bound: calls
issued back to back with no sync in between (time.perf_counter over N calls, one sync at the end), then the same
calls under cProfile (top functions by own time). Session 11: attention()'s public call measured ~420-460 us per
call with the fast launch at B1 H16 S1024 causal, and kernel_only_fn ~200 us, for a kernel of a few us
(attn-launch-20261202-064707.json). Prints a table and writes JSON + the profiles under $OUT."""

from __future__ import annotations

import cProfile
import importlib
import io
import json
import os
import pstats
import time

import torch
import triton

import tritonfp8
A = importlib.import_module("tritonfp8.attention")  # the module (tritonfp8.attention is also the function)


def cases():
    dev = "cuda"
    out = {}
    q, k, v = (torch.randn(1, 256, 16, 128, device=dev).to(torch.float8_e4m3fn) for _ in range(3))
    one = torch.ones((), device=dev)
    kw = dict(causal=True, q_descale=one, k_descale=one, v_descale=one)
    out["attention B1 H16 S256 hd128 causal (public)"] = lambda: A.attention(q, k, v, **kw)
    def fast(fn):
        def f():
            prev = A._FAST_FWD.set(True)
            try:
                return fn()
            finally:
                A._FAST_FWD.set(prev)
        return f

    out["attention (public, fast launch)"] = fast(lambda: A.attention(q, k, v, **kw))
    out["attention kernel_only_fn (same)"] = A.kernel_only_fn(q, k, v, **kw)
    q2, k2, v2 = (torch.randn(1, 256, 8, 256, device=dev).to(torch.float8_e4m3fn) for _ in range(3))
    out["attention B1 H8 S256 hd256 causal (public, Gluon)"] = lambda: A.attention(q2, k2, v2, **kw)
    qb = torch.randn(1, 256, 16, 128, device=dev, dtype=torch.bfloat16)
    out["attention bf16 in (public, fused quantize)"] = lambda: A.attention(qb, qb, qb, causal=True)
    a = torch.randn(16, 8192, device=dev).to(torch.float8_e4m3fn)
    b = torch.randn(8192, 8192, device=dev).to(torch.float8_e4m3fn)
    out["gemm 16x8192x8192 per-tensor fast"] = lambda: tritonfp8.gemm(a, b, one, one)
    out["cuBLAS _scaled_mm same"] = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                                              out_dtype=torch.bfloat16, use_fast_accum=True)
    return out


def main():
    rows, profiles = [], {}
    for name, fn in cases().items():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        per = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(200):
                fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            per.append((t1 - t0) / 200 * 1e6)
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(200):
            fn()
        pr.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
        profiles[name] = s.getvalue()
        rows.append({"case": name, "host_us_per_call": sorted(per)[2], "rounds": per})
        print(f"{name:52s} host {sorted(per)[2]:7.1f} us/call  rounds {[round(x, 1) for x in per]}")
    outdir = os.environ.get("OUT") or "benchmarks/results"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(outdir, f"host-profile-{stamp}.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                   "rows": rows, "profiles": profiles}, f, indent=1)
    for name, p in profiles.items():
        print("=" * 20, name)
        print("\n".join(p.splitlines()[7:24]))


if __name__ == "__main__":
    main()
