"""Shared setup of the decode device diagnostics (gpu_decode_small / _fixed / _merge2): one benchmark case's paged
E4M3 cache, bf16 q, the bytes a decode step reads and writes, the same-size copy, and a call with a pinned config."""
from __future__ import annotations

import torch

from tritonfp8 import decode as dec
from tritonfp8.bench import harness as H
from tritonfp8.bench.suites import decode as S


def case_inputs(b: int, ctx: int, hq: int, page: int, device):
    """(paged cache, q, bytes of the step, copy fn, bytes the copy moves) of bench decode's case."""
    pc = S._paged(b, ctx, page, device)
    torch.manual_seed(0)
    q = torch.randn(b, 1, hq, S.D, device=device, dtype=torch.bfloat16)
    nbytes = S.cache_bytes(b, ctx, 1) + S.io_bytes(b, hq)
    copy_fn, moved = H.make_copy_fn(max(1, nbytes // 2), device)
    return pc, q, nbytes, copy_fn, moved


def pinned_call(q, pc, cfg, seq_lens=None):
    """decode_attention on the case's cache with ``cfg`` pinned (and ``seq_lens`` instead of the case's)."""
    lens = pc.lens if seq_lens is None else seq_lens
    return lambda: dec.decode_attention(q, pc.k, pc.v, pc.table, lens, k_descale=pc.descale, v_descale=pc.descale,
                                        config=cfg)


def checked_calls(q, pc, cfgs: dict, on_diff) -> dict:
    """A pinned call per config, each run once and compared with the first config's output (max |diff| <= 1e-2,
    bf16 output); ``on_diff(name, diff)`` for one that is not (report or stop)."""
    fns, ref = {}, None
    for name, cfg in cfgs.items():
        fn = pinned_call(q, pc, cfg)
        o = fn().float()
        ref = o if ref is None else ref
        diff = (o - ref).abs().max().item()
        if not diff <= 1e-2:
            on_diff(name, diff)
        fns[name] = fn
    return fns
