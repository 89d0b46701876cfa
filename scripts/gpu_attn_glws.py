"""Prepared in session 8 (not yet run): the Gluon FP8 attention forward (``_kernels/attention_gluon.py``, plain and
PERMUTE_P) against the library's Triton forward kernel (``attention.kernel_only_fn``: the kernel alone, inputs
quantized / transposed once) on dense non-causal problems: interleaved rounds (harness.bench_interleaved), each
output's relative Frobenius difference from the Triton kernel's. Writes benchmarks/results/attn-glws-<gpu>-<date>.json
(harness.ResultsWriter; scripts/gpu_common.sh's ``save`` copies it under $OUT)."""
import math

import torch

from tritonfp8._kernels import attention_gluon as AG
from tritonfp8.attention import kernel_only_fn
from tritonfp8.bench import harness as H

FP8 = torch.float8_e4m3fn
ROUNDS = 3
rows = []
for B, S, Hh, D in [(4, 8192, 16, 128), (4, 8192, 16, 64), (16, 1024, 16, 128)]:
    g = torch.Generator(device="cuda").manual_seed(S + D)
    q8, k8, v8 = (torch.randn(B, S, Hh, D, device="cuda", generator=g).to(FP8) for _ in range(3))
    ones = torch.ones(B, Hh, device="cuda")
    vts = {False: AG.vt_layout(v8), True: AG.vt_layout(v8, permute_keys=True)}
    outs = {p: torch.empty(B, S, Hh, D, device="cuda", dtype=torch.bfloat16) for p in vts}
    scale = 1 / math.sqrt(D)
    fns = {f"glws{'_permp' if p else ''}": (lambda p=p: AG.launch(q8, k8, vts[p], outs[p], ones, ones, ones, scale,
                                                                   permute_p=p)) for p in vts}
    fns["triton"] = kernel_only_fn(q8, k8, v8, q_descale=ones, k_descale=ones, v_descale=ones)
    ref = fns["triton"]().float()
    for p in vts:
        fns[f"glws{'_permp' if p else ''}"]()
    torch.cuda.synchronize()
    rel = {f"glws{'_permp' if p else ''}": H.rel_error(outs[p], ref) for p in vts}
    t = H.bench_interleaved(fns, repeats=ROUNDS)
    med = {k: H.summarize(v).median for k, v in t.items()}
    flops = 4 * B * Hh * S * S * D
    r = {"shape": f"B{B} S{S} H{Hh} D{D}", "rel_vs_triton": rel, "rounds_ms": t, "median_ms": med,
         "tflops": {k: H.tflops(flops, v) for k, v in med.items()},
         "vs_triton": {k: H.compare(t[k], t["triton"]).ratio for k in t if k != "triton"}}
    rows.append(r)
    print(r["shape"], {k: round(v) for k, v in r["tflops"].items()}, r["vs_triton"], rel, flush=True)
print("wrote", H.ResultsWriter("attn-glws").write(rows, config={"rounds": ROUNDS}))
