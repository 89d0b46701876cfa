"""Session 6, the inline split merge on the compact rows (DecodeConfig.merge_rows: GQA 4 x Sq 1 merges 4 rows, 4
splits per step at one warp, 16 at four) against the merge over the 16-row MMA tile (merge_rows=16 with its old
chunk: 1 split per step at one warp, 4 at four warps) and against the separate combine kernel (merge="kernel").

Why: gpu_decode_small.py (s6-call2) fit the one-warp TMA kernel's graph times at 1024 programs to ~4.1 us per
64-token step plus a launch cost that grows with the splits merged (~14 us at 4 splits, ~24 us at 16): the merge,
one dependent L2 round trip per split at one warp, is the candidate.

Graph-timed (write flush, as the bench), 3 interleaved rounds, the same-size copy as the reference; writes
$OUT/decode_merge.json and prints the table last. Usage on the device: ``python scripts/gpu_decode_merge.py``.
"""
from __future__ import annotations

import dataclasses

from gpu_decode_small import main

from tritonfp8 import decode as dec
from tritonfp8._kernels import decode as kern

CASES = ((8, 4096, 32, 64), (32, 4096, 32, 64), (8, 32768, 32, 64), (8, 4096, 32, 16), (8, 32768, 32, 16),
         (8, 4096, 64, 64))


def merge_configs(page, heur, gather, pairs, ctx):
    """heuristic (compact merge), its 16-row merge, its combine-kernel merge; the same three for the one-warp TMA
    kernel at 16 splits on pages of 64 where the heuristic picked something else."""
    out = {}

    def three(tag, cfg):
        if cfg.num_splits <= 1:
            out[tag] = cfg
            return
        out[tag] = cfg
        out[f"{tag}_rows16"] = dataclasses.replace(cfg, merge_rows=16,
                                                   merge_chunk=kern.merge_chunk(16, 128, cfg.num_warps))
        out[f"{tag}_kernel"] = dataclasses.replace(cfg, merge="kernel")

    three("heuristic", heur)
    if page == 64:
        for splits in (4, 16):
            cfg = dataclasses.replace(gather, kv_load="tma", block_n=64, num_warps=1, num_stages=4, num_splits=splits)
            if cfg != heur and pairs * splits <= 2048 and ctx // splits >= 256:
                three(f"tma_x{splits}", cfg)
    if gather != heur and gather.num_splits > 1:
        three("gather", gather)
    return out


if __name__ == "__main__":
    main(CASES, merge_configs, modes=("write",), out_name="decode_merge.json",
         title="decode: inline merge on the compact rows vs the 16-row tile vs the combine kernel (graphs)")
