"""Custom ops: registration, fake implementations, torch.compile(fullgraph=True) tracing, opcheck.

CPU: the real implementations run in the Triton interpreter (conftest sets TRITON_INTERPRET=1), so compiled
graphs are executed and compared with eager calls. Fake-tensor tests need no implementation at all.
Compile backend on CPU: ``aot_eager`` (Dynamo + AOTAutograd with fake tensors, then eager execution): it exercises
every fake implementation without a C++ toolchain; on the GPU the inductor backend is tested too.

Results must agree exactly between eager and compiled calls: both run the same kernel on the same inputs.
"""

import importlib

import pytest
import torch
import torch._dynamo.testing
from torch._subclasses.fake_tensor import FakeTensorMode

from conftest import requires_gpu

import tritonfp8.ops as ops

E4M3 = torch.float8_e4m3fn


def _need(module: str, name: str):
    """Skip (with the reason) when an op's implementation has not landed in this build."""
    try:
        mod = importlib.import_module(f"tritonfp8.{module}")
    except ModuleNotFoundError:
        pytest.skip(f"tritonfp8.{module} is not in this build yet")
    if not hasattr(mod, name):
        pytest.skip(f"tritonfp8.{module}.{name} is not in this build yet")
    return getattr(mod, name)


def _compile_once(fn, *args, backend="aot_eager", dynamic=None):
    """Compile ``fn`` with fullgraph=True, run it, assert one graph and no graph break; returns the output."""
    torch._dynamo.reset()
    cnt = torch._dynamo.testing.CompileCounterWithBackend(backend)
    out = torch.compile(fn, fullgraph=True, backend=cnt, dynamic=dynamic)(*args)
    assert cnt.frame_count == 1, f"expected one compiled frame, got {cnt.frame_count}"
    return out, cnt


def _graph_ops(cnt) -> set[str]:
    names = set()
    for gm in cnt.graphs:
        for node in gm.graph.nodes:
            if node.op == "call_function":
                names.add(str(node.target).removesuffix(".default"))
    return names


# -- registration and fake implementations (no kernel needed) ------------------------------------------------------


def test_every_op_is_registered_with_a_fake_impl():
    for name in ops.OPS:
        op = getattr(torch.ops.tritonfp8, name).default
        assert op._schema.name == f"tritonfp8::{name}"
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "Meta") or torch.library.get_kernel(
            op, "Meta"
        ) is not None


@pytest.mark.parametrize(
    "shape, gran, expected",
    [
        ((5, 300), "tensor", ()),
        ((5, 300), "row", (5, 1)),
        ((2, 3, 300), "row", (6, 1)),
        ((5, 300), "col", (1, 300)),
        ((5, 300), (1, 128), (5, 3)),
        ((130, 300), (128, 128), (2, 3)),
        ((0, 256), (1, 128), (0, 2)),
    ],
)
def test_fake_quantize_shapes(shape, gran, expected):
    with FakeTensorMode():
        x = torch.empty(shape, dtype=torch.bfloat16)
        xq, s = torch.ops.tritonfp8.quantize(x, ops.granularity_to_str(gran), E4M3, None)
    assert xq.shape == x.shape and xq.dtype == E4M3
    assert tuple(s.shape) == expected and s.dtype == torch.float32


def test_scale_shape_rule_matches_quantize_module():
    scale_shape = _need("quantize", "scale_shape")
    for shape in [(1, 16), (7, 3884), (33, 496), (2, 5, 256), (0, 128), (129, 130)]:
        for gran in ["tensor", "row", "col", (1, 128), (128, 128), (1, 32), (64, 64)]:
            assert ops.quantize_scale_shape(shape, gran) == tuple(scale_shape(shape, gran)), (shape, gran)


def test_fake_gemm_attention_decode_shapes():
    with FakeTensorMode():
        a = torch.empty(3, 7, 64, dtype=E4M3)
        b = torch.empty(48, 64, dtype=E4M3)
        s = torch.empty((), dtype=torch.float32)
        c = torch.ops.tritonfp8.gemm(a, b, s, s, torch.float16, None, None, "fast")
        assert c.shape == (3, 7, 48) and c.dtype == torch.float16
        with pytest.raises(ValueError, match="b: expected"):
            torch.ops.tritonfp8.gemm(a, torch.empty(48, 32, dtype=E4M3), s, s, torch.bfloat16, None, None, "fast")

        q = torch.empty(2, 5, 4, 64, dtype=torch.bfloat16)
        kv = torch.empty(2, 9, 2, 64, dtype=torch.bfloat16)
        o, lse = torch.ops.tritonfp8.attention(q, kv, kv, True, None, None, None, None, None, None, None, None,
                                               torch.bfloat16, True, None)
        assert o.shape == (2, 5, 4, 64) and lse.shape == (2, 4, 5) and lse.dtype == torch.float32
        qv = torch.empty(12, 4, 64, dtype=torch.bfloat16)
        cu = torch.empty(3, dtype=torch.int32)
        o, lse = torch.ops.tritonfp8.attention(qv, qv, qv, False, 0.1, None, None, None, cu, cu, 8, 8,
                                               torch.float16, True, None)
        assert o.shape == (12, 4, 64) and o.dtype == torch.float16 and lse.shape == (4, 12)

        cache = torch.empty(10, 16, 2, 64, dtype=E4M3)
        bt = torch.empty(2, 5, dtype=torch.int32)
        sl = torch.empty(2, dtype=torch.int32)
        q1 = torch.empty(2, 1, 4, 64, dtype=torch.bfloat16)
        o = torch.ops.tritonfp8.decode_attention(q1, cache, cache, bt, sl, s, s, None, None, torch.bfloat16, None)
        assert o.shape == (2, 1, 4, 64)


def test_granularity_strings_round_trip_and_reject():
    for g in ["tensor", "row", "col", (1, 128), (128, 128), [1, 64]]:
        assert ops.granularity_from_str(ops.granularity_to_str(g)) == (tuple(g) if isinstance(g, list) else g)
    for bad in ["rows", (1,), (0, 128), "1x", (1.5, 128), None]:
        with pytest.raises(ValueError, match="granularity"):
            ops.granularity_to_str(bad)


def test_missing_implementation_names_module(monkeypatch):
    real = importlib.import_module

    def fake_import(name, *a, **k):
        if name == "tritonfp8.nosuch":
            raise ModuleNotFoundError(name=name)
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake_import)
    with pytest.raises(NotImplementedError, match="tritonfp8.nosuch"):
        ops._impl("nosuch", "f")


# -- real implementations: eager vs dispatcher vs compiled ---------------------------------------------------------


def test_quantize_op_compiles_fullgraph_and_matches_eager(device):
    _need("quantize", "quantize")
    x = torch.randn(4, 7, 256, device=device, dtype=torch.bfloat16)

    def f(x):
        xq, s = ops.quantize(x, (1, 128))
        xr, sr = ops.quantize(x, "row")
        return xq, s, xr, sr, ops.dequantize(xq.reshape(28, 256), s, torch.float32)

    eager = f(x)
    compiled, cnt = _compile_once(f, x)
    assert {"tritonfp8.quantize", "tritonfp8.dequantize"} <= _graph_ops(cnt)
    for e, c in zip(eager, compiled):
        assert e.dtype == c.dtype and e.shape == c.shape
        assert torch.equal(e.view(torch.uint8) if e.dtype == E4M3 else e, c.view(torch.uint8) if c.dtype == E4M3 else c)


def test_quantize_static_scale_output_does_not_alias(device):
    _need("quantize", "quantize")
    x = torch.randn(8, 64, device=device)
    scale = torch.tensor(0.01, device=device)
    xq, s = torch.ops.tritonfp8.quantize(x, "tensor", E4M3, scale)
    assert s.data_ptr() != scale.data_ptr() and float(s) == pytest.approx(0.01)


def test_opcheck_quantize(device):
    _need("quantize", "quantize")
    x = torch.randn(5, 256, device=device, dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.tritonfp8.quantize.default, (x, "1x128", E4M3, None),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
    # test_schema is left out for ops with FP8 inputs: its SchemaCheckMode compares inputs with an op that has no
    # FP8 CPU kernel ("mul_cpu_reduced_float" not implemented for Float8_e4m3fn) — a torch limitation.
    torch.library.opcheck(torch.ops.tritonfp8.dequantize.default,
                          (x.to(E4M3), torch.ones(5, 2, device=device), torch.bfloat16),
                          test_utils=("test_faketensor", "test_aot_dispatch_dynamic"))


def _fp8_operands(device, m=8, n=32, k=64):
    a = (torch.randn(m, k, device=device) * 0.5).to(E4M3)
    b = (torch.randn(n, k, device=device) * 0.5).to(E4M3)
    sa = torch.tensor(0.5, device=device)
    sb = torch.full((n, 1), 0.25, device=device)
    return a, b, sa, sb


def test_gemm_op_compiles_fullgraph_and_matches_eager(device):
    _need("gemm", "gemm")
    a, b, sa, sb = _fp8_operands(device)
    bias = torch.randn(32, device=device, dtype=torch.bfloat16)

    def f(a, b, sa, sb, bias):
        return ops.gemm(a, b, sa, sb, out_dtype=torch.bfloat16, bias=bias, activation="relu")

    eager = f(a, b, sa, sb, bias)
    compiled, cnt = _compile_once(f, a, b, sa, sb, bias)
    assert "tritonfp8.gemm" in _graph_ops(cnt)
    assert torch.equal(eager, compiled)


def test_gemm_out_op_mutates_out(device):
    _need("gemm", "gemm")
    a, b, sa, sb = _fp8_operands(device)
    ref = ops.gemm(a, b, sa, sb, out_dtype=torch.float32)

    def f(a, b, sa, sb, out):
        return ops.gemm(a, b, sa, sb, out_dtype=torch.float32, out=out)

    out = torch.full((8, 32), float("nan"), device=device)
    res, cnt = _compile_once(f, a, b, sa, sb, out)
    assert "tritonfp8.gemm_out" in _graph_ops(cnt)
    assert torch.equal(out, ref) and torch.equal(res, ref)


def test_opcheck_gemm(device):
    _need("gemm", "gemm")
    a, b, sa, sb = _fp8_operands(device)
    torch.library.opcheck(torch.ops.tritonfp8.gemm.default,
                          (a, b, sa, sb, torch.bfloat16, None, None, "fast"),
                          test_utils=("test_faketensor", "test_aot_dispatch_dynamic"))


def test_attention_op_compiles_fullgraph_and_matches_eager(device):
    _need("attention", "attention")
    q = torch.randn(1, 16, 2, 64, device=device, dtype=torch.bfloat16)
    k = torch.randn(1, 16, 1, 64, device=device, dtype=torch.bfloat16)
    v = torch.randn(1, 16, 1, 64, device=device, dtype=torch.bfloat16)

    def f(q, k, v):
        return ops.attention(q, k, v, causal=True, return_lse=True)

    eager = f(q, k, v)
    compiled, cnt = _compile_once(f, q, k, v)
    assert "tritonfp8.attention" in _graph_ops(cnt)
    assert torch.equal(eager[0], compiled[0]) and torch.equal(eager[1], compiled[1])
    assert compiled[1].shape == (1, 2, 16)


def test_write_kv_cache_and_decode_ops_compile_fullgraph(device):
    _need("decode", "decode_attention")
    hkv, d, page = 1, 64, 16
    k = torch.randn(3, hkv, d, device=device, dtype=torch.bfloat16)
    v = torch.randn(3, hkv, d, device=device, dtype=torch.bfloat16)
    ks = torch.tensor(0.05, device=device)
    slots = torch.tensor([0, 1, 2], device=device, dtype=torch.int64)
    bt = torch.tensor([[0]], device=device, dtype=torch.int32)
    sl = torch.tensor([3], device=device, dtype=torch.int32)
    q = torch.randn(1, 1, 2, d, device=device, dtype=torch.bfloat16)

    def f(k, v, kc, vc, q):
        ops.write_kv_cache(k, v, kc, vc, slots, ks, ks)
        return ops.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=ks, max_seqlen=page)

    kc0 = torch.zeros(2, page, hkv, d, device=device, dtype=E4M3)
    vc0 = torch.zeros_like(kc0)
    kc1, vc1 = kc0.clone(), vc0.clone()
    eager = f(k, v, kc0, vc0, q)
    compiled, cnt = _compile_once(f, k, v, kc1, vc1, q)
    assert {"tritonfp8.write_kv_cache", "tritonfp8.decode_attention"} <= _graph_ops(cnt)
    assert torch.equal(kc0.view(torch.uint8), kc1.view(torch.uint8))  # the compiled graph wrote the cache
    assert torch.equal(eager, compiled)


def test_dispatcher_path_equals_direct_path(device):
    _need("quantize", "quantize")
    x = torch.randn(6, 128, device=device)
    direct = ops.quantize(x, "row")
    via_op = torch.ops.tritonfp8.quantize(x, "row", E4M3, None)
    assert torch.equal(direct[0].view(torch.uint8), via_op[0].view(torch.uint8)) and torch.equal(direct[1], via_op[1])


def test_dynamic_shapes_trace_once(device):
    """dynamic=True: one graph serves several M (the fake impls compute with SymInts)."""
    _need("quantize", "quantize")
    torch._dynamo.reset()
    cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    f = torch.compile(lambda x: ops.quantize(x, (1, 128))[1], fullgraph=True, backend=cnt, dynamic=True)
    for m in (3, 5, 9):
        assert f(torch.randn(m, 256, device=device)).shape == (m, 2)
    assert cnt.frame_count == 1


@requires_gpu
def test_inductor_fullgraph_and_cuda_graph_gpu():
    """GPU: inductor compiles quantize+gemm as one graph and "reduce-overhead" (CUDA graphs) replays them."""
    _need("gemm", "gemm")
    w = (torch.randn(4096, 4096, device="cuda") * 0.05).to(E4M3)
    sw = torch.full((4096, 1), 0.02, device="cuda")

    def f(x):
        xq, sx = ops.quantize(x, "row")
        return ops.gemm(xq, w, sx, sw, out_dtype=torch.bfloat16)

    x = torch.randn(256, 4096, device="cuda", dtype=torch.bfloat16)
    ref = f(x)
    out, _ = _compile_once(f, x, backend="inductor")
    assert torch.equal(out, ref)
    torch._dynamo.reset()
    g = torch.compile(f, fullgraph=True, mode="reduce-overhead")
    for _ in range(3):
        out = g(x)
    assert torch.equal(out, ref)


def test_public_names_are_the_traceable_wrappers():
    import tritonfp8

    for name in ("quantize", "dequantize", "gemm", "attention", "write_kv_cache", "decode_attention"):
        assert getattr(tritonfp8, name) is getattr(ops, name)


def test_eager_only_options_pass_through_and_are_rejected_when_tracing(device):
    _need("decode", "write_kv_cache")
    k = torch.randn(2, 1, 64, device=device, dtype=torch.bfloat16)
    cache = torch.zeros(1, 16, 1, 64, device=device, dtype=E4M3)
    cache2 = torch.zeros_like(cache)
    s = torch.tensor(0.05, device=device)
    bad_slots = torch.tensor([0, 99], device=device)
    with pytest.raises(ValueError, match="slot"):
        ops.write_kv_cache(k, k, cache, cache2, bad_slots, s, s, check=True)  # eager: check=True reaches the impl
    with FakeTensorMode(allow_non_fake_inputs=True):
        fk = torch.empty(2, 1, 64, dtype=torch.bfloat16)
        with pytest.raises(TypeError, match="check: eager-only"):
            ops.write_kv_cache(fk, fk, torch.empty(1, 16, 1, 64, dtype=E4M3), torch.empty(1, 16, 1, 64, dtype=E4M3),
                               torch.empty(2, dtype=torch.int64), torch.empty(()), torch.empty(()), check=True)


def test_eager_bad_input_errors_come_from_the_implementation():
    import tritonfp8

    _need("gemm", "gemm")
    with pytest.raises(TypeError, match="a: expected"):
        tritonfp8.gemm("a", torch.zeros(16, 16, dtype=E4M3), torch.ones(()), torch.ones(()))
    with pytest.raises(ValueError, match="granularity"):
        tritonfp8.quantize(torch.ones(4, 16), "rows")
