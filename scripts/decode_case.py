"""Shared setup of the decode device diagnostics (gpu_decode_small / _fixed / _merge2 / _floor / _parts): one benchmark case's paged
E4M3 cache, bf16 q, the bytes a decode step reads and writes, the same-size copy, and a call with a pinned config."""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import torch

from tritonfp8 import decode as dec
from tritonfp8.bench import harness as H
from tritonfp8.bench.suites import decode as S


def case_inputs(b: int, ctx: int, hq: int, page: int, device, hkv: int = S.HKV):
    """(paged cache, q, bytes of the step, copy fn, bytes the copy moves) of bench decode's case (``hkv`` KV
    heads)."""
    pc = S._paged(b, ctx, page, device, hkv)
    torch.manual_seed(0)
    q = torch.randn(b, 1, hq, S.D, device=device, dtype=torch.bfloat16)
    nbytes = S.cache_bytes(b, ctx, 1, hkv) + S.io_bytes(b, hq)
    copy_fn, moved = H.make_copy_fn(max(1, nbytes // 2), device)
    return pc, q, nbytes, copy_fn, moved


def heuristic_config(b: int, ctx: int, hq: int, page: int, device="cuda", hkv: int = S.HKV, gluon: bool = True):
    """The library's heuristic config for bench decode's case (the TMA and Gluon rules included: the case's cache is
    dense and aligned; ``gluon=False``: the Triton heuristic, the Gluon rules left out)."""
    dev = torch.device(device)
    return dec.decode_config(b, hkv, hq // hkv, ctx, dec.num_sms(dev), tma_page=page,
                             kv_bytes=S.cache_bytes(b, ctx, 1, hkv), gluon=gluon and dec.gluon_available(dev))


def heuristic_with(b: int, ctx: int, hq: int, page: int, hkv: int = S.HKV, **rules) -> dec.DecodeConfig:
    """:func:`heuristic_config` with module constants of tritonfp8.decode set to ``rules`` while it runs (e.g.
    GLUON_HEADS_MAX_PAIRS=0: the heads rule off): the config a changed rule would give."""
    saved = {k: getattr(dec, k) for k in rules}
    for k, v in rules.items():
        setattr(dec, k, v)
    try:
        return heuristic_config(b, ctx, hq, page, hkv=hkv)
    finally:
        for k, v in saved.items():
            setattr(dec, k, v)


def pinned_call(q, pc, cfg, seq_lens=None):
    """decode_attention on the case's cache with ``cfg`` pinned (and ``seq_lens`` instead of the case's)."""
    lens = pc.lens if seq_lens is None else seq_lens
    return lambda: dec.decode_attention(q, pc.k, pc.v, pc.table, lens, k_descale=pc.descale, v_descale=pc.descale,
                                        config=cfg)


def variant_call(q, pc, cfg: dec.DecodeConfig, rows: bool, signal: bool, split_only: bool = False):
    """The Gluon kernel of ``cfg`` with session 33's switches set to ``rows`` (kg.ROW_STORE, the row-store
    epilogue) and ``signal`` (kg.PDL_SIGNAL, the PDL signal to the combine kernel after the loop): the library's plan
    for the same call key, built with those switches (its constexprs and kernel name follow them), launched as
    decode_attention's repeat calls launch (the compiled kernels recorded by a first launch: session 34 found
    Triton's dispatch on every call host-bound in whole rounds of do_bench). ``split_only``: the replay launches the
    Gluon kernel alone, not the combine kernel after it (its output is then not the attention: time it, do not check
    it; session 37's split of a step's time between the split kernel and the merge tail)."""
    from tritonfp8._kernels import decode_gluon as kg

    out = dec.decode_attention(q, pc.k, pc.v, pc.table, pc.lens, k_descale=pc.descale, v_descale=pc.descale,
                               config=cfg)
    key = next(k for k in reversed(dec._PLANS) if k[18] == cfg and k[4] == q.shape[0] and k[6] == q.shape[2]
               and k[9] == pc.k.shape[1])
    saved = kg.ROW_STORE, kg.PDL_SIGNAL
    kg.ROW_STORE, kg.PDL_SIGNAL = rows, signal
    try:
        plan = dec._plan(key)
    finally:
        kg.ROW_STORE, kg.PDL_SIGNAL = saved
    scale = 1.0 / math.sqrt(q.shape[-1]) * dec._LOG2E
    args = (q, pc.k, pc.v, pc.table, pc.lens, pc.descale, pc.descale, out, scale)
    plan.launch(*args)  # records the compiled kernels (every tensor here is 16-byte aligned)
    if plan.fast is None:
        raise RuntimeError("variant_call: the plan recorded no compiled kernels")
    if split_only:
        plan.fast = plan.fast[:1]  # the replay zips the recorded kernels with their arguments: the first alone

    def call():
        plan.launch(*args, replay=True)
        return out
    return call


def check_output(fn, ref, name: str, on_diff):
    """Runs ``fn`` once and compares its output with ``ref`` (max |diff| <= 1e-2, bf16 output; None: nothing to
    compare with); ``on_diff(name, diff)`` if it is not close. Returns the output as fp32."""
    o = fn().float()
    diff = 0.0 if ref is None else (o - ref).abs().max().item()
    if not diff <= 1e-2:
        on_diff(name, diff)
    return o


def checked_calls(q, pc, cfgs: dict, on_diff) -> dict:
    """A pinned call per config, each run once and compared with the first config's output (:func:`check_output`);
    ``on_diff(name, diff)`` for one that is not close (report or stop)."""
    fns, ref = {}, None
    for name, cfg in cfgs.items():
        fn = fns[name] = pinned_call(q, pc, cfg)
        o = check_output(fn, ref, name, on_diff)
        ref = o if ref is None else ref
    return fns


def time_rows(fns: dict, case: tuple, moved: int, nbytes: int, rounds: int, heur_cfg) -> list[dict]:
    """Times ``fns`` (a "copy" entry among them) interleaved under the bench protocol and returns one row per form
    of ``case`` = (B, ctx, Hq, page): median and per-round microseconds and the share of the copy's bandwidth
    (the copy moves ``moved`` bytes, every other form ``nbytes``); prints the case's line."""
    for fn in fns.values():
        fn()
    torch.cuda.synchronize()
    times = H.bench_interleaved(fns, repeats=rounds)
    t = {n: H.summarize(v) for n, v in times.items()}
    copy_gbps = H.gbps(moved, t["copy"].median)
    b, ctx, hq, page = case
    rows = []
    for name, tm in t.items():
        moved_n = moved if name == "copy" else nbytes
        rows.append({"B": b, "ctx": ctx, "Hq": hq, "page": page, "form": name, "us": 1e3 * tm.median,
                     "us_rounds": [1e3 * x for x in times[name]], "gbps": H.gbps(moved_n, tm.median),
                     "pct_of_copy": H.pct(H.gbps(moved_n, tm.median), copy_gbps),
                     "config": str(heur_cfg) if name == "heuristic" else None})
    print(f"B{b} ctx{ctx} Hq{hq} p{page}: " + ", ".join(f"{r['form']} {r['us']:.1f}us {r['pct_of_copy']:.1f}%"
                                                      for r in rows), flush=True)
    return rows


def sdpa_peer(q, b: int, ctx: int, hkv: int = S.HKV):
    """The bench's SDPA peer for the case: (fn or None, its form or the error) on a dense BF16 cache of the case's
    lengths (the closure keeps the cache alive)."""
    dense = [torch.randn(b, hkv, ctx, S.D, device=q.device, dtype=torch.bfloat16) for _ in range(2)]
    return S._sdpa_fn(q.transpose(1, 2).contiguous(), dense[0], dense[1])


def add_x_sdpa(case_rows: list[dict], note) -> None:
    """Each row's speed-up over the case's "sdpa" row (None for that row or without one) and the SDPA form."""
    sdpa_us = next((r["us"] for r in case_rows if r["form"] == "sdpa"), None)
    for r in case_rows:
        r["x_sdpa"] = sdpa_us / r["us"] if sdpa_us and r["form"] != "sdpa" else None
        r["sdpa_form"] = note


def report_mismatches(bad: list) -> None:
    """Prints the (B, ctx, Hq, page, form, max |diff|) entries of the outputs that failed their comparison, then
    their count."""
    for b, ctx, hq, page, n, d in bad:
        print(f"OUTPUT MISMATCH B{b} ctx{ctx} Hq{hq} p{page} {n}: max |diff| {d:.3g}")
    print("mismatches:", len(bad))


def save_results(prefix: str, payload: dict) -> Path:
    """$OUT/results/<prefix>-<stamp>.json (benchmarks/results when $OUT is unset): ``payload`` with the environment
    and the command line."""
    out_dir = Path(os.environ["OUT"]) / "results" if os.environ.get("OUT") else Path("benchmarks/results")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(H._jsonable({"env": H.environment_info(), "command": H.command_line(), **payload}),
                               indent=1))
    return path


def write_report(prefix: str, title: str, rows: list[dict], rounds: int) -> Path:
    """:func:`save_results` of the rows, and the rows as a table."""
    from rich.console import Console
    from rich.table import Table

    path = save_results(prefix, {"rounds": rounds, "rows": rows})
    tab = Table(title=title)
    for c in ("case", "form", "us", "% copy"):
        tab.add_column(c)
    for r in rows:
        tab.add_row(f"B{r['B']} c{r['ctx']} Hq{r['Hq']} p{r['page']}", r["form"], f"{r['us']:.1f}",
                    f"{r['pct_of_copy']:.1f}")
    Console(width=140).print(tab)
    print(path)
    return path


def final_report(prefix: str, title: str, rows: list[dict], rounds: int, bad: list) -> None:
    """:func:`write_report` of the rows, then one line per timed form (copy and SDPA left out: they are in the
    table) and :func:`report_mismatches` last, for the device call's output tail."""
    write_report(prefix, title, rows, rounds)
    for r in rows:
        if r["form"] not in ("copy", "sdpa"):
            print(f"B{r['B']} ctx{r['ctx']} Hq{r['Hq']} p{r['page']} {r['form']}: {r['us']:.1f} us "
                  f"{r['pct_of_copy']:.1f}% x_sdpa {r['x_sdpa'] or float('nan'):.2f}")
    report_mismatches(bad)


def time_with_peers(fns: dict, q, case: tuple, copy_fn, moved: int, nbytes: int, rounds: int,
                    hkv: int = S.HKV) -> list[dict]:
    """:func:`time_rows` of ``fns`` with the copy and (where it runs) the SDPA peer of ``case`` = (B, ctx, Hq, page)
    added (``hkv`` KV heads), each row's speed-up over SDPA filled in (:func:`add_x_sdpa`)."""
    fns["copy"] = copy_fn
    sfn, note = sdpa_peer(q, case[0], case[1], hkv)
    if sfn is not None:
        fns["sdpa"] = sfn
    case_rows = time_rows(fns, case, moved, nbytes, rounds, None)
    add_x_sdpa(case_rows, note)
    return case_rows


def ab_cases(prefix: str, title: str, cases: list[tuple], rounds: int, configs, extra=None) -> None:
    """The A/B loop of gpu_decode_pairs.py and gpu_decode_part16.py over ``cases`` (B, Hkv, ctx, Hq, page):
    ``configs(case, hkv)`` gives {form: DecodeConfig}, whose first entry is the reference every other form's output
    is checked against (:func:`checked_calls`) and is not timed; ``extra(q, pc, cfgs)`` (optional) more {form: fn}
    to time unchecked. The forms are timed with the copy and SDPA (:func:`time_with_peers`), each row tagged with Hkv
    and its config (a form "<name>-<suffix>" takes <name>'s); a "<prefix>-partial" results file after each case,
    :func:`final_report` at the end."""
    rows, bad = [], []
    for b, hkv, ctx, hq, page in cases:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda", hkv)
        case = (b, ctx, hq, page)
        cfgs = configs(case, hkv)
        print(f"B{b} Hkv{hkv} ctx{ctx} Hq{hq} p{page}: " + "; ".join(f"{n} {c}" for n, c in cfgs.items()), flush=True)

        def report(name, diff, case=case):
            bad.append((*case, name, diff))
        fns = checked_calls(q, pc, cfgs, report)
        del fns[next(iter(cfgs))]
        if extra is not None:
            fns.update(extra(q, pc, cfgs))
        case_rows = time_with_peers(fns, q, case, copy_fn, moved, nbytes, rounds, hkv)
        for r in case_rows:
            cfg = cfgs.get(r["form"], cfgs.get(r["form"].rsplit("-", 1)[0]))
            r["Hkv"], r["config"] = hkv, None if cfg is None else str(cfg)
        rows += case_rows
        save_results(f"{prefix}-partial", {"rounds": rounds, "rows": rows})  # kept if the call is cut short
        del pc, fns
        torch.cuda.empty_cache()
    final_report(prefix, title, rows, rounds, bad)
