"""Where one 8B-shaped decode step spends its GPU time (BF16 vs FP8), both replayed from CUDA graphs.

Issue #7's decode target (>= 1.3x BF16 at batch 32, context 4096) stood at 1.22x (graphs) with both steps far
above their byte floors (BF16 11.7 ms vs ~5 ms of weights + KV cache at HBM speed). This script profiles the two
graph replays with torch.profiler and prints the kernels by total GPU time, so the next change targets the largest
piece. Usage on the device: ``python scripts/gpu_decode_profile.py [--batch 32] [--context 4096]``; writes
``$OUT/decode_profile.json`` (or ./decode_profile.json).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table
from torch.profiler import ProfilerActivity, profile

from tritonfp8.bench import harness as H
from tritonfp8.bench.suites import model as M


def kernel_times(step, replays: int) -> list[dict]:
    """GPU kernels of ``replays`` calls of ``step``: name, calls per step, total us per step."""
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            step()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
        if t <= 0:
            continue
        rows.append({"kernel": e.key, "calls_per_step": e.count / replays, "us_per_step": t / replays})
    return sorted(rows, key=lambda r: -r["us_per_step"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--context", type=int, default=4096)
    p.add_argument("--recipe", default="row")
    p.add_argument("--replays", type=int, default=5)
    p.add_argument("--top", type=int, default=14)
    p.add_argument("--proj", choices=("fused", "separate"), default="fused")
    args = p.parse_args()
    s = M.SHAPES["8b"]
    bf16 = M.build(s, "cuda")
    if args.proj == "fused":
        M.fuse_projections(bf16)
    fp8 = M.to_fp8(bf16, args.recipe)
    dense = M.DenseCache(s, args.batch, args.context + 1, "cuda")
    paged = M.PagedCache(s, args.batch, args.context + 1, "cuda")
    M.fill_caches(s, dense, paged, args.context)
    tok, _ = M._inputs(s, args.batch, 1, "cuda")
    pos = torch.full((args.batch, 1), args.context, device="cuda")
    console = Console()
    result = {"env": H.environment_info(), "args": vars(args), "steps": {}}
    with torch.no_grad():
        fns = {"bf16": lambda: bf16(tok, pos, dense, decode=True), "fp8": lambda: fp8(tok, pos, paged, decode=True)}
        for fn in fns.values():
            fn()
        graphs = M.graph_steps(fns)
        for name, replay in graphs.items():
            ms = H.time_events(replay, 50, 300, False)
            rows = kernel_times(replay, args.replays)
            total = sum(r["us_per_step"] for r in rows)
            result["steps"][name] = {"step_ms": ms, "kernel_us_total": total, "kernels": rows}
            t = Table(title=f"{name}: step {ms:.3f} ms (graph replay), kernels {total / 1e3:.3f} ms")
            for c in ("kernel", "calls/step", "us/step", "% of kernels"):
                t.add_column(c, justify="left" if c == "kernel" else "right")
            for r in rows[: args.top]:
                t.add_row(r["kernel"][:90], f"{r['calls_per_step']:.0f}", f"{r['us_per_step']:.0f}",
                          f"{100 * r['us_per_step'] / total:.1f}")
            console.print(t)
    out = Path(os.environ.get("OUT", ".")) / "decode_profile.json"
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
