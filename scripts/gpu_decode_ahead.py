"""The Gluon decode kernel with its block-table entries loaded a step ahead, against session 25's kernel (session 26).

Offline sm_90 SASS of session 25's kernel (_kernels/decode_gluon.py at 9342373): each TMA box of a refill was issued
right after the load of its block-table entry, and ptxas waited for each load in turn (LDG -> R2UR -> UTMALDG, then
the next LDG): W x STEP / BOX dependent global loads per step (2 at pages of 64 with 2 warps, 4 at pages of 16), and
STAGES times that in the prologue (8 at pages of 16, 2 warps, 2 slots). Session 26's kernel loads a step's entries
together (one latency) and those of the refill at the top of the step that issues it (hidden behind its products).
Same bits; the instruction count of the loop is unchanged (535 vs 537 at pages of 64 with 2 warps).

Interleaved under the bench's protocol (eager, after the write flush, ROUNDS rounds), per case: the copy, the
library's heuristic (session 26 code), the Triton heuristic (decode_config without the Gluon kernel), and Gluon
configs with this session's kernel (``new``) and session 25's (``s25``, the plan's kernel swapped for the reference
module's). Each form's output is compared with the Triton heuristic's (<= 1e-2) and ``s25`` with ``new`` bit for bit.

The reference module is session 25's file, carried in a git-ignored folder:
``mkdir -p .ab && git show 9342373:src/tritonfp8/_kernels/decode_gluon.py > .ab/decode_gluon_s25.py``; then on the
device ``cd scripts && python gpu_decode_ahead.py ../.ab/decode_gluon_s25.py``.
Writes $OUT/results/decode-ahead-<stamp>.json.
"""
from __future__ import annotations

import importlib.util
import math
import sys

import torch

from decode_case import case_inputs, heuristic_config, pinned_call, time_rows, write_report
from tritonfp8 import decode as dec
from tritonfp8.bench.suites import decode as S

# (B, ctx, Hq, page), Gluon forms (splits, stages, warps) with 32-token steps
CASES = (
    ((32, 4096, 32, 64), ((1, 2, 2), (1, 2, 4))),
    ((32, 4096, 64, 64), ((1, 2, 2), (1, 2, 4))),
    ((32, 4096, 32, 16), ((1, 2, 2), (1, 2, 4))),
    ((32, 4096, 64, 16), ((1, 2, 2), (1, 2, 4))),
    ((64, 4096, 32, 16), ((1, 2, 2), (1, 2, 4))),
    ((8, 4096, 32, 64), ((8, 3, 1), (4, 2, 2))),
    ((8, 32768, 32, 16), ((8, 3, 1),)),
)
ROUNDS = 4


def _ref_call(q, pc, cfg, ref_kernel):
    """``cfg``'s plan with its kernel swapped for ``ref_kernel`` (same arguments, constants and combine), launched
    as decode_attention's replay path launches a validated call; returns (fn, its output tensor)."""
    dec._PLANS.clear()
    dec._REPLAYS.clear()
    pinned_call(q, pc, cfg)()
    (plan,) = dec._PLANS.values()
    ref = object.__new__(type(plan))
    for slot in type(plan).__slots__:
        setattr(ref, slot, getattr(plan, slot))
    ref.kernel, ref.fast = ref_kernel, None
    out = torch.empty_like(q)
    scale = 1.0 / math.sqrt(q.shape[-1]) * 1.4426950408889634

    def fn():
        ref.launch(q, pc.k, pc.v, pc.table, pc.lens, pc.descale, pc.descale, out, scale, replay=ref.fast is not None)
        return out

    fn()
    return fn, out


def main() -> None:
    spec = importlib.util.spec_from_file_location("decode_gluon_s25", sys.argv[1])
    ref_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref_mod)
    rows, bad = [], []
    for (b, ctx, hq, page), forms in CASES:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        heur = heuristic_config(b, ctx, hq, page)
        tri = dec.decode_config(b, S.HKV, hq // S.HKV, ctx, dec.num_sms(q.device), tma_page=page,
                                kv_bytes=S.cache_bytes(b, ctx, 1), gluon=False)
        fns = {"copy": copy_fn, "heuristic": pinned_call(q, pc, heur), "triton": pinned_call(q, pc, tri)}
        ref_out = fns["triton"]().float()
        for sp, sg, w in forms:
            cfg = dec.DecodeConfig(kernel="gluon", merge="kernel", block_n=32, num_warps=w, num_stages=sg,
                                   num_splits=sp, pdl=sp > 1)
            name = f"w{w}x{sp}s{sg}"
            fns[f"{name} new"] = pinned_call(q, pc, cfg)
            new_out = fns[f"{name} new"]().clone()
            fns[f"{name} s25"], old = _ref_call(q, pc, cfg, ref_mod.decode_gluon_kernel)
            d_ref = (new_out.float() - ref_out).abs().max().item()
            same = torch.equal(old, new_out)
            if not (d_ref <= 1e-2 and same):
                bad.append(f"B{b} ctx{ctx} Hq{hq} p{page} {name}: vs triton {d_ref:.3g}, s25 bitwise equal {same}")
        heur_out = fns["heuristic"]().float()
        if not (heur_out - ref_out).abs().max().item() <= 1e-2:
            bad.append(f"B{b} ctx{ctx} Hq{hq} p{page} heuristic differs from triton")
        dec._PLANS.clear()
        dec._REPLAYS.clear()
        rows += time_rows(fns, (b, ctx, hq, page), moved, nbytes, ROUNDS, heur)
        del pc, fns
        torch.cuda.empty_cache()
    for line in bad:
        print("CHECK FAILED:", line)
    write_report("decode-ahead", "Gluon decode: table entries a step ahead (new) vs session 25 (s25)", rows, ROUNDS)


if __name__ == "__main__":
    main()
