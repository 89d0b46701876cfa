"""Session 34: the library's decode heuristic with the Gluon kernel's row stores on (kg.ROW_STORE) and the hinted
Gluon rule for short contexts (decode.GLUON_L2EF_MIN_CONTEXT / GLUON_L2EF_MAX_PAIRS), against the Triton heuristic
(decode_config(gluon=False)) and against the same Gluon config with the row stores off, on issue 6's B 8 ctx 4096
cells and the cells next to the new rule's bounds and to the other Gluon rules (B 16 ctx 4096: 128 pairs; B 8 ctx
8192; B 32 ctx 4096: the 2-warp rule; B 8 ctx 32768: the long-context rule). Where the hinted rule does not apply
but the hints would (B 16 ctx 4096, B 8 ctx 8192), the rule's config is timed too ("gluon l2ef (rule's config)").
Session 35: every split Gluon form also with merge="inline" (" inline": the Gluon kernel's last split merges, no
combine launch), its output checked again after the timing; with S34_EXTRA=1 also at twice and half the splits.
S34_CASES="B:ctx:Hq:page,...": other cases.
Session 36: with S34_W4=1, on cells of at most B 8 ctx 4096, 4 warps x 2 splits without and with a 168-register cap
(which takes the row stores), the capped form also merged inline and unsplit.
Session 37: with S34_SPLIT=1, where the library splits with the combine kernel, its Gluon kernel alone ("library
split only": the same launch without the combine kernel; not checked, its output is unmerged): the step's time less
that is what the merge tail costs under do_bench; the same at twice the splits ("library x<N>", whole and alone).

Eager, do_bench medians after the write flush, interleaved rounds; every form's output is compared with the Triton
heuristic's before timing (max |diff| <= 1e-2, bf16 output). Prints a table; writes
$OUT/results/decode-s34-<stamp>.json (benchmarks/results when $OUT is unset).
Usage on the device: ``python scripts/gpu_decode_s34.py`` (``S34_ROUNDS``: rounds, default 4).
"""
from __future__ import annotations

import dataclasses
import os

import torch

from decode_case import (case_inputs, check_output, checked_calls, final_report, heuristic_config, save_results,
                         time_with_peers, variant_call)
from tritonfp8 import decode as dec
from tritonfp8._kernels import decode_gluon as kg
from tritonfp8.bench.suites import decode as S

# (B, ctx, Hq, page): the issue's B 8 ctx 4096 cells first, then the other Gluon rules' cells, then the neighbours
CASES = ((8, 4096, 64, 64), (8, 4096, 32, 64), (8, 4096, 64, 16), (8, 4096, 32, 16), (32, 4096, 32, 64),
         (8, 32768, 32, 64), (16, 4096, 32, 64), (8, 8192, 32, 64))
ROUNDS = int(os.environ.get("S34_ROUNDS", "4"))
EXTRA = os.environ.get("S34_EXTRA") == "1"
W4 = os.environ.get("S34_W4") == "1"
SPLIT = os.environ.get("S34_SPLIT") == "1"
if os.environ.get("S34_CASES"):  # "B:ctx:Hq:page,..." instead of CASES
    CASES = tuple(tuple(int(x) for x in c.split(":")) for c in os.environ["S34_CASES"].split(","))


def main() -> None:
    dev = torch.device("cuda")
    rows, bad = [], []
    for b, ctx, hq, page in CASES:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        lib = heuristic_config(b, ctx, hq, page)
        tri = dec.decode_config(b, S.HKV, hq // S.HKV, ctx, dec.num_sms(dev), tma_page=page,
                                kv_bytes=S.cache_bytes(b, ctx, 1), gluon=False)
        cfgs = {"triton": tri, "library": lib}
        pairs = b * S.HKV
        if S.cache_bytes(b, ctx, 1) <= dec.L2EF_MAX_BYTES and not (lib.kernel == "gluon" and lib.l2_evict_first):
            # a cell outside the hinted Gluon rule whose bytes the hints cover (B 16 ctx 4096, B 8 ctx 8192): the
            # rule's config there, to decide whether to widen it
            cfgs["gluon l2ef (rule's config)"] = dec.DecodeConfig(
                kernel="gluon", merge="kernel", block_n=32, num_warps=1, num_stages=3,
                num_splits=max(1, dec.GLUON_PROGRAMS // pairs), pdl=dec.GLUON_PROGRAMS // pairs > 1,
                l2_evict_first=True)
        for name in [n for n, c in cfgs.items() if c.kernel == "gluon" and c.num_splits > 1]:
            # session 35: the same config with the last split merging in-kernel (no combine launch); S34_EXTRA=1:
            # also with twice and half the splits (the merge's cost per split is what the inline form changes)
            cfgs[name + " inline"] = dataclasses.replace(cfgs[name], merge="inline", pdl=False)
            if EXTRA:
                for k in (2 * cfgs[name].num_splits, cfgs[name].num_splits // 2):
                    cfgs[f"{name} x{k} inline"] = dataclasses.replace(cfgs[name], num_splits=k, merge="inline",
                                                                     pdl=False)
        if W4 and b * ctx <= 8 * 4096:
            # session 36: 4 warps x 2 splits (hinted; the uncapped form keeps the accumulator-layout stores), then
            # under a 168-register cap with the row stores (kg.row_stores), merged by the combine kernel or inline
            w4 = dec.DecodeConfig(kernel="gluon", merge="kernel", block_n=32, num_warps=4, num_stages=3,
                                  num_splits=2, pdl=True, l2_evict_first=True)
            cfgs["w4 x2"] = w4
            cap = kg.ROW_STORE_W4_MAXNREG
            cfgs["w4 x2 r168 rowst"] = dataclasses.replace(w4, maxnreg=cap)
            cfgs["w4 x2 r168 rowst inline"] = dataclasses.replace(w4, maxnreg=cap, merge="inline", pdl=False)
            cfgs["w4 x1 r168 rowst"] = dataclasses.replace(w4, maxnreg=cap, num_splits=1, pdl=False)
        split = SPLIT and lib.kernel == "gluon" and lib.num_splits > 1 and lib.merge == "kernel"
        if split:
            # session 37: the library's config at twice the splits (the per-head read floor's 16 programs per pair
            # at B 8 ctx 4096), checked and timed like the others; alone below
            cfgs[f"library x{2 * lib.num_splits}"] = dataclasses.replace(lib, num_splits=2 * lib.num_splits)
        def report(name, diff, case=(b, ctx, hq, page)):
            bad.append((*case, name, diff))
        fns = checked_calls(q, pc, cfgs, report)
        # the library's own choice (no config) must launch what is timed as "library" (same kernel name and grid)
        dec.decode_attention(q, pc.k, pc.v, pc.table, pc.lens, k_descale=pc.descale, v_descale=pc.descale)
        bound = pc.table.shape[1] * page
        plans = {k[18]: p for k, p in dec._PLANS.items()
                 if k[4] == b and k[6] == hq and k[9] == page and k[16] == bound}
        auto, pinned = plans[None], plans[lib]
        if (auto.consts["KERNEL_NAME"], auto.grid) != (pinned.consts["KERNEL_NAME"], pinned.grid):
            report("library: not the heuristic's launch " + auto.consts["KERNEL_NAME"], 0.0)
        if lib.kernel == "gluon" and kg.row_stores(lib.num_warps):
            fns["library rows off"] = variant_call(q, pc, lib, False, False)
            check_output(fns["library rows off"], fns["triton"]().float(), "library rows off", report)
        if split:  # the Gluon kernel alone (no combine launch; unmerged output, not checked), at 1x and 2x the splits
            for name in ("library", f"library x{2 * lib.num_splits}"):
                cfgs[name + " split only"] = cfgs[name]
                fns[name + " split only"] = variant_call(q, pc, cfgs[name], kg.ROW_STORE, kg.PDL_SIGNAL,
                                                         split_only=True)
        case_rows = time_with_peers(fns, q, (b, ctx, hq, page), copy_fn, moved, nbytes, ROUNDS)
        ref = fns["triton"]().float()
        for name in [n for n in fns if n.endswith(" inline")]:  # after thousands of launches: counters still zero
            check_output(fns[name], ref, name + " (after timing)", report)
        for r in case_rows:
            r["config"] = str(cfgs.get(r["form"], lib)) if r["form"] not in ("copy", "sdpa") else None
        rows += case_rows
        save_results("decode-s34-partial", {"rounds": ROUNDS, "rows": rows})  # kept if the call is cut short
        del pc, fns
        torch.cuda.empty_cache()
    final_report("decode-s34", "Decode: library (row stores, hinted Gluon rule) vs Triton heuristic", rows, ROUNDS, bad)


if __name__ == "__main__":
    main()
