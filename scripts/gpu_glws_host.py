"""Session 8 diagnostic: host time per eager call of the Gluon GEMM through the launch plan's Template (recorded on
the second call) against torch._scaled_mm, for precise and block-scaled shapes. host_us: the issuing loop of 200
asynchronous calls (no sync inside) divided by 200; the GPU work of the same calls is left to drain afterwards.
Writes benchmarks/results/glws-host-<date>.json (and a copy under $OUT)."""
import datetime
import json
import os
import time

import torch

import tritonfp8
from tritonfp8.gemm import gemm

E4 = torch.float8_e4m3fn
g = torch.Generator(device="cuda").manual_seed(0)
rows = []


def host_us(fn, n=200):
    fn()
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = time.perf_counter() - t
    torch.cuda.synchronize()
    return dt / n * 1e6


for M, N, K, mode in [(128, 7168, 16384, "block"), (1024, 8192, 8192, "precise"), (4096, 4096, 4096, "precise"),
                      (128, 8192, 8192, "precise")]:
    a = torch.randn(M, K, device="cuda", generator=g).to(E4)
    b = torch.randn(N, K, device="cuda", generator=g).to(E4)
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    one = torch.ones((), device="cuda")
    if mode == "block":
        sa = (torch.rand(-(-K // 128), M, device="cuda", generator=g) + 0.5).t()
        sb = torch.rand(-(-N // 128), -(-K // 128), device="cuda", generator=g) + 0.5
        ours = lambda: gemm(a, b, sa, sb, out=out)
        peer = lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb.t(), out_dtype=torch.bfloat16)
    else:
        ours = lambda: gemm(a, b, one, one, accumulate="precise", out=out)
        peer = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    from tritonfp8 import gemm as _  # noqa: F401
    import importlib
    G = importlib.import_module("tritonfp8.gemm")
    r = {"shape": f"{M}x{N}x{K}", "mode": mode}
    try:
        r["ours_host_us"] = round(host_us(ours), 1)
        plan = next(iter(p for k, p in G._PLANS.items() if k[0] == a.shape and k[4] == b.shape), None)
        r["config"] = plan.config.short() if plan else None
        r["template"] = type(next(iter(plan.templates.values()))).__name__ if plan and plan.templates else None
    except Exception as e:  # noqa: BLE001
        r["ours_error"] = f"{type(e).__name__}: {e}"
    try:
        r["peer_host_us"] = round(host_us(peer), 1)
    except Exception as e:  # noqa: BLE001
        r["peer_error"] = f"{type(e).__name__}: {e}"
    rows.append(r)
    print(r, flush=True)

res = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "gpu": torch.cuda.get_device_name(),
       "torch": torch.__version__, "triton": __import__("triton").__version__, "cuda": torch.version.cuda,
       "command": "python3 scripts/gpu_glws_host.py", "rows": rows}
name = f"glws-host-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
for d in ("benchmarks/results", os.environ.get("OUT", "")):
    if d:
        with open(os.path.join(d, name), "w") as f:
            json.dump(res, f, indent=1)
