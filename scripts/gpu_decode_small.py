"""Where the short decode steps lose their time (session 6): B8 / B32 at ctx 4096 run at 42-76% of the copy from
graphs while B128 ctx 4096 runs at 97%. A fit over the one-warp TMA kernel's 1024-program launches (4096 .. 256
tokens per program) gave ~30 us per launch that does not scale with the tokens. Candidates: the L2 flush of the
timer (a zeroed 256 MB buffer leaves the L2 full of dirty lines that the timed call writes back), the launches
per call, the first-load latency of each program, the inline merge.

For each case and config this times, from CUDA graphs, the call after a write flush (zero_, as do_bench), after a
read flush (the L2 left clean) and with no flush, the same-size copy under each, and lists the kernels of one call
with their GPU durations (torch.profiler). Prints a table; writes $OUT/decode_small.json.
Usage on the device: ``python scripts/gpu_decode_small.py``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import statistics
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from gpu_decode_profile import kernel_times

from decode_case import case_inputs, checked_calls
from tritonfp8 import decode as dec
from tritonfp8.bench import harness as H
from tritonfp8.bench.suites import decode as S

CASES = ((8, 4096, 32, 64), (32, 4096, 32, 64), (8, 4096, 32, 16), (128, 4096, 32, 64), (8, 32768, 32, 64))
MODES = ("write", "read", "none")


def configs(page: int, heur: dec.DecodeConfig, gather: dec.DecodeConfig, pairs: int, ctx: int
            ) -> dict[str, dec.DecodeConfig]:
    """The heuristic's config, the gather heuristic's, and the one-warp TMA kernel (pages of 64) at 256..2048
    programs (as the bench's tmaw1bn64s4 variants: the gather base with those fields replaced)."""
    out = {"heuristic": heur}
    if gather != heur:
        out["gather"] = gather
    if page == 64:
        for splits in (1, 2, 4, 8, 16):
            if 256 <= pairs * splits <= 2048 and ctx // splits >= 256:
                cfg = dataclasses.replace(gather, kv_load="tma", block_n=64, num_warps=1, num_stages=4,
                                          num_splits=splits)
                if cfg not in out.values():
                    out[f"tma_x{splits}"] = cfg
    return out


def main(cases=CASES, make_configs=None, modes=MODES, out_name="decode_small.json", title=None) -> None:
    out_dir = Path(os.environ.get("OUT", "."))
    console = Console(width=200)
    env = H.environment_info()
    sms = dec.num_sms(torch.device("cuda"))
    make_configs = make_configs or configs
    rows = []
    for b, ctx, hq, page in cases:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        heur = dec.decode_config(b, S.HKV, hq // S.HKV, ctx, sms, tma_page=page)
        gather = dec.decode_config(b, S.HKV, hq // S.HKV, ctx, sms)
        cfgs = make_configs(page, heur, gather, b * S.HKV, ctx)
        fns = checked_calls(q, pc, cfgs,
                            lambda name, diff: console.print(f"[red]{name} disagrees with the heuristic by {diff}[/red]"))
        fns["copy"] = copy_fn
        times = {(n, m): [] for n in fns for m in modes}
        for _ in range(3):  # rounds, configs and modes interleaved
            for m in modes:
                for n, fn in fns.items():
                    times[(n, m)].append(H.time_graph(fn, flush_l2=(m != "none"), flush_mode=("read" if m == "none"
                                                                                               else m)))
        copy_ms = {m: statistics.median(times[("copy", m)]) for m in modes}
        for n in fns:
            r = {"case": f"B{b} ctx{ctx} {hq}/{S.HKV} p{page}", "config": n, "bytes": moved if n == "copy" else nbytes}
            if n != "copy":
                c = cfgs[n]
                r.update(kv_load=c.kv_load, splits=c.num_splits, warps=c.num_warps, block_n=c.block_n)
                r["kernels"] = kernel_times(fns[n], 10)
            for m in modes:
                ms = statistics.median(times[(n, m)])
                r[f"ms_{m}"] = ms
                r[f"rounds_{m}"] = times[(n, m)]
                r[f"gbps_{m}"] = r["bytes"] / ms / 1e6
                r[f"pct_copy_{m}"] = 100.0 * copy_ms[m] * (nbytes / moved) / ms if n != "copy" else 100.0
            rows.append(r)
        del pc, q, copy_fn, fns
        torch.cuda.empty_cache()
    (out_dir / out_name).write_text(json.dumps({"env": env, "cases": list(cases), "rows": rows}, indent=1))
    t = Table(title=title or "decode, short steps: graph-timed after a write / read / no L2 flush")
    for c in ("case", "config", "splits", *(f"us {m}" for m in modes), *(f"%copy {m}" for m in modes),
              "kernels (us/step)"):
        t.add_column(c)
    for r in rows:
        ks = "; ".join(f"{k['kernel'][:28]} {k['us_per_step']:.1f}" for k in r.get("kernels", [])[:2])
        t.add_row(r["case"], r["config"], str(r.get("splits", "")), *(f"{1e3 * r[f'ms_{m}']:.1f}" for m in modes),
                  *(f"{r[f'pct_copy_{m}']:.1f}" for m in modes), ks)
    console.print(t)


if __name__ == "__main__":
    main()
