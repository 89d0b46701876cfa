"""Session 38: the Gluon kernel with its warps on KV heads (``DecodeConfig(heads=True)``: one program per (split,
W KV heads, sequence), each page box of those heads one 3-D TMA copy) against the library's choice on issue 6's
B 8 ctx 4096 cells (and any S38_CASES="B:ctx:Hq:page,...").

Why: session 37 split B 8 ctx 4096's step under do_bench into the split kernel alone (2.3-4.2 us above the per-head
read floor) and the merge tail (1.8-3.1 us); the heads-together reader (gpu_decode_heads.py, 3-D boxes of 8 heads,
16 splits, 2 slots) read the same pages 0.4-1.2 us faster than the per-head reader, and a program of 8 warps puts
two warps on each scheduler (one now) to hide the loop's latencies. Forms (all hinted evict-first, 32-token steps,
the combine kernel as a PDL):

- ``library``: the heuristic's config (until session 38's rule the per-head one-warp kernel, 8 splits, 3 slots;
  since then the heads form at 64-128 pairs, and that one-warp config is timed as ``one-warp``);
- ``heads w<W> x<S> s<N>``: W warps on W KV heads, S splits, N ring slots;
- ``tok w<W> x<S> s<N>`` (S38_TOKEN): W warps on shares of one KV head's tokens (the session-24 form), at one
  split without a combine launch (call 6 ran it at 8 warps, allowed from f44ef0e until its revert after that call:
  0.55-0.86x the library at B 8 ctx 4096, decode-s38-20261207-165706.json);
- ``... split only``: a heads form's Gluon kernel alone (no combine launch; unmerged, not checked);
- ``read heads<W>t3 x<S> s<N> l2ef``: the no-arithmetic reader of the same boxes (the floor);
- ``copy`` and ``sdpa``, the bench's references.

Every form but the split-only one and the reader is compared with the Triton heuristic's output before timing
(max |diff| <= 1e-2, bf16 output). Eager, do_bench medians after the write flush, S38_ROUNDS interleaved rounds
(default 4). Prints a table; writes $OUT/results/decode-s38-<stamp>.json (benchmarks/results when $OUT is unset).
Usage on the device: ``python scripts/gpu_decode_s38.py``.
"""
from __future__ import annotations

import dataclasses
import os

import torch

from decode_case import (case_inputs, checked_calls, final_report, heuristic_config, heuristic_with, save_results,
                         time_with_peers, variant_call)
from gpu_decode_heads import heads_fn
from tritonfp8 import decode as dec
from tritonfp8._kernels import decode_gluon as kg

CASES = ((8, 4096, 64, 64), (8, 4096, 32, 64), (8, 4096, 64, 16), (8, 4096, 32, 16))
if os.environ.get("S38_CASES"):
    CASES = tuple(tuple(int(x) for x in c.split(":")) for c in os.environ["S38_CASES"].split(","))
ROUNDS = int(os.environ.get("S38_ROUNDS", "4"))
# (warps, splits, slots): 8 warps at 16 splits (the reader's shape: 128 programs of 64 KB a slot, one per SM) with 2
# and 3 slots, at 8 splits (64 programs, the library's tokens per split); 4 warps at 16 splits (256 programs)
HEADS_FORMS = ((8, 16, 2), (8, 16, 3), (8, 8, 3), (4, 16, 3))
# S38_FORMS="W:S:N,...": other heads forms; S38_SPLIT_ONLY=1: every heads form also alone (no combine launch);
# S38_READERS=1: the heads reader at every heads form's (heads, splits, slots) too, else only at (8, 16, 2). Call 2
# (session 38) swept the ring's depth: the bytes in flight per SM that the step's end must still compute.
if os.environ.get("S38_FORMS"):
    HEADS_FORMS = tuple(tuple(int(x) for x in f.split(":")) for f in os.environ["S38_FORMS"].split(","))
SPLIT_ONLY = HEADS_FORMS if os.environ.get("S38_SPLIT_ONLY") == "1" else HEADS_FORMS[:1]
READERS = HEADS_FORMS if os.environ.get("S38_READERS") == "1" else HEADS_FORMS[:1]
# S38_TOKEN="W:S:N,...": the token-split form at W warps (each warp on its share of one head's tokens, merged on
# chip), S splits, N slots; at one split no combine launch ("tok w8 x1 s2": B 8's 64 (sequence, KV head) pairs as
# 64 programs of 8 warps)
# S38_HINTS=1: every heads form also without the evict-first hints (" noef") and the library's config with them
# where it has none (" l2ef"): at ctx 32768 (537 MB a step, past decode.L2EF_MAX_BYTES) the library runs unhinted
# while the heads forms above are hinted, so a difference there may be the hint's
HINTS = os.environ.get("S38_HINTS") == "1"
TOKEN_FORMS = tuple(tuple(int(x) for x in f.split(":")) for f in os.environ.get("S38_TOKEN", "").split(",") if f)


def heads_config(warps: int, splits: int, slots: int) -> dec.DecodeConfig:
    return dec.DecodeConfig(kernel="gluon", heads=True, merge="kernel", block_n=32, num_warps=warps,
                            num_stages=slots, num_splits=splits, pdl=splits > 1, l2_evict_first=True)



def without_heads_rule(b: int, ctx: int, hq: int, page: int) -> dec.DecodeConfig:
    """The heuristic's config for the case with its heads rule off: the one-warp Gluon config that rule replaced."""
    return heuristic_with(b, ctx, hq, page, GLUON_HEADS_MAX_PAIRS=0)


def token_config(warps: int, splits: int, slots: int) -> dec.DecodeConfig:
    return dataclasses.replace(heads_config(warps, splits, slots), heads=False)


def main() -> None:
    rows, bad = [], []
    for b, ctx, hq, page in CASES:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        lib = heuristic_config(b, ctx, hq, page)
        tri = heuristic_config(b, ctx, hq, page, gluon=False)
        cfgs = {"triton": tri, "library": lib}
        if lib.heads:  # from session 38's heuristic on: the one-warp config the heads rule replaced, as the baseline
            cfgs["one-warp"] = without_heads_rule(b, ctx, hq, page)
        for w, s, n in HEADS_FORMS:
            cfgs[f"heads w{w} x{s} s{n}"] = heads_config(w, s, n)
        for w, s, n in TOKEN_FORMS:
            cfgs[f"tok w{w} x{s} s{n}"] = token_config(w, s, n)
        if HINTS:
            for w, s, n in HEADS_FORMS:
                cfgs[f"heads w{w} x{s} s{n} noef"] = dataclasses.replace(heads_config(w, s, n), l2_evict_first=False)
            if not lib.l2_evict_first:
                cfgs["library l2ef"] = dataclasses.replace(lib, l2_evict_first=True)

        def report(name, diff, case=(b, ctx, hq, page)):
            bad.append((*case, name, diff))
        fns = checked_calls(q, pc, cfgs, report)
        for w, s, n in SPLIT_ONLY:
            name = f"heads w{w} x{s} s{n}"
            if s > 1:
                fns[name + " split only"] = variant_call(q, pc, cfgs[name], kg.ROW_STORE, kg.PDL_SIGNAL,
                                                         split_only=True)
                cfgs[name + " split only"] = cfgs[name]
        for w, s, n in READERS:
            fns[f"read heads{w}t3 x{s} s{n} l2ef"] = heads_fn(pc, s, 32, n, w, True, l2ef=True)
        case_rows = time_with_peers(fns, q, (b, ctx, hq, page), copy_fn, moved, nbytes, ROUNDS)
        for r in case_rows:
            r["config"] = str(cfgs[r["form"]]) if r["form"] in cfgs else None
        rows += case_rows
        save_results("decode-s38-partial", {"rounds": ROUNDS, "rows": rows})  # kept if the call is cut short
        del pc, fns
        torch.cuda.empty_cache()
    final_report("decode-s38", "Decode: warps on KV heads (heads=True) vs the library", rows, ROUNDS, bad)


if __name__ == "__main__":
    main()
