"""Decode on the GPU at the benchmark's sizes: accuracy, split paths, CUDA-graph capture, bit-exact cache writes.

Run on the H200: ``pytest tests/test_decode_gpu.py -q``. The tolerance rule is test_decode.py's (stated there once).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from conftest import requires_gpu
from test_decode import assert_decode_close
from tritonfp8 import decode as dec

pytestmark = requires_gpu


def _setup(lens, hq, hkv, d=128, page=16, sq=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    kc, vc, bt, sl, ks, vs = dec.random_paged_cache(lens, hkv, d, page, device="cuda", generator=g)
    q = torch.randn(len(lens), sq, hq, d, generator=g).to(device="cuda", dtype=torch.bfloat16)
    return q, kc, vc, bt, sl, ks, vs


@pytest.mark.parametrize(
    "lens,hq,hkv,page,sq",
    [
        ([4096] * 8, 32, 8, 16, 1),
        ([4096] * 8, 64, 8, 64, 1),
        ([32768], 32, 8, 16, 1),
        ([1024, 4095, 17, 1, 2048, 300, 4096, 64], 64, 8, 16, 4),
        ([1000] * 4, 64, 8, 16, 16),
    ],
)
def test_decode_large_matches_reference(lens, hq, hkv, page, sq):
    q, kc, vc, bt, sl, ks, vs = _setup(lens, hq, hkv, page=page, sq=sq)
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(out, ref, pt, max(lens), torch.float32)
    bf = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    assert_decode_close(bf, ref, pt, max(lens), torch.bfloat16)


@pytest.mark.parametrize("splits,merge,pdl", [(1, "inline", False), (7, "inline", False), (7, "kernel", False),
                                              (7, "kernel", True), (64, "inline", False), (64, "kernel", True)])
def test_split_paths_agree(splits, merge, pdl):
    q, kc, vc, bt, sl, ks, vs = _setup([5000, 33, 2048], 32, 8, seed=1)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    cfg = dec.DecodeConfig(num_splits=splits, merge=merge, pdl=pdl)
    for _ in range(3):  # repeated launches: the inline merge's counters must come back to zero every time
        out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32)
        assert_decode_close(out, ref, pt, 5000, torch.float32)
    assert not dec._merge_counters(q.device, 1).any()


def test_bf16_cache_peer_matches_reference():
    q, kc, vc, bt, sl, ks, vs = _setup([4096] * 4, 32, 8, seed=2)
    k16 = (kc.float() * ks[None, None, :, None]).bfloat16()
    v16 = (vc.float() * vs[None, None, :, None]).bfloat16()
    out = dec.decode_attention(q, k16, v16, bt, sl, out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, k16, v16, bt, sl)
    pt = dec.decode_attention_torch(q, k16, v16, bt, sl, p_dtype=torch.bfloat16)
    assert_decode_close(out, ref, pt, 4096, torch.float32)


def test_cuda_graph_capture_write_and_decode():
    """No host sync on the default paths: write_kv_cache + decode_attention capture into a CUDA graph, and a replay
    with new inputs (new token, longer seq_lens) equals eager calls."""
    hq, hkv, d, page = 32, 8, 128, 16
    q, kc, vc, bt, sl, ks, vs = _setup([700, 1500, 64, 3000], hq, hkv, seed=3)
    k_new = torch.randn(4, hkv, d, device="cuda", dtype=torch.bfloat16)
    v_new = torch.randn_like(k_new)
    slots = torch.empty(4, dtype=torch.int64, device="cuda")
    kw = dict(k_descale=ks, v_descale=vs, max_seqlen=bt.shape[1] * page)

    def step():
        dec.write_kv_cache(k_new, v_new, kc, vc, slots, ks, vs)
        return dec.decode_attention(q, kc, vc, bt, sl, **kw)

    def fill(lens_now):
        sl.copy_(torch.tensor(lens_now, dtype=torch.int32))
        pos = sl.long() - 1
        slots.copy_(bt[torch.arange(4, device="cuda"), pos // page].long() * page + pos % page)

    fill([701, 1501, 65, 3001])
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()  # warm-up compiles outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out_static = step()
    for lens_now in ([702, 1502, 66, 3002], [703, 1503, 67, 3003]):
        fill(lens_now)
        k_new.normal_()
        v_new.normal_()
        kc_e, vc_e = kc.clone(), vc.clone()
        dec.write_kv_cache(k_new, v_new, kc_e, vc_e, slots, ks, vs)
        eager = dec.decode_attention(q, kc_e, vc_e, bt, sl, **kw)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(kc.view(torch.uint8), kc_e.view(torch.uint8))
        assert torch.equal(out_static, eager)


def test_write_kv_cache_large_bit_exact():
    g = torch.Generator().manual_seed(4)
    t, hkv, d, page, nb = 8192, 8, 128, 16, 1024
    k = (torch.randn(t, hkv, d, generator=g) * 30).to(device="cuda", dtype=torch.bfloat16)
    v = (torch.randn(t, hkv, d, generator=g) * 30).to(device="cuda", dtype=torch.bfloat16)
    ks = (torch.rand(hkv, generator=g) * 0.05 + 0.01).cuda()
    vs = torch.tensor(0.04, device="cuda")
    slots = torch.randperm(nb * page, generator=g)[:t].cuda()
    slots[::97] = -1
    kc = torch.randint(0, 0x7E, (nb, page, hkv, d), dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)
    vc = kc.clone()
    kr, vr = kc.clone(), vc.clone()
    dec.write_kv_cache(k, v, kc, vc, slots, ks, vs)
    dec.write_kv_cache_torch(k, v, kr, vr, slots, ks, vs)
    assert torch.equal(kc.view(torch.uint8), kr.view(torch.uint8))
    assert torch.equal(vc.view(torch.uint8), vr.view(torch.uint8))



@pytest.mark.parametrize("lens,page,cfg", [
    ([4096] * 8, 64, None),  # the one-warp TMA kernel, 16 splits, inline merge
    ([4096] * 8, 16, None),  # pages of 16 (heuristic's kernel)
    ([4096] * 32, 16, None),  # the per-box TMA kernel
    ([300, 17, 4096, 1], 64, dec.DecodeConfig(num_splits=8, merge="kernel", pdl=True)),  # two launches
    ([2048] * 2, 64, dec.DecodeConfig(num_splits=1)),  # unsplit
    ([16384, 300, 17, 9000] * 2, 16, None),  # the Gluon kernel (the heuristic's long-context rule) + combine
    ([300, 17, 4096, 1], 64, dec.DecodeConfig(kernel="gluon", merge="kernel", num_splits=3, block_n=32, num_warps=1, pdl=True)),
])
def test_replay_matches_the_full_path(lens, page, cfg):
    """decode._REPLAYS: the second call with the same metadata replays the plan's compiled launches (recorded) and
    gives the bits of the full path (TRITONFP8_DECODE_FAST_LAUNCH off), also with new values in the same tensors'
    shapes (new q, longer seq_lens)."""
    q, kc, vc, bt, sl, ks, vs = _setup(lens, 32, 8, page=page)
    kw = dict(k_descale=ks, v_descale=vs, config=cfg)
    dec.decode_attention(q, kc, vc, bt, sl, **kw)
    rkey = dec._replay_key(q, kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, None, cfg)
    assert rkey in dec._REPLAYS and dec._REPLAYS[rkey][0].fast is not None
    q2 = torch.randn_like(q)
    sl2 = torch.clamp(sl + 1, max=bt.shape[1] * page)
    fast = [dec.decode_attention(x, kc, vc, bt, s, **kw) for x, s in ((q, sl), (q2, sl2))]
    prev = dec._FAST.set(False)
    try:
        full = [dec.decode_attention(x, kc, vc, bt, s, **kw) for x, s in ((q, sl), (q2, sl2))]
    finally:
        dec._FAST.set(prev)
    for a, b in zip(fast, full):
        assert torch.equal(a, b)
    assert not dec._merge_counters(q.device, 1).any()


def test_replay_under_cuda_graph_capture():
    """A replayed call captures into a CUDA graph (no host sync, no per-call allocation it cannot capture) and the
    graph's replay with new q equals an eager call."""
    q, kc, vc, bt, sl, ks, vs = _setup([4096] * 8, 32, 8, page=64)
    kw = dict(k_descale=ks, v_descale=vs)
    dec.decode_attention(q, kc, vc, bt, sl, **kw)
    assert_graph_replay_equals_eager(q, kc, vc, bt, sl, kw)


def assert_graph_replay_equals_eager(q, kc, vc, bt, sl, kw):
    """After a first call: a replayed call, a warm-up on a side stream, a CUDA-graph capture, and the graph's replay
    with new q (written into the captured tensor) equals an eager call."""
    dec.decode_attention(q, kc, vc, bt, sl, **kw)  # replayed
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        dec.decode_attention(q, kc, vc, bt, sl, **kw)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = dec.decode_attention(q, kc, vc, bt, sl, **kw)
    q.copy_(torch.randn_like(q))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, dec.decode_attention(q, kc, vc, bt, sl, **kw))


def test_full_path_after_a_replay_respects_alignment():
    """A plan whose compiled kernels were recorded on aligned tensors, called through the full path with a q that
    is not 16-byte aligned (same metadata), launches through Triton's specialization, not the recorded kernels:
    the result equals the aligned call's."""
    q, kc, vc, bt, sl, ks, vs = _setup([4096] * 8, 32, 8, page=64)
    kw = dict(k_descale=ks, v_descale=vs)
    ref = dec.decode_attention(q, kc, vc, bt, sl, **kw)
    dec.decode_attention(q, kc, vc, bt, sl, **kw)
    buf = torch.empty(q.numel() + 1, dtype=q.dtype, device=q.device)
    q_off = buf[1:].view(q.shape).copy_(q)
    assert q_off.data_ptr() % 16 != 0
    assert torch.equal(dec.decode_attention(q_off, kc, vc, bt, sl, **kw), ref)


@pytest.mark.parametrize("lens,page", [
    ([4096] * 8, 64),  # the one-warp TMA kernel, 16 splits
    ([4096] * 32, 64),  # the same kernel, 4 splits
    ([4096] * 32, 16),  # the per-box TMA kernel
    ([4096] * 8, 16),  # the per-box TMA kernel in one wave (8 splits)
    ([4096] * 4, 16),  # the 4-warp gather kernel (32 pairs): the option is ignored (no hints on cp.async)
    ([300, 17, 4096, 1], 64),
])
def test_l2_evict_first_gives_the_same_bits(lens, page):
    """DecodeConfig(l2_evict_first=True) only adds cache hints to the K/V TMA loads: the same bits as the heuristic's
    config without them, and the compiled TMA kernel's PTX carries the hints (l2hint's pass ran); the gather kernel
    runs untagged."""
    q, kc, vc, bt, sl, ks, vs = _setup(lens, 32, 8, page=page)
    heur = dec.decode_config(len(lens), 8, 4, bt.shape[1] * page, dec.num_sms(q.device), tma_page=page)
    assert not heur.l2_evict_first  # kv_bytes not given
    kw = dict(k_descale=ks, v_descale=vs)
    base = dec.decode_attention(q, kc, vc, bt, sl, config=heur, **kw)
    hinted_cfg = dataclasses.replace(heur, l2_evict_first=True)
    for _ in range(2):  # the full path, then the replay
        hinted = dec.decode_attention(q, kc, vc, bt, sl, config=hinted_cfg, **kw)
        assert torch.equal(hinted, base)
    rkey = dec._replay_key(q, kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, None, hinted_cfg)
    kernel = dec._REPLAYS[rkey][0].fast[0][0]
    tma = heur.kv_load != "gather"
    assert ("_l2ef" in kernel.metadata.name) == tma and ("L2::cache_hint" in kernel.asm["ptx"]) == tma
