"""The low-overhead launch path (tritonfp8/_launch.py): its specialization key and argument list on CPU, and on the
GPU that cached launches give the same results as Triton's own dispatch."""

import importlib

import pytest
import torch

from tests.conftest import requires_gpu
from tritonfp8 import _launch as L


def test_arg_spec_separates_what_triton_specializes_on():
    s = L.arg_spec
    assert s(1) != s(2) and s(16) != s(32 + 1) and s(16) == s(32)  # == 1, divisibility by 16
    assert s(2**31) != s(16)  # 64-bit integers compile differently
    assert s(None) is None and s(1.0) == s(2.5) and s(True) != s(1)
    x = torch.zeros(64, dtype=torch.float32)
    assert s(x) == s(torch.zeros(8, dtype=torch.float32))
    assert s(x) != s(x.to(torch.bfloat16))
    assert s(x[1:]) != s(x)  # 4-byte offset: not 16-byte aligned
    from triton.tools.tensor_descriptor import TensorDescriptor

    a = torch.zeros(64, 256, dtype=torch.uint8)
    d1 = TensorDescriptor.from_tensor(a, [64, 128])
    assert s(d1) == s(TensorDescriptor.from_tensor(torch.zeros(128, 512, dtype=torch.uint8), [64, 128]))
    assert s(d1) != s(TensorDescriptor.from_tensor(a, [32, 128]))  # block shape
    assert s(d1) != s(TensorDescriptor.from_tensor(torch.zeros(64, 512, dtype=torch.uint8)[:, :248], [64, 128]))
    with pytest.raises(TypeError):
        s(object())


def test_tail_values_follow_the_signature():
    class P:
        def __init__(self, name, default=None, has_default=False):
            self.name, self.default, self.has_default = name, default, has_default

    class Fn:
        __name__ = "k"
        params = [P("x"), P("n"), P("B"), P("Q", 7, True)]

    assert L._tail_values(Fn, 2, {"B": 4, "num_warps": 8}) == (4, 7)
    with pytest.raises(TypeError, match="'B'"):
        L._tail_values(Fn, 2, {})


def test_replay_takes_this_calls_runtime_keyword_arguments(monkeypatch):
    """A runtime argument passed by keyword (the GEMM's optional second descriptor ``y2``) is keyed by its
    specialization facts, and a replay passes this call's value, not the first call's (session 17: such a call
    had fallen back to Triton's dispatch on every call, the descriptor being unhashable)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    class P:
        def __init__(self, name, default=None, has_default=False):
            self.name, self.default, self.has_default = name, default, has_default

    class Kernel:  # a compiled kernel stand-in: no ``result`` attribute
        pass

    compiled = Kernel()
    first_calls, replays = [], []

    class Fn:
        __name__ = "k"
        params = [P("x"), P("n"), P("B"), P("y2", None, True), P("S2", 0, True)]

        def __getitem__(self, grid):
            return lambda *a, **k: first_calls.append((a, k)) or compiled

    monkeypatch.setattr(L._backend, "interpreting", lambda: False)
    monkeypatch.setattr(L.torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(L, "run_compiled", lambda kernel, grid3, vals: replays.append((kernel, grid3, vals)))
    fn = Fn()
    d1 = TensorDescriptor.from_tensor(torch.zeros(64, 256, dtype=torch.uint8), [16, 128])
    d2 = TensorDescriptor.from_tensor(torch.zeros(128, 256, dtype=torch.uint8), [16, 128])
    assert L.kwarg_spec(d1) == L.kwarg_spec(d2) == ("rt", L.arg_spec(d1)) and L.kwarg_spec(16) == 16
    assert L.runtime_kwargs(fn, 2, {"B": 4, "y2": d1, "S2": 16}) == ((1, "y2"),)
    L.cache_clear()
    prev = L.set_enabled(True)
    try:
        L.launch(fn, (3,), 3, 2, B=4, y2=d1, S2=16)
        assert len(first_calls) == 1 and L.cache_size() == 1
        L.launch(fn, (3,), 5, 2, B=4, y2=d2, S2=16)
        L.launch(fn, (3,), 5, 2, B=4, y2=d2, S2=32)  # another constexpr value: a new entry
    finally:
        L.set_enabled(prev)
        L.cache_clear()
    assert len(first_calls) == 2 and len(replays) == 1
    kernel, grid3, vals = replays[0]
    assert kernel is compiled and grid3 == (3, 1, 1) and vals[:3] == (5, 2, 4) and vals[3] is d2 and vals[4] == 16


def test_interpreter_or_disabled_takes_tritons_path(monkeypatch):
    calls = []

    class Fn:
        def __getitem__(self, grid):
            return lambda *a, **k: calls.append((grid, a, k))

    L.cache_clear()
    prev = L.set_enabled(False)
    try:
        L.launch(Fn(), (3,), 1, 2, B=4)
    finally:
        L.set_enabled(prev)
    assert calls == [((3,), (1, 2), {"B": 4})]
    assert L.cache_size() == 0  # nothing recorded: the call went to Triton's own dispatch


_SPLITK = dict(block_m=64, block_n=16, block_k=128, group_m=1, num_warps=4, num_stages=4, schedule="tma",
               swap_ab=True, split_k=2)
_N80 = dict(block_m=128, block_n=64, block_k=128, group_m=8, num_warps=4, num_stages=4, schedule="tma", block_n2=16)


@requires_gpu
@pytest.mark.parametrize("shape,opts", [
    ((16, 8192, 4096), {}),
    ((200, 1024, 512), {"bias": True, "activation": "gelu"}),
    ((1, 256, 128), {}),
    ((16, 1024, 1024), {"config": _SPLITK, "bias": True}),  # swap-AB + split-K: two kernels per call
    ((300, 512, 384), {"accumulate": "precise"}),
    ((256, 256, 256), {"block": True}),
    ((128, 1280, 512), {"config": _N80}),  # two column pieces: the replay rebuilds both descriptors of b
    ((100, 1280, 512), {"config": _N80, "accumulate": "precise", "bias": True}),
])
def test_cached_launches_match_tritons_dispatch_gpu(shape, opts):
    """The launch-plan, template and dispatch caches (second and later calls) give exactly what Triton's own
    dispatch gives, also with new buffers of the same specialization."""
    from tritonfp8._kernels import gemm as K_
    from tritonfp8._kernels.gemm_configs import GemmConfig

    G = importlib.import_module("tritonfp8.gemm")
    M, N, K = shape
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
    if opts.get("block"):
        sa = torch.rand(M, K // 128, device="cuda") + 0.5
        sb = torch.rand(-(-N // 128), K // 128, device="cuda") + 0.5
    else:
        sa = torch.rand(M, 1, device="cuda") + 0.5
        sb = torch.rand(1, N, device="cuda") + 0.5
    kw = dict(accumulate=opts.get("accumulate", "fast"), activation=opts.get("activation"),
              bias=torch.randn(N, device="cuda", dtype=torch.bfloat16) if opts.get("bias") else None,
              config=GemmConfig(**opts["config"]) if "config" in opts else None)
    prev = L.set_enabled(False)
    try:
        slow = G.gemm(a, b, sa, sb, **kw)
    finally:
        L.set_enabled(prev)
    L.cache_clear()
    K_._TEMPLATES.clear()
    G._PLANS.clear()
    first = G.gemm(a, b, sa, sb, **kw)  # fills the caches
    n, nt = L.cache_size(), len(K_._TEMPLATES)
    # Launch templates belong to the Triton kernel; the Gluon kernel (the block-scaled default on Hopper since
    # session 7: this case on the H200, session 13) launches through the launch cache only.
    glws = any(p.config.schedule == "glws" for p in G._PLANS.values())
    assert n >= 1 and nt == (0 if glws else 1), (n, nt, glws)
    b2 = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)  # new buffers, same specialization
    again = G.gemm(a, b, sa, sb, **kw)
    other = G.gemm(a, b2, sa, sb, **kw)
    assert L.cache_size() == n and len(K_._TEMPLATES) == nt  # served from the caches
    assert torch.equal(first, slow) and torch.equal(again, slow)
    L.set_enabled(False)
    try:
        assert torch.equal(other, G.gemm(a, b2, sa, sb, **kw))
    finally:
        L.set_enabled(prev)
