"""Host cost of attention()'s public call with and without the fast path (attention._FAST_FWD: launch plans
replayed through _launch since session 11), interleaved, and the kernel alone (kernel_only_fn) for reference;
E4M3 inputs, hd128 and the hd256 Gluon default. Session 10 prepared it, session 11 call 1 ran it before plans.
Prints a table and writes JSON under $OUT (or benchmarks/results/)."""

from __future__ import annotations

import importlib
import json
import os
import time

import torch
import triton
import triton.testing

A = importlib.import_module("tritonfp8.attention")


def main():
    rows = []
    for (b, h, s, causal, d) in [(8, 16, 2048, False, 128), (8, 16, 2048, True, 128), (2, 16, 8192, False, 128),
                                 (1, 16, 1024, True, 128), (4, 8, 2048, True, 256), (1, 16, 256, True, 128)]:
        q, k, v = (torch.randn(b, s, h, d, device="cuda").to(torch.float8_e4m3fn) for _ in range(3))
        one = torch.ones((), device="cuda")
        kw = dict(causal=causal, q_descale=one, k_descale=one, v_descale=one)
        kern = A.kernel_only_fn(q, k, v, **kw)

        def public(on):
            def f():
                prev = A._FAST_FWD.set(on)
                try:
                    return A.attention(q, k, v, **kw)
                finally:
                    A._FAST_FWD.set(prev)
            return f

        fns = {"kernel": kern, "public_triton_dispatch": public(False), "public_fast_launch": public(True)}
        for f in fns.values():
            f()
        med = {n: [] for n in fns}
        for _ in range(5):  # interleaved rounds
            for n, f in fns.items():
                med[n].append(triton.testing.do_bench(f, warmup=10, rep=50, return_mode="median"))
        r = {"case": f"B{b} H{h} S{s} hd{d} {'causal' if causal else 'dense'}",
             **{n: sorted(v)[len(v) // 2] for n, v in med.items()}, "rounds": med}
        rows.append(r)
        print(f"{r['case']:34s} kernel {r['kernel'] * 1e3:7.1f} us  public {r['public_triton_dispatch'] * 1e3:7.1f} us"
              f"  public+fast {r['public_fast_launch'] * 1e3:7.1f} us")
    out = os.environ.get("OUT") or "benchmarks/results"
    path = os.path.join(out, f"attn-launch-{time.strftime('%Y%m%d-%H%M%S')}.json")
    with open(path, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "triton": triton.__version__, "rows": rows}, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
