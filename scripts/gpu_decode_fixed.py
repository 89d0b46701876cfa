"""Where the short decode steps' fixed cost goes (session 13). Sessions 6-7 fit the one-warp TMA kernel at ~4.1 us
per 64-token step of 1024 programs (~4.1 TB/s: the stream itself runs at the copy's rate) plus ~10-14 us that does
not scale with the tokens: B 8 ctx 4096 (67 MB, 15.7 us at 4.27 TB/s) runs at 51-59% of the copy, B 32 ctx 4096 at
79-80%, while B 32 ctx 32768 reaches 95%.

The same pinned config (the heuristic's at the case's context) is graph-timed (write flush, as do_bench) on the
same cache and block table with every seq_len set to L (0, 64, 256, 1024, 4096): L = 0 runs no loop step (launch,
prologue loads, partial writes, ticket atomics, the merge), so T(L) - T(0) is the streaming part. Baselines at the
same grid and warps: an empty kernel (the launch alone) and a kernel with the prologue's dependent loads
(seq_len -> block-table entry -> one cache row) and one store per program. Also the unsplit config (num_splits=1)
at L = 0 and at the case's context, and the combine-kernel merge. Prints a table; writes
$OUT/results/decode-fixed-<stamp>.json (benchmarks/results when $OUT is unset).
Usage on the device: ``python scripts/gpu_decode_fixed.py``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import statistics
import time
from pathlib import Path

import torch
import triton
import triton.language as tl
from rich.console import Console
from rich.table import Table

from decode_case import case_inputs, pinned_call
from tritonfp8 import decode as dec
from tritonfp8.bench import harness as H
from tritonfp8.bench.suites import decode as S

CASES = ((8, 4096, 32, 64), (32, 4096, 32, 64), (8, 4096, 32, 16), (32, 4096, 32, 16))
LENS = (0, 64, 256, 1024, 4096)
ROUNDS = 3
DEV = os.environ.get("DECODE_FIXED_DEVICE", "cuda")  # "cpu" + TRITON_INTERPRET=1: a smoke test of the script


@triton.jit
def _empty_kernel(x_ptr):
    pass


@triton.jit
def _chain_kernel(lens_ptr, table_ptr, k_ptr, out_ptr, stride_btb, page_elems):
    """The decode prologue's dependent chain per program: its sequence's length, then the first block-table
    entry of its split, then one 16-byte cache row of that page; one store."""
    b = tl.program_id(2)
    n = tl.load(lens_ptr + b)
    page = tl.load(table_ptr + b * stride_btb + (n & 1))
    v = tl.load(k_ptr + page.to(tl.int64) * page_elems + tl.arange(0, 16))
    tl.store(out_ptr + tl.program_id(0) + tl.arange(0, 16) * 0, tl.sum(v.to(tl.float32)))


def main() -> None:
    out_dir = Path(os.environ.get("OUT", "")) / "results" if os.environ.get("OUT") else Path("benchmarks/results")
    out_dir.mkdir(parents=True, exist_ok=True)
    console = Console(width=200)
    env = H.environment_info()
    sms = dec.num_sms(torch.device(DEV))
    rows = []
    for b, ctx, hq, page in CASES:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, DEV)
        heur = dec.decode_config(b, S.HKV, hq // S.HKV, ctx, sms, tma_page=page)
        cfgs = {"heuristic": heur, "unsplit": dataclasses.replace(heur, num_splits=1)}
        if heur.num_splits > 1:
            cfgs["combine"] = dataclasses.replace(heur, merge="kernel")
        lens = {L: torch.full_like(pc.lens, L) for L in LENS}
        fns = {}
        for name, cfg in cfgs.items():
            for L in (LENS if name == "heuristic" else (0, ctx)):
                fns[(name, L)] = pinned_call(q, pc, cfg, lens[L])
        # Baselines at the heuristic's grid: (row blocks x splits, Hkv, B) programs of its warps.
        grid = (heur.num_splits * max(1, -(-(hq // S.HKV) // heur.block_m)), S.HKV, b)
        sink = torch.empty(grid[0] + 16, device=DEV)
        page_elems = pc.k.stride(0)
        kflat = pc.k.view(torch.uint8).view(-1)
        fns[("empty", 0)] = lambda: _empty_kernel[grid](sink, num_warps=heur.num_warps)
        fns[("chain", ctx)] = lambda: _chain_kernel[grid](pc.lens, pc.table, kflat, sink, pc.table.stride(0),
                                                          page_elems, num_warps=heur.num_warps)
        fns[("copy", ctx)] = copy_fn
        for fn in fns.values():
            fn()
        torch.cuda.synchronize()
        times = {k: [] for k in fns}
        for _ in range(ROUNDS):
            for k, fn in fns.items():
                times[k].append(H.time_graph(fn))
        copy_ms = statistics.median(times[("copy", ctx)])
        for (name, L), ts in times.items():
            ms = statistics.median(ts)
            r = {"case": f"B{b} ctx{ctx} {hq}/{S.HKV} p{page}", "config": name, "L": L, "us": 1e3 * ms,
                 "rounds_ms": ts, "grid": list(grid)}
            if name in cfgs:
                c = cfgs[name]
                r.update(kv_load=c.kv_load, splits=c.num_splits, warps=c.num_warps, block_n=c.block_n,
                         stages=c.num_stages, merge=c.merge)
                if L == ctx:
                    r["pct_copy"] = 100.0 * copy_ms * (nbytes / moved) / ms
            rows.append(r)
        del pc, q, copy_fn, fns, lens
        torch.cuda.empty_cache()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out_dir / f"decode-fixed-{stamp}.json"
    path.write_text(json.dumps({"env": env, "command": "python scripts/gpu_decode_fixed.py", "timer": "graph, write flush",
                                "cases": list(CASES), "lens": list(LENS), "rows": rows}, indent=1))
    t = Table(title="decode fixed cost: graph-timed us per call at seq_len L (same cache, same pinned config)")
    for c in ("case", "config", "kv_load", "splits", "warps", "grid", "L", "us", "%copy"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["case"], r["config"], str(r.get("kv_load", "")), str(r.get("splits", "")), str(r.get("warps", "")),
                  "x".join(map(str, r["grid"])), str(r["L"]), f"{r['us']:.1f}",
                  f"{r['pct_copy']:.1f}" if "pct_copy" in r else "")
    console.print(t)
    console.print(f"results: {path}")


if __name__ == "__main__":
    main()
