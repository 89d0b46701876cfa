"""Prepared in session 8 (not yet run): the Gluon FP8 attention forward (``_kernels/attention_gluon.py``) against the
library's Triton forward kernel (``attention.kernel_only_fn``: the kernel alone, inputs quantized / transposed once)
on dense non-causal problems, interleaved rounds of do_bench medians, plus a correctness check of each output
against the other (Frobenius, relative). Writes benchmarks/results/attn-glws-<date>.json (copy under $OUT)."""
import datetime
import json
import math
import os
import statistics

import torch
import triton

from tritonfp8._kernels import attention_gluon as AG
from tritonfp8.attention import kernel_only_fn

FP8 = torch.float8_e4m3fn
ROUNDS = 3
rows = []
for B, S, H, D in [(4, 8192, 16, 128), (4, 8192, 16, 64), (16, 1024, 16, 128)]:
    g = torch.Generator(device="cuda").manual_seed(S + D)
    q8, k8, v8 = (torch.randn(B, S, H, D, device="cuda", generator=g).to(FP8) for _ in range(3))
    ones = torch.ones(B, H, device="cuda")
    vt = AG.vt_layout(v8)
    vtp = AG.vt_layout(v8, permute_keys=True)
    out = torch.empty(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    outp = torch.empty_like(out)
    scale = 1 / math.sqrt(D)
    fns = {"glws": lambda: AG.launch(q8, k8, vt, out, ones, ones, ones, scale),
           "glws_permp": lambda: AG.launch(q8, k8, vtp, outp, ones, ones, ones, scale, permute_p=True),
           "triton": kernel_only_fn(q8, k8, v8, q_descale=ones, k_descale=ones, v_descale=ones)}
    ref = fns["triton"]().float()
    fns["glws"]()
    fns["glws_permp"]()
    torch.cuda.synchronize()
    rel = ((out.float() - ref).norm() / ref.norm()).item()
    relp = ((outp.float() - ref).norm() / ref.norm()).item()
    t = {k: [] for k in fns}
    for _ in range(ROUNDS):
        for k, f in fns.items():
            t[k].append(triton.testing.do_bench(f, warmup=25, rep=100))
    med = {k: statistics.median(v) for k, v in t.items()}
    flops = 4 * B * H * S * S * D
    r = {"shape": f"B{B} S{S} H{H} D{D}", "rel_glws_vs_triton": rel, "rel_permp_vs_triton": relp,
         "rounds_ms": t, "median_ms": med,
         "tflops": {k: flops / v / 1e9 for k, v in med.items()}, "glws_vs_triton": med["triton"] / med["glws"]}
    rows.append(r)
    print(r["shape"], {k: round(v) for k, v in r["tflops"].items()}, round(r["glws_vs_triton"], 3), f"rel {rel:.2e}",
          flush=True)
res = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "gpu": torch.cuda.get_device_name(),
       "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
       "command": "python3 scripts/gpu_attn_glws.py", "rounds": ROUNDS, "rows": rows}
name = f"attn-glws-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
for d in ("benchmarks/results", os.environ.get("OUT", "")):
    if d:
        with open(os.path.join(d, name), "w") as f:
            json.dump(res, f, indent=1)
