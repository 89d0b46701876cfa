"""Where the short decode steps spend their time above the read floor (session 24).

Session 24's first call (scripts/gpu_decode_floor.py) put a pure paged TMA reader at 88-89% of the copy at B 32 ctx
4096 (76 us) and 77-79% at B 8 (27 us), against the heuristic's 85 / 33 us. Here, interleaved under the bench's
protocol (eager, after the write flush), for a few split counts of the Gluon kernel:

- ``gluon xS``: the full call (split kernel + the combine kernel as a PDL);
- ``gluon xS split only``: the split kernel alone (partials written, no combine: the output is not produced), so
  full - split only is what the merge costs;
- ``read xS``: the reader with the same grid and ring (gpu_decode_floor.paged_read_kernel), so split only - read is
  what the products, the softmax and the epilogue add above the memory stream;

next to the copy and the library's heuristic. Writes $OUT/results/decode-parts-<stamp>.json.
Call 3 adds the kernel with 2 / 4 warps per program (``w2`` / ``w4``: each warp on its own share of the program's
tokens, merged on chip), each form's output checked against the first's before timing.
Usage on the device: ``cd scripts && python gpu_decode_parts.py``.
"""
from __future__ import annotations

import math

import torch

from decode_case import case_inputs, heuristic_config, pinned_call, time_rows, write_report
from gpu_decode_floor import paged_fn
from tritonfp8 import decode as dec

# (B, ctx, Hq, page), [(splits, stages, warps)] of the Gluon kernel (32-token steps); session 24 call 3: several
# warps per program (each on its own tokens, merged on chip)
CASES = (
    ((32, 4096, 32, 64), ((2, 3, 1), (1, 3, 2), (1, 2, 2), (2, 3, 2), (1, 2, 4), (1, 3, 4))),
    ((32, 4096, 32, 16), ((2, 3, 1), (1, 3, 2), (1, 2, 4))),
    ((8, 4096, 32, 64), ((8, 3, 1), (4, 3, 2), (8, 3, 2), (2, 3, 4), (4, 2, 4))),
    ((8, 32768, 32, 16), ((8, 3, 1), (4, 3, 2), (2, 3, 4))),
)
ROUNDS = 3


def _split_only(q, pc, cfg):
    """The plan's split kernel alone, replayed (as decode_attention's replay path) without the combine launch."""
    dec._PLANS.clear()
    dec._REPLAYS.clear()
    full = pinned_call(q, pc, cfg)
    full()
    full()
    (plan,) = dec._PLANS.values()
    part = object.__new__(type(plan))
    for slot in type(plan).__slots__:
        setattr(part, slot, getattr(plan, slot))
    part.fast = plan.fast[:1]  # launch() zips the recorded kernels with their arguments: the split kernel only
    b, _, hq, d = q.shape
    out = torch.empty(b, 1, hq, d, device=q.device, dtype=torch.bfloat16)
    scale = 1.0 / math.sqrt(d) * 1.4426950408889634
    return full, lambda: part.launch(q, pc.k, pc.v, pc.table, pc.lens, pc.descale, pc.descale, out, scale,
                                     replay=True)


def main() -> None:
    rows = []
    for (b, ctx, hq, page), forms in CASES:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        heur = heuristic_config(b, ctx, hq, page)
        fns = {"copy": copy_fn, "heuristic": pinned_call(q, pc, heur)}
        for sp, st, w in forms:
            cfg = dec.DecodeConfig(kernel="gluon", block_n=32, num_warps=w, num_stages=st, num_splits=sp,
                                   merge="kernel", pdl=sp > 1)
            full, part = _split_only(q, pc, cfg)
            name = f"gluon x{sp} s{st}" + (f" w{w}" if w > 1 else "")
            fns[name] = full
            if sp > 1 and w == 1:
                fns[f"{name} split only"] = part
            if w == 1:
                fns[f"read x{sp} s{st}"] = paged_fn(pc, sp, 32, st)
        # every form's output against the first's (bf16 out): the warps' merge is checked before it is timed
        outs = {n: f() for n, f in fns.items() if n.startswith("gluon") and "split only" not in n}
        first = next(iter(outs.values())).float()
        for n, o in outs.items():
            diff = (o.float() - first).abs().max().item()
            if not diff <= 1e-2:
                print(f"MISMATCH B{b} ctx{ctx} p{page} {n}: max |diff| {diff}", flush=True)
        rows += time_rows(fns, (b, ctx, hq, page), moved, nbytes, ROUNDS, heur)
        del pc, fns
        torch.cuda.empty_cache()
    write_report("decode-parts", "decode step parts (eager, after the write flush)", rows, ROUNDS)


if __name__ == "__main__":
    main()
