"""The inline merge's share of the short decode steps (session 13). gpu_decode_fixed.py measured, from graphs at
seq_len 0, the split machinery (partials, ticket atomic, merge) at 6.8 us with 16 splits (B 8) and 4.4 us with 4
(B 32) over the unsplit launch (2.6-2.8 us); the 16-split merge runs 4 dependent rounds of loads (4 splits per
round at GQA 4, 2 at GQA 8: kern.merge_chunk's 64-register tile). Offline sm_90 (one-warp TMA kernel, pages of 64,
v_stage): GQA 4 chunk 8 and GQA 8 chunk 4 compile without spills (255 registers); GQA 4 chunk 16 spills 61 stores,
GQA 8 chunk 8 93.

Variants per case, graph-timed (write flush) and eager (do_bench), interleaved over rounds: the heuristic's config,
larger merge chunks, the combine kernel (also as a programmatic dependent launch, DecodeConfig(pdl=True)), 8
splits. Prints a table; writes $OUT/results/decode-merge2-<stamp>.json
(benchmarks/results when $OUT is unset). Usage on the device: ``python scripts/gpu_decode_merge2.py``.
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

# (B, ctx, Hq, page): variants as DecodeConfig field replacements on the heuristic's config.
CASES = {
    (8, 4096, 32, 64): {"c8": {"merge_chunk": 8}, "c16": {"merge_chunk": 16}, "combine": {"merge": "kernel"},
                        "combine_pdl": {"merge": "kernel", "pdl": True},
                        "x8c8": {"num_splits": 8, "merge_chunk": 8}},
    (8, 4096, 64, 64): {"c4": {"merge_chunk": 4}, "combine": {"merge": "kernel"},
                        "combine_pdl": {"merge": "kernel", "pdl": True},
                        "x8c4": {"num_splits": 8, "merge_chunk": 4}},
    (8, 32768, 64, 64): {"c4": {"merge_chunk": 4}, "combine": {"merge": "kernel"},
                         "combine_pdl": {"merge": "kernel", "pdl": True}},
    (8, 32768, 32, 64): {"c8": {"merge_chunk": 8}, "combine": {"merge": "kernel"},
                         "combine_pdl": {"merge": "kernel", "pdl": True}},
    (32, 4096, 64, 64): {"c4": {"merge_chunk": 4}, "combine": {"merge": "kernel"},
                         "combine_pdl": {"merge": "kernel", "pdl": True}},
    # B 32 ctx 4096 (79-82% of copy; 4 splits merged in one round already): the step's shape instead.
    (32, 4096, 32, 64): {"s3": {"num_stages": 3}, "bn128": {"block_n": 128},
                         "combine_pdl": {"merge": "kernel", "pdl": True}},
}
ROUNDS = 4
DEV = os.environ.get("DECODE_MERGE2_DEVICE", "cuda")  # "cpu" + TRITON_INTERPRET=1: a smoke test of the script


def main() -> None:
    out_dir = Path(os.environ["OUT"]) / "results" if os.environ.get("OUT") else Path("benchmarks/results")
    out_dir.mkdir(parents=True, exist_ok=True)
    console = Console(width=200)
    env = H.environment_info()
    sms = dec.num_sms(torch.device(DEV))
    rows = []
    for (b, ctx, hq, page), variants in CASES.items():
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, DEV)
        heur = dec.decode_config(b, S.HKV, hq // S.HKV, ctx, sms, tma_page=page)
        cfgs = {"heuristic": heur, **{n: dataclasses.replace(heur, **f) for n, f in variants.items()}}
        def stop(name, diff, b=b, ctx=ctx, hq=hq):
            raise SystemExit(f"B{b} ctx{ctx} Hq{hq}: {name} differs from the heuristic's output by {diff}")

        fns = checked_calls(q, pc, cfgs, stop)
        fns["copy"] = copy_fn
        times = {(n, m): [] for n in fns for m in ("graph", "eager")}
        for _ in range(ROUNDS):
            for n, fn in list(fns.items()):
                try:
                    times[(n, "graph")].append(H.time_graph(fn))
                    times[(n, "eager")].append(H.time_events(fn))
                except Exception as e:  # noqa: BLE001 - e.g. a capture the driver refuses: report, drop, go on
                    console.print(f"[red]B{b} ctx{ctx} Hq{hq} {n}: {type(e).__name__}: {str(e)[:200]}[/red]")
                    del fns[n]
                    cfgs.pop(n, None)
        copy = {m: statistics.median(times[("copy", m)]) for m in ("graph", "eager")}
        for n in cfgs:
            c = cfgs[n]
            r = {"case": f"B{b} ctx{ctx} {hq}/{S.HKV} p{page}", "variant": n, "splits": c.num_splits,
                 "merge": c.merge, "merge_chunk": c.merge_chunk, "bytes": nbytes}
            for m in ("graph", "eager"):
                ms = statistics.median(times[(n, m)])
                r[f"us_{m}"] = 1e3 * ms
                r[f"rounds_ms_{m}"] = times[(n, m)]
                r[f"pct_copy_{m}"] = 100.0 * copy[m] * (nbytes / moved) / ms
                r[f"vs_heuristic_{m}"] = statistics.median(times[("heuristic", m)]) / ms
            rows.append(r)
        del pc, q, copy_fn, fns
        if DEV == "cuda":
            torch.cuda.empty_cache()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out_dir / f"decode-merge2-{stamp}.json"
    path.write_text(json.dumps({"env": env, "command": "python scripts/gpu_decode_merge2.py", "rounds": ROUNDS,
                                "timers": "graph (write flush) and do_bench", "rows": rows}, indent=1))
    t = Table(title="decode, merge variants: us per call (graph / eager), % of copy, heuristic / variant")
    for c in ("case", "variant", "splits", "chunk", "us graph", "%copy g", "x g", "us eager", "%copy e", "x e"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["case"], r["variant"], str(r["splits"]), str(r["merge_chunk"] or "auto"),
                  f"{r['us_graph']:.1f}", f"{r['pct_copy_graph']:.1f}", f"{r['vs_heuristic_graph']:.3f}",
                  f"{r['us_eager']:.1f}", f"{r['pct_copy_eager']:.1f}", f"{r['vs_heuristic_eager']:.3f}")
    console.print(t)
    console.print(f"results: {path}")


if __name__ == "__main__":
    main()
