"""The Gluon FP8 attention forward (``AttnConfig(kernel="glws")``: serial and overlapped forms) against the library's
Triton forward kernel, both through ``attention.kernel_only_fn`` (the kernel alone, inputs prepared once), and cuDNN
FP8 (cudnn-frontend ``sdpa_fp8``, FP8 output, as ``bench attention``) on the issue's dense problems (one causal):
interleaved rounds (harness.bench_interleaved); each output's relative Frobenius error against the fp32 reference
of the dequantized inputs on two heads of batch 0. Writes benchmarks/results/attn-glws-<gpu>-<date>.json.
(Session 8 prepared the first form of this script; session 9 added the overlapped / ping-pong variants and cuDNN FP8,
which is skipped with a note where the cudnn module is missing.)"""
import math

import torch

from tritonfp8.attention import AttnConfig, kernel_only_fn
from tritonfp8.bench import harness as H
from tritonfp8.bench.suites import attention as suite

ROUNDS = 3
G = dict(kernel="glws", block_m=128, block_n=128, num_stages=3, permute_p=False)
VARIANTS = {  # name -> (AttnConfig(kernel="glws") fields, head dims)
    "glws": (G, (64, 128)),
    "glwsovl": (dict(G, overlap=2), (64, 128)),
    "glwsovlpp": (dict(G, overlap=2, pingpong=True), (64, 128)),
    "glwsovlpc1": (dict(G, overlap=2, p_carry=1), (64, 128)),
    "glwsovlpc1perm": (dict(G, overlap=2, p_carry=1, permute_p=True), (64, 128)),
    "glwsovlpc1pp": (dict(G, overlap=2, p_carry=1, pingpong=True), (64, 128)),
    "glwsovl256": (dict(G, overlap=2, block_n=64), (256,)),
    "glwsovlpc1256": (dict(G, overlap=2, p_carry=1, block_n=64), (256,)),
}
rows, notes = [], []
CASES = [(2, 16, 8192, 128, False), (1, 16, 16384, 128, False), (8, 16, 2048, 128, False), (2, 32, 8192, 64, False),
         (4, 8, 8192, 256, False), (2, 16, 8192, 128, True)]
for B, Hh, S, D, causal in CASES:
    _, (q8, k8, v8), (qd, kd, vd) = suite._make_inputs(B, Hh, Hh, S, D, "cuda")
    scale = 1 / math.sqrt(D)
    fns, outs = {}, {}
    fns["triton"] = kernel_only_fn(q8, k8, v8, causal=causal, q_descale=qd, k_descale=kd, v_descale=vd)
    outs["triton"] = fns["triton"]()
    for name, (opts, dims) in VARIANTS.items():
        if D in dims:
            fns[name] = kernel_only_fn(q8, k8, v8, causal=causal, q_descale=qd, k_descale=kd, v_descale=vd,
                                       config=AttnConfig(**opts))
            outs[name] = fns[name]()
    qf, kf, vf = q8.float() * qd, k8.float() * kd, v8.float() * vd
    out_scale = float(vf.abs().amax()) / 448.0
    fn, o = suite._cudnn_fp8_fn(q8, k8, v8, float(qd), float(kd), float(vd), out_scale, causal, scale)
    if fn is None:
        notes.append(o)
    else:
        fns["cudnn_fp8"], outs["cudnn_fp8"] = fn, o
    torch.cuda.synchronize()
    heads = [0, Hh - 1]
    ref = suite._ref_slice(qf, kf, vf, causal, scale, heads)
    err = {k: suite._rel(o[0][:, heads].float() * (out_scale if k == "cudnn_fp8" else 1.0), ref)
           for k, o in outs.items()}
    t = H.bench_interleaved(fns, repeats=ROUNDS)
    med = {k: H.summarize(v).median for k, v in t.items()}
    flops = 4 * B * Hh * S * S * D // (2 if causal else 1)  # causal counts half
    r = {"shape": f"B{B} H{Hh} S{S} D{D}" + (" causal" if causal else ""), "err": err, "rounds_ms": t,
         "median_ms": med,
         "tflops": {k: H.tflops(flops, v) for k, v in med.items()},
         "vs_triton": {k: H.compare(t[k], t["triton"]).ratio for k in t if k != "triton"}}
    if "cudnn_fp8" in t:
        r["vs_cudnn_fp8"] = {k: H.compare(t[k], t["cudnn_fp8"]).ratio for k in t if k != "cudnn_fp8"}
    rows.append(r)
    print(r["shape"], {k: round(v) for k, v in r["tflops"].items()},
          {k: round(v, 3) for k, v in r.get("vs_cudnn_fp8", {}).items()}, {k: f"{v:.2e}" for k, v in err.items()},
          flush=True)
print("notes:", notes)
print("wrote", H.ResultsWriter("attn-glws").write(rows, config={"rounds": ROUNDS, "notes": notes}))
