"""B 8 ctx 4096, the last cell of issue 6 below its targets (session 32): kernels and read floors in one run.

Issue 6 asks >= 85% of the same-size copy's bandwidth and >= 1.7x SDPA (dense BF16 cache) for B >= 8, ctx >= 4096.
Every other such cell meets them; B 8 ctx 4096 (67 MB of K and V per step) ran at 58.6-64.4% of copy and
1.50-1.53x SDPA on the H200 (session 30). Session 24 found the paged TMA reader with no arithmetic at 74.5-79.3%
there, but those readers had no L2 hints, while the heuristic's kernel carries evict-first hints (session 22:
1.07x at this size: fewer of do_bench's dirty flush lines written back during the step). This script times, under
the bench protocol (do_bench medians after the write flush, eager, interleaved rounds), in one run per case:

- ``copy`` (the bench's reference), ``sdpa`` (the bench's SDPA peer on a dense BF16 cache of the same lengths);
- ``heuristic`` (the library's call) and the same config with its hints toggled;
- the Gluon kernel (one warp, 32-token steps, 3 slots, PDL combine) at 8 / 16 splits with and without the
  evict-first hints (``DecodeConfig(kernel="gluon", l2_evict_first=True)``, new in session 32), and 2 warps x 4;
- read floors, no arithmetic: the per-head paged reader (gpu_decode_floor.py), the heads-together 3-D box reader
  (gpu_decode_heads.py), each with and without the hints, and the flat reader with and without evict-first loads.

Every kernel config's output is compared with the heuristic's before timing (max |diff| <= 1e-2, bf16 output).
If no hinted reader reaches 85% of the copy, no kernel that reads this cache layout does either (under this timer).
Prints a table; writes $OUT/results/decode-b8-<stamp>.json (benchmarks/results when $OUT is unset).
Usage on the device: ``python scripts/gpu_decode_b8.py`` (``B8_QUICK=1``: B 8 ctx 4096 Hq 32 pages of 64 only;
``B8_SWEEP=1``: also the hinted Gluon kernel's splits / ring depth / step / warps, the readers hinted only;
``B8_AB=1``: the library's Gluon forms against the stores before the row stores (accst) and with the PDL signal (s33),
alternated, 8 rounds).
"""
from __future__ import annotations

import dataclasses
import os

import torch

from decode_case import (add_x_sdpa, case_inputs, check_output, checked_calls, heuristic_config, report_mismatches,
                         save_results, sdpa_peer, time_rows, variant_call, write_report)
from gpu_decode_floor import flat_fn, paged_fn
from gpu_decode_heads import heads_fn
from tritonfp8 import decode as dec
from tritonfp8.bench.suites import decode as S

# (B, ctx, Hq, page); Hq 32 first, so that a call cut short keeps both page sizes
CASES = ((8, 4096, 32, 64), (8, 4096, 32, 16), (8, 4096, 64, 64), (8, 4096, 64, 16))
ROUNDS = 4
# B8_QUICK=1 (a call with little device time left): the first case, 3 rounds, the 16-split Gluon forms only
QUICK = os.environ.get("B8_QUICK") == "1"
if QUICK:
    CASES, ROUNDS = CASES[:1], 3
# B8_SWEEP=1 (session 33, after the H100 run decode-b8-20261206-234907.json put the hinted floors at 85.7-91.0% of the
# copy and the hinted Gluon kernel 1.05-1.13x the heuristic): the hinted Gluon kernel's splits, ring depth, step and
# warps; the readers only in their hinted forms
SWEEP = os.environ.get("B8_SWEEP") == "1"
if SWEEP:  # Hq 64 first: the row stores' A/B there has twice the partial rows
    CASES = ((8, 4096, 64, 64), (8, 4096, 32, 64), (8, 4096, 64, 16), (8, 4096, 32, 16))
# (warps, splits, stages, step)
# B8_AB=1 (session 34, after the H100 sweep decode-b8-20261207-024528.json had the row-store forms at 1.09-1.11x the
# default at Hq 64 but with whole rounds at 54-60 us, always the four row-store forms timed back to back): those forms
# and the PDL signal alone against their defaults, alternated in the timing order, 8 rounds, no read floors
AB = os.environ.get("B8_AB") == "1"
if AB:
    CASES, ROUNDS = ((8, 4096, 64, 64), (8, 4096, 64, 16), (8, 4096, 32, 64), (8, 4096, 32, 16)), 8
SWEEP_GLUON = ((1, 8, 4, 32), (1, 8, 6, 32), (1, 6, 4, 32), (1, 4, 6, 32), (1, 12, 3, 32), (1, 8, 3, 64),
               (2, 4, 4, 32), (2, 8, 3, 32), (4, 2, 3, 32))
GLUON = dict(kernel="gluon", merge="kernel", block_n=32, num_stages=3)


def kernel_configs(heur: dec.DecodeConfig) -> dict:
    cfgs = {"heuristic": heur,
            f"heuristic {'-' if heur.l2_evict_first else '+'}l2ef": dataclasses.replace(
                heur, l2_evict_first=not heur.l2_evict_first)}
    for s in (16,) if QUICK else (8,) if AB else (8, 16):
        for hint in (True,) if SWEEP or AB else (False, True):
            cfgs[f"gluon x{s}" + (" l2ef" if hint else "")] = dec.DecodeConfig(
                **GLUON, num_warps=1, num_splits=s, pdl=True, l2_evict_first=hint)
    if not QUICK:
        cfgs["gluon w2 x4 l2ef"] = dec.DecodeConfig(**GLUON, num_warps=2, num_splits=4, pdl=True,
                                                    l2_evict_first=True)
    if AB:
        return {"heuristic": heur, "gluon x8 l2ef": cfgs["gluon x8 l2ef"], "gluon w2 x4 l2ef": cfgs["gluon w2 x4 l2ef"],
                "gluon w1 x8 s4 n32 l2ef": dec.DecodeConfig(**dict(GLUON, num_stages=4), num_warps=1, num_splits=8,
                                                            pdl=True, l2_evict_first=True)}
    if SWEEP:
        for w, s, st, n in SWEEP_GLUON:
            cfgs[f"gluon w{w} x{s} s{st} n{n} l2ef"] = dec.DecodeConfig(
                **dict(GLUON, block_n=n, num_stages=st), num_warps=w, num_splits=s, pdl=s > 1, l2_evict_first=True)
    return cfgs


def main() -> None:
    sms = dec.num_sms(torch.device("cuda"))
    rows, bad = [], []
    for b, ctx, hq, page in CASES:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        heur = heuristic_config(b, ctx, hq, page)
        cfgs = kernel_configs(heur)

        def report(name, diff, case=(b, ctx, hq, page)):
            bad.append((*case, name, diff))
        fns = checked_calls(q, pc, cfgs, report)
        if AB:  # each session 33 form next to the library's form in the timing order (see AB)
            ref = fns["heuristic"]().float()
            # since session 34 the library's form has the row stores: " accst" is the form before them (session 34's
            # run named the library's form then "gluon x8 l2ef rowst" and this one "gluon x8 l2ef"), " s33" adds
            # the PDL signal
            order = [("heuristic", None), ("gluon x8 l2ef", None), ("gluon x8 l2ef", " accst"),
                     ("gluon x8 l2ef", " s33"), ("gluon w2 x4 l2ef", None), ("gluon w2 x4 l2ef", " accst"),
                     ("gluon w2 x4 l2ef", " s33"), ("gluon w1 x8 s4 n32 l2ef", " s33"),
                     ("gluon w1 x8 s4 n32 l2ef", None)]
            switches = {" accst": (False, False), " s33": (True, True)}
            ab = {}
            for name, tag in order:
                if tag is None:
                    ab[name] = fns[name]
                    continue
                ab[name + tag] = variant_call(q, pc, cfgs[name], *switches[tag])
                check_output(ab[name + tag], ref, name + tag, report)
            fns = ab
        if SWEEP:  # session 33's forms against the library's (row stores on since session 34): + the PDL signal, and
            # the accumulator-layout stores before them
            ref = fns["heuristic"]().float()
            forms = [(n, " s33", True, True) for n in ("gluon x8 l2ef", "gluon w2 x4 l2ef", "gluon w1 x8 s4 n32 l2ef")]
            forms.append(("gluon x8 l2ef", " accst", False, False))
            for name, tag, rows_on, signal in forms:
                fns[name + tag] = variant_call(q, pc, cfgs[name], rows_on, signal)
                check_output(fns[name + tag], ref, name + tag, report)
        fns["copy"] = copy_fn
        sfn, note = sdpa_peer(q, b, ctx)
        if sfn is not None:
            fns["sdpa"] = sfn
        for hint in () if AB else (True,) if SWEEP else (False, True):
            sfx = " l2ef" if hint else ""
            fns[f"read head x16{sfx}"] = paged_fn(pc, 16, 32, 2, l2ef=hint)
            fns[f"read heads8t3 x16{sfx}"] = heads_fn(pc, 16, 32, 2, 8, True, l2ef=hint)
            fns[f"read flat 4w{sfx}"] = flat_fn(S.cache_bytes(b, ctx, 1), sms * 16, evict="evict_first" if hint else "")
        case_rows = time_rows(fns, (b, ctx, hq, page), moved, nbytes, ROUNDS, heur)
        add_x_sdpa(case_rows, note)
        print(f"B{b} ctx{ctx} Hq{hq} p{page} x SDPA: " + ", ".join(
            f"{r['form']} {r['x_sdpa']:.2f}" for r in case_rows if r["x_sdpa"] and not r["form"].startswith("read")),
            flush=True)
        rows += case_rows
        save_results("decode-b8-partial", {"rounds": ROUNDS, "rows": rows})  # kept if the call is cut short
        del pc, fns, sfn
        torch.cuda.empty_cache()
    write_report("decode-b8", "B 8 ctx 4096: kernels and read floors (eager, after the write flush)", rows, ROUNDS)
    report_mismatches(bad)


if __name__ == "__main__":
    main()
