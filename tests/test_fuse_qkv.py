"""tritonfp8.fuse_qkv on a tiny transformers Llama (hidden 128, 2 layers, 4 query / 2 KV heads of dim 64).

Tolerances come from the E4M3 format: eps = 2^-4 (unit roundoff) and the calibration threshold 2·eps, as in
:func:`tritonfp8.calibrate`: the fused model must stay within 2·eps (relative Frobenius error) of BF16 and of the
unfused FP8 model. The FP8 q/k handed to the attention kernel must equal RoPE + static quantization of the fused
GEMM's BF16 output bit for bit, and v the epilogue's E4M3 v.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

import tritonfp8  # noqa: E402
import tritonfp8.integrations.transformers as tfp8  # noqa: E402
from tritonfp8 import ops  # noqa: E402
from tritonfp8._formats import E4M3  # noqa: E402
from tritonfp8.integrations.fused_qkv import fused_qkv_layers, rope, rope_quantize  # noqa: E402
from tritonfp8.qkv import FP8QKV  # noqa: E402

TOL = 2 * E4M3.eps
E4 = torch.float8_e4m3fn


def _config(**kw):
    base = dict(vocab_size=128, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=64, max_position_embeddings=64)
    base.update(kw)
    return transformers.LlamaConfig(**base)


def _model(device, seed=0, **kw):
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(_config(**kw), attn_implementation="sdpa",
                                                         dtype=torch.bfloat16).to(device).eval()


def _rel(a, b) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm())


def _ids(device, shape=(2, 16), seed=1):
    return torch.randint(0, 128, shape, generator=torch.Generator().manual_seed(seed)).to(device)


@pytest.fixture(scope="module")
def trio():
    """(BF16 SDPA model, unfused FP8 model, fused FP8 model calibrated on one batch), same weights, CPU/device."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ref = _model(device)
    unfused = _model(device)
    unfused.load_state_dict(ref.state_dict())
    tfp8.convert(unfused, recipe="row")
    fused = _model(device)
    fused.load_state_dict(ref.state_dict())
    tritonfp8.convert_model(fused, recipe="row")
    tritonfp8.fuse_qkv(fused, calibration_batches=[_ids(device, seed=7)])
    return ref, unfused, fused


@pytest.fixture
def attention_calls(monkeypatch):
    calls = []
    real = ops.attention

    def spy(q, k, v, **kw):
        calls.append((q, k, v, kw))
        return real(q, k, v, **kw)

    monkeypatch.setattr(ops, "attention", spy)
    return calls


def test_structure_and_state_dict_keys(trio):
    ref, unfused, fused = trio
    attn = fused.model.layers[0].self_attn
    assert isinstance(attn, type(ref.model.layers[0].self_attn))  # a subclass: isinstance checks keep holding
    assert isinstance(attn.qkv_proj, FP8QKV) and not attn.qkv_proj.calibrating
    assert isinstance(attn.o_proj, tritonfp8.FP8Linear) and not hasattr(attn, "q_proj")
    assert [n for n, _ in fused_qkv_layers(fused)] == ["model.layers.0.self_attn", "model.layers.1.self_attn"]
    assert fused.config._attn_implementation == tfp8.NAME
    keys = {k for k in fused.state_dict() if k.startswith("model.layers.0.self_attn.")}
    assert keys == {f"model.layers.0.self_attn.{k}" for k in (
        "qkv_proj.weight", "qkv_proj.weight_scale", "qkv_proj.q_scale", "qkv_proj.k_scale", "qkv_proj.v_scale",
        "o_proj.weight", "o_proj.weight_scale")}
    assert fused.state_dict()["model.layers.0.self_attn.qkv_proj.weight"].dtype == E4


def test_fused_model_within_format_tolerance(trio, attention_calls):
    ref, unfused, fused = trio
    ids = _ids(next(fused.parameters()).device)
    with torch.no_grad():
        a = fused(ids, output_hidden_states=True)
        b = ref(ids, output_hidden_states=True)
        c = unfused(ids, output_hidden_states=True)
    # every prefill attention call got E4M3 q/k/v with per-(batch, KV head) descales
    fused_calls = attention_calls[:2]
    assert all(q.dtype == k.dtype == v.dtype == E4 and kw["q_descale"].shape == (2, 2) for q, k, v, kw in fused_calls)
    err_bf16 = _rel(a.hidden_states[-1], b.hidden_states[-1])
    err_unfused = _rel(a.hidden_states[-1], c.hidden_states[-1])
    assert err_bf16 <= TOL, err_bf16
    assert err_unfused <= TOL, err_unfused
    assert _rel(a.logits, b.logits) <= TOL


def test_fp8_qkv_equal_rope_then_static_quantization(trio, attention_calls):
    ref, unfused, fused = trio
    attn = fused.model.layers[0].self_attn
    seen = {}
    hook = attn.register_forward_pre_hook(lambda m, a, kw: seen.update(kw), with_kwargs=True)
    ids = _ids(next(fused.parameters()).device, (1, 9), seed=3)
    try:
        with torch.no_grad():
            fused(ids)
    finally:
        hook.remove()
    q8, k8, v8, kw = attention_calls[0]
    qkv = attn.qkv_proj
    with torch.no_grad():
        r = qkv(seen["hidden_states"], unquantized_dtype=torch.bfloat16)
    cos, sin = seen["position_embeddings"]
    qc, kc, _ = torch.split(r.unquantized, [4 * 64, 2 * 64, 2 * 64], dim=-1)
    assert torch.equal(q8.view(torch.uint8), rope_quantize(qc.view(1, 9, 4, 64), cos, sin, qkv.q_scale).view(torch.uint8))
    assert torch.equal(k8.view(torch.uint8), rope_quantize(kc.view(1, 9, 2, 64), cos, sin, qkv.k_scale).view(torch.uint8))
    assert torch.equal(v8.view(torch.uint8), r.v.view(torch.uint8))
    assert torch.equal(kw["k_descale"], qkv.k_scale.reshape(1, 2))


def test_calibrated_scales_describe_rotated_qk(device):
    model = _model(device, seed=2)
    ids = _ids(device, (1, 12), seed=5)
    tritonfp8.fuse_qkv(model)
    attn = model.model.layers[1].self_attn
    assert attn.qkv_proj.calibrating
    seen = {}
    hook = attn.register_forward_pre_hook(lambda m, a, kw: seen.update(kw), with_kwargs=True)
    try:
        tritonfp8.calibrate_qkv(model, [ids], margin=1.0)
    finally:
        hook.remove()
    qkv = attn.qkv_proj
    assert not qkv.calibrating
    qkv.calibrating = True  # recompute the fp32 GEMM without touching the scales (observe nothing)
    with torch.no_grad():
        c = qkv(seen["hidden_states"], observe="", unquantized_dtype=torch.float32).unquantized
    qkv.calibrating = False
    cos, sin = seen["position_embeddings"]
    qc, kc, vc = torch.split(c, [4 * 64, 2 * 64, 2 * 64], dim=-1)
    for t, scale in ((rope(qc.view(1, 12, 4, 64), cos, sin), qkv.q_scale),
                     (rope(kc.view(1, 12, 2, 64), cos, sin), qkv.k_scale), (vc.view(1, 12, 2, 64), qkv.v_scale)):
        amax = t.reshape(12, 2, -1).abs().amax(dim=(0, 2))
        torch.testing.assert_close(scale, amax / E4M3.max, rtol=0, atol=0)


def test_padding_and_generation(trio, attention_calls):
    ref, unfused, fused = trio
    device = next(fused.parameters()).device
    ids = _ids(device, (2, 12), seed=4)
    mask = torch.ones_like(ids)
    mask[1, :4] = 0
    with torch.no_grad():
        a = fused(ids, attention_mask=mask).logits
        alone = fused(ids[1:, 4:]).logits
        b = ref(ids, attention_mask=mask).logits
    q, k, v, kw = attention_calls[0]
    assert q.shape == (20, 4, 64) and q.dtype == E4 and "cu_seqlens_q" in kw  # varlen, FP8 inputs
    assert _rel(a[1, 4:], alone[0]) <= TOL and _rel(a[1, 4:], b[1, 4:]) <= TOL
    attention_calls.clear()
    with torch.no_grad():
        out = fused.generate(ids[:1, :8], max_new_tokens=2, do_sample=False,
                             attention_mask=torch.ones_like(ids[:1, :8]))
    assert out.shape == (1, 10)
    # prefill: the fused FP8 path; the decode step: the existing path on BF16 q and transformers' BF16 cache
    assert [(tuple(c[0].shape), c[0].dtype) for c in attention_calls] == (
        [((1, 8, 4, 64), E4)] * 2 + [((1, 1, 4, 64), torch.bfloat16)] * 2)


def test_state_dict_round_trip_ends_calibration(trio):
    ref, unfused, fused = trio
    device = next(fused.parameters()).device
    other = _model(device, seed=9)
    tritonfp8.convert_model(other, recipe="row")
    tritonfp8.fuse_qkv(other)
    assert all(m.qkv_proj.calibrating for _, m in fused_qkv_layers(other))
    other.load_state_dict(fused.state_dict())
    assert not any(m.qkv_proj.calibrating for _, m in fused_qkv_layers(other))
    ids = _ids(device, (1, 8))
    with torch.no_grad():
        assert torch.equal(other(ids).logits, fused(ids).logits)
    qkv = other.model.layers[0].self_attn.qkv_proj.to(torch.bfloat16)  # keeps the E4M3 weight and fp32 scales
    assert qkv.weight.dtype == E4 and qkv.q_scale.dtype == torch.float32 and qkv.weight_scale.dtype == torch.float32


def test_bad_input_raises_clearly(device):
    with pytest.raises(TypeError, match="model: no Llama-style attention"):
        tritonfp8.fuse_qkv(torch.nn.Sequential(torch.nn.Linear(128, 128)))
    with pytest.raises(TypeError, match="model: expected a torch.nn.Module"):
        tritonfp8.fuse_qkv("llama")
    model = transformers.AutoModelForCausalLM.from_config(
        _config(head_dim=32, num_attention_heads=4, num_key_value_heads=2), dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"head_dim: model\.layers\.0\.self_attn has head_dim 32"):
        tritonfp8.fuse_qkv(model)
    assert hasattr(model.model.layers[0].self_attn, "q_proj")  # validated before anything changed
    model = _model(device)
    tritonfp8.fuse_qkv(model)
    with pytest.raises(ValueError, match="fused already"):
        tritonfp8.fuse_qkv(model)
    with pytest.raises(ValueError, match="batches: no calibration batch"):
        tritonfp8.calibrate_qkv(model, [])
    with pytest.raises(ValueError, match="call tritonfp8.fuse_qkv"):
        tritonfp8.calibrate_qkv(_model(device), [_ids(device)])


def test_fused_llama_compiles_fullgraph(trio):
    import torch._dynamo.testing

    ref, unfused, fused = trio
    ids = _ids(next(fused.parameters()).device, (1, 16))
    with torch.no_grad():
        eager = fused(ids).logits
        torch._dynamo.reset()
        cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(fused, fullgraph=True, backend=cnt)(ids).logits
    assert cnt.frame_count == 1
    assert torch.equal(eager, compiled)
