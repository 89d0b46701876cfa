"""Is the short decode step bound by its compute or by the memory system? (session 19)

The one-warp TMA kernels and the warp-split kernel all lose a roughly constant 14-16 us to the same-size copy
(B 8 / 32 / 128 at ctx 4096: 61% / 81% / 95% of the copy). Here the same pinned configs are graph-timed
(harness.time_graph) in four settings on the same cache:

- ``hbm-wflush``: the real block table after a write flush (as do_bench: the L2 full of dirty lines);
- ``hbm-rflush``: the same after a read flush (a clean L2, as after the previous layer's reads);
- ``l2``: every sequence's table cycling over 16 pages (pages of 64; 64 pages of 16): the same programs, steps and
  instructions with the whole working set in L2 (2 MB), no flush: the compute-bound time of the kernel;
- the same-size copy (an SM kernel) after either flush.

If ``l2`` is near ``hbm`` the steps are bound by the kernel's own work (fewer instructions or more warps per SM is
the lever); if it is well below, by the memory system (bytes in flight, the dirty write-backs).
Prints a table; writes $OUT/results/decode-l2-<stamp>.json (benchmarks/results when $OUT is unset).
Usage on the device: ``python scripts/gpu_decode_l2.py``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import statistics
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from decode_case import case_inputs, checked_calls
from tritonfp8 import decode as dec
from tritonfp8.bench import harness as H
from tritonfp8.bench.suites import decode as S

# (B, ctx, Hq, page) and the warp-split config's KV splits
CASES = ((8, 4096, 32, 64, 4), (32, 4096, 32, 64, 1), (128, 4096, 32, 16, 1), (32, 32768, 32, 64, 1),
         (8, 4096, 32, 16, 4), (32, 4096, 32, 16, 1))
ROUNDS = 3


def _l2_table(table: torch.Tensor, page: int) -> torch.Tensor:
    """The block table with every sequence's entries cycling over the first 1024 / page pages (2 MB of K and V)."""
    n = 1024 // page
    return (torch.arange(table.shape[1], device=table.device, dtype=table.dtype) % n).expand_as(table).contiguous()


def main() -> None:
    out_dir = Path(os.environ.get("OUT", "")) / "results" if os.environ.get("OUT") else Path("benchmarks/results")
    out_dir.mkdir(parents=True, exist_ok=True)
    console = Console(width=200)
    # The copy as an SM kernel (harness.make_copy_fn in the graph mode): a captured tensor copy becomes a copy-engine
    # memcpy node (2.5-2.8 TB/s; the first run of this script timed that at B 32 ctx 32768).
    H.set_timer_mode("graph")
    sms = dec.num_sms(torch.device("cuda"))
    rows = []
    for b, ctx, hq, page, ws_splits in CASES:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        heur = dec.decode_config(b, S.HKV, hq // S.HKV, ctx, sms, tma_page=page)
        ws = dec.DecodeConfig(block_n=128, num_warps=4, num_stages=3, num_splits=ws_splits, warp_split=True,
                              v_stage=True)
        cfgs = {"heuristic": heur, "wsplit": ws}
        fns = checked_calls(q, pc, cfgs, lambda n, d: console.print(f"[red]{n} differs: {d:.3e}[/]"))
        l2pc = dataclasses.replace(pc, table=_l2_table(pc.table, page))
        l2fns = checked_calls(q, l2pc, cfgs, lambda n, d: console.print(f"[red]{n} (l2) differs: {d:.3e}[/]"))
        runs = {}
        for name in cfgs:
            runs[(name, "hbm-wflush")] = (fns[name], dict(flush_mode="write"))
            runs[(name, "hbm-rflush")] = (fns[name], dict(flush_mode="read"))
            runs[(name, "l2")] = (l2fns[name], dict(flush_l2=False))
        runs[("copy", "hbm-wflush")] = (copy_fn, dict(flush_mode="write"))
        runs[("copy", "hbm-rflush")] = (copy_fn, dict(flush_mode="read"))
        times = {k: [] for k in runs}
        for _ in range(ROUNDS):
            for k, (fn, kw) in runs.items():
                times[k].append(H.time_graph(fn, **kw))
        for (name, mode), ts in times.items():
            ms = statistics.median(ts)
            r = {"case": f"B{b} ctx{ctx} {hq}/{S.HKV} p{page}", "config": name, "mode": mode, "us": 1e3 * ms,
                 "rounds_ms": ts}
            if name in cfgs:
                c = cfgs[name]
                r.update(kv_load=c.kv_load, splits=c.num_splits, warps=c.num_warps, block_n=c.block_n,
                         stages=c.num_stages, warp_split=c.warp_split)
                if mode != "l2":
                    copy_ms = statistics.median(times[("copy", mode)])
                    r["pct_copy"] = 100.0 * copy_ms * (nbytes / moved) / ms
            r["tbps"] = (nbytes if name in cfgs else moved) / (ms * 1e-3) / 1e12
            rows.append(r)
        del pc, l2pc, q, copy_fn, fns, l2fns, runs
        torch.cuda.empty_cache()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out_dir / f"decode-l2-{stamp}.json"
    path.write_text(json.dumps({"env": H.environment_info(), "command": "python scripts/gpu_decode_l2.py",
                                "timer": "harness.time_graph (CUDA graph of 20 calls)", "cases": list(CASES),
                                "rows": rows}, indent=1))
    t = Table(title="decode: HBM (write / read flush) vs L2-resident pages, graph-timed us per call")
    for c in ("case", "config", "mode", "kv_load", "splits", "warps", "us", "TB/s", "%copy"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["case"], r["config"], r["mode"], str(r.get("kv_load", "")), str(r.get("splits", "")),
                  str(r.get("warps", "")), f"{r['us']:.1f}", f"{r['tbps']:.2f}",
                  f"{r['pct_copy']:.1f}" if "pct_copy" in r else "")
    console.print(t)
    console.print(f"results: {path}")


if __name__ == "__main__":
    main()
