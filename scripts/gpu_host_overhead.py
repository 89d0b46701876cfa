"""Host launch overhead vs kernel time of the FP8 GEMM (device diagnostic; writes JSON under $OUT and
benchmarks/results/).

For a few shapes it measures, for our public op (tritonfp8.gemm), our implementation called directly
(tritonfp8.gemm module), and torch._scaled_mm:
- host_us: wall-clock microseconds per call of the Python call alone (200 asynchronous calls, no sync inside);
- events_ms: do_bench median (CUDA events around each eager call, L2 flushed before each);
- graph_ms: the same calls replayed from a CUDA graph (harness.time_graph, L2 flushed): the kernel time.
If events_ms is well above graph_ms, the eager number is host-bound: the GPU waits for the Python launch path.

``--ab``: instead, an interleaved A/B of the launch paths of tritonfp8.gemm, in one process, switched between rounds
(the same switches as the environment variables): ``triton`` (TRITONFP8_FAST_LAUNCH=0: Triton's own dispatch),
``cached`` (launch plans and templates, stock launcher: TRITONFP8_DIRECT_LAUNCH=0), ``direct`` (the default: also
the direct C-launcher call with descriptors encoded once per geometry, tritonfp8/_direct.py) and ``cublas``
(torch._scaled_mm). Per variant: the median over rounds of host µs/call, and the events time (do_bench); each
variant's output is checked bit-exact against ``triton``'s. Then the profile, with the default (direct) path.

``--decode``: the same A/B for ``tritonfp8.decode_attention`` (variants ``triton``, ``cached``, ``direct``; no cuBLAS
row) on B=8, ctx 8192, Hq 32, Hkv 8, D 128, pages of 64, E4M3 cache: with the forced TMA config (``kv_load="tma"``,
block_n 64, 1 warp, 4 stages, 16 splits: the long-context rule's config at this shape; K/V descriptors per call)
and with the heuristic's (gather) config. ``triton`` is the launch path before decode used the cached launcher
(Triton's dispatch, two CUtensorMaps encoded per TMA call), ``cached`` skips the dispatch (stock launcher: still
two encodings per call), ``direct`` encodes none on repeat calls, ``replay`` (the default since session 13) also skips the validation and
Triton's argument specialization of a repeat call (decode._REPLAYS). Then the profile of the TMA call.
"""

import argparse
import importlib
import json
import os
import statistics
import time

import torch

import tritonfp8
from tritonfp8 import _direct
from tritonfp8 import _launch
from tritonfp8.bench import harness as H

G = importlib.import_module("tritonfp8.gemm")
Dec = importlib.import_module("tritonfp8.decode")
# --decode: the long-context rule's TMA config at B=8 x Hkv 8 (16 splits: 4x the gather heuristic's), forced
DECODE_TMA = Dec.DecodeConfig(kv_load="tma", block_n=64, num_warps=1, num_stages=4, num_splits=16)
SHAPES = [(16, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (16, 10240, 8192), (4096, 4096, 4096)]
parser = argparse.ArgumentParser()
parser.add_argument("--ab", action="store_true", help="interleaved A/B of the launch paths (see the docstring)")
parser.add_argument("--rounds", type=int, default=7, help="--ab: interleaved rounds")
parser.add_argument("--decode", action="store_true", help="A/B of decode_attention's launch paths (see the docstring)")
cli = parser.parse_args()


def host_us(fn, n=200):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def operands(M, N, K):
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
    return a, b, torch.ones((), device="cuda"), torch.empty(M, N, device="cuda", dtype=torch.bfloat16)


def cublas_fn(a, b, one, out):
    return lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True,
                                    out=out)


# --ab variants: (fast launch on, direct on); None = torch._scaled_mm
VARIANTS = {"triton": (False, False), "cached": (True, False), "direct": (True, True), "cublas": None}


def set_variant(name):
    """Launch-path switches; ``replay`` (decode only, session 13) is ``direct`` plus decode_attention's replay of
    validated calls (decode._REPLAYS), which the other variants run with switched off."""
    on = (True, True) if name == "replay" else VARIANTS[name]
    if on is not None:
        _launch.set_enabled(on[0])
        _direct.set_enabled(on[1])
        Dec._FAST.set(name == "replay")


def ab_rows():
    rows = []
    for (M, N, K) in SHAPES:
        a, b, one, out = operands(M, N, K)
        ours = lambda: tritonfp8.gemm(a, b, one, one, out=out)  # noqa: E731
        fn = {name: (cublas_fn(a, b, one, out) if on is None else ours) for name, on in VARIANTS.items()}
        ref, exact = None, {}
        for name in VARIANTS:
            set_variant(name)
            if fn[name] is ours:
                ours()  # a first call fills this path's caches through Triton's dispatch; the second uses them
                out.zero_()
                ours()
                torch.cuda.synchronize()
                ref = out.clone() if ref is None else ref
                exact[name] = bool(torch.equal(out, ref))
        host = {name: [] for name in VARIANTS}
        for r in range(cli.rounds):
            order = list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))
            for name in order:
                set_variant(name)
                host[name].append(host_us(fn[name]))
        for name in VARIANTS:
            set_variant(name)
            ev = H.time_once(fn[name], warmup_ms=10, rep_ms=50)
            h = statistics.median(host[name])
            r = {"shape": f"{M}x{N}x{K}", "fn": name, "host_us": h, "host_us_rounds": host[name], "events_ms": ev,
                 "bit_exact_vs_triton": exact.get(name)}
            rows.append(r)
            print(f"{r['shape']:>16} {name:>7}  host {h:7.1f} us (median of {cli.rounds})   events {ev * 1e3:7.1f} us"
                  f"   exact {exact.get(name, '-')}", flush=True)
        set_variant("direct")
    print(f"descriptor encodings {_direct.stats['encoded']}, reused {_direct.stats['reused']}")
    return rows


def decode_operands(b=8, ctx=8192, hq=32, hkv=8, d=128, page=64):
    """A paged E4M3 cache with ``b`` sequences of ``ctx`` tokens on shuffled pages (random bytes, no NaN), bf16 q."""
    g = torch.Generator(device="cuda").manual_seed(0)
    nblocks = b * ctx // page
    raw = torch.randint(0, 256, (2, nblocks, page, hkv, d), dtype=torch.uint8, device="cuda", generator=g)
    raw[(raw & 0x7F) == 0x7F] = 0
    kc, vc = (raw[i].view(torch.float8_e4m3fn) for i in (0, 1))
    bt = torch.randperm(nblocks, device="cuda", generator=g).to(torch.int32).reshape(b, -1)
    sl = torch.full((b,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(b, 1, hq, d, device="cuda", generator=g).to(torch.bfloat16)
    scale = torch.full((hkv,), 0.02, device="cuda")
    return q, kc, vc, bt, sl, scale


def decode_ab_rows():
    q, kc, vc, bt, sl, scale = decode_operands()
    variants = [v for v in VARIANTS if VARIANTS[v] is not None] + ["replay"]
    rows = []
    for label, cfg in (("tma", DECODE_TMA), ("heuristic", None)):
        out = torch.empty(q.shape, device="cuda", dtype=torch.bfloat16)

        def fn():
            return Dec.decode_attention(q, kc, vc, bt, sl, k_descale=scale, v_descale=scale, config=cfg)

        ref, exact = None, {}
        for name in variants:
            set_variant(name)
            fn()  # a first call fills this path's caches; the second uses them
            out.copy_(fn())
            torch.cuda.synchronize()
            ref = out.clone() if ref is None else ref
            exact[name] = bool(torch.equal(out, ref))
        host = {name: [] for name in variants}
        stats = {}
        for r in range(cli.rounds):
            for name in (variants if r % 2 == 0 else list(reversed(variants))):
                set_variant(name)
                before = dict(_direct.stats)
                host[name].append(host_us(fn))
                stats[name] = {k: _direct.stats[k] - before[k] for k in before}  # per 205 calls (last round)
        for name in variants:
            set_variant(name)
            ev = H.time_once(fn, warmup_ms=10, rep_ms=50)
            h = statistics.median(host[name])
            r = {"shape": f"decode B8 ctx8192 Hq32/Hkv8 D128 p64 {label}", "fn": name, "host_us": h,
                 "host_us_rounds": host[name], "events_ms": ev, "bit_exact_vs_triton": exact[name],
                 "direct_stats_last_round": stats[name]}
            rows.append(r)
            print(f"{label:>9} {name:>7}  host {h:7.1f} us (median of {cli.rounds})   events {ev * 1e3:7.1f} us"
                  f"   exact {exact[name]}   encoded/reused in the last round's 205 calls {stats[name]['encoded']}/"
                  f"{stats[name]['reused']}", flush=True)
        set_variant("replay")
    return rows


def overhead_rows():
    rows = []
    for (M, N, K) in SHAPES:
        a, b, one, out = operands(M, N, K)
        fns = {
            "public": lambda: tritonfp8.gemm(a, b, one, one, out=out),
            "impl": lambda: G.gemm(a, b, one, one, out=out),
            "cublas": cublas_fn(a, b, one, out),
        }
        for name, fn in fns.items():
            h = host_us(fn)
            ev = H.time_once(fn, warmup_ms=10, rep_ms=50)
            gr = H.time_graph(fn)
            r = {"shape": f"{M}x{N}x{K}", "fn": name, "host_us": h, "events_ms": ev, "graph_ms": gr,
                 "graph_tflops": 2 * M * N * K / (gr * 1e-3) / 1e12}
            rows.append(r)
            print(f"{r['shape']:>16} {name:>7}  host {h:7.1f} us   events {ev * 1e3:7.1f} us   graph {gr * 1e3:7.1f} us"
                  f"   ({r['graph_tflops']:.0f} TFLOPS)", flush=True)
    return rows


rows = decode_ab_rows() if cli.decode else ab_rows() if cli.ab else overhead_rows()

env = H.environment_info()
suite = "decode-launch-ab" if cli.decode else "gemm-launch-ab" if cli.ab else "gemm-host-overhead"
data = {"suite": suite, "command": H.command_line(), "env": env, "rows": rows}
stamp = time.strftime("%Y%m%d-%H%M%S")
for d in ("benchmarks/results", os.environ.get("OUT")):
    if d:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{suite}-{stamp}.json"), "w") as f:
            json.dump(data, f, indent=1)

# Where the eager host time goes: cProfile of 300 calls of the implementation at the first shape (--decode: the
# TMA decode call), on the default (direct) path.
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402

if cli.decode:
    q, kc, vc, bt, sl, scale = decode_operands()
    call = lambda: Dec.decode_attention(q, kc, vc, bt, sl, k_descale=scale, v_descale=scale,  # noqa: E731
                                        config=DECODE_TMA)
else:
    a, b, one, out = operands(*SHAPES[0])
    call = lambda: G.gemm(a, b, one, one, out=out)  # noqa: E731
for _ in range(5):
    call()
torch.cuda.synchronize()
pr = cProfile.Profile()
pr.enable()
for _ in range(300):
    call()
pr.disable()
torch.cuda.synchronize()
buf = io.StringIO()
pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(14)
print(buf.getvalue())
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], ("decode" if cli.decode else "gemm") + "_host_profile.txt"), "w") as f:
        f.write(buf.getvalue())
