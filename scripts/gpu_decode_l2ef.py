"""Does an L2 evict-first hint on the K/V stream close the decode step's gap to the copy? (session 22)

Session 19 (scripts/gpu_decode_l2.py) found that at B 32 ctx 4096 the step runs at 85% of the copy after a write
flush (do_bench's: the L2 full of dirty lines) and 95% after a read flush: the stream evicts the flush's dirty lines
and their write-back competes with it. ``DecodeConfig(l2_evict_first=True)`` marks the K/V copies evict-first
(_kernels/l2hint.py), so the stream should recycle its own lines instead.

Per case, the heuristic's config with and without the hint, interleaved over ROUNDS rounds, timed three ways: eager
``do_bench`` (write flush, the benchmark's timer), a CUDA graph after a write flush, after a read flush; the copy of
the same bytes timed the same ways. Checks the two outputs are bit-identical. Prints a table; writes
$OUT/results/decode-l2ef-<stamp>.json (benchmarks/results when $OUT is unset).
Usage on the device: ``python scripts/gpu_decode_l2ef.py [B:ctx:Hq:page ...]``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from decode_case import case_inputs, pinned_call
from tritonfp8 import decode as dec
from tritonfp8.bench import harness as H
from tritonfp8.bench.suites import decode as S

# The TMA kernels' cases (B 8 pages of 16 runs the gather kernel, which takes no hints)
CASES = ((32, 4096, 32, 64), (32, 4096, 32, 16), (8, 4096, 32, 64), (32, 4096, 64, 64), (8, 4096, 64, 64),
         (128, 4096, 32, 16), (8, 32768, 32, 64), (32, 32768, 32, 16))
ROUNDS = 3
TIMERS = {
    "eager": lambda fn: H.time_events(fn),
    "graph-w": lambda fn: H.time_graph(fn, flush_mode="write"),
    "graph-r": lambda fn: H.time_graph(fn, flush_mode="read"),
}


def main() -> None:
    out_dir = Path(os.environ.get("OUT", "")) / "results" if os.environ.get("OUT") else Path("benchmarks/results")
    out_dir.mkdir(parents=True, exist_ok=True)
    console = Console(width=200)
    cases = [tuple(int(x) for x in a.split(":")) for a in sys.argv[1:]] or list(CASES)
    sms = dec.num_sms(torch.device("cuda"))
    rows = []
    for b, ctx, hq, page in cases:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        # the TMA rule's config without the hints (decode_config adds them up to L2EF_MAX_BYTES since this run)
        heur = dataclasses.replace(dec.decode_config(b, S.HKV, hq // S.HKV, ctx, sms, tma_page=page),
                                   l2_evict_first=False)
        fns = {"heuristic": pinned_call(q, pc, heur),
               "l2ef": pinned_call(q, pc, dataclasses.replace(heur, l2_evict_first=True))}
        same = torch.equal(fns["heuristic"](), fns["l2ef"]())
        if not same:
            console.print(f"[red]B{b} ctx{ctx} p{page}: l2ef output differs[/]")
        fns["copy"] = copy_fn
        times = {(n, t): [] for n in fns for t in TIMERS}
        for _ in range(ROUNDS):
            for (n, t) in times:
                times[(n, t)].append(TIMERS[t](fns[n]))
        case = f"B{b} ctx{ctx} {hq}/{S.HKV} p{page}"
        for t in TIMERS:
            copy_ms = statistics.median(times[("copy", t)])
            base = statistics.median(times[("heuristic", t)])
            for n in ("heuristic", "l2ef"):
                ms = statistics.median(times[(n, t)])
                rows.append({"case": case, "variant": n, "timer": t, "kv_load": heur.kv_load,
                             "splits": heur.num_splits, "us": 1e3 * ms, "rounds_ms": times[(n, t)],
                             "copy_us": 1e3 * copy_ms, "copy_rounds_ms": times[("copy", t)],
                             "pct_copy": 100.0 * copy_ms * (nbytes / moved) / ms,
                             "vs_heuristic": base / ms, "bit_identical": same})
        del pc, q, copy_fn, fns
        torch.cuda.empty_cache()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out_dir / f"decode-l2ef-{stamp}.json"
    path.write_text(json.dumps({"env": H.environment_info(), "command": "python scripts/gpu_decode_l2ef.py "
                                + " ".join(sys.argv[1:]), "rounds": ROUNDS,
                                "timers": {"eager": "do_bench median (write flush)",
                                           "graph-w": "harness.time_graph, write flush",
                                           "graph-r": "harness.time_graph, read flush"},
                                "rows": rows}, indent=1))
    t = Table(title="decode: heuristic vs + L2 evict-first hints (us per call, % of the same-size copy)")
    for c in ("case", "kv_load", "splits", "timer", "heur us", "l2ef us", "heur %copy", "l2ef %copy", "l2ef/heur"):
        t.add_column(c)
    for i in range(0, len(rows), 2):
        h, e = rows[i], rows[i + 1]
        t.add_row(h["case"], h["kv_load"], str(h["splits"]), h["timer"], f"{h['us']:.1f}", f"{e['us']:.1f}",
                  f"{h['pct_copy']:.1f}", f"{e['pct_copy']:.1f}", f"{e['vs_heuristic']:.3f}")
    console.print(t)
    console.print(f"results: {path}")


if __name__ == "__main__":
    main()
