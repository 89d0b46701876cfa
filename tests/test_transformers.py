"""transformers integration: attn_implementation="tritonfp8", convert_model on a tiny Llama, generation, compile,
and the attention calibration against attention_torch.

The tiny Llama (2 layers, hidden 128, 2 query heads / 1 KV head of dim 64, vocabulary 128) is built from a
``LlamaConfig`` with random weights: no download. Agreement with the BF16 model is measured as the cosine similarity
of final hidden states and logits; ``MIN_COSINE = 0.99`` is the issue's acceptance bar for every recipe.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from conftest import requires_gpu  # noqa: E402

import tritonfp8  # noqa: E402
import tritonfp8.integrations.transformers as tfp8  # noqa: E402
from tritonfp8 import guard, ops  # noqa: E402
from tritonfp8.attention import attention_torch  # noqa: E402
from tritonfp8.nn import FP8Linear  # noqa: E402

MIN_COSINE = 0.99


def _config(**kw):
    base = dict(vocab_size=128, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=1, head_dim=64, max_position_embeddings=64)
    base.update(kw)
    return transformers.LlamaConfig(**base)


def _cos(a, b) -> float:
    a, b = a.double().flatten(), b.double().flatten()
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return float("-inf")
    return float(torch.nn.functional.cosine_similarity(a, b, dim=0))


@pytest.fixture(autouse=True)
def _clean():
    guard.reset_stats()
    yield
    guard.reset_stats()


@pytest.fixture
def models(device):
    """(BF16 SDPA reference, the same weights with attn_implementation="tritonfp8")."""
    # One config object each: from_config records the attention implementation in the config it is given.
    ref = transformers.AutoModelForCausalLM.from_config(_config(), attn_implementation="sdpa", dtype=torch.bfloat16)
    fp8 = transformers.AutoModelForCausalLM.from_config(_config(), attn_implementation="tritonfp8",
                                                        dtype=torch.bfloat16)
    assert ref.config._attn_implementation == "sdpa"
    fp8.load_state_dict(ref.state_dict())
    return ref.to(device).eval(), fp8.to(device).eval()


@pytest.fixture
def attention_calls(monkeypatch):
    """Record the q shape of every FP8 attention call."""
    calls = []
    real = ops.attention

    def spy(q, k, v, **kw):
        calls.append(tuple(q.shape))
        return real(q, k, v, **kw)

    monkeypatch.setattr(ops, "attention", spy)
    return calls


def test_registered_with_attention_interface():
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    assert AttentionInterface._global_mapping[tfp8.NAME] is tfp8.attention_forward
    assert tfp8.NAME in AttentionMaskInterface._global_mapping
    tfp8.register()  # idempotent


def test_fp8_attention_prefill_matches_sdpa(models, device, attention_calls):
    ref, fp8 = models
    assert fp8.config._attn_implementation == "tritonfp8"
    ids = torch.randint(0, 128, (2, 16), device=device)
    with torch.no_grad():
        a = fp8(ids, output_hidden_states=True)
        b = ref(ids, output_hidden_states=True)
    assert attention_calls == [(2, 16, 2, 64)] * 2  # both layers, (B, S, Hq, D)
    assert _cos(a.hidden_states[-1], b.hidden_states[-1]) >= MIN_COSINE
    assert _cos(a.logits, b.logits) >= MIN_COSINE


@pytest.mark.parametrize("recipe", ["tensor", "row", "block"])
def test_full_fp8_model_agrees_with_bf16(models, device, recipe):
    ref, fp8 = models
    tfp8.convert(fp8, recipe=recipe)
    assert isinstance(fp8.model.layers[0].self_attn.q_proj, FP8Linear)
    ids = torch.randint(0, 128, (1, 16), device=device)
    with torch.no_grad():
        a = fp8(ids, output_hidden_states=True)
        b = ref(ids, output_hidden_states=True)
    assert _cos(a.hidden_states[-1], b.hidden_states[-1]) >= MIN_COSINE
    assert _cos(a.logits, b.logits) >= MIN_COSINE


def test_convert_model_on_tiny_llama_honours_skip():
    model = transformers.AutoModelForCausalLM.from_config(_config(intermediate_size=200), dtype=torch.bfloat16)
    tritonfp8.convert_model(model, recipe="row", skip=("lm_head", r"layers\.1\.self_attn\.o_proj"))
    attn0, attn1 = model.model.layers[0].self_attn, model.model.layers[1].self_attn
    for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
        assert isinstance(getattr(attn0, proj), FP8Linear)
    assert type(attn1.o_proj) is torch.nn.Linear and isinstance(attn1.q_proj, FP8Linear)
    assert type(model.lm_head) is torch.nn.Linear
    mlp = model.model.layers[0].mlp  # intermediate 200: not a multiple of 16 -> stays BF16, reason recorded
    assert type(mlp.gate_proj) is torch.nn.Linear and type(mlp.down_proj) is torch.nn.Linear
    kept = tritonfp8.stats().kept_bf16
    assert "out_features=200 not a multiple of 16" in kept["model.layers.0.mlp.up_proj"]
    assert "in_features=200" in kept["model.layers.1.mlp.down_proj"]
    assert kept["lm_head"] == "skipped by pattern"


def test_generate_prefill_and_decode(models, device, attention_calls):
    ref, fp8 = models
    tfp8.convert(fp8, recipe="row")
    ids = torch.randint(0, 128, (1, 8), device=device)
    with torch.no_grad():
        out = fp8.generate(ids, max_new_tokens=2, do_sample=False, attention_mask=torch.ones_like(ids))
    assert out.shape == (1, 10) and torch.equal(out[:, :8], ids)
    # prefill over 8 tokens, then one decode step with one query against 9 cached keys, per layer
    assert attention_calls == [(1, 8, 2, 64)] * 2 + [(1, 1, 2, 64)] * 2


def test_padding_mask_runs_varlen(models, device, attention_calls):
    ref, fp8 = models
    ids = torch.randint(0, 128, (2, 12), device=device)
    mask = torch.ones_like(ids)
    mask[1, :4] = 0  # left padding
    with torch.no_grad():
        a = fp8(ids, attention_mask=mask).logits
        b = ref(ids, attention_mask=mask).logits
        alone = fp8(ids[1:, 4:]).logits
    assert attention_calls[0] == (20, 2, 64)  # varlen: 12 + 8 real tokens
    assert _cos(a[1, 4:], b[1, 4:]) >= MIN_COSINE and _cos(a[0], b[0]) >= MIN_COSINE
    assert _cos(a[1, 4:], alone[0]) >= MIN_COSINE


def test_unsupported_mask_falls_back_counted(models, device):
    ref, fp8 = models
    q = torch.randn(1, 2, 5, 64, device=device, dtype=torch.bfloat16)
    kv = torch.randn(1, 1, 5, 64, device=device, dtype=torch.bfloat16)
    mask4d = torch.zeros(1, 1, 5, 5, device=device, dtype=torch.bfloat16)
    attn = fp8.model.layers[0].self_attn
    out, _ = tfp8.attention_forward(attn, q, kv, kv, mask4d, scaling=0.125)
    assert out.shape == (1, 5, 2, 64)
    assert tritonfp8.stats().fallbacks["attention[0]"][tfp8.UNSUPPORTED_MASK] == 1


def test_guard_on_attention_inputs(models, device):
    ref, fp8 = models
    q = torch.randn(1, 2, 4, 64, device=device, dtype=torch.bfloat16)
    kv = torch.randn(1, 1, 4, 64, device=device, dtype=torch.bfloat16)
    kv[0, 0, 1, 3] = float("inf")
    attn = fp8.model.layers[1].self_attn
    with guard.policy("error"), pytest.raises(guard.GuardError, match=r"attention\[1\]: .*non-finite"):
        tfp8.attention_forward(attn, q, kv, kv, None, scaling=0.125)


def test_fp8_llama_compiles_fullgraph(device):
    import torch._dynamo.testing

    model = tfp8.from_config(_config(), recipe="row").to(device).eval()
    ids = torch.randint(0, 128, (1, 16), device=device)
    with torch.no_grad():
        eager = model(ids).logits
        torch._dynamo.reset()
        cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(model, fullgraph=True, backend=cnt)(ids).logits
    assert cnt.frame_count == 1
    assert torch.equal(eager, compiled)


# ----------------------------------------------------------------------------------------------------------------
# attention calibration

LAYERS = ["model.layers.0.self_attn", "model.layers.1.self_attn"]
DEFAULT_THRESHOLD = 0.125  # 2 · eps of E4M3


def _padded(ids):
    mask = torch.ones_like(ids)
    mask[1, :4] = 0  # left padding: sequence 1 has len - 4 real tokens
    return {"input_ids": ids, "attention_mask": mask}


def _kept(model):
    return [n for n in LAYERS if getattr(model.get_submodule(n), tfp8.KEEP_SDPA, False)]


def test_calibrate_attention_decides_by_error(models, device, attention_calls):
    ref, fp8 = models
    batches = [torch.randint(0, 128, (2, 12), device=device)]
    report = tfp8.calibrate_attention(fp8, batches)
    assert report.threshold == DEFAULT_THRESHOLD
    assert list(report.errors) == LAYERS and report.fp8 == LAYERS and report.kept_sdpa == []
    # q, k, v and P rounded to E4M3: a few percent, well inside 2 · eps (and not zero: the FP8 path was measured)
    assert all(0.005 < e < DEFAULT_THRESHOLD for e in report.errors.values()), report.errors
    assert _kept(fp8) == [] and not set(LAYERS) & set(tritonfp8.stats().kept_bf16)
    # A threshold between the two layers' errors (same data: same errors) keeps exactly the worse layer.
    lo, hi = sorted(report.errors.values())
    assert lo < hi
    again = tfp8.calibrate_attention(fp8, batches, threshold=(lo + hi) / 2)
    assert again.errors == report.errors
    worse = max(LAYERS, key=report.errors.get)
    assert again.kept_sdpa == [worse] and _kept(fp8) == [worse]
    attention_calls.clear()
    with torch.no_grad():
        fp8(batches[0])
    assert attention_calls == [(2, 12, 2, 64)]  # the other layer still runs the FP8 kernel


def test_calibrate_attention_keeps_layers_on_sdpa(models, device, attention_calls):
    ref, fp8 = models
    ids = torch.randint(0, 128, (2, 12), device=device)
    report = tfp8.calibrate_attention(fp8, [ids], threshold=1e-6)
    assert report.kept_sdpa == LAYERS and report.fp8 == [] and _kept(fp8) == LAYERS
    kept = tritonfp8.stats().kept_bf16
    for name in LAYERS:
        assert kept[name] == (f"calibration: FP8 attention relative error {report.errors[name]:.4f} > "
                              "threshold 1e-06")
    attention_calls.clear()
    with torch.no_grad():
        a, b = fp8(ids).logits, ref(ids).logits
        ap, bp = fp8(**_padded(ids)).logits, ref(**_padded(ids)).logits
    assert attention_calls == []  # no FP8 attention call left
    assert torch.equal(a, b) and torch.equal(ap[0], bp[0]) and torch.equal(ap[1, 4:], bp[1, 4:])
    assert tritonfp8.stats().total_fallbacks == 0  # a calibration decision, not per-call fallbacks
    # Calibrating again with the default threshold clears the marks and the stats() entries.
    tfp8.calibrate_attention(fp8, [ids])
    assert _kept(fp8) == [] and not set(LAYERS) & set(tritonfp8.stats().kept_bf16)
    attention_calls.clear()
    with torch.no_grad():
        fp8(ids)
    assert len(attention_calls) == 2


def test_calibrate_attention_nan_counts_as_inf(models, device):
    ref, fp8 = models
    with torch.no_grad():
        fp8.model.layers[1].self_attn.k_proj.weight[0, 0] = float("nan")
    report = tfp8.calibrate_attention(fp8, [torch.randint(0, 128, (1, 8), device=device)], threshold=float("inf"))
    assert report.errors[LAYERS[1]] == float("inf") and report.kept_sdpa == [LAYERS[1]]
    assert report.errors[LAYERS[0]] < DEFAULT_THRESHOLD and report.fp8 == [LAYERS[0]]


def test_calibrate_attention_padding_runs_varlen_reference(models, device, monkeypatch):
    ref, fp8 = models
    seen = []
    real = tfp8.attention_torch

    def spy(q, k, v, **kw):
        cu = [kw[n].tolist() if kw.get(n) is not None else None for n in ("cu_seqlens_q", "cu_seqlens_k")]
        seen.append((tuple(q.shape), tuple(k.shape), *cu))
        return real(q, k, v, **kw)

    monkeypatch.setattr(tfp8, "attention_torch", spy)
    ids = torch.randint(0, 128, (2, 12), device=device)
    report = tfp8.calibrate_attention(fp8, [_padded(ids)])
    # per layer, one varlen reference on the real tokens only (sequences of 12 and 8)
    assert seen == [((20, 2, 64), (20, 1, 64), [0, 12, 20], [0, 12, 20])] * 2
    assert all(0 < e < DEFAULT_THRESHOLD for e in report.errors.values())


def test_calibrate_attention_error_matches_independent_computation(models, device, monkeypatch):
    """The reported error equals ||o - ref|| / ||ref|| summed over a dense and a padded batch, with o the FP8
    kernel's output on each call's captured q/k/v and ref attention_torch (its own varlen path for the padded one)."""
    ref, fp8 = models
    calls = []
    real = ops.attention

    def spy(q, k, v, **kw):
        o = real(q, k, v, **kw)
        calls.append((q.clone(), k.clone(), v.clone(), kw, o.clone()))
        return o

    monkeypatch.setattr(ops, "attention", spy)
    ids = torch.randint(0, 128, (2, 12), device=device)
    report = tfp8.calibrate_attention(fp8, [ids[:, :10], _padded(ids)])
    assert len(calls) == 4  # 2 batches x 2 layers, layer 0 first
    scaling = fp8.model.layers[0].self_attn.scaling
    for i, name in enumerate(LAYERS):
        err2 = ref2 = 0.0
        for q, k, v, kw, o in calls[i::2]:
            assert kw["causal"] and kw["softmax_scale"] == scaling
            varlen = {key: kw[key] for key in ("cu_seqlens_q", "cu_seqlens_k") if kw.get(key) is not None}
            r = attention_torch(q, k, v, causal=True, softmax_scale=scaling, **varlen).double()
            err2 += float((o.double() - r).square().sum())
            ref2 += float(r.square().sum())
        assert report.errors[name] == pytest.approx((err2 / ref2) ** 0.5, rel=1e-6)
    assert "cu_seqlens_q" in calls[2][3] and calls[2][0].shape == (20, 2, 64)  # the padded batch ran varlen


def test_calibrate_measures_attention_too(models, device):
    ref, fp8 = models
    batches = [torch.randint(0, 128, (1, 8), device=device)]
    report = tritonfp8.calibrate(fp8, batches, threshold=1e-6)
    assert report.attention is not None and report.attention.kept_sdpa == LAYERS  # the threshold applies to both
    assert "attention calibration (threshold 1e-06)" in str(report)
    report = tritonfp8.calibrate(fp8, batches, attention=False)
    assert report.attention is None and _kept(fp8) == LAYERS  # untouched
    assert tritonfp8.calibrate(ref, batches).attention is None  # SDPA model: nothing to calibrate
    with pytest.raises(ValueError, match="no attention call reached the FP8 attention"):
        tritonfp8.calibrate(ref, batches, attention=True)


@requires_gpu
def test_llama_gpu_agreement():
    kw = dict(hidden_size=1024, intermediate_size=2816, num_attention_heads=8, num_key_value_heads=2,
              head_dim=128, num_hidden_layers=4, vocab_size=4096, max_position_embeddings=4096)
    ref = transformers.AutoModelForCausalLM.from_config(_config(**kw), attn_implementation="sdpa",
                                                        dtype=torch.bfloat16)
    fp8 = tfp8.from_config(_config(**kw), recipe="row")
    fp8.load_state_dict(ref.state_dict())
    ref, fp8 = ref.cuda().eval(), fp8.cuda().eval()
    ids = torch.randint(0, 4096, (2, 1024), device="cuda")
    with torch.no_grad():
        a = fp8(ids, output_hidden_states=True)
        b = ref(ids, output_hidden_states=True)
        g = fp8.generate(ids[:, :64], max_new_tokens=8, do_sample=False)
    assert _cos(a.hidden_states[-1], b.hidden_states[-1]) >= MIN_COSINE
    assert g.shape == (2, 72)
