"""Warp-split decode (``DecodeConfig(warp_split=True)``, issue 6).

The warps of a program take slices of each step (block_n / num_warps tokens each), each slice with its own online
softmax, merged once after the loop: the same products and roundings as the gather path (E4M3 -> fp16 exact, P
rounded to fp16), another fp32 summation order. Every comparison uses tests/test_decode.py's tolerance rule (stated
there once) against the reference. Cases: shuffled pages of 16 / 32 / 64, one page per slice and several, seq lens
1, 17, 339, GQA 1 / 4 / 8, Sq 3 (causal tail), splits starting mid-page, more splits than steps, 2 / 4 / 8 warps,
v_stage on and off, D 80 (padded columns), fp16 q, bad page ids in a full and a masked step (skipped), an fp16
cache, int64 offsets and distinct K/V strides (in tests/test_decode.py); on the GPU the benchmark's sizes and a
CUDA-graph capture.
"""

from __future__ import annotations

import pytest
import torch

from conftest import requires_gpu
from test_decode import Case, _make, assert_close_over_kept_tokens, assert_decode_close
from tritonfp8 import decode as dec

# (case, block_n, warps, splits, v_stage)
WS_CASES = [
    (Case((1, 17, 339), 8, 2, page=16), 64, 4, 1, True),  # 16 tokens per warp: one page per slice
    (Case((1, 17, 339), 8, 2, page=16), 128, 4, 1, True),  # 32 per warp: two pages per slice
    (Case((1, 17, 339), 2, 2, page=64), 128, 4, 1, True),  # GQA 1
    (Case((339, 17), 8, 1, page=16, sq=3), 128, 4, 3, False),  # GQA 8 x Sq 3 (causal tail), splits
    (Case((339, 1, 130), 4, 1, page=64, sq=2), 64, 2, 5, True),  # 2 warps, splits starting mid-page
    (Case((5, 70), 4, 1, sq=3), 64, 4, 7, True),  # more splits than steps: empty splits
    (Case((129, 64, 300), 4, 2, page=32), 256, 8, 2, True),  # 8 warps of 32 tokens
    (Case((40, 77), 4, 2, d=80), 64, 2, 1, True),  # D 80: padded columns
    (Case((17, 339), 4, 1, sq=3, q_dtype=torch.float16), 128, 4, 1, True),  # fp16 q
    (Case((600, 150), 4, 1, d=128, page=64), 128, 4, 2, True),  # D 128, the benchmark's dims
]


def _check(case, cfg, device, seed=21, **kw):
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=seed)
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32,
                               **kw)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(out, ref, pt, max(case.lens), torch.float32)
    return out


@pytest.mark.parametrize("case,block_n,warps,splits,v_stage", WS_CASES, ids=lambda x: str(x))
def test_warp_split_matches_reference(case, block_n, warps, splits, v_stage, device):
    cfg = dec.DecodeConfig(block_n=block_n, num_warps=warps, num_splits=splits, warp_split=True, v_stage=v_stage)
    _check(case, cfg, device)


def test_warp_split_runs_its_kernel(device):
    """The plan launches the warp-split form (WARP_SPLIT = num_warps, the split loop) and names it."""
    case = Case((1, 17, 339), 8, 2, page=16)
    cfg = dec.DecodeConfig(block_n=128, num_warps=4, warp_split=True)
    dec._PLANS.clear()
    dec._REPLAYS.clear()  # on the GPU a replayed call would not plan
    _check(case, cfg, device)
    (plan,) = [p for k, p in dec._PLANS.items() if k[-3] == cfg]
    assert plan.consts["WARP_SPLIT"] == 4 and plan.consts["TAIL_MASK"]
    assert plan.consts["KERNEL_NAME"].endswith("_wsplit")
    off = dec.DecodeConfig(block_n=128, num_warps=4)
    dec._PLANS.clear()
    dec._REPLAYS.clear()
    _check(case, off, device)
    (plan,) = dec._PLANS.values()
    assert plan.consts["WARP_SPLIT"] == 0 and "wsplit" not in plan.consts["KERNEL_NAME"]


def test_warp_split_skips_bad_pages(device):
    """Page ids outside [0, num_blocks) are skipped as on the gather path, in a full (unmasked) step and in the
    masked tail: the result is attention over the remaining tokens."""
    q, kc, vc, bt, sl, ks, vs = _make(Case((339, 20), 4, 2, page=16), device, seed=9)
    bad = bt.clone()
    bad[0, 2] = 10**6  # tokens 32..47 of sequence 0: inside its first full step (128 tokens)
    bad[1, 0] = -7  # tokens 0..15 of sequence 1: its masked tail
    cfg = dec.DecodeConfig(block_n=128, num_warps=4, warp_split=True)
    out = dec.decode_attention(q, kc, vc, bad, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32)
    assert_close_over_kept_tokens(out, q, kc, vc, bt, sl, ks, vs,
                                  [torch.cat([torch.arange(0, 32), torch.arange(48, 339)]), torch.arange(16, 20)])


def test_warp_split_fp16_cache(device):
    """A 16-bit cache of q's dtype (the benchmark's peer form) through the warp-split loop."""
    q, kc, vc, bt, sl, ks, vs = _make(Case((17, 339), 8, 2, sq=2, q_dtype=torch.float16), device, seed=5)
    k16 = (kc.float() * ks[None, None, :, None]).half()
    v16 = (vc.float() * vs[None, None, :, None]).half()
    cfg = dec.DecodeConfig(block_n=128, num_warps=4, warp_split=True)
    out = dec.decode_attention(q, k16, v16, bt, sl, config=cfg, out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, k16, v16, bt, sl)
    pt = dec.decode_attention_torch(q, k16, v16, bt, sl, p_dtype=torch.float16)
    assert_decode_close(out, ref, pt, 339, torch.float32)


@pytest.mark.parametrize("kw,exc,match", [
    ({"warp_split": 1}, TypeError, "warp_split: expected a bool"),
    ({"warp_split": True, "kv_load": "tma"}, ValueError, "warp_split=True: expected kv_load='gather'"),
    ({"warp_split": True, "dot": "fp8t", "block_n": 64}, ValueError, "warp_split=True: expected"),
    ({"warp_split": True, "block_n": 32, "num_warps": 4}, ValueError, "16 tokens per warp"),
])
def test_warp_split_bad_options(kw, exc, match):
    with pytest.raises(exc, match=match):
        dec.DecodeConfig(**kw)


@requires_gpu
@pytest.mark.parametrize("lens,hq,page,block_n,warps,splits", [
    ([4096] * 32, 32, 64, 128, 4, 1),  # B 32 ctx 4096: one program per (sequence, KV head)
    ([4096] * 8, 32, 64, 128, 4, 4),
    ([4096] * 8, 64, 16, 128, 4, 4),  # GQA 8, pages of 16 (two pages per slice)
    ([4096] * 8, 32, 16, 64, 4, 8),  # one page per slice
    ([32768, 1, 4095, 17], 32, 64, 256, 8, 2),
    ([1024, 4095, 17, 1, 2048, 300, 4096, 64], 64, 64, 256, 4, 1),
])
def test_warp_split_large_matches_reference(lens, hq, page, block_n, warps, splits):
    g = torch.Generator().manual_seed(11)
    kc, vc, bt, sl, ks, vs = dec.random_paged_cache(lens, 8, 128, page, device="cuda", generator=g)
    q = torch.randn(len(lens), 1, hq, 128, generator=g).to(device="cuda", dtype=torch.bfloat16)
    cfg = dec.DecodeConfig(block_n=block_n, num_warps=warps, num_splits=splits, warp_split=True, v_stage=True)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    for _ in range(2):  # repeated launches (the inline merge's counters come back to zero)
        out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32)
        assert_decode_close(out, ref, pt, max(lens), torch.float32)
    bf = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg)
    assert_decode_close(bf, ref, pt, max(lens), torch.bfloat16)


@requires_gpu
def test_warp_split_under_cuda_graph_capture():
    g = torch.Generator().manual_seed(12)
    kc, vc, bt, sl, ks, vs = dec.random_paged_cache([4096] * 8, 8, 128, 64, device="cuda", generator=g)
    q = torch.randn(8, 1, 32, 128, generator=g).to(device="cuda", dtype=torch.bfloat16)
    cfg = dec.DecodeConfig(block_n=128, num_warps=4, num_splits=4, warp_split=True, v_stage=True)
    eager = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager)
