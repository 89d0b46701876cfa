"""The attention forward through ``_launch`` (Triton's dispatch skipped on repeat calls; prepared in session 10,
off by default: ``attention._FAST_FWD`` / TRITONFP8_ATTN_FAST_LAUNCH).

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


def test_switch_default_off_and_interpreter_path():
    A = importlib.import_module("tritonfp8.attention")  # the module (the package exports the function)

    assert A._FAST_FWD.on == (os.environ.get("TRITONFP8_ATTN_FAST_LAUNCH", "0") != "0")
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
    prev = A._FAST_FWD.set(False)
    try:
        ref = A.attention(*args, **kw)
        A._FAST_FWD.set(True)
        first, again = A.attention(*args, **kw), A.attention(*args, **kw)
    finally:
        A._FAST_FWD.set(prev)
    refs = ref if isinstance(ref, tuple) else (ref,)
    for got in (first, again):
        gots = got if isinstance(got, tuple) else (got,)
        for r, g in zip(refs, gots):
            assert torch.equal(r.view(torch.uint8) if r.dtype.itemsize == 1 else r,
                               g.view(torch.uint8) if g.dtype.itemsize == 1 else g)
