"""Record of session 8, device call 6 (ran at commit 4f2912b: ``gemm_gluon.launch(sb_ahead=...)``; the option
was removed after this measurement showed no difference, so the script no longer runs as is). Session 8 A/B: block-scaled glws on 128x256 tiles with b's 128x128 scales loaded in the K block itself (ahead0,
the default) or one K block ahead (ahead1), next to the same kernel in precise mode (per-tensor scales: what the
block scales cost) and cuBLAS blockwise, interleaved rounds, do_bench medians. Outputs of ahead0 / ahead1 must be
bit-identical (same sums, same order). Writes benchmarks/results/glws-sb-ahead-<date>.json (copy under $OUT)."""
import datetime
import json
import os
import statistics

import torch
import triton

from tritonfp8._kernels import gemm_gluon as G

E4 = torch.float8_e4m3fn
SHAPES = [(4096, 7168, 16384), (8192, 18432, 7168), (8192, 7168, 18432), (4096, 4096, 7168), (8192, 4096, 7168)]
ROUNDS = 5
g = torch.Generator(device="cuda").manual_seed(0)
rows = []
for M, N, K in SHAPES:
    a = torch.randn(M, K, device="cuda", generator=g).to(E4)
    b = torch.randn(N, K, device="cuda", generator=g).to(E4)
    kb, nb = -(-K // 128), -(-N // 128)
    sa = (torch.rand(kb, M, device="cuda", generator=g) + 0.5).t()
    sb = torch.rand(nb, kb, device="cuda", generator=g) + 0.5
    one = torch.ones(1, device="cuda")
    outs = {k: torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for k in ("ahead0", "ahead1", "precise")}
    kw = dict(block_n=256, num_stages=3, group_m=8, sms=132, name="glws_sb_ab")

    def blk(ahead):
        return lambda: G.launch(a, b, sa, sb, None, 0, outs[f"ahead{ahead}"], a_vec=True, b_vec=True,
                                b_block_rows=128, sb_ahead=ahead, **kw)

    fns = {"ahead0": blk(0), "ahead1": blk(1),
           "precise": lambda: G.launch(a, b, one, one, None, 0, outs["precise"], a_vec=False, b_vec=False,
                                       b_block_rows=None, **kw),
           "cublas_block": lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb.t(), out_dtype=torch.bfloat16)}
    for f in fns.values():
        f()
    torch.cuda.synchronize()
    same = torch.equal(outs["ahead0"], outs["ahead1"])
    ref = fns["cublas_block"]().float()
    rel = {k: ((outs[k].float() - ref).norm() / ref.norm()).item() for k in ("ahead0", "ahead1")}
    t = {k: [] for k in fns}
    for _ in range(ROUNDS):
        for k, f in fns.items():
            t[k].append(triton.testing.do_bench(f, warmup=25, rep=100))
    med = {k: statistics.median(v) for k, v in t.items()}
    flops = 2 * M * N * K
    r = {"shape": f"{M}x{N}x{K}", "bit_identical": same, "rel_vs_cublas": rel, "rounds_ms": t,
         "median_ms": med, "tflops": {k: flops / v / 1e9 for k, v in med.items()},
         "ahead1_vs_ahead0": med["ahead0"] / med["ahead1"], "ahead0_vs_cublas": med["cublas_block"] / med["ahead0"],
         "ahead1_vs_cublas": med["cublas_block"] / med["ahead1"], "block_vs_precise": med["precise"] / med["ahead0"]}
    rows.append(r)
print(f"{'shape':18} {'ahead0':>7} {'ahead1':>7} {'precise':>7} {'cuBLAS':>7}  a1/a0  a0/cub a1/cub blk/prec  same")
for r in rows:
    tf = r["tflops"]
    print(f"{r['shape']:18} {tf['ahead0']:7.0f} {tf['ahead1']:7.0f} {tf['precise']:7.0f} {tf['cublas_block']:7.0f}"
          f"  {r['ahead1_vs_ahead0']:.3f}  {r['ahead0_vs_cublas']:.3f}  {r['ahead1_vs_cublas']:.3f}  "
          f"{r['block_vs_precise']:.3f}  {r['bit_identical']}")
res = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "gpu": torch.cuda.get_device_name(),
       "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
       "command": "python3 scripts/gpu_sb_ahead.py", "rounds": ROUNDS, "rows": rows}
name = f"glws-sb-ahead-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
for d in ("benchmarks/results", os.environ.get("OUT", "")):
    if d:
        with open(os.path.join(d, name), "w") as f:
            json.dump(res, f, indent=1)
