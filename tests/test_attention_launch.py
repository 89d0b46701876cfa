"""The attention forward through ``_launch`` and its launch plans (Triton's dispatch skipped on repeat calls,
recorded launches replayed: ``attention._FAST_FWD`` / TRITONFP8_ATTN_FAST_LAUNCH, on by default since session 11).

GPU: outputs bit-equal to Triton's own launch on the first (compiling) and the repeat (cached) call, for dense,
causal + lse, varlen, E4M3-output and bf16-input (quantize kernels) forms, the Triton kernel and the Gluon forward
(hd256's default) alike. CPU: the switch's default and that the interpreter ignores it.
"""

from __future__ import annotations

import importlib
import os

import pytest
import torch

from conftest import requires_gpu
from tritonfp8 import _backend


def test_switch_default_on_and_off_path():
    A = importlib.import_module("tritonfp8.attention")  # the module (the package exports the function)

    assert A._FAST_FWD.on == (os.environ.get("TRITONFP8_ATTN_FAST_LAUNCH", "1") != "0")
    prev = A._FAST_FWD.set(False)
    try:
        calls = []

        class K:
            def __getitem__(self, grid):
                return lambda *a, **kw: calls.append((grid, a, kw))

        A._launch_kernel(K(), (2, 3), 1, x=2)
        assert calls == [((2, 3), (1,), {"x": 2})]
    finally:
        A._FAST_FWD.set(prev)


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("form", ["dense", "causal_lse", "varlen", "e4m3_out", "hd256_triton", "hd256_gluon",
                                  "bf16_in"])
def test_fast_launch_is_bit_equal(form):
    from test_attention import fp8_inputs

    A = importlib.import_module("tritonfp8.attention")

    gen = torch.Generator().manual_seed(3)
    d = 256 if form.startswith("hd256") else 128
    b, sq, sk, hq, hkv = 2, 300, 333, 4, 2
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, True, gen, "cuda")
    kw = dict(q_descale=qd, k_descale=kd, v_descale=vd)
    if form == "causal_lse":
        kw.update(causal=True, return_lse=True)
    if form == "e4m3_out":
        kw.update(out_dtype=torch.float8_e4m3fn, out_scale=torch.tensor(0.01, device="cuda"))
    if form == "hd256_triton":  # the Triton kernel at hd256 (the default there is the Gluon forward)
        kw.update(config=A.default_config(256))
    args = (q8, k8, v8)
    if form == "bf16_in":  # the per-head quantize kernels (amax + quantize, Vᵀ) launched the same way
        args, kw = tuple(x.float().to(torch.bfloat16) for x in (q8, k8, v8)), {}
    if form == "varlen":
        lq, lk = [100, 1, 200], [333, 0, 150]
        tq, tk = torch.randn(sum(lq), hq, d), torch.randn(sum(lk), hkv, d)
        q8v, k8v, v8v = (x.to("cuda").to(torch.float8_e4m3fn) for x in (tq, tk, torch.randn_like(tk)))
        cu = lambda ls: torch.tensor([0] + list(torch.tensor(ls).cumsum(0)), dtype=torch.int32, device="cuda")
        args = (q8v, k8v, v8v)
        kw = dict(cu_seqlens_q=cu(lq), cu_seqlens_k=cu(lk), max_seqlen_q=max(lq), max_seqlen_k=max(lk))
    # A second set of inputs of the same shapes (other values, other addresses): a planned call must read this
    # call's tensors, not the recorded call's.
    args2 = tuple(x.view(torch.uint8).flip(0).view(x.dtype).contiguous() if x.dtype.itemsize == 1 else x.flip(0)
                  .contiguous() for x in args)
    prev = A._FAST_FWD.set(False)
    try:
        ref, ref2 = A.attention(*args, **kw), A.attention(*args2, **kw)
        A._FAST_FWD.set(True)
        A._PLANS.clear()
        first, again, other = A.attention(*args, **kw), A.attention(*args, **kw), A.attention(*args2, **kw)
        planned = len(A._PLANS)
    finally:
        A._FAST_FWD.set(prev)

    def same(x, y):
        xs, ys = (x if isinstance(x, tuple) else (x,)), (y if isinstance(y, tuple) else (y,))
        return all(torch.equal(r.view(torch.uint8) if r.dtype.itemsize == 1 else r,
                               g.view(torch.uint8) if g.dtype.itemsize == 1 else g) for r, g in zip(xs, ys))

    assert same(ref, first) and same(ref, again) and same(ref2, other)
    assert not same(ref, ref2)
    # Dense forms are planned (the repeat calls were replays, bf16 inputs with their quantize launches); varlen
    # calls never are.
    assert planned == (0 if form == "varlen" else 1)


@pytest.mark.skipif(not _backend.interpreting(), reason="CPU tensors run in the Triton interpreter only")
def test_plan_rules_on_cpu():
    """The interpreter never plans (its launches cannot be replayed), results are unchanged with the switch on, a
    softmax scale that is not a Python number is never part of a key, and recording marks interpreter launches
    as not replayable."""
    from test_attention import fp8_inputs

    from tritonfp8 import _launch

    A = importlib.import_module("tritonfp8.attention")
    gen = torch.Generator().manual_seed(5)
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((1, 40, 2, 64), (1, 50, 1, 64), 1, 1, False, gen, "cpu")
    kw = dict(q_descale=qd, k_descale=kd, v_descale=vd, causal=True)
    prev = A._FAST_FWD.set(False)
    try:
        ref = A.attention(q8, k8, v8, **kw)
        A._FAST_FWD.set(True)
        A._PLANS.clear()
        with _launch.recording() as rec:
            got = A.attention(q8, k8, v8, **kw)
        assert A._PLANS == {} and rec and all(r is None for r in rec)
    finally:
        A._FAST_FWD.set(prev)
    assert torch.equal(ref, got)
    base = (q8, k8, v8, False, None, qd, kd, vd, torch.bfloat16, False, None, None)
    assert A._plan_key(*base) is not None
    assert A._plan_key(*base[:4], torch.tensor(0.1), *base[5:]) is None
    assert A._plan_key(*base[:4], 0.1, *base[5:]) != A._plan_key(*base[:4], 0.2, *base[5:])
    assert A._plan_key("q", *base[1:]) is None
