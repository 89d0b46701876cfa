"""FP8 GEMM: ``tritonfp8.gemm`` against cuBLAS (``torch._scaled_mm``) and a BF16 matmul, interleaved in one run.

Per shape (M, N, K), on a (M, K) and b (N, K) e4m3 ~ N(0,1), bf16 output (see ``tritonfp8.tune.Problem``):

- ``fast``:    ours, per-tensor scales, ``accumulate="fast"``  vs ``_scaled_mm(use_fast_accum=True)``;
- ``precise``: ours, ``accumulate="precise"``                   vs ``_scaled_mm(use_fast_accum=False)`` (exact);
- ``rowwise``: ours, scales (M, 1) and (1, N), fast             vs ``_scaled_mm`` with the same rowwise scales;
- ``bf16``:    ``torch.matmul`` of the bf16 copies (reference speed of the 16-bit path).

Ours uses the library's own choice (tuned table of this GPU, else heuristics), or extra ``--variants`` (the same
config with another schedule) so one run can decide which schedule wins where. Reported: TFLOPS, ratio = peer ms /
ours ms (with the lo..hi range of the interleaved rounds and a verdict against the ±6% run-to-run noise), % of the
1979 TFLOPS dense FP8 peak, relative error of every output against the fp64 product of the dequantized inputs (and
ours/cuBLAS exact's error ratio for precise), and for M <= 64 the achieved bandwidth (a, b, C bytes once / time).

Name A/B (``--name-ab``, on by default without ``--quick``): the main config compiled under the "cutlass" and the
plain name, timed interleaved, plus whether the two SASS listings differ (offline compile of the same config).

Block scaling (``--scaling block``, issue 4): ours with 1x128 scales of a (M, K/128) and 128x128 scales of b
(N/128, K/128), random in [0.5, 1.5), vs ``_scaled_mm`` with the same block scales (cuBLAS blockwise, exact
accumulation), on the same shapes (the issue's dense set unless ``--shapes``). cuBLAS takes scale_a stored
outer-dim-major (stride (1, M)) and scale_b as the (K/128, N/128) view of the (N/128, K/128) tensor (see
/work/shared/HOPPER-FP8-NOTES.md); ours reads the same scale tensors in place. Errors against the fp64 product of the
block-dequantized inputs; bound: ``error_bound(bf16, K, "precise")``. The same rounds also time per-tensor cuBLAS
(fast accumulation) on each shape: ``x cuBLAS tensor`` is ours with block scales against it, and
``cublas_block_vs_tensor`` what the block scales cost cuBLAS.

Targets (H200, issue 3): fast geomean >= 1.05x (no shape < 0.95x); rowwise geomean >= 1.0x; precise >= 0.95x with
error <= 1.1x cuBLAS exact's; M <= 64: >= 1.0x.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

import torch

DESCRIPTION = ("FP8 GEMM TFLOPS vs torch._scaled_mm (fast, exact, rowwise; --scaling block: blockwise) and BF16 "
               "matmul; schedule variants; name A/B")

QUICK_SHAPES = "16x8192x8192;128x8192x8192;1024x10240x8192;8192x8192x8192;4096x57344x8192"
MODES = ("fast", "precise", "rowwise")

# --variants: the library's config for the shape with one field changed (same tile, stages refit to shared memory).
VARIANTS = {
    "tuned": {},
    "persistent": {"schedule": "tmapersistent"},
    "nonpersistent": {"schedule": "tma"},
    "ws": {"schedule": "tmaws", "num_warps": 4},
    "wspersistent": {"schedule": "tmawspersistent", "num_warps": 4},
    "tile128": {"block_m": 128, "block_n": 128, "epilogue_subtile": 1},
    "tile256x128": {"block_m": 256, "block_n": 128, "epilogue_subtile": 2, "num_warps": 8},
    "nosub": {"epilogue_subtile": 1},
    # Lagged fp32 promotion (GemmConfig.promote): block kb-1's fresh dot is added while block kb's dot is issued.
    "lag": {"promote": "lag"},
    "lagnp": {"promote": "lag", "schedule": "tma"},  # the lag where the offline SASS overlaps most (one tile/program)
    # Two K blocks per step, each as two chained half-K dots: each block's promotion overlaps the second half of
    # the next block's wgmmas (offline SASS: FFMAs issued between QGMMAs with no WARPGROUP.DEPBAR between them).
    "split": {"promote": "split"},
    "splitnp": {"promote": "split", "schedule": "tma"},
    # Precise/block on 64x128 tiles, one warpgroup, 3 stages: 143 (154 block) registers and 72 KB of shared memory
    # (offline sm_90), so three CTAs share an SM and one CTA's fp32 promotion overlaps the others' wgmma (the trick
    # that made the hd128 attention default 1.2-1.5x faster). Not yet timed.
    "p64": {"block_m": 64, "block_n": 128, "num_warps": 4, "num_stages": 3, "schedule": "tma",
            "epilogue_subtile": 1, "promote": "sync"},
    "p64lag": {"block_m": 64, "block_n": 128, "num_warps": 4, "num_stages": 3, "schedule": "tma",
               "epilogue_subtile": 1, "promote": "lag"},
    # The Gluon kernel (_kernels/gemm_gluon.py): TMA loader warp + two consumer warp groups whose fp32 promotion
    # runs under the other group's wgmma; persistent, 128x128x128, 6 stages (4: glwss4).
    "glws": {"schedule": "glws", "block_m": 128, "block_n": 128, "block_k": 128, "num_warps": 4,
             "epilogue_subtile": 1, "promote": "sync", "split_k": 1, "swap_ab": False},
    # The same kernel with fast accumulation (one chained accumulator, one wgmma group in flight): 128x256 tiles
    # as two 64x256 consumer groups, 4 stages, epilogue in two column pieces; glwsfast128: 128x128 tiles.
    "glwsfast": {"schedule": "glws", "block_m": 128, "block_n": 256, "block_k": 128, "num_warps": 4,
                 "epilogue_subtile": 1, "split_k": 1, "swap_ab": False},
    "glwsfast128": {"schedule": "glws", "block_m": 128, "block_n": 128, "block_k": 128, "num_warps": 4,
                    "epilogue_subtile": 1, "split_k": 1, "swap_ab": False},
    "glwsbn64": {"schedule": "glws", "block_m": 128, "block_n": 64, "block_k": 128, "num_warps": 4,
                 "epilogue_subtile": 1, "promote": "sync", "split_k": 1, "swap_ab": False},
    "glwss4": {"schedule": "glws", "block_m": 128, "block_n": 128, "block_k": 128, "num_warps": 4,
               "epilogue_subtile": 1, "promote": "sync", "split_k": 1, "num_stages": 4, "swap_ab": False},
    # Promoting modes on 128x256 tiles: each consumer group's 256 columns as two 128-wide accumulators, two fresh
    # wgmmas per K block (3 x 64 fp32 registers per thread); stages refit (4 with bf16 output; glwsn256s3: 3).
    "glwsn256": {"schedule": "glws", "block_m": 128, "block_n": 256, "block_k": 128, "num_warps": 4,
                 "epilogue_subtile": 1, "promote": "sync", "split_k": 1, "swap_ab": False},
    "glwsn256s3": {"schedule": "glws", "block_m": 128, "block_n": 256, "block_k": 128, "num_warps": 4,
                   "epilogue_subtile": 1, "promote": "sync", "split_k": 1, "num_stages": 3, "swap_ab": False},
}
# Split-K on the Gluon kernel (few tiles: M = 128): scaled fp32 partials per run of K blocks, then the reduction
# kernel (bias, activation, rounding). glwssk<S>: 128x128 tiles; glwsn256sk<S>: 128x256.
for _s in (2, 3, 4, 8):
    VARIANTS[f"glwssk{_s}"] = {**VARIANTS["glwss4"], "split_k": _s}
for _s in (2, 3, 4):
    VARIANTS[f"glwsn256sk{_s}"] = {**VARIANTS["glwsn256s3"], "split_k": _s}
# Modes a variant is timed in (default: fast). "lag" changes only the per-K-block promotion, which exists in the
# precise mode and with block scales (--scaling block); it is timed there, on that mode's own config.
VARIANT_MODES = {"lag": ("precise", "block"), "lagnp": ("precise", "block"), "p64": ("precise", "block"),
                 "p64lag": ("precise", "block"), "split": ("precise", "block"), "splitnp": ("precise", "block"),
                 "glws": ("precise", "block"), "glwss4": ("precise", "block"),
                 "glwsbn64": ("precise", "block"), "glwsn256": ("precise", "block"),
                 "glwsn256s3": ("precise", "block")}
VARIANT_MODES.update({k: ("fast", "precise", "block") for k in VARIANTS if "sk" in k and k.startswith("glws")})


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shapes", default=None,
                   help="'MxNxK;...', 'set' (the issue's 27 shapes, default) or 'quick' (default with --quick)")
    p.add_argument("--modes", default=",".join(MODES), help="comma list of fast, precise, rowwise")
    in_modes = ", ".join(f"{k} in {'/'.join(v)}" for k, v in VARIANT_MODES.items())
    p.add_argument("--variants", default="",
                   help=f"extra configs of ours, timed as '<mode>:<variant>' in the fast mode ({in_modes}): "
                        f"{', '.join(VARIANTS)}")
    p.add_argument("--no-bf16", action="store_true", help="skip the BF16 torch.matmul peer")
    p.add_argument("--scaling", choices=("tensor", "block"), default="tensor",
                   help="tensor: the --modes above; block: 1x128 x 128x128 block scales vs cuBLAS blockwise")
    p.add_argument("--name-ab", action=argparse.BooleanOptionalAction, default=None,
                   help="time the main config under the cutlass and the plain name (default: on unless --quick)")


def variant_config(base, name: str, out_size: int = 2):
    """``base`` with the variant's fields; None when it does not apply (e.g. swap-AB configs are not retiled)."""
    from tritonfp8._kernels.gemm_configs import GemmConfig, with_max_stages

    if name not in VARIANTS:
        raise ValueError(f"--variants: unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    change = dict(VARIANTS[name])
    if base.swap_ab and any(k in change for k in ("block_m", "block_n")) and change.get("schedule") != "glws":
        return None
    if change.get("schedule", "").startswith("tmaws") and base.epilogue_subtile > 1:
        change["epilogue_subtile"] = 1
    try:
        cfg = GemmConfig(**{**base.as_dict(), **change})
    except ValueError:
        return None
    if "num_stages" in change:  # the variant's depth is the point (e.g. smaller rings: more CTAs per SM)
        from tritonfp8._kernels.gemm_configs import fit_stages

        return fit_stages(cfg, out_size)
    return with_max_stages(cfg, out_size, cap=6) if change else cfg


def _shapes(args) -> list[tuple[int, int, int]]:
    from tritonfp8.tune import parse_shapes

    spec = args.shapes or (QUICK_SHAPES if args.quick else "set")
    return parse_shapes(spec)


def profile_case(args):
    from tritonfp8.tune import Problem, ours

    M, N, K = _shapes(args)[0]
    p = Problem.make(M, N, K)
    return ours(p, None, precise=False), f"tritonfp8.gemm {M}x{N}x{K} fast"


class BlockScales:
    """Block scales for a :class:`tritonfp8.tune.Problem`: ``sa`` (M, ceil(K/128)) stored outer-dim-major
    (stride (1, M)), ``sb`` (ceil(N/128), ceil(K/128)) row-major, both random in [0.5, 1.5); ``ref()`` the fp64
    product of the block-dequantized inputs."""

    def __init__(self, p, seed: int = 1):
        dev = p.a.device
        g = torch.Generator(device=dev).manual_seed(seed)
        kb, nb = -(-p.K // 128), -(-p.N // 128)
        self.p = p
        self.sa = (torch.rand(kb, p.M, device=dev, generator=g) + 0.5).t()  # (M, Kb), strides (1, M)
        self.sb = torch.rand(nb, kb, device=dev, generator=g) + 0.5

    def ref(self) -> torch.Tensor:
        from tritonfp8.gemm import gemm_torch

        return gemm_torch(self.p.a, self.p.b, self.sa, self.sb, out_dtype=torch.float64,
                          compute_dtype=torch.float64)


def cublas_block(bs: BlockScales) -> Callable[[], torch.Tensor]:
    """``torch._scaled_mm`` with block scales: scale_a (M, K/128) outer-dim-major, scale_b the (K/128, N/128) view
    of the (N/128, K/128) tensor (layouts torch 2.11 / CUDA 13 accepts; HOPPER-FP8-NOTES.md)."""
    p = bs.p
    bt = p.b.t()
    sbt = bs.sb.t()
    return lambda: torch._scaled_mm(p.a, bt, scale_a=bs.sa, scale_b=sbt, out_dtype=torch.bfloat16)


def _geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def run(args) -> int:
    from tritonfp8._kernels import gemm as K_
    from tritonfp8._kernels.gemm_configs import select_config
    from tritonfp8.bench import harness as H
    from tritonfp8.gemm import error_bound, gemm
    from tritonfp8 import tune as T
    from tritonfp8.tune import WS_ENV, Canary, Problem, cublas, ours, rel_error_gpu, ws_opted_in

    on_gpu = T._DEVICE == "cuda"
    if on_gpu and not torch.cuda.is_available():
        print("bench gemm needs a CUDA GPU")
        return 2
    block = getattr(args, "scaling", "tensor") == "block"
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            raise SystemExit(f"--modes: expected a comma list of {', '.join(MODES)}, got {m!r}")
    if block:
        modes = ["block"]  # the block-scaled comparison only; --modes is for the per-tensor/rowwise scalings
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        variant_config(K_.MAIN_CONFIG, v)  # validates the name
    name_ab = (not args.quick) if args.name_ab is None else args.name_ab
    console = H.make_console()
    env = H.environment_info()
    gpu = env["gpu"] if on_gpu else None
    sms = env["sm_count"] if on_gpu else K_.INTERPRETER_SMS
    arch = int(env["capability"].replace(".", "")) if on_gpu else 90
    peak = H.peak("fp8", gpu)
    hbm = H.peak("hbm_tbps", gpu)
    shapes = _shapes(args)
    ws_ok = True
    if on_gpu and any(v.startswith("ws") for v in variants) and not ws_opted_in():
        console.print(f"warp-specialized variants skipped: they hung on sm_90 with triton 3.6 (set {WS_ENV}=1 to try)")
        variants = [v for v in variants if not v.startswith("ws")]
    if on_gpu and any(v.startswith("ws") for v in variants):
        ws_ok, details = Canary().result()
        console.print(f"warp-specialization canary: {'passed' if ws_ok else 'FAILED'} {details}")
    console.print(f"bench gemm on {gpu}: {len(shapes)} shapes, modes {modes}, variants {variants or '-'}, "
                  f"{args.repeats} interleaved rounds")

    rows: list[dict] = []
    failures: list[str] = []
    for (M, N, K) in shapes:
        p = Problem.make(M, N, K)
        fns: dict[str, Callable] = {}
        outs: dict[str, Callable] = {}  # name -> (fn, rowwise?) for the error check
        cfg_fast, src = select_config(M, N, K, precise=False, arch=arch, num_sms=sms, out_size=2, gpu_name=gpu)
        cfg_prec, _ = select_config(M, N, K, precise=True, arch=arch, num_sms=sms, out_size=2, gpu_name=gpu)
        cfg_block, _ = select_config(M, N, K, precise=True, arch=arch, num_sms=sms, out_size=2, gpu_name=gpu,
                                     block=True)
        bs = BlockScales(p) if block else None
        if block:
            fns["ours_block"] = lambda p=p, bs=bs: gemm(p.a, p.b, bs.sa, bs.sb, out=p.out)
            fns["cublas_block"] = cublas_block(bs)
            # Issue 4's second peer: per-tensor cuBLAS (fast accumulation) on the same shape, the speed block
            # scaling is measured against (what the block scales cost cuBLAS, and us).
            fns["cublas_tensor"] = cublas(p, fast=True)
        if "fast" in modes:
            fns["ours_fast"] = lambda p=p: gemm(p.a, p.b, p.sa, p.sb, out=p.out)
            fns["cublas_fast"] = cublas(p, fast=True)
        if "precise" in modes:
            fns["ours_precise"] = lambda p=p: gemm(p.a, p.b, p.sa, p.sb, accumulate="precise", out=p.out)
            fns["cublas_exact"] = cublas(p, fast=False)
        if "rowwise" in modes:
            fns["ours_rowwise"] = lambda p=p: gemm(p.a, p.b, p.sa_row, p.sb_row, out=p.out)
            fns["cublas_rowwise"] = cublas(p, fast=True, rowwise=True)
        if not args.no_bf16:
            a16, b16 = p.a.to(torch.bfloat16), p.b.to(torch.bfloat16)
            fns["bf16_matmul"] = lambda a16=a16, b16=b16: torch.matmul(a16, b16.T)
        vcfgs = {}  # "<mode>:<variant>" -> config
        base_cfgs = {"fast": cfg_fast, "precise": cfg_prec, "block": cfg_block}
        for v in variants:
            for vmode in VARIANT_MODES.get(v, ("fast",)):
                if vmode not in modes:
                    continue
                vc = variant_config(base_cfgs[vmode], v)
                if vc is None or (vc.warp_specialized and not ws_ok) \
                        or vc in [c for k, c in vcfgs.items() if k.startswith(vmode + ":")]:
                    continue
                vcfgs[f"{vmode}:{v}"] = vc
                if vmode == "fast":
                    fns[f"ours_fast:{v}"] = ours(p, vc, precise=False)
                elif vmode == "precise":
                    fns[f"ours_precise:{v}"] = (lambda p=p, vc=vc: gemm(p.a, p.b, p.sa, p.sb, accumulate="precise",
                                                                        out=p.out, config=vc))
                else:
                    fns[f"ours_block:{v}"] = lambda p=p, bs=bs, vc=vc: gemm(p.a, p.b, bs.sa, bs.sb, out=p.out,
                                                                           config=vc)
        # Errors (each output once, against the fp64 product of the dequantized inputs).
        errs = {}
        for name, fn in fns.items():
            try:
                out = fn()
                T._sync()
            except Exception as e:
                failures.append(f"{M}x{N}x{K} {name}: {type(e).__name__}: {e}")
                errs[name] = math.inf
                continue
            if name == "bf16_matmul":
                ref = p.a.double() @ p.b.double().T
                errs[name] = rel_error_gpu(out, ref)
                del ref
            elif name.split(":")[0].endswith("_block"):
                ref = bs.ref()
                errs[name] = rel_error_gpu(out, ref)
                del ref
            else:
                errs[name] = rel_error_gpu(out, p.ref(rowwise=name.endswith("rowwise")))
        fns = {k: v for k, v in fns.items() if math.isfinite(errs.get(k, 0.0))}
        times = H.bench_interleaved(fns, repeats=args.repeats, timer=T._TIMER)
        med = {k: H.summarize(v).median for k, v in times.items()}
        tf = {k: H.tflops(p.flops, med[k]) for k in med}

        def row(mode, ours_key, peer_key, cfg):
            if ours_key not in med or peer_key not in med:
                return
            cmp = H.compare(times[ours_key], times[peer_key])
            acc = "precise" if mode.split(":")[0] in ("precise", "block") else "fast"
            bound = error_bound(torch.bfloat16, K, acc, tensor_core=True)
            r = {
                "shape": f"{M}x{N}x{K}", "M": M, "N": N, "K": K, "mode": mode, "ours": ours_key, "peer": peer_key,
                "config": cfg.short() if cfg else None, "config_source": "variant" if ":" in mode else src,
                "ours_ms": med[ours_key], "peer_ms": med[peer_key], "ours_tflops": tf[ours_key],
                "peer_tflops": tf[peer_key], "ratio": cmp.ratio, "lo": cmp.lo, "hi": cmp.hi, "verdict": cmp.verdict,
                "pct_peak": H.pct(tf[ours_key], peak), "err": errs.get(ours_key), "peer_err": errs.get(peer_key),
                "err_bound": bound, "rounds_ours": times[ours_key], "rounds_peer": times[peer_key],
            }
            if r["peer_err"]:
                r["err_vs_peer"] = r["err"] / r["peer_err"]
            default_key = ours_key.split(":")[0]
            if default_key != ours_key and default_key in times:
                # The variant against the library's default of the same mode, same interleaved rounds (> 1: faster).
                vs = H.compare(times[ours_key], times[default_key])
                r.update(vs_default=vs.ratio, vs_default_lo=vs.lo, vs_default_hi=vs.hi, vs_default_verdict=vs.verdict)
            if M <= 64:
                r["ours_gbps"] = H.gbps(p.bytes, med[ours_key])
                r["peer_gbps"] = H.gbps(p.bytes, med[peer_key])
                r["pct_hbm"] = H.pct(r["ours_gbps"] / 1000.0, hbm)
            if mode == "block" and "cublas_tensor" in times:
                vt = H.compare(times[ours_key], times["cublas_tensor"])
                r.update(tensor_peer_tflops=tf["cublas_tensor"], tensor_peer_err=errs.get("cublas_tensor"),
                         vs_cublas_tensor=vt.ratio, vs_cublas_tensor_lo=vt.lo, vs_cublas_tensor_hi=vt.hi,
                         cublas_block_vs_tensor=tf[peer_key] / tf["cublas_tensor"])
            if "bf16_matmul" in tf:
                r["bf16_tflops"] = tf["bf16_matmul"]
                r["bf16_err"] = errs.get("bf16_matmul")
            if r["err"] is None or not r["err"] <= bound:
                failures.append(f"{r['shape']} {ours_key}: error {r['err']} > bound {bound:.3g}")
            rows.append(r)

        row("fast", "ours_fast", "cublas_fast", cfg_fast)
        row("precise", "ours_precise", "cublas_exact", cfg_prec)
        row("rowwise", "ours_rowwise", "cublas_rowwise", cfg_fast)
        row("block", "ours_block", "cublas_block", cfg_block)
        peers = {"fast": "cublas_fast", "precise": "cublas_exact", "block": "cublas_block"}
        for key, vc in vcfgs.items():
            row(key, f"ours_{key}", peers[key.split(":")[0]], vc)
        del p
        if on_gpu:
            torch.cuda.empty_cache()

    cols = [H.Column("shape", justify="left"), H.Column("mode", justify="left"), H.Column("config", justify="left"),
            H.Column("ours_tflops", "ours TFLOPS", "{:.0f}"), H.Column("peer_tflops", "cuBLAS TFLOPS", "{:.0f}"),
            H.Column("ratio", "ratio", "{:.3f}"), H.Column("verdict"), H.Column("vs_default", "vs default", "{:.3f}"), H.Column("pct_peak", "% peak", "{:.0f}"),
            H.Column("err", "err", "{:.2e}"), H.Column("peer_err", "cuBLAS err", "{:.2e}"),
            H.Column("ours_gbps", "GB/s", "{:.0f}"), H.Column("bf16_tflops", "bf16 TFLOPS", "{:.0f}")]
    if block:
        cols += [H.Column("tensor_peer_tflops", "cuBLAS tensor TFLOPS", "{:.0f}"),
                 H.Column("vs_cublas_tensor", "x cuBLAS tensor", "{:.3f}")]
    H.print_table(rows, cols, title=f"bench gemm on {gpu} (ratio = cuBLAS ms / ours ms; > 1: ours faster)",
                  console=console)
    summary = []
    for mode in [*modes, *[f"{m}:{v}" for v in variants for m in VARIANT_MODES.get(v, ("fast",)) if m in modes]]:
        rs = [r for r in rows if r["mode"] == mode]
        if not rs:
            continue
        small = [r for r in rs if r["M"] <= 64]
        s = {"mode": mode, "shapes": len(rs), "geomean_ratio": _geomean([r["ratio"] for r in rs]),
             "min_ratio": min(r["ratio"] for r in rs), "below_0.95": sum(r["ratio"] < 0.95 for r in rs),
             "geomean_ratio_m_le_64": _geomean([r["ratio"] for r in small]),
             "max_err_vs_peer": max((r.get("err_vs_peer") or 0) for r in rs),
             "geomean_vs_default": _geomean([r.get("vs_default") for r in rs]),
             "geomean_vs_cublas_tensor": _geomean([r.get("vs_cublas_tensor") for r in rs])}
        summary.append(s)
    summary_cols = [
        H.Column("mode", justify="left"), H.Column("shapes"), H.Column("geomean_ratio", "geomean ratio", "{:.3f}"),
        H.Column("min_ratio", "min", "{:.3f}"), H.Column("below_0.95", "< 0.95x"),
        H.Column("geomean_ratio_m_le_64", "M<=64 geomean", "{:.3f}"),
        H.Column("max_err_vs_peer", "max err / cuBLAS err", "{:.2f}"),
        H.Column("geomean_vs_default", "vs default", "{:.3f}"),
        H.Column("geomean_vs_cublas_tensor", "x cuBLAS tensor", "{:.3f}"),
    ]
    H.print_table(summary, summary_cols, title="summary", console=console)

    ab = None
    if name_ab and on_gpu:
        ab = _name_ab(console, arch, sms, args.repeats)
    for f in failures:
        console.print(f"[red]FAIL[/] {f}")
    if not args.no_save:
        w = H.ResultsWriter("gemm", out_dir=args.out, env=env)
        w.write(rows, config={"shapes": [list(s) for s in shapes], "modes": modes, "variants": variants,
                              "scaling": "block" if block else "tensor",
                              "repeats": args.repeats, "name_ab": ab, "summary": summary},
                notes=failures)
        main = "block" if block else "fast"
        fast = [r for r in rows if r["mode"] == main]
        if fast:
            H.plot_bars(w.png_path, [r["shape"] for r in fast],
                        {f"tritonfp8 {main}": [r["ours_tflops"] for r in fast],
                         f"cuBLAS {main}": [r["peer_tflops"] for r in fast],
                         **({"cuBLAS per-tensor": [r.get("tensor_peer_tflops") for r in fast]} if block else {}),
                         **({"BF16 matmul": [r.get("bf16_tflops") for r in fast]} if not args.no_bf16 else {})},
                        ylabel="TFLOPS", title=f"FP8 GEMM on {gpu}", hline=(peak, "FP8 dense peak") if peak else None)
        console.print(f"wrote {w.json_path}" + (f" and {w.png_path}" if fast else ""))
    return 1 if failures else 0


def _name_ab(console, arch: int, sms: int, repeats: int) -> dict:
    """Main config under both names on 8192^3: interleaved timing + whether ptxas produced different SASS."""
    from tritonfp8 import codegen, naming
    from tritonfp8._kernels import gemm as K_
    from tritonfp8.bench import harness as H
    from tritonfp8.tune import Problem, ours

    p = Problem.make(8192, 8192, 8192)
    cfg = K_.MAIN_CONFIG
    run = ours(p, cfg, precise=False)

    def under(mode):
        def f():
            with naming.kernel_names(mode):
                return run()
        return f

    fns = {"cutlass_name": under("cutlass"), "plain_name": under("plain")}
    for f in fns.values():
        f()
    times = H.bench_interleaved(fns, repeats=max(3, repeats))
    cmp = H.compare(times["cutlass_name"], times["plain_name"])
    try:
        rep = codegen.inspect_kernel("gemm_fast_tensorwise", arch=arch, compare_names=True)
        differs = rep.cutlass_name_changes_sass
    except Exception as e:  # offline compile problems must not hide the timing
        differs = f"{type(e).__name__}: {e}"
    res = {"config": cfg.short(), "shape": "8192x8192x8192",
           "cutlass_ms": H.summarize(times["cutlass_name"]).median,
           "plain_ms": H.summarize(times["plain_name"]).median,
           "plain_over_cutlass": cmp.ratio, "lo": cmp.lo, "hi": cmp.hi, "verdict": cmp.verdict,
           "sass_differs": differs}
    console.print(f"name A/B ({cfg.short()}, 8192^3): cutlass {res['cutlass_ms']:.3f} ms, plain "
                  f"{res['plain_ms']:.3f} ms, plain/cutlass time ratio {cmp.ratio:.3f} [{cmp.lo:.3f}, {cmp.hi:.3f}] "
                  f"({cmp.verdict}); SASS differs: {differs}")
    return res
