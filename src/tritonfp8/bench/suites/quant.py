"""Quantization bandwidth: ``tritonfp8.quantize`` vs the plain-torch reference, against the device copy ceiling.

What is measured, per (shape, granularity, FP8 format), all in one interleaved run (see
:func:`tritonfp8.bench.harness.bench_interleaved`):

- ours: ``tritonfp8.quantize(x, granularity, dtype=...)`` on a row-major bf16 (M, K) input;
- peer: ``tritonfp8.quantize.quantize_torch`` (what a user would otherwise run: eager PyTorch ops);
- ceiling: a device-to-device copy that moves the same number of bytes (``x.numel()*2`` read, ``x.numel()*1``
  FP8 written, plus the fp32 scales: half of that total is copied, so read + write match).

GB/s counts those useful bytes once (bytes read + written / median time), whatever extra passes a mode needs
(tensor and col scales read x twice: an amax pass, then the cast). Target: >= 80% of the copy bandwidth at
8192x8192. Before timing, our output is checked bit-exact against the reference; a mismatch fails the suite.

Two more numbers per row: ``static``: the same call with the scale given (``scale=`` the computed one: one pass
for every granularity, the cast a delayed-scaling recipe runs), timed in the same rounds, bit-exact checked too;
``pct_of_copy_traffic``: our bandwidth counting the bytes the kernels must move (two-pass modes read x twice), the
number that says how close the two launches are to the memory system, where ``pct_of_copy`` says how close the
op is to one copy of its data.

``--variants legacy,g64w8,g1w16c32,atomic,...`` also times other tilings of the (1, G) / (G, G) kernels (see
``tritonfp8.quantize.TILINGS_HELP``), other tensor/col two-pass schemes (``TWO_PASS_HELP``) and col cast tiles
(``COL_CAST_HELP``; timed on the computed and, as ``static_<variant>``, the static col scale) in the same
interleaved rounds, as ``ours_<variant>`` (bit-exact check too), each on the granularities it applies to; each row
then carries ``variants``: {name: {ms, gbps, pct_of_copy, vs_ours, exact}}.
"""

from __future__ import annotations

import argparse
import importlib
import math
from typing import Any

import torch

from tritonfp8._formats import fp8_format

DESCRIPTION = "FP8 quantization bandwidth (GB/s) vs quantize_torch and the device copy bandwidth"

# Every granularity the op supports: scale per tensor, per row (M, 1), per column (1, K), per 1x128 group of a row,
# per 128x128 block.
GRANULARITIES: tuple[Any, ...] = ("tensor", "row", "col", (1, 128), (128, 128))
QUICK_SHAPES = ((8192, 8192),)
FULL_SHAPES = ((8192, 8192), (4096, 4096), (16384, 8192), (1, 8192), (2, 8192), (4, 8192), (8, 8192), (16, 8192))
TARGET_PCT_OF_COPY = 80.0
_DTYPES = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
# Where the suite runs. The CPU tests set "cpu" (kernels in the interpreter, a stand-in timer) to check the
# suite's bookkeeping and files without a GPU.
_DEVICE = "cuda"


def gran_str(g: Any) -> str:
    """"tensor" / "row" / "col" as is, (1, 128) as "1x128"."""
    return g if isinstance(g, str) else f"{g[0]}x{g[1]}"


def _parse_gran(s: str) -> Any:
    s = s.strip().lower()
    if s in ("tensor", "row", "col"):
        return s
    parts = s.split("x")
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return (int(parts[0]), int(parts[1]))
    raise argparse.ArgumentTypeError(f"granularity: expected tensor, row, col or GxH (e.g. 1x128), got {s!r}")


def _parse_shape(s: str) -> tuple[int, int]:
    parts = s.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"shape: expected MxK with positive integers (e.g. 8192x8192), got {s!r}")
    return int(parts[0]), int(parts[1])


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--granularity", type=_parse_gran, action="append", default=None,
                   help="tensor, row, col, 1x128 or 128x128 (repeatable; default: all)")
    p.add_argument("--dtype", choices=["e4m3", "e5m2", "both"], default="e4m3", help="FP8 output format")
    p.add_argument("--shape", type=_parse_shape, action="append", default=None,
                   help="MxK of the bf16 input (repeatable; default: 8192x8192, or a sweep without --quick)")
    qmod = importlib.import_module("tritonfp8.quantize")
    p.add_argument("--variants", default="",
                   help="comma list of variants to time besides the default: (1, G)/(G, G) tilings: "
                   + qmod.TILINGS_HELP + "; tensor/col two-pass schemes: " + qmod.TWO_PASS_HELP
                   + "; col cast tiles (static and two-pass col): " + qmod.COL_CAST_HELP)


def _variant_list(args: argparse.Namespace) -> list[str]:
    qmod = importlib.import_module("tritonfp8.quantize")
    out = []
    for v in (getattr(args, "variants", "") or "").split(","):
        v = v.strip().lower()
        if v and v not in out:
            try:
                prev = qmod._set_variant(v)  # ValueError on unknown names
                qmod._set_variant(prev)
            except ValueError as e:
                raise SystemExit(f"--variants: {e}") from None
            out.append(v)
    return out


def _with_variant(qmod, variant: str, fn):
    """``fn`` run under the tiling / two-pass scheme ``variant`` (restored afterwards; the launch cache keys on it)."""

    def call():
        prev = qmod._set_variant(variant)
        try:
            return fn()
        finally:
            qmod._set_variant(prev)

    return call


def _cases(args: argparse.Namespace) -> list[tuple[tuple[int, int], Any, torch.dtype]]:
    shapes = getattr(args, "shape", None) or (QUICK_SHAPES if args.quick else FULL_SHAPES)
    grans = getattr(args, "granularity", None) or GRANULARITIES
    dt = getattr(args, "dtype", "e4m3") or "e4m3"
    dtypes = [_DTYPES["e4m3"], _DTYPES["e5m2"]] if dt == "both" else [_DTYPES[dt]]
    return [(s, g, d) for s in shapes for g in grans for d in dtypes]


def _scale_numel(m: int, k: int, g: Any) -> int:
    if g == "tensor":
        return 1
    if g == "row":
        return m
    if g == "col":
        return k
    return math.ceil(m / g[0]) * math.ceil(k / g[1])


def useful_bytes(m: int, k: int, g: Any, in_bytes: int = 2) -> int:
    """Bytes a quantization of an (m, k) input must move at least: read x, write xq (1 byte) and the fp32 scales."""
    return m * k * in_bytes + m * k + 4 * _scale_numel(m, k, g)


def passes(m: int, k: int, g: Any) -> int:
    """Reads of x the computed-scale kernels need: 2 for tensor scales and for the two-pass row/col paths (see
    tritonfp8.quantize.quantize), else 1."""
    qmod = importlib.import_module("tritonfp8.quantize")
    return 2 if qmod._needs_two_passes(m, k, g) else 1


def _exact(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor]) -> bool:
    (qa, sa), (qb, sb) = a, b
    return (
        qa.dtype == qb.dtype and qa.shape == qb.shape and sa.shape == sb.shape
        and torch.equal(qa.view(torch.uint8), qb.view(torch.uint8))
        and torch.equal(sa.float().view(torch.int32), sb.float().view(torch.int32))
    )


def profile_case(args: argparse.Namespace):
    """One launch of the headline case for ``--profile``: 8192x8192 bf16 (or the first --shape), first granularity
    given (default 1x128), e4m3 (or --dtype)."""
    qmod = importlib.import_module("tritonfp8.quantize")
    m, k = (getattr(args, "shape", None) or [(8192, 8192)])[0]
    g = (getattr(args, "granularity", None) or [(1, 128)])[0]
    dtype = _DTYPES.get(getattr(args, "dtype", "e4m3"), _DTYPES["e4m3"])
    x = torch.randn(m, k, device=_DEVICE, dtype=torch.bfloat16)
    label = f"quantize {m}x{k} bf16 -> {fp8_format(dtype).short}, {gran_str(g)} scales"
    return (lambda: qmod.quantize(x, g, dtype=dtype)), label


def run(args: argparse.Namespace) -> int:
    from tritonfp8.bench import harness as H

    qmod = importlib.import_module("tritonfp8.quantize")
    quantize, quantize_torch = qmod.quantize, qmod.quantize_torch
    console = H.make_console()
    env = H.environment_info()
    console.print(f"[bold]quant[/]: {env['gpu']}, torch {env['torch']}, triton {env['triton']}, "
                  f"{args.repeats} interleaved rounds per case")
    hbm_tbps = H.peak("hbm_tbps", env["gpu"])  # datasheet HBM bandwidth, for the record
    rows: list[dict[str, Any]] = []
    mismatches = 0
    variants = _variant_list(args)
    if variants:
        console.print(f"variants: {', '.join(variants)} (defaults: tiling {qmod._TILING}, two-pass {qmod._TWO_PASS})")
    for (m, k), g, dtype in _cases(args):
        torch.manual_seed(0)
        x = torch.randn(m, k, device=_DEVICE, dtype=torch.bfloat16)
        ours_out = quantize(x, g, dtype=dtype)
        ref_out = quantize_torch(x, g, dtype=dtype)
        exact = _exact(ours_out, ref_out)
        mismatches += not exact
        s_static = ref_out[1]  # the reference's scale, given back as a static scale below
        del ours_out, ref_out
        nbytes = useful_bytes(m, k, g)
        copy_fn, copy_moved = H.make_copy_fn(max(1, nbytes // 2), _DEVICE)
        fns = {
            "ours": lambda: quantize(x, g, dtype=dtype),
            "torch": lambda: quantize_torch(x, g, dtype=dtype),
            "copy": copy_fn,
        }
        # The scale given: one pass for every granularity (checked against the reference with the same scale).
        fns["ours_static"] = lambda: quantize(x, g, dtype=dtype, scale=s_static)
        static_exact = _exact(fns["ours_static"](), quantize_torch(x, g, dtype=dtype, scale=s_static))
        mismatches += not static_exact
        var_exact = {}
        kind = qmod._normalize_granularity(g)[0]
        for v in variants:
            if qmod._variant_applies(v, kind):  # tilings: (1, G) and (G, G); two-pass schemes: tensor and col
                fn = _with_variant(qmod, v, lambda: quantize(x, g, dtype=dtype))
                var_exact[v] = _exact(fn(), quantize_torch(x, g, dtype=dtype))
                mismatches += not var_exact[v]
                fns[f"ours_{v}"] = fn
                if qmod._is_col_cast_name(v):  # the col cast tile serves the static scale too
                    sfn = _with_variant(qmod, v, lambda: quantize(x, g, dtype=dtype, scale=s_static))
                    ok = _exact(sfn(), quantize_torch(x, g, dtype=dtype, scale=s_static))
                    var_exact[v] = var_exact[v] and ok
                    mismatches += not ok
                    fns[f"static_{v}"] = sfn
        times = H.bench_interleaved(fns, repeats=args.repeats)
        t = {n: H.summarize(v) for n, v in times.items()}
        ours_gbps = H.gbps(nbytes, t["ours"].median)
        copy_gbps = H.gbps(copy_moved, t["copy"].median)
        cmp_torch = H.compare(times["ours"], times["torch"])
        pct_copy = H.pct(ours_gbps, copy_gbps)
        n_pass = passes(m, k, g)
        traffic = nbytes + (n_pass - 1) * m * k * x.element_size()
        static_gbps = H.gbps(nbytes, t["ours_static"].median)
        rows.append(
            {
                "shape": f"{m}x{k}",
                "M": m,
                "K": k,
                "granularity": gran_str(g),
                "dtype": fp8_format(dtype).short,
                "bytes": nbytes,
                "exact": exact,
                "ours_ms": t["ours"].median,
                "torch_ms": t["torch"].median,
                "copy_ms": t["copy"].median,
                "ours_gbps": ours_gbps,
                "torch_gbps": H.gbps(nbytes, t["torch"].median),
                "copy_gbps": copy_gbps,
                "pct_of_copy": pct_copy,
                "passes": n_pass,
                "traffic_bytes": traffic,
                "pct_of_copy_traffic": H.pct(H.gbps(traffic, t["ours"].median), copy_gbps),
                "static_ms": t["ours_static"].median,
                "static_pct_of_copy": H.pct(static_gbps, copy_gbps),
                "static_exact": static_exact,
                # The spread of our % of copy: our slowest round vs the copy's fastest, and the reverse.
                "pct_of_copy_lo": 100.0 * t["copy"].min / t["ours"].max,
                "pct_of_copy_hi": 100.0 * t["copy"].max / t["ours"].min,
                "vs_torch": cmp_torch.ratio,
                "vs_torch_lo": cmp_torch.lo,
                "vs_torch_hi": cmp_torch.hi,
                "vs_torch_verdict": cmp_torch.verdict,
                "ours_spread": t["ours"].spread,
                "copy_spread": t["copy"].spread,
                "hbm_pct": H.pct(ours_gbps, None if hbm_tbps is None else hbm_tbps * 1000),
                "target": (pct_copy >= TARGET_PCT_OF_COPY) if (m, k) == (8192, 8192) else None,
                "rounds_ms": {n: list(v) for n, v in times.items()},
                "variants": {
                    v: {
                        "ms": t[f"ours_{v}"].median,
                        "gbps": H.gbps(nbytes, t[f"ours_{v}"].median),
                        "pct_of_copy": H.pct(H.gbps(nbytes, t[f"ours_{v}"].median), copy_gbps),
                        "vs_ours": t["ours"].median / t[f"ours_{v}"].median,  # > 1: the variant is faster
                        "exact": var_exact[v],
                        **({"static_pct_of_copy": H.pct(H.gbps(nbytes, t[f"static_{v}"].median), copy_gbps),
                            "static_vs_ours": t["ours_static"].median / t[f"static_{v}"].median}
                           if f"static_{v}" in t else {}),
                    }
                    for v in var_exact
                },
            }
        )
        del x, copy_fn
    H.print_table(
        rows,
        [
            H.Column("shape", justify="left"),
            H.Column("granularity", "gran", justify="left"),
            H.Column("dtype"),
            H.Column("ours_ms", "ours ms", "{:.4f}"),
            H.Column("ours_gbps", "ours GB/s", "{:.0f}"),
            H.Column("copy_gbps", "copy GB/s", "{:.0f}"),
            H.Column("pct_of_copy", "% of copy", "{:.1f}"),
            H.Column(lambda r: f"{r['pct_of_copy_lo']:.0f}-{r['pct_of_copy_hi']:.0f}", "range"),
            H.Column("passes"),
            H.Column("pct_of_copy_traffic", "% traffic", "{:.1f}"),
            H.Column("static_pct_of_copy", "static %", "{:.1f}"),
            H.Column("torch_gbps", "torch GB/s", "{:.0f}"),
            H.Column("vs_torch", "x torch", "{:.2f}"),
            H.Column("ours_spread", "spread", "{:.1%}"),
            H.Column("exact"),
            H.Column("target", f">= {TARGET_PCT_OF_COPY:.0f}%"),
        ],
        title="FP8 quantization: tritonfp8 vs quantize_torch vs device copy of the same bytes (bf16 input)",
        console=console,
        caption="GB/s = (input + FP8 output + scales) bytes / median time; % traffic = the same counting every read "
        "of x (passes); static % = the scale given (one pass); x torch = torch_ms / ours_ms; "
        "range = % of copy from the extreme rounds; spread = (max - min) / median of our rounds",
    )
    headline = [r for r in rows if r["target"] is not None]
    for r in headline:
        status = "[green]meets[/]" if r["target"] else "[bold red]misses[/]"
        console.print(f"{r['shape']} {r['granularity']} {r['dtype']}: {r['pct_of_copy']:.1f}% of copy bandwidth "
                      f"({r['ours_gbps']:.0f} of {r['copy_gbps']:.0f} GB/s) {status} the {TARGET_PCT_OF_COPY:.0f}% target")
    for r in rows:
        for v, d in r["variants"].items():
            console.print(f"  {r['shape']} {r['granularity']} {r['dtype']} variant {v}: {d['ms']:.4f} ms, "
                          f"{d['pct_of_copy']:.1f}% of copy, {d['vs_ours']:.3f}x default"
                          + (f"; static {d['static_pct_of_copy']:.1f}% of copy, {d['static_vs_ours']:.3f}x default"
                             if "static_pct_of_copy" in d else "")
                          + ("" if d["exact"] else " [bold red]NOT EXACT[/]"))
    for r in rows:
        if not r["static_exact"]:
            console.print(f"  {r['shape']} {r['granularity']} {r['dtype']} static scale: [bold red]NOT EXACT[/]")
    if mismatches:
        console.print(f"[bold red]quant: {mismatches} case(s) differ from quantize_torch (column 'exact')[/]")
    if not args.no_save:
        writer = H.ResultsWriter("quant", out_dir=args.out, env=env)
        path = writer.write(
            rows,
            config={
                "quick": args.quick,
                "repeats": args.repeats,
                "input_dtype": "bfloat16",
                "timing": "do_bench median, L2 flushed, interleaved rounds",
                "target_pct_of_copy": TARGET_PCT_OF_COPY,
                "tiling": qmod._TILING,
                "two_pass": qmod._TWO_PASS,
                "variants": variants,
            },
        )
        sep = "\n" if len(rows) <= 6 else " "  # long sweeps get tilted one-line labels
        labels = [f"{r['shape']}{sep}{r['granularity']} {r['dtype']}" for r in rows]
        H.plot_bars(
            writer.png_path,
            labels,
            {
                "tritonfp8": [r["ours_gbps"] for r in rows],
                "quantize_torch": [r["torch_gbps"] for r in rows],
                "d2d copy, same bytes": [r["copy_gbps"] for r in rows],
            },
            ylabel="GB/s (bytes read + written / median time)",
            title=f"FP8 quantization bandwidth, {env['gpu']}",
        )
        console.print(f"wrote {path} and {writer.png_path}")
    return 1 if mismatches else 0
