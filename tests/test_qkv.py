"""Fused QKV projection (tritonfp8.qkv): the GEMM epilogue that writes E4M3 q/k/v for the attention kernel.

Exactness: the epilogue quantizes the fp32 GEMM result (after scales and bias) with the library's rule (IEEE
division, saturation, RNE), so it must equal ``gemm(..., out_dtype=float32)`` on the same config followed by
``quantize_qkv_torch`` (which is ``quantize_torch`` per head) bit for bit; and the attention kernel given those
tensors must give exactly the result it gives on the separately quantized ones.
"""

import pytest
import torch
import torch._dynamo.testing
from torch._subclasses.fake_tensor import FakeTensorMode

import tritonfp8
import tritonfp8.ops as ops
from tritonfp8.gemm import GemmConfig, gemm
from tritonfp8.qkv import FP8QKV, qkv_projection, qkv_projection_torch, quantize_qkv_torch

E4 = torch.float8_e4m3fn
# Small tiles keep the interpreter fast; 32-column epilogue pieces (subtile 2) inside 64-wide heads.
SMALL = GemmConfig(32, 64, 32, group_m=2, num_warps=4, num_stages=1, schedule="tmapersistent", epilogue_subtile=2)
# 128-column pieces: with Hkv = 1 and D = 64 one piece holds the last q head, the k head and the v head.
WIDE = GemmConfig(32, 128, 64, group_m=1, num_warps=4, num_stages=1, schedule="tma")


def _operands(lead, hq, hkv, d, k=64, device="cpu", per_head=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = (hq + 2 * hkv) * d
    x = torch.randn(*lead, k, generator=g).to(E4).to(device)
    w = (torch.randn(n, k, generator=g) * 0.5).to(E4).to(device)
    sx = torch.tensor(0.5, device=device)
    sw = (torch.rand(n, 1, generator=g) * 0.5 + 0.25).to(device)
    if per_head:
        qs, ks, vs = ((torch.rand(hkv, generator=g) * 0.02 + 0.002).to(device) for _ in range(3))
        qs[0] = 1e-3  # |result| ~ 1-4 (K = 64): |result| / 1e-3 >> 448, the first q group saturates
    else:
        qs, ks, vs = (torch.tensor(v, device=device) for v in (0.01, 0.02, 0.03))
    return x, w, sx, sw, qs, ks, vs


def _bytes(t):
    return t.view(torch.uint8)


@pytest.mark.parametrize(
    "hq, hkv, per_head, cfg",
    [(4, 2, True, SMALL), (2, 2, False, SMALL), (2, 1, True, WIDE)],
    ids=["gqa4-2-perhead", "mha2-tensor", "gqa2-1-straddle"],
)
def test_fused_equals_gemm_then_quantize_bit_for_bit(device, hq, hkv, per_head, cfg):
    d = 64
    x, w, sx, sw, qs, ks, vs = _operands((1, 83), hq, hkv, d, device=device, per_head=per_head)
    bias = torch.randn(w.shape[0], device=device) if hq == 2 and hkv == 1 else None
    r = qkv_projection(x, w, sx, sw, num_heads=hq, num_kv_heads=hkv, head_dim=d, q_scale=qs, k_scale=ks,
                       v_scale=vs, bias=bias, config=cfg, unquantized_dtype=torch.float32)
    c = gemm(x, w, sx, sw, out_dtype=torch.float32, bias=bias, config=cfg)
    assert torch.equal(r.unquantized, c)
    rq, rk, rv = quantize_qkv_torch(c, hq, hkv, d, qs, ks, vs)
    assert r.q.shape == (1, 83, hq, d) and r.k.shape == r.v.shape == (1, 83, hkv, d)
    assert r.q.dtype == E4 and r.q.is_contiguous() and r.v.is_contiguous()
    for got, ref in ((r.q, rq), (r.k, rk), (r.v, rv)):
        assert torch.equal(_bytes(got), _bytes(ref))
    # Some values saturate (the small per-head scales): the rule clamps them to +-448, none become NaN.
    if per_head:
        assert (r.q.float().abs() == 448).any() and not torch.isnan(r.q.float()).any()
    # Descales: (B, Hkv) per head, () per tensor.
    expect = (1, hkv) if per_head and hkv > 1 else ()  # one KV head: per head is per tensor
    assert r.q_descale.shape == r.k_descale.shape == r.v_descale.shape == expect
    # Against the plain-torch reference (fp32 matmul): same up to the accumulation order, i.e. at most one E4M3
    # step where the fp32 sums differ in the last bits and straddle a rounding boundary.
    ref = qkv_projection_torch(x, w, sx, sw, num_heads=hq, num_kv_heads=hkv, head_dim=d, q_scale=qs, k_scale=ks,
                               v_scale=vs, bias=bias)
    for got, want in ((r.q, ref.q), (r.k, ref.k), (r.v, ref.v)):
        diff = (got.float() - want.float()).abs()
        assert (diff <= want.float().abs() * 2.0**-3 + 2.0**-9).all()


def test_default_config_small_m_replaces_swap_ab(device):
    """M = 8 makes the GEMM pick swap-AB (+ split-K); the fused op takes the normal orientation instead."""
    from tritonfp8._kernels.gemm_configs import heuristic_config

    hq, hkv, d = 4, 2, 64
    assert heuristic_config(8, (hq + 2 * hkv) * d, 64, precise=True).swap_ab  # what the plain GEMM would run
    x, w, sx, sw, qs, ks, vs = _operands((8,), hq, hkv, d, device=device)
    r = qkv_projection(x, w, sx, sw, num_heads=hq, num_kv_heads=hkv, head_dim=d, q_scale=qs, k_scale=ks,
                       v_scale=vs, num_seqs=2, accumulate="precise")
    c = gemm(x, w, sx, sw, out_dtype=torch.float32, accumulate="precise")
    for got, ref in zip((r.q, r.k, r.v), quantize_qkv_torch(c, hq, hkv, d, qs, ks, vs)):
        # precise accumulation: fp32 sums of one K block (K = 64) are exact here, whatever the orientation
        assert torch.equal(_bytes(got), _bytes(ref))
    assert r.q.shape == (8, hq, d) and r.k_descale.shape == (2, hkv)


def test_attention_on_fused_outputs_equals_separately_quantized(device):
    hq, hkv, d = 4, 2, 64
    x, w, sx, sw, qs, ks, vs = _operands((1, 83), hq, hkv, d, device=device)
    qs, ks, vs = (s * 10 for s in (qs, ks, vs))  # keep most values unsaturated: a meaningful attention
    r = qkv_projection(x, w, sx, sw, num_heads=hq, num_kv_heads=hkv, head_dim=d, q_scale=qs, k_scale=ks,
                       v_scale=vs, config=SMALL)
    q, k, v = quantize_qkv_torch(gemm(x, w, sx, sw, out_dtype=torch.float32, config=SMALL), hq, hkv, d, qs, ks, vs)
    ds = dict(q_descale=qs[None], k_descale=ks[None], v_descale=vs[None])
    out = tritonfp8.attention(r.q, r.k, r.v, causal=True, q_descale=r.q_descale, k_descale=r.k_descale,
                              v_descale=r.v_descale)
    ref = tritonfp8.attention(q, k, v, causal=True, **ds)
    assert torch.equal(out, ref)


def test_bad_inputs(device):
    x, w, sx, sw, qs, ks, vs = _operands((1, 16), 4, 2, 64, per_head=True, device=device)
    kw = dict(num_heads=4, num_kv_heads=2, head_dim=64, q_scale=qs, k_scale=ks, v_scale=vs)
    with pytest.raises(ValueError, match="w_qkv must be .* N = .* = 512"):
        qkv_projection(x, w[:448], sx, sw, **kw)
    with pytest.raises(ValueError, match="head_dim must be one of"):
        qkv_projection(x, w, sx, sw, **{**kw, "head_dim": 96})
    with pytest.raises(ValueError, match="num_heads .* multiple of num_kv_heads"):
        qkv_projection(x, w, sx, sw, **{**kw, "num_heads": 3})
    with pytest.raises(ValueError, match=r"k_scale must have shape \(\) or \(1,\) .* \(Hkv,\) = \(2,\)"):
        qkv_projection(x, w, sx, sw, **{**kw, "k_scale": torch.ones(4, device=device)})
    with pytest.raises(TypeError, match="v_scale must be float32"):
        qkv_projection(x, w, sx, sw, **{**kw, "v_scale": vs.half()})
    with pytest.raises(ValueError, match="x must be"):
        qkv_projection(x[None], w, sx, sw, **kw)
    with pytest.raises(ValueError, match="num_seqs is needed"):
        qkv_projection(x[0], w, sx, sw, **kw)
    with pytest.raises(TypeError, match="unquantized_dtype"):
        qkv_projection(x, w, sx, sw, unquantized_dtype=E4, **kw)
    with pytest.raises(ValueError, match="config: the fused QKV epilogue needs"):
        qkv_projection(x, w, sx, sw, config=GemmConfig(64, 16, 64, num_warps=4, schedule="tma", swap_ab=True), **kw)
    with pytest.raises(TypeError, match="scale_a"):  # the GEMM's own checks still apply
        qkv_projection(x, w, sx.half(), sw, **kw)


def test_fake_shapes_and_compile_fullgraph(device):
    hq, hkv, d = 4, 2, 64
    with FakeTensorMode():
        x = torch.empty(2, 5, 64, dtype=E4)
        w = torch.empty(512, 64, dtype=E4)
        s = torch.empty((), dtype=torch.float32)
        q, k, v, unq = torch.ops.tritonfp8.qkv_projection(x, w, s, s, s, s, s, hq, hkv, d, None, "fast",
                                                          torch.bfloat16)
        assert q.shape == (2, 5, 4, 64) and k.shape == v.shape == (2, 5, 2, 64) and q.dtype == E4
        assert unq.shape == (2, 5, 512) and unq.dtype == torch.bfloat16
        with pytest.raises(ValueError, match="w_qkv must be"):
            torch.ops.tritonfp8.qkv_projection(x, w[:256], s, s, s, s, s, hq, hkv, d, None, "fast", None)

    x, w, sx, sw, qs, ks, vs = _operands((1, 40), hq, hkv, d, device=device)

    def f(x, w, sx, sw, qs, ks, vs):
        r = ops.qkv_projection(x, w, sx, sw, num_heads=hq, num_kv_heads=hkv, head_dim=d, q_scale=qs, k_scale=ks,
                               v_scale=vs)
        return r.q, r.k, r.v, r.q_descale

    eager = f(x, w, sx, sw, qs, ks, vs)
    torch._dynamo.reset()
    cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(f, fullgraph=True, backend=cnt)(x, w, sx, sw, qs, ks, vs)
    assert cnt.frame_count == 1
    names = {str(n.target) for gm in cnt.graphs for n in gm.graph.nodes if n.op == "call_function"}
    assert "tritonfp8.qkv_projection" in names
    for e, c in zip(eager, compiled):
        assert torch.equal(_bytes(e) if e.dtype == E4 else e, _bytes(c) if c.dtype == E4 else c)


def test_fp8qkv_module_from_linears_and_calibration(device):
    hidden, hq, hkv, d = 64, 4, 2, 64
    torch.manual_seed(1)
    lin = [torch.nn.Linear(hidden, h * d, bias=True).to(device) for h in (hq, hkv, hkv)]
    m = FP8QKV.from_linears(*lin, num_heads=hq, num_kv_heads=hkv, head_dim=d, recipe="row")
    x = torch.randn(1, 24, hidden, device=device).to(torch.bfloat16)
    m.calibrating = True
    cal = m(x)
    assert cal.q.dtype == torch.bfloat16 and cal.q_descale is None
    m.finish_calibration()
    ref = [l(x.float()) for l in lin]
    amax_k = ref[1].abs().reshape(-1, hkv, d).amax(dim=(0, 2))  # per KV head
    assert torch.allclose(m.k_scale, amax_k / 448, rtol=0.1)
    r = m(x)
    assert r.q.dtype == E4 and r.q.shape == (1, 24, hq, d) and r.k_descale.shape == (1, hkv)
    # Dequantized q/k/v vs the float projections: FP8 x, W and the output rounding (3 roundings, eps = 2^-4).
    for got, s, want in ((r.q, r.q_descale, ref[0]), (r.k, r.k_descale, ref[1]), (r.v, r.v_descale, ref[2])):
        deq = (got.float() * s[:, None, :, None]).reshape(want.shape) if got.shape[2] == hkv else \
            (got.float() * s.repeat_interleave(hq // hkv, 1)[:, None, :, None]).reshape(want.shape)
        err = (deq - want).norm() / want.norm()
        assert err < 3 * 2.0**-4 / 3**0.5, err
    with pytest.raises(ValueError, match="from_linears"):
        FP8QKV.from_linears(lin[0], lin[1], torch.nn.Linear(hidden, d, bias=False), num_heads=hq, num_kv_heads=hkv,
                            head_dim=d)
