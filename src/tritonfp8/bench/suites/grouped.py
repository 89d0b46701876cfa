"""Grouped FP8 GEMM (MoE): ``tritonfp8.grouped_gemm`` vs a loop of cuBLAS calls and vs one dense GEMM of the same
total FLOPs, timed interleaved in one run.

Per case (G groups, N, K, a distribution of tokens per group), a (total_M, K) and b (G, N, K) e4m3 ~ N(0, 1), bf16
output, per-group per-tensor scales (``scale_a`` (G,), ``scale_b`` (G,)), group sizes on the GPU (no host sync):

- ``ours``:     one persistent launch over all groups' tiles (``grouped_gemm(..., m_sizes=...)``);
- ``loop``:     a Python loop of ``torch._scaled_mm`` (cuBLAS, per-tensor, fast accumulation), one call per non-empty
                group, slicing the rows by host-known offsets (what an MoE layer without a grouped kernel does; the
                host offsets are given to it for free here, a real layer would pay a sync to get them);
- ``dense``:    one ``torch._scaled_mm`` of (total_M, K) x (N, K) (same FLOPs, no grouping): the target's reference;
- ``ours_dense``: ``tritonfp8.gemm`` on the same dense problem (our own dense kernel, to separate the grouping cost
                from the kernel's dense speed).

Shapes (the issue): G in {8, 64}; (N, K) in {(4096, 7168), (7168, 2048)}; tokens per group: uniform 128, 1024,
8192 (G = 8 only: 64 x 8192 rows make a 4 GB output), and "uneven" (seeded, uniform in [128, 8192] with every 8th
group empty, so empty groups are included; G = 64 uneven uses [128, 2048]). ``--quick``: G = 8, both (N, K),
uniform 1024 and uneven.

Target (H200): ours >= 90% of the dense cuBLAS per-tensor TFLOPS (``ours / dense`` time ratio >= 0.90) for every
case whose groups all have >= 1024 rows. Reported: TFLOPS of each, the ratios dense_ms/ours_ms and loop_ms/ours_ms
with their interleaved lo..hi range and verdict, and ours' relative error against the per-group fp64 reference
(bound ``error_bound(bf16, K, "fast", tensor_core=True)``; a failure makes the exit status 1).
"""

from __future__ import annotations

import argparse

import torch

DESCRIPTION = "grouped FP8 GEMM (MoE) vs a loop of cuBLAS calls and vs one dense GEMM of the same FLOPs"

TARGET_VS_DENSE = 0.90
NK = ((4096, 7168), (7168, 2048))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--groups", default=None, help="comma list of G (default 8,64; --quick: 8)")
    p.add_argument("--dists", default=None,
                   help="comma list of uniform128, uniform1024, uniform8192, uneven (--quick: uniform1024,uneven)")
    p.add_argument("--no-check", action="store_true", help="skip the fp64 reference check (faster)")


def _sizes(G: int, dist: str) -> list[int]:
    if dist.startswith("uniform"):
        return [int(dist[len("uniform"):])] * G
    g = torch.Generator().manual_seed(1000 + G)
    hi = 8192 if G <= 8 else 2048
    s = torch.randint(128, hi + 1, (G,), generator=g)
    s[::8] = 0
    return [int(v) for v in s]


def cases(quick: bool, groups: str | None, dists: str | None) -> list[tuple[int, int, int, str]]:
    gs = [int(x) for x in groups.split(",")] if groups else ([8] if quick else [8, 64])
    ds = dists.split(",") if dists else (["uniform1024", "uneven"] if quick else
                                         ["uniform128", "uniform1024", "uniform8192", "uneven"])
    out = []
    for G in gs:
        for N, K in NK:
            for d in ds:
                if d == "uniform8192" and G > 8 and dists is None:
                    continue
                out.append((G, N, K, d))
    return out


def _reference_error(a, b, sa, sb, sizes, out, H) -> float:
    """Worst per-group relative error of ``out`` vs the fp64 product (on the GPU, group by group)."""
    worst, lo = 0.0, 0
    for g, m in enumerate(sizes):
        if m:
            ref = (a[lo:lo + m].double() * sa[g].double()) @ (b[g].double() * sb[g].double()).T
            worst = max(worst, H.rel_error(out[lo:lo + m], ref))
        lo += m
    return worst


def run(args: argparse.Namespace) -> int:
    from tritonfp8.bench import harness as H
    from tritonfp8.gemm import error_bound, gemm
    from tritonfp8.grouped import grouped_gemm

    console = H.make_console()
    env = H.environment_info()
    console.print(f"[bold]grouped[/]: {env.get('gpu')}, torch {env.get('torch')}, triton {env.get('triton')}, "
                  f"{args.repeats} interleaved rounds per case")
    rows, failures = [], 0
    e4 = torch.float8_e4m3fn
    for G, N, K, dist in cases(args.quick, getattr(args, "groups", None), getattr(args, "dists", None)):
        sizes = _sizes(G, dist)
        M = sum(sizes)
        torch.manual_seed(0)
        a = torch.randn(M, K, device="cuda").to(e4)
        b = torch.randn(G, N, K, device="cuda").to(e4)
        sa = torch.rand(G, device="cuda") + 0.5
        sb = torch.rand(G, device="cuda") + 0.5
        m_sizes = torch.tensor(sizes, device="cuda", dtype=torch.int32)
        offs = [0]
        for m in sizes:
            offs.append(offs[-1] + m)
        out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        dense_out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        one = torch.ones((), device="cuda")
        b0 = b[0]
        # Each group's scale as its own tensor: a view sa[g] sits 4*g bytes into sa, and cuBLAS (torch 2.11, CUDA
        # 13) rejected such a scale pointer (CUBLAS_STATUS_NOT_SUPPORTED on the H200 at G=8, 1024 rows per group).
        sa_h = [sa[g].clone().reshape(()) for g in range(G)]
        sb_h = [sb[g].clone().reshape(()) for g in range(G)]

        def ours():
            grouped_gemm(a, b, sa, sb, m_sizes=m_sizes, out=out, check=False)

        # cuBLAS needs 16-byte aligned operands: a row slice a[lo:hi] starting at an uneven offset is not, so the
        # loop peer gets each group's rows as its own (aligned) tensor and output, made outside the timed region.
        parts = [(a[offs[g]:offs[g + 1]].clone(), torch.empty((offs[g + 1] - offs[g], N), device=a.device,
                                                             dtype=torch.bfloat16), g)
                 for g in range(G) if offs[g + 1] > offs[g]]

        def loop():
            for a_g, out_g, g in parts:
                torch._scaled_mm(a_g, b[g].T, scale_a=sa_h[g], scale_b=sb_h[g], out_dtype=torch.bfloat16,
                                 use_fast_accum=True, out=out_g)

        def dense():
            torch._scaled_mm(a, b0.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True,
                             out=dense_out)

        def ours_dense():
            gemm(a, b0, one, one, out=dense_out)

        ours()
        torch.cuda.synchronize()
        err = None
        if not getattr(args, "no_check", False):
            err = _reference_error(a, b, sa, sb, sizes, out, H)
            bound = error_bound(torch.bfloat16, K, "fast", tensor_core=True)
            if not err <= bound:
                failures += 1
                console.print(f"[red]G={G} N={N} K={K} {dist}: rel error {err:.3g} > bound {bound:.3g}[/]")
        t = H.bench_interleaved({"ours": ours, "loop": loop, "dense": dense, "ours_dense": ours_dense},
                                repeats=args.repeats)
        flops = 2.0 * M * N * K
        s = {k: H.summarize(v) for k, v in t.items()}
        vs_dense = H.compare(t["ours"], t["dense"])
        vs_loop = H.compare(t["ours"], t["loop"])
        min_rows = min((m for m in sizes if m), default=0)
        row = {
            "case": f"G{G} {N}x{K} {dist}", "G": G, "N": N, "K": K, "dist": dist, "sizes": sizes, "total_M": M,
            "empty_groups": sum(m == 0 for m in sizes), "min_rows": min_rows,
            **{f"{k}_ms": v.median for k, v in s.items()}, "rounds_ms": t,
            **{f"{k}_tflops": H.tflops(flops, v.median) for k, v in s.items()},
            "ours_vs_dense": vs_dense.ratio, "ours_vs_dense_lo": vs_dense.lo, "ours_vs_dense_hi": vs_dense.hi,
            "ours_vs_dense_verdict": vs_dense.verdict,
            "ours_vs_loop": vs_loop.ratio, "ours_vs_loop_lo": vs_loop.lo, "ours_vs_loop_hi": vs_loop.hi,
            "ours_vs_loop_verdict": vs_loop.verdict, "rel_error": err,
            "target_applies": min(sizes) >= 1024, "meets_target": (vs_dense.ratio >= TARGET_VS_DENSE
                                                                   if min(sizes) >= 1024 else None),
        }
        rows.append(row)
        del a, b, out, dense_out
        torch.cuda.empty_cache()

    cols = [
        H.Column("case"), H.Column("total_M"), H.Column("empty_groups", "empty"),
        H.Column("ours_tflops", "ours TF", "{:.0f}"), H.Column("loop_tflops", "loop TF", "{:.0f}"),
        H.Column("dense_tflops", "dense cuBLAS TF", "{:.0f}"), H.Column("ours_dense_tflops", "ours dense TF", "{:.0f}"),
        H.Column("ours_vs_dense", "dense/ours", "{:.2f}"), H.Column("ours_vs_dense_verdict", "vs dense"),
        H.Column("ours_vs_loop", "loop/ours", "{:.2f}"), H.Column("meets_target", f">= {TARGET_VS_DENSE:.0%}"),
        H.Column("rel_error", "rel err", "{:.2e}"),
    ]
    H.print_table(rows, cols, title="grouped FP8 GEMM (bf16 out, per-group per-tensor scales)",
                  caption="ratios = peer ms / ours ms (> 1: ours faster); target: dense/ours >= 0.90 when every "
                          "group has >= 1024 rows")
    if not args.no_save and rows:
        w = H.ResultsWriter("grouped", out_dir=args.out, env=env)
        path = w.write(rows, config={"quick": args.quick, "repeats": args.repeats,
                                     "target_vs_dense": TARGET_VS_DENSE})
        H.plot_bars(w.png_path, [r["case"] for r in rows],
                    {k: [r[f"{k}_tflops"] for r in rows] for k in ("ours", "loop", "dense", "ours_dense")},
                    ylabel="TFLOPS", title="grouped FP8 GEMM vs cuBLAS loop and dense GEMM")
        console.print(f"results: {path}")
    if failures:
        console.print(f"[red]grouped: {failures} correctness check(s) failed[/]")
    return 1 if failures else 0


def profile_case(args: argparse.Namespace):
    """One launch of the G=8, N=4096, K=7168, 1024 tokens-per-group case (for ``--profile``)."""
    from tritonfp8.grouped import grouped_gemm

    G, N, K = 8, 4096, 7168
    sizes = [1024] * G
    a = torch.randn(sum(sizes), K, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(G, N, K, device="cuda").to(torch.float8_e4m3fn)
    sa = torch.ones(G, device="cuda")
    m = torch.tensor(sizes, device="cuda", dtype=torch.int32)
    return (lambda: grouped_gemm(a, b, sa, sa, m_sizes=m, check=False)), f"grouped G{G} {N}x{K} 1024/group"
