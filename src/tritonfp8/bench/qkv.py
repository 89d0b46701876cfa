"""Fused QKV projection vs the unfused path, timed interleaved on the GPU (a standalone script, not a bench suite).

    python -m tritonfp8.bench.qkv [--shapes 1x4096,8x2048] [--model llama8b|llama70b] [--repeats 5]

Per (batch, seqlen) it times, in one interleaved run (:func:`tritonfp8.bench.harness.bench_interleaved`):

- ``fused``: :func:`tritonfp8.qkv_projection` (one GEMM, E4M3 q/k/v + static per-head descales out);
- ``fused+attn``: the same plus :func:`tritonfp8.attention` (causal) on its outputs;
- ``unfused``: :func:`tritonfp8.gemm` to bf16, then bf16 q/k/v views (what FP8Linear layers give);
- ``unfused+attn``: the same plus :func:`tritonfp8.attention` on the bf16 q/k/v (its fused per-head amax +
  quantize passes run inside), the path the fused op replaces;
- ``gemm_fp32+quant``: :func:`tritonfp8.gemm` to fp32 then ``quantize_qkv_torch`` (the bit-exact reference; the
  fused output is checked equal to it before timing).

Prints one JSON line per shape: median ms per variant and the speed-up of fused+attn over unfused+attn.
"""

from __future__ import annotations

import argparse
import json

import torch

MODELS = {  # hidden, Hq, Hkv, D
    "llama8b": (4096, 32, 8, 128),
    "llama70b": (8192, 64, 8, 128),
}


def _case(b: int, s: int, hidden: int, hq: int, hkv: int, d: int, repeats: int) -> dict:
    import tritonfp8
    from tritonfp8.bench.harness import bench_interleaved, summarize
    from tritonfp8.qkv import quantize_qkv_torch

    dev = "cuda"
    e4 = torch.float8_e4m3fn
    n = (hq + 2 * hkv) * d
    x = torch.randn(b, s, hidden, device=dev).to(e4)
    w = (torch.randn(n, hidden, device=dev) * 0.05).to(e4)
    sx = torch.tensor(1.0, device=dev)
    sw = torch.full((n, 1), 0.02, device=dev)
    c = tritonfp8.gemm(x, w, sx, sw, out_dtype=torch.float32)
    amax = [p.abs().reshape(b * s, hkv, -1).amax(dim=(0, 2)) for p in c.split([hq * d, hkv * d, hkv * d], -1)]
    qs, ks, vs = (a / 448 for a in amax)
    kw = dict(num_heads=hq, num_kv_heads=hkv, head_dim=d, q_scale=qs, k_scale=ks, v_scale=vs)
    r = tritonfp8.qkv_projection(x, w, sx, sw, **kw)
    ref = quantize_qkv_torch(c, hq, hkv, d, qs, ks, vs)
    exact = all(torch.equal(a.view(torch.uint8), bb.view(torch.uint8)) for a, bb in zip(r[:3], ref))

    def fused():
        return tritonfp8.qkv_projection(x, w, sx, sw, **kw)

    def fused_attn():
        p = fused()
        return tritonfp8.attention(p.q, p.k, p.v, causal=True, q_descale=p.q_descale, k_descale=p.k_descale,
                                   v_descale=p.v_descale)

    def unfused():
        y = tritonfp8.gemm(x, w, sx, sw, out_dtype=torch.bfloat16)
        q, k, v = y.split([hq * d, hkv * d, hkv * d], -1)
        return q.reshape(b, s, hq, d), k.reshape(b, s, hkv, d), v.reshape(b, s, hkv, d)

    def unfused_attn():
        q, k, v = unfused()
        return tritonfp8.attention(q, k, v, causal=True)

    def reference():
        return quantize_qkv_torch(tritonfp8.gemm(x, w, sx, sw, out_dtype=torch.float32), hq, hkv, d, qs, ks, vs)

    fns = {"fused": fused, "fused+attn": fused_attn, "unfused": unfused, "unfused+attn": unfused_attn,
           "gemm_fp32+quant": reference}
    times = bench_interleaved(fns, repeats=repeats)
    ms = {k: summarize(v).median for k, v in times.items()}
    return {"shape": f"{b}x{s}", "hidden": hidden, "heads": [hq, hkv, d], "exact_vs_reference": exact, "ms": ms,
            "speedup_fused_attn": ms["unfused+attn"] / ms["fused+attn"],
            "speedup_projection_vs_gemm_fp32_quant": ms["gemm_fp32+quant"] / ms["fused"]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tritonfp8.bench.qkv", description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="1x4096,4x2048,1x512", help="BxS list, e.g. 1x4096,8x2048")
    ap.add_argument("--model", default="llama8b", choices=sorted(MODELS))
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("python -m tritonfp8.bench.qkv: needs a CUDA GPU (Hopper)")
    hidden, hq, hkv, d = MODELS[a.model]
    for sh in a.shapes.split(","):
        b, s = (int(t) for t in sh.lower().split("x"))
        print(json.dumps(_case(b, s, hidden, hq, hkv, d, a.repeats)), flush=True)


if __name__ == "__main__":
    main()
