"""Grouped FP8 GEMM (MoE): ``tritonfp8.grouped_gemm`` vs a loop of cuBLAS calls and vs one dense GEMM of the same
total FLOPs, timed interleaved in one run.

Per case (G groups, N, K, a distribution of tokens per group), a (total_M, K) and b (G, N, K) e4m3 ~ N(0, 1), bf16
output, group sizes on the GPU (no host sync), and the scales of ``--scaling`` (fp32, random in [0.5, 1.5)):

- ``tensor`` (default): one scale per group for a and for b, ``scale_a`` (G,), ``scale_b`` (G,); fast accumulation;
- ``row``: ``scale_a`` (total_M, 1) per token, ``scale_b`` (G, N) per expert and output channel; fast accumulation;
- ``block``: ``scale_a`` (total_M, ceil(K/128)) per 1x128 group of a row (row-major), ``scale_b`` (G, ceil(N/128),
  ceil(K/128)) per 128x128 block of each expert's weight; applied per 128-wide K step (precise accumulation).

Timed functions (peers that cannot run are dropped with a note, e.g. a torch without rowwise or blockwise
``_scaled_mm``; on a CPU run every cuBLAS peer is skipped):

- ``ours``:       one persistent launch over all groups' tiles (``grouped_gemm(..., m_sizes=...)``);
- ``loop``:       a Python loop of ``torch._scaled_mm`` (cuBLAS), one call per non-empty group, with the same kind
                  of scales in cuBLAS's layout: per-tensor scalars; rowwise (m, 1) x (1, N); blockwise (m, Kb) stored
                  outer-dim-major x the (Kb, Nb) view of the group's (Nb, Kb) block scales (the layouts the GEMM
                  suite's ``cublas_block`` uses). Each group's rows, scales and output are their own tensors, made
                  outside the timed region (cuBLAS wants 16-byte aligned pointers; host-known offsets are given to it
                  for free here, a real MoE layer without a grouped kernel would pay a sync to get them);
- ``dense``:      one per-tensor ``torch._scaled_mm`` of (total_M, K) x (N, K), fast accumulation (same FLOPs, no
                  grouping): the issue's target reference, in every scaling;
- ``dense_same``: (row, block) one dense ``_scaled_mm`` with the same kind of scales as ours (rowwise / blockwise);
- ``ours_dense``: ``tritonfp8.gemm`` on the dense problem with the same kind of scales (our own dense kernel, to
                  separate the grouping cost from the kernel's dense speed).

Shapes (the issue): G in {8, 64}; (N, K) in {(4096, 7168), (7168, 2048)}; tokens per group uniform 128, 256, 512,
1024, 2048, 4096, 8192, and "uneven" (seeded, uniform in [128, 8192] with every 8th group empty, the first one
included). ``--quick``: G = 8, both (N, K), uniform 1024 and uneven. ``--groups`` / ``--nk`` / ``--dists`` select
a subset (to split the full set over several commands); ``--list`` prints the cases and the time estimate only.

Target (H200, issue 4, per-tensor scales): ours >= 90% of the dense per-tensor cuBLAS TFLOPS (``dense_ms /
ours_ms`` >= 0.90) for every case whose non-empty groups all have >= 1024 rows (empty groups do not disqualify a
case); each row says why the target does or does not apply (``target_reason``). With row or block scales the
target is not judged (it is stated for per-tensor GEMMs); ``dense_same / ours`` is reported instead.

Errors: the relative Frobenius error of ours and of the cuBLAS loop against the fp64 product of the dequantized
inputs, worst over the groups, on the same sample of rows (every row of a group of <= 2 * half, else its first and
last ``half`` rows, where ``half`` spreads ``CHECK_ROWS`` rows over the non-empty groups: the rows next to the group
boundaries, where a grouping bug shows). Bound for ours: ``error_bound(bf16, K, "fast" | "precise" (block),
tensor_core=on the GPU)``; ours above it makes the exit status 1.
"""

from __future__ import annotations

import argparse
import math
from types import SimpleNamespace
from typing import Callable

import torch

from tritonfp8 import _backend

DESCRIPTION = ("grouped FP8 GEMM (MoE) vs a loop of cuBLAS calls and vs one dense GEMM of the same FLOPs "
               "(--scaling tensor|row|block)")

TARGET_VS_DENSE = 0.90
TARGET_MIN_ROWS = 1024
SCALINGS = ("tensor", "row", "block")
GROUPS = (8, 64)
NK = ((4096, 7168), (7168, 2048))
TOKENS = (128, 256, 512, 1024, 2048, 4096, 8192)
FULL_DISTS = tuple(f"uniform{t}" for t in TOKENS) + ("uneven",)
QUICK_DISTS = ("uniform1024", "uneven")
UNEVEN_RANGE = (128, 8192)
CHECK_ROWS = 1024  # rows of the fp64 reference per case (fp64 GEMMs are ~20x slower than FP8 ones)
SCALE_BLOCK = 128
# Where the suite runs. The CPU test sets "cpu" (kernels in the interpreter, tiny shapes, a stand-in timer) to
# check the suite's bookkeeping and files without a GPU.
_DEVICE = "cuda"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scaling", choices=SCALINGS, default="tensor",
                   help="scales of ours and of the cuBLAS loop: tensor (one per group), row (per token x per output "
                        "channel), block (1x128 of a x 128x128 of b)")
    p.add_argument("--groups", default=None, help="comma list of G (default 8,64; --quick: 8)")
    p.add_argument("--nk", default=None, help="comma list of NxK (default 4096x7168,7168x2048)")
    p.add_argument("--dists", default=None,
                   help=f"comma list of uniform<tokens per group> or uneven (default {','.join(FULL_DISTS)}; "
                        f"--quick: {','.join(QUICK_DISTS)})")
    p.add_argument("--accumulate", choices=("fast", "precise"), default=None,
                   help="accumulation of ours and the cuBLAS peers with tensor / row scales (default fast; block "
                        "scales are always precise)")
    p.add_argument("--vs-triton", action="store_true",
                   help="also time ours pinned to the Triton grouped kernel (ours_triton: its default config with "
                        "the Gluon kernel off), to compare the two kernels in one run")
    p.add_argument("--ours-glws", action="store_true",
                   help="pin ours to the Gluon warp-specialized kernel (fast accumulation too, whose default is the "
                        "Triton kernel): 128x256 tiles, or the dense GEMM's Gluon choice for precise / block")
    p.add_argument("--no-check", action="store_true", help="skip the fp64 reference check (faster)")
    p.add_argument("--list", action="store_true", help="print the cases and the time estimate, run nothing")


# ------------------------------------------------------------------------------------------------------------------
# Cases


def _sizes(G: int, dist: str) -> list[int]:
    """Tokens per group: ``uniform<T>`` gives T to each group; ``uneven`` draws from UNEVEN_RANGE (seeded by G)
    and empties every 8th group, starting with the first."""
    if dist.startswith("uniform"):
        try:
            t = int(dist[len("uniform"):])
        except ValueError:
            t = -1
        if t < 0:
            raise SystemExit(f"--dists: expected uniform<tokens per group> or uneven, got {dist!r}")
        return [t] * G
    if dist != "uneven":
        raise SystemExit(f"--dists: expected uniform<tokens per group> or uneven, got {dist!r}")
    g = torch.Generator().manual_seed(1000 + G)
    s = torch.randint(UNEVEN_RANGE[0], UNEVEN_RANGE[1] + 1, (G,), generator=g)
    s[::8] = 0
    return [int(v) for v in s]


def _int_list(text: str, what: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or any(v < 1 for v in out):
        raise SystemExit(f"{what}: expected a comma list of positive integers, got {text!r}")
    return out


def _nk_list(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        try:
            n, k = (int(v) for v in parts)
        except ValueError:
            raise SystemExit(f"--nk: expected a comma list of NxK (e.g. 4096x7168), got {text!r}") from None
        if n < 16 or k < 16 or n % 16 or k % 16:
            raise SystemExit(f"--nk: N and K must be positive multiples of 16 (TMA), got {item.strip()!r}")
        out.append((n, k))
    return out


def cases(quick: bool, groups: str | None = None, dists: str | None = None,
          nk: str | None = None) -> list[tuple[int, int, int, str]]:
    """The (G, N, K, dist) cases of a run: the full set, the quick set, or the subset the filters select."""
    gs = _int_list(groups, "--groups") if groups else ([8] if quick else list(GROUPS))
    nks = _nk_list(nk) if nk else list(NK)
    ds = [d.strip() for d in dists.split(",") if d.strip()] if dists else list(QUICK_DISTS if quick else FULL_DISTS)
    for d in ds:
        _sizes(1, d)  # validates the name
    return [(G, N, K, d) for G in gs for N, K in nks for d in ds]


def _fn_names(scaling: str, vs_triton: bool = False) -> list[str]:
    return ["ours", *(["ours_triton"] if vs_triton else []), "loop", "dense",
            *(["dense_same"] if scaling != "tensor" else []), "ours_dense"]


def estimate_seconds(case_list, repeats: int, scaling: str, vs_triton: bool = False) -> float:
    """Rough wall time of a GPU run (a model, not a measurement): per timing do_bench's 25 ms warmup + 100 ms of
    repeats + 6 calls (its estimate and first warmup), per case the data, the loop peer's copies and the fp64
    sample, plus ~60 s of kernel compiles. GEMM time at ~1100 TFLOPS (block: ~900); the loop at >= 25 us per
    group call (host bound)."""
    rate = 0.9e15 if scaling == "block" else 1.1e15
    total = 60.0
    for G, N, K, dist in case_list:
        sizes = _sizes(G, dist)
        M = sum(sizes)
        c = 2.0 * M * N * K / rate * 1e3  # ms per call
        loop_c = max(c, 0.025 * sum(1 for m in sizes if m))
        per = 0.0
        for name in _fn_names(scaling, vs_triton):
            ms = loop_c if name == "loop" else c
            per += 6 * ms + max(25.0, ms) + max(100.0, ms) + 10.0
        setup = 0.5 + M * (K + 3 * N) * 2 / 1e12  # randn, clones, outputs at ~1 TB/s effective
        check = 2.0 * min(M, CHECK_ROWS) * N * K / 40e12 + 0.004 * G  # fp64 GEMM ~40 TFLOPS + b[g] in fp64
        total += repeats * per / 1e3 + setup + check
    return total


# ------------------------------------------------------------------------------------------------------------------
# Inputs, peers, reference


def make_inputs(G: int, N: int, K: int, sizes: list[int], scaling: str, device: str, seed: int = 0):
    """a (total_M, K), b (G, N, K) e4m3, the scaling's scales in grouped_gemm's shapes, m_sizes (int32, on the
    device) and the host offsets."""
    if scaling not in SCALINGS:
        raise ValueError(f"scaling: expected one of {SCALINGS}, got {scaling!r}")
    gen = torch.Generator(device=device).manual_seed(seed)
    M = sum(sizes)
    e4 = torch.float8_e4m3fn
    a = torch.randn(M, K, device=device, dtype=torch.bfloat16, generator=gen).to(e4)
    b = torch.randn(G, N, K, device=device, dtype=torch.bfloat16, generator=gen).to(e4)
    kb, nb = -(-K // SCALE_BLOCK), -(-N // SCALE_BLOCK)
    shapes = {"tensor": ((G,), (G,)), "row": ((M, 1), (G, N)), "block": ((M, kb), (G, nb, kb))}[scaling]
    sa = torch.rand(*shapes[0], device=device, generator=gen) + 0.5
    sb = torch.rand(*shapes[1], device=device, generator=gen) + 0.5
    offs = [0]
    for m in sizes:
        offs.append(offs[-1] + m)
    return SimpleNamespace(G=G, N=N, K=K, M=M, sizes=list(sizes), offs=offs, scaling=scaling, a=a, b=b, sa=sa, sb=sb,
                           m_sizes=torch.tensor(sizes, device=device, dtype=torch.int32))


def group_scales(x, g: int, rows: slice) -> tuple[torch.Tensor, torch.Tensor]:
    """Group g's scales in :func:`tritonfp8.gemm_torch`'s shapes for the rows ``rows`` of a (inside the group's)."""
    if x.scaling == "tensor":
        return x.sa[g].reshape(()), x.sb[g].reshape(())
    if x.scaling == "row":
        return x.sa[rows], x.sb[g].reshape(-1, 1)
    return x.sa[rows], x.sb[g]


def cublas_operands(x, g: int):
    """Group g's rows of a and its scales as cuBLAS takes them: (a_g, b_g.T, scale_a, scale_b), each its own
    tensor (16-byte aligned): per-tensor scalars; rowwise (m, 1) and (1, N); blockwise (m, Kb) stored outer-dim-major
    and the (Kb, Nb) view of the (Nb, Kb) block scales."""
    lo, hi = x.offs[g], x.offs[g + 1]
    a_g = x.a[lo:hi].clone()
    if x.scaling == "tensor":
        sa, sb = x.sa[g].clone().reshape(()), x.sb[g].clone().reshape(())
    elif x.scaling == "row":
        sa, sb = x.sa[lo:hi].clone(), x.sb[g].reshape(1, -1).clone()
    else:
        sa, sb = x.sa[lo:hi].t().contiguous().t(), x.sb[g].clone().t()
    return a_g, x.b[g].t(), sa, sb


def dense_cublas_operands(x, same_scaling: bool):
    """The dense peer's operands: (total_M, K) a by the first expert's weight, per-tensor scalars (``same_scaling``
    False) or the run's kind of scales in cuBLAS's layout over all rows."""
    b0t = x.b[0].t()
    if not same_scaling or x.scaling == "tensor":
        one = torch.ones((), device=x.a.device)
        return x.a, b0t, one, one.clone()
    if x.scaling == "row":
        return x.a, b0t, x.sa, x.sb[0].reshape(1, -1).clone()
    return x.a, b0t, x.sa.t().contiguous().t(), x.sb[0].clone().t()


def cublas_scaled_mm(a, bt, scale_a, scale_b, out, fast: bool) -> torch.Tensor:
    """One cuBLAS FP8 GEMM (``torch._scaled_mm``) into ``out``: the peers' only call (the CPU test replaces it)."""
    return torch._scaled_mm(a, bt, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16, use_fast_accum=fast,
                            out=out)


def peer_skip_reason() -> str | None:
    """Why the cuBLAS peers cannot run here (None: they can)."""
    if _DEVICE != "cuda":
        return f"cuBLAS peers (loop, dense) skipped: the suite runs on {_DEVICE!r}, not a CUDA GPU"
    return None


def sample_ranges(m: int, half: int) -> list[tuple[int, int]]:
    """Row ranges inside a group of m rows that the check reads: all rows when m <= 2 * half, else the first and
    the last ``half`` (slices: no gather of FP8 rows)."""
    if m <= 2 * half:
        return [(0, m)]
    return [(0, half), (m - half, m)]


def reference_errors(x, outputs: dict[str, Callable[[int], torch.Tensor]], check_rows: int = CHECK_ROWS):
    """Worst per-group relative error of each output against the fp64 product of the dequantized inputs, on the
    rows of :func:`sample_ranges` (``half`` spreads ``check_rows`` over the non-empty groups). ``outputs[name](g)``
    is group g's (m_g, N) result. Returns ({name: error}, rows checked)."""
    from tritonfp8.gemm import gemm_torch

    nonempty = [g for g, m in enumerate(x.sizes) if m]
    half = max(8, check_rows // (2 * max(1, len(nonempty))))
    worst = {name: 0.0 for name in outputs}
    checked = 0
    for g in nonempty:
        lo = x.offs[g]
        num2 = {name: 0.0 for name in outputs}
        den2 = 0.0
        for r0, r1 in sample_ranges(x.sizes[g], half):
            rows = slice(lo + r0, lo + r1)
            sa, sb = group_scales(x, g, rows)
            ref = gemm_torch(x.a[rows], x.b[g], sa, sb, out_dtype=torch.float64, compute_dtype=torch.float64)
            den2 += torch.linalg.vector_norm(ref).item() ** 2
            for name, get in outputs.items():
                num2[name] += torch.linalg.vector_norm(get(g)[r0:r1].to(torch.float64) - ref).item() ** 2
            checked += r1 - r0
            del ref
        for name, n2 in num2.items():
            if not math.isfinite(n2):
                err = math.inf
            elif den2 > 0:
                err = math.sqrt(n2 / den2)
            else:
                err = 0.0 if n2 == 0 else math.inf
            worst[name] = max(worst[name], err)
    return worst, checked


def target(sizes: list[int], ratio: float | None, scaling: str) -> tuple[bool, bool | None, str]:
    """(applies, meets, reason) of the issue's target for one case: per-tensor scales, every NON-EMPTY group with
    >= TARGET_MIN_ROWS rows (empty groups hold no rows and do not disqualify), dense/ours >= TARGET_VS_DENSE."""
    if scaling != "tensor":
        return False, None, f"n/a: the target is per-tensor ({scaling} scales: see dense_same/ours)"
    rows = [m for m in sizes if m]
    if not rows:
        return False, None, "n/a: every group is empty"
    empty = len(sizes) - len(rows)
    if min(rows) < TARGET_MIN_ROWS:
        return False, None, f"n/a: smallest non-empty group {min(rows)} < {TARGET_MIN_ROWS} rows"
    why = f"non-empty groups >= {TARGET_MIN_ROWS} rows" + (f" ({empty} empty)" if empty else "")
    if ratio is None:
        return True, None, f"{why}; no dense cuBLAS timing"
    return True, ratio >= TARGET_VS_DENSE, why


# ------------------------------------------------------------------------------------------------------------------
# One case


def _sync() -> None:
    _backend.sync(_DEVICE)


def run_case(args, G: int, N: int, K: int, dist: str, scaling: str, notes: list[str], H) -> dict:
    """Time and check one case; returns its result row (notes gets what was skipped and why)."""
    from tritonfp8.gemm import error_bound, gemm
    from tritonfp8.grouped import grouped_config, grouped_gemm

    sizes = _sizes(G, dist)
    x = make_inputs(G, N, K, sizes, scaling, _DEVICE)
    M = x.M
    label = f"G{G} {N}x{K} {dist}"
    out = torch.empty(M, N, device=_DEVICE, dtype=torch.bfloat16)
    dense_out = torch.empty(M, N, device=_DEVICE, dtype=torch.bfloat16)
    acc = "precise" if scaling == "block" else (getattr(args, "accumulate", None) or "fast")
    fast = acc == "fast"
    fns: dict[str, Callable[[], object]] = {}

    o_cfg = None
    if getattr(args, "ours_glws", False):
        from tritonfp8._kernels.gemm_configs import GemmConfig, fit_stages, gluon_config

        o_cfg = (fit_stages(GemmConfig(128, 256, 128, group_m=8, num_warps=4, num_stages=4, schedule="glws",
                                       epilogue_subtile=1), 2) if fast
                 else gluon_config(M, N, torch.cuda.get_device_properties(0).multi_processor_count
                                   if _DEVICE == "cuda" else 132, 2))

    def ours():
        grouped_gemm(x.a, x.b, x.sa, x.sb, m_sizes=x.m_sizes, out=out, accumulate=acc, config=o_cfg, check=False)

    fns["ours"] = ours
    if getattr(args, "vs_triton", False):
        t_cfg = grouped_config(max(1, M // G), N, K, block=scaling == "block", precise=not fast)
        t_out = torch.empty_like(out)
        fns["ours_triton"] = lambda: grouped_gemm(x.a, x.b, x.sa, x.sb, m_sizes=x.m_sizes, out=t_out,
                                                  accumulate=acc, config=t_cfg, check=False)
    skip = peer_skip_reason()
    parts = []
    if skip is None:
        # Each non-empty group as its own operands and output, made outside the timed region.
        parts = [(g, *cublas_operands(x, g), torch.empty(x.sizes[g], N, device=_DEVICE, dtype=torch.bfloat16))
                 for g in range(G) if x.sizes[g]]

        def loop():
            for _, a_g, bt_g, sa_g, sb_g, o_g in parts:
                cublas_scaled_mm(a_g, bt_g, sa_g, sb_g, o_g, fast)

        fns["loop"] = loop
        d_t = dense_cublas_operands(x, same_scaling=False)
        fns["dense"] = lambda: cublas_scaled_mm(*d_t, dense_out, True)
        if scaling != "tensor":
            d_s = dense_cublas_operands(x, same_scaling=True)
            fns["dense_same"] = lambda: cublas_scaled_mm(*d_s, dense_out, fast)
    elif skip not in notes:
        notes.append(skip)
    if scaling == "tensor":
        one = torch.ones((), device=_DEVICE)
        od = (one, one)
    elif scaling == "row":
        od = (x.sa, x.sb[0].reshape(-1, 1))
    else:
        od = (x.sa, x.sb[0])
    fns["ours_dense"] = lambda: gemm(x.a, x.b[0], *od, out=dense_out, accumulate=acc)

    # First call of each (compiles ours; a peer that raises is dropped with a note: e.g. rowwise / blockwise
    # _scaled_mm missing from the running torch).
    peer_kind = {"ours_triton": "ours on the Triton kernel", "loop": f"cuBLAS {scaling} loop",
                 "dense": "cuBLAS per-tensor dense",
                 "dense_same": f"cuBLAS {scaling} dense", "ours_dense": "our dense gemm"}
    for name in list(fns):
        try:
            fns[name]()
            _sync()
        except Exception as e:  # noqa: BLE001 - a missing peer must not stop the run
            if name == "ours":
                raise
            msg = str(e).splitlines()[0][:200] if str(e) else ""
            note = f"{name} ({peer_kind[name]}) skipped at {label}: {type(e).__name__}: {msg}"
            notes.append(note)
            del fns[name]

    err = loop_err = None
    checked = 0
    on_gpu = _DEVICE == "cuda"
    bound = error_bound(torch.bfloat16, K, acc, tensor_core=on_gpu)
    if not getattr(args, "no_check", False):
        outs = {"ours": lambda g: out[x.offs[g]:x.offs[g + 1]]}
        if "loop" in fns:  # its first call above wrote every group's output
            by_group = {p[0]: p[-1] for p in parts}
            outs["loop"] = lambda g: by_group[g]
        errs, checked = reference_errors(x, outs)
        err, loop_err = errs["ours"], errs.get("loop")

    t = H.bench_interleaved(fns, repeats=args.repeats)
    flops = 2.0 * M * N * K
    s = {k: H.summarize(v) for k, v in t.items()}
    nonempty = [m for m in sizes if m]
    row = {
        "case": label, "G": G, "N": N, "K": K, "dist": dist, "scaling": scaling, "accumulate": acc,
        "ours_config": o_cfg.short() if o_cfg is not None else "default", "sizes": sizes,
        "total_M": M,
        "empty_groups": G - len(nonempty), "min_rows": min(nonempty, default=0),
        **{f"{k}_ms": v.median for k, v in s.items()}, "rounds_ms": t,
        **{f"{k}_tflops": H.tflops(flops, v.median) for k, v in s.items()},
        "rel_error": err, "loop_rel_error": loop_err, "err_bound": bound, "checked_rows": checked,
    }
    if err is not None and loop_err:
        row["err_vs_loop"] = err / loop_err
    for peer in ("dense", "dense_same", "loop", "ours_dense", "ours_triton"):
        if peer in t:
            c = H.compare(t["ours"], t[peer])
            row.update({f"ours_vs_{peer}": c.ratio, f"ours_vs_{peer}_lo": c.lo, f"ours_vs_{peer}_hi": c.hi,
                        f"ours_vs_{peer}_verdict": c.verdict})
    applies, meets, reason = target(sizes, row.get("ours_vs_dense"), scaling)
    row.update(target_applies=applies, meets_target=meets, target_reason=reason)
    return row


# ------------------------------------------------------------------------------------------------------------------
# The suite


def _target_cell(r) -> str:
    """The target's verdict and, briefly, why (the full reason is the row's ``target_reason``)."""
    if r["scaling"] != "tensor":
        return "n/a (per-tensor only)"
    if not r["target_applies"]:
        return f"n/a (min {r['min_rows']} rows)" if r["min_rows"] else "n/a (all empty)"
    if r["meets_target"] is None:
        return "n/a (no dense peer)"
    return ("yes" if r["meets_target"] else "no") + (f" ({r['empty_groups']} empty)" if r["empty_groups"] else "")


def run(args: argparse.Namespace) -> int:
    from tritonfp8.bench import harness as H

    scaling = getattr(args, "scaling", "tensor") or "tensor"
    if scaling not in SCALINGS:
        raise SystemExit(f"--scaling: expected one of {', '.join(SCALINGS)}, got {scaling!r}")
    case_list = cases(args.quick, getattr(args, "groups", None), getattr(args, "dists", None),
                      getattr(args, "nk", None))
    console = H.make_console()
    vs_triton = bool(getattr(args, "vs_triton", False))
    est = estimate_seconds(case_list, args.repeats, scaling, vs_triton)
    console.print(f"[bold]grouped[/] --scaling {scaling}: {len(case_list)} cases x "
                  f"{len(_fn_names(scaling, vs_triton))} "
                  f"functions x {args.repeats} interleaved rounds; estimated ~{est / 60:.1f} min on an H200 "
                  f"(a model of do_bench's cost, not a measurement)")
    if getattr(args, "list", False):
        for G, N, K, d in case_list:
            sz = _sizes(G, d)
            console.print(f"  G{G} {N}x{K} {d}: total_M {sum(sz)}, {sum(m == 0 for m in sz)} empty")
        return 0
    if _DEVICE == "cuda" and not torch.cuda.is_available():
        print("bench grouped: needs a CUDA GPU")
        return 1
    env = H.environment_info()
    console.print(f"grouped: {env.get('gpu')}, torch {env.get('torch')}, triton {env.get('triton')}")
    rows, notes, failures = [], [], []
    for G, N, K, dist in case_list:
        r = run_case(args, G, N, K, dist, scaling, notes, H)
        if r["rel_error"] is not None and not r["rel_error"] <= r["err_bound"]:
            failures.append(f"{r['case']}: ours rel error {r['rel_error']:.3g} > bound {r['err_bound']:.3g}")
            console.print(f"[red]{failures[-1]}[/]")
        rows.append(r)
        if _DEVICE == "cuda":
            torch.cuda.empty_cache()

    if scaling == "tensor":
        cols = [
            H.Column("case", justify="left"), H.Column("total_M"), H.Column("empty_groups", "empty"),
            H.Column("ours_tflops", "ours TF", "{:.0f}"), H.Column("loop_tflops", "loop TF", "{:.0f}"),
            H.Column("dense_tflops", "dense TF", "{:.0f}"), H.Column("ours_dense_tflops", "ours dense TF", "{:.0f}"),
            H.Column("ours_vs_dense", "dense/ours", "{:.3f}"), H.Column("ours_vs_dense_verdict", "vs dense"),
            H.Column("ours_vs_loop", "loop/ours", "{:.3f}"),
            H.Column(_target_cell, f">= {TARGET_VS_DENSE:.0%} dense", justify="left"),
            H.Column("rel_error", "err ours", "{:.2e}"), H.Column("loop_rel_error", "err loop", "{:.2e}"),
        ]
    else:  # the target is per-tensor: the same-scaling dense peer and its verdict instead
        cols = [
            H.Column("case", justify="left"), H.Column("total_M"), H.Column("empty_groups", "empty"),
            H.Column("ours_tflops", "ours TF", "{:.0f}"), H.Column("loop_tflops", "loop TF", "{:.0f}"),
            H.Column("dense_tflops", "dense TF", "{:.0f}"),
            H.Column("dense_same_tflops", f"dense {scaling} TF", "{:.0f}"),
            H.Column("ours_dense_tflops", "ours dense TF", "{:.0f}"),
            H.Column("ours_vs_dense", "dense/ours", "{:.3f}"),
            H.Column("ours_vs_dense_same", f"{scaling}/ours", "{:.3f}"),
            H.Column("ours_vs_dense_same_verdict", f"vs dense {scaling}"),
            H.Column("ours_vs_loop", "loop/ours", "{:.3f}"),
            H.Column("rel_error", "err ours", "{:.2e}"), H.Column("loop_rel_error", "err loop", "{:.2e}"),
        ]
    if vs_triton:
        cols[4:4] = [H.Column("ours_triton_tflops", "ours Triton TF", "{:.0f}"),
                     H.Column("ours_vs_ours_triton", "Triton/ours", "{:.3f}")]
    H.print_table(rows, cols, console=console,
                  title=f"grouped FP8 GEMM, {scaling} scales, bf16 out, TFLOPS (dense = one per-tensor cuBLAS GEMM "
                        "of the same total M, N, K)",
                  caption="ratios = peer ms / ours ms (> 1: ours faster); target: dense/ours >= 0.90 with per-tensor "
                          "scales when every non-empty group has >= 1024 rows; err = worst group's ||out - ref|| / "
                          "||ref|| vs fp64 on sampled rows")
    for n in notes:
        console.print(f"note: {n}", markup=False, highlight=False)
    judged = [r for r in rows if r["meets_target"] is not None]
    if judged:
        console.print(f"target: {sum(r['meets_target'] for r in judged)} of {len(judged)} applicable cases meet "
                      f"dense/ours >= {TARGET_VS_DENSE}")
    if not args.no_save and rows:
        w = H.ResultsWriter("grouped", out_dir=args.out, env=env)
        path = w.write(rows, config={"quick": args.quick, "repeats": args.repeats, "scaling": scaling,
                                     "accumulate": getattr(args, "accumulate", None), "vs_triton": vs_triton,
                                     "ours_glws": bool(getattr(args, "ours_glws", False)),
                                     "cases": [list(c) for c in case_list], "target_vs_dense": TARGET_VS_DENSE,
                                     "target_min_rows": TARGET_MIN_ROWS, "check_rows": CHECK_ROWS,
                                     "no_check": bool(getattr(args, "no_check", False))},
                       notes=[*notes, *failures])
        names = {"ours": "tritonfp8 grouped", "ours_triton": "tritonfp8 grouped (Triton kernel)",
                 "loop": f"cuBLAS loop ({scaling})", "dense": "cuBLAS dense per-tensor",
                 "dense_same": f"cuBLAS dense {scaling}", "ours_dense": f"tritonfp8 dense ({scaling})"}
        series = {label: [r.get(f"{k}_tflops") for r in rows] for k, label in names.items()
                  if any(r.get(f"{k}_tflops") is not None for r in rows)}
        H.plot_bars(w.png_path, [r["case"] for r in rows], series, ylabel="TFLOPS",
                    title=f"grouped FP8 GEMM ({scaling} scales) vs cuBLAS loop and one dense GEMM")
        pngs = [w.png_path]
        # TFLOPS over tokens per group (uniform sizes), one plot per G.
        for G in sorted({r["G"] for r in rows}):
            series = {}
            xs = None
            for N, K in sorted({(r["N"], r["K"]) for r in rows if r["G"] == G}):
                pts = sorted((r["sizes"][0], r) for r in rows
                             if r["G"] == G and (r["N"], r["K"]) == (N, K) and r["dist"].startswith("uniform"))
                if len(pts) < 2 or (xs is not None and [p[0] for p in pts] != xs):
                    continue
                xs = [p[0] for p in pts]
                for k in ("ours", "loop", "dense", "dense_same"):
                    if any(p[1].get(f"{k}_tflops") is not None for p in pts):
                        series[f"{names[k]} {N}x{K}"] = [p[1].get(f"{k}_tflops") for p in pts]
            if series:
                png = w.out_dir / f"{w.stem}-tokens-G{G}.png"
                H.plot_lines(png, xs, series, xlabel="tokens per group", ylabel="TFLOPS", logx=True,
                             title=f"grouped FP8 GEMM, G = {G}, {scaling} scales: TFLOPS over tokens per group")
                pngs.append(png)
        console.print(f"results: {path}; plots: {', '.join(str(p) for p in pngs)}")
    if failures:
        console.print(f"[red]grouped: {len(failures)} correctness check(s) failed[/]")
    return 1 if failures else 0


def profile_case(args: argparse.Namespace):
    """One launch of the G=8, N=4096, K=7168, 1024 tokens-per-group case with the run's scaling (``--profile``)."""
    from tritonfp8.grouped import grouped_gemm

    scaling = getattr(args, "scaling", "tensor") or "tensor"
    x = make_inputs(8, 4096, 7168, [1024] * 8, scaling, "cuda")
    return ((lambda: grouped_gemm(x.a, x.b, x.sa, x.sb, m_sizes=x.m_sizes, check=False)),
            f"grouped G8 4096x7168 1024/group, {scaling} scales")
