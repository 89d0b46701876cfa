"""FP8Linear, recipes, convert_model, state_dict round trips.

Tolerances (stated once, from the formats):
- ``TOL_VS_DEQUANT_WEIGHT = E4M3.eps`` (2^-4): FP8Linear vs ``nn.Linear`` with the *dequantized* weight and the
  unquantized input. Only the activation rounding differs; RNE to E4M3 errs by at most eps relative per element
  (about eps/√3 RMS for random data), which the relative Frobenius error of the output inherits.
- ``TOL_SAME_OPERANDS = 2^-8``: FP8Linear vs the fp32 product of the same FP8 operands (activation quantized by
  the reference quantizer, bit-identical to the kernel). What remains is the output rounding (bf16 unit roundoff
  2^-9) and the accumulation order; twice bf16's unit roundoff bounds both at these small K.
"""

import copy
import io
import logging

import pytest
import torch
from torch import nn

from conftest import requires_gpu

import tritonfp8
from tritonfp8 import guard
from tritonfp8._formats import E4M3
from tritonfp8.nn import RECIPES, FP8Linear, Recipe, convert_model, dequantize_weight, recipe

TOL_VS_DEQUANT_WEIGHT = E4M3.eps
TOL_SAME_OPERANDS = 2.0**-8


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return float((out - ref).norm() / ref.norm().clamp_min(1e-300))


def _need_gemm():
    try:
        from tritonfp8.gemm import gemm  # noqa: F401
    except ImportError:
        pytest.skip("tritonfp8.gemm is not in this build yet")


def _linear(k=64, n=48, bias=True, dtype=torch.bfloat16, device="cpu"):
    lin = nn.Linear(k, n, bias=bias, dtype=dtype, device=device)
    with torch.no_grad():
        lin.weight.normal_(0, k**-0.5)
        if bias:
            lin.bias.normal_(0, 0.1)
    return lin


@pytest.fixture(autouse=True)
def _clean_guard():
    guard.reset_stats()
    yield
    guard.reset_stats()


# -- recipes -------------------------------------------------------------------------------------------------------


def test_named_recipes_are_frozen_and_complete():
    assert {"tensor", "row", "block", "tensor-static", "row-precise", "tensor-precise"} <= set(RECIPES)
    r = RECIPES["row"]
    assert (r.activation, r.weight, r.accumulate) == ("row", "row", "fast")
    assert (RECIPES["block"].activation, RECIPES["block"].weight) == ((1, 128), (128, 128))
    with pytest.raises(Exception):
        r.accumulate = "precise"
    assert recipe("row", accumulate="precise") is RECIPES["row-precise"]
    assert recipe(r) is r
    custom = recipe("tensor", weight_dtype=torch.float8_e5m2)
    assert custom.weight_dtype == torch.float8_e5m2 and custom.name.startswith("tensor+")


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(name="x", accumulate="exact"), "accumulate"),
        (dict(name="x", activation="rows"), "granularity"),
        (dict(name="x", activation="row", static_activation=True), "static_activation"),
        (dict(name="x", weight_dtype=torch.bfloat16), "weight_dtype"),
    ],
)
def test_bad_recipe_fields(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        Recipe(**kw)


def test_unknown_recipe_name():
    with pytest.raises(ValueError, match="recipe"):
        recipe("int8")


# -- construction ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, scale_shape", [("tensor", ()), ("row", (48, 1)), ("block", (1, 1))])
def test_from_linear_quantizes_weight_like_the_reference(name, scale_shape):
    from tritonfp8.quantize import quantize_torch

    lin = _linear()
    m = FP8Linear.from_linear(lin, name)
    r = RECIPES[name]
    wq, ws = quantize_torch(lin.weight.detach(), r.weight, r.weight_dtype)
    assert m.weight.dtype == E4M3.torch_dtype and m.weight.shape == (48, 64)
    assert torch.equal(m.weight.view(torch.uint8), wq.view(torch.uint8))
    assert tuple(m.weight_scale.shape) == scale_shape and torch.equal(m.weight_scale, ws.reshape(scale_shape))
    assert torch.equal(m.bias, lin.bias) and not m.bias.requires_grad
    assert "recipe='%s'" % name in repr(m)


def test_from_linear_rejects_unaligned_features():
    with pytest.raises(ValueError, match="in_features=100 not a multiple of 16"):
        FP8Linear.from_linear(nn.Linear(100, 64))
    with pytest.raises(ValueError, match="out_features=40"):
        FP8Linear.from_linear(nn.Linear(64, 40))
    with pytest.raises(TypeError, match="linear"):
        FP8Linear.from_linear(nn.Conv1d(4, 4, 1))


def test_dtype_casts_keep_fp8_weight_and_move_bias():
    m = FP8Linear.from_linear(_linear())
    w = m.weight.clone()
    m.to(torch.float16)
    assert m.weight.dtype == E4M3.torch_dtype and torch.equal(m.weight.view(torch.uint8), w.view(torch.uint8))
    assert m.weight_scale.dtype == torch.float32 and m.bias.dtype == torch.float16
    m.float()
    assert m.weight.dtype == E4M3.torch_dtype and m.bias.dtype == torch.float32


# -- forward -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tensor", "row", "row-precise", "block", "tensor-static"])
def test_forward_matches_linear_on_dequantized_weight(device, name):
    _need_gemm()
    k, n = (256, 128) if name == "block" else (64, 48)
    lin = _linear(k, n, device=device)
    m = FP8Linear.from_linear(lin, name)
    if m.input_scale is not None:
        m.input_scale.fill_(4.0 / E4M3.max)  # static: covers |x| <= 4 (randn) without saturating
    x = torch.randn(2, 5, k, device=device, dtype=torch.bfloat16)
    y = m(x)
    assert y.shape == (2, 5, n) and y.dtype == torch.bfloat16
    w = dequantize_weight(m.weight, m.weight_scale, torch.float32)
    ref = nn.functional.linear(x.float(), w, lin.bias.float())
    assert _rel(y, ref) <= TOL_VS_DEQUANT_WEIGHT

    # Against the same FP8 operands: the activation quantized by the reference quantizer.
    from tritonfp8.quantize import dequantize_torch, quantize_torch

    r = m.recipe
    xq, sx = quantize_torch(x.reshape(-1, k), r.activation, r.activation_dtype, m.input_scale)
    ref_same = nn.functional.linear(dequantize_torch(xq, sx, torch.float32), w, lin.bias.float()).reshape(2, 5, n)
    assert _rel(y, ref_same) <= TOL_SAME_OPERANDS


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_forward_follows_input_dtype(device, dtype):
    _need_gemm()
    m = FP8Linear.from_linear(_linear(device=device), "row")
    x = torch.randn(3, 64, device=device, dtype=dtype)
    y = m(x)
    assert y.dtype == dtype and y.shape == (3, 48)
    ref = nn.functional.linear(x.float(), dequantize_weight(m.weight, m.weight_scale, torch.float32),
                               m.bias.float())
    assert _rel(y, ref) <= TOL_VS_DEQUANT_WEIGHT


def test_forward_zero_rows_and_no_bias(device):
    _need_gemm()
    m = FP8Linear.from_linear(_linear(bias=False, device=device), "row")
    y = m(torch.empty(0, 64, device=device, dtype=torch.bfloat16))
    assert y.shape == (0, 48)
    y = m(torch.randn(1, 64, device=device, dtype=torch.bfloat16))
    assert y.shape == (1, 48) and torch.isfinite(y).all()


def test_forward_bad_input():
    m = FP8Linear.from_linear(_linear(), "row")
    with pytest.raises(ValueError, match="x: expected last dim 64"):
        m(torch.randn(2, 32, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="x: expected bf16"):
        m(torch.ones(2, 64, dtype=torch.int32))


def test_no_fp8_tensor_cores_falls_back_with_one_warning(monkeypatch, device):
    """A GPU without FP8 tensor cores computes in BF16 (dequantized weight), warns once and counts every call."""
    import tritonfp8._backend as backend
    import tritonfp8.nn as tnn

    monkeypatch.setattr(tnn, "fp8_capable", lambda dev: False)
    monkeypatch.setattr(backend, "_warned", set())
    m = FP8Linear.from_linear(_linear(device=device), "row", name="blk.proj")
    x = torch.randn(4, 64, device=device, dtype=torch.bfloat16)
    with pytest.warns(RuntimeWarning, match="no FP8 tensor cores"):
        y = m(x)
    assert torch.equal(y, m._forward_bf16(x))
    m(x)
    assert tritonfp8.stats().fallbacks["blk.proj"][guard.NO_FP8] == 2

    lin_model = nn.Sequential(_linear(device=device))
    with pytest.warns(RuntimeWarning, match="stays in BF16"):
        convert_model(lin_model)
    assert type(lin_model[0]) is nn.Linear
    assert "no FP8 tensor cores" in tritonfp8.stats().kept_bf16["0"]


# -- convert_model -------------------------------------------------------------------------------------------------


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = _linear(64, 128)
        self.odd = _linear(100, 64)  # in_features not a multiple of 16
        self.down = _linear(128, 64)
        self.lm_head = _linear(64, 32)

    def forward(self, x):
        h = torch.relu(self.up(x))
        return self.lm_head(self.down(h))


def test_convert_model_swaps_in_place_and_honours_skip(caplog):
    model = nn.ModuleDict({"blk": _Block(), "head": _linear(64, 16)})
    with caplog.at_level(logging.INFO, logger="tritonfp8"):
        out = convert_model(model, recipe="row", skip=("lm_head", r"^head$"))
    assert out is model
    assert isinstance(model["blk"].up, FP8Linear) and isinstance(model["blk"].down, FP8Linear)
    assert type(model["blk"].lm_head) is nn.Linear and type(model["head"]) is nn.Linear
    assert type(model["blk"].odd) is nn.Linear
    kept = tritonfp8.stats().kept_bf16
    assert kept["blk.lm_head"] == "skipped by pattern" and kept["head"] == "skipped by pattern"
    assert "in_features=100 not a multiple of 16" in kept["blk.odd"]
    assert "blk.odd kept in BF16" in caplog.text
    assert model["blk"].up.layer_name == "blk.up"


def test_convert_model_strict_raises_naming_the_layer():
    with pytest.raises(ValueError, match="blk.odd.*in_features=100"):
        convert_model(nn.ModuleDict({"blk": _Block()}), strict=True)


def test_convert_model_callable_skip_and_bad_skip():
    model = _Block()
    convert_model(model, skip=lambda name: name == "up")
    assert type(model.up) is nn.Linear and isinstance(model.lm_head, FP8Linear)
    with pytest.raises(TypeError, match="skip"):
        convert_model(_Block(), skip=[3])


def test_converted_model_runs(device):
    _need_gemm()
    model = _Block().to(device)
    ref_model = _Block().to(device)
    ref_model.load_state_dict(model.state_dict())
    convert_model(model, skip=())
    x = torch.randn(3, 64, device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        # Two FP8 layers in a row: the relative error of each (<= eps) adds up.
        assert _rel(model(x), ref_model(x).float()) <= 3 * TOL_VS_DEQUANT_WEIGHT


# -- state_dict ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tensor", "row", "block", "tensor-static"])
def test_state_dict_round_trip(name):
    model = nn.Sequential(_linear(128, 128), nn.ReLU(), _linear(128, 64, bias=False))
    convert_model(model, recipe=name)
    if name == "tensor-static":
        model[0].input_scale.fill_(0.125)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    sd = torch.load(io.BytesIO(buf.getvalue()))
    assert sd["0.weight"].dtype == E4M3.torch_dtype and sd["0.weight_scale"].dtype == torch.float32

    fresh = nn.Sequential(FP8Linear(128, 128, recipe=name), nn.ReLU(), FP8Linear(128, 64, bias=False, recipe=name))
    fresh.load_state_dict(sd)
    for a, b in zip(model.state_dict().items(), fresh.state_dict().items()):
        assert a[0] == b[0]
        assert torch.equal(a[1].view(torch.uint8) if a[1].dtype == E4M3.torch_dtype else a[1],
                           b[1].view(torch.uint8) if b[1].dtype == E4M3.torch_dtype else b[1]), a[0]


def test_load_linear_checkpoint_quantizes_it():
    lin = _linear()
    m = FP8Linear(64, 48, recipe="row")
    m.load_state_dict(lin.state_dict())
    ref = FP8Linear.from_linear(lin, "row")
    assert torch.equal(m.weight.view(torch.uint8), ref.weight.view(torch.uint8))
    assert torch.equal(m.weight_scale, ref.weight_scale) and torch.equal(m.bias, ref.bias)


def test_load_state_dict_wrong_recipe_is_a_clear_error():
    sd = FP8Linear.from_linear(_linear(128, 128), "row").state_dict()
    with pytest.raises(RuntimeError, match="weight_scale"):
        FP8Linear(128, 128, recipe="block").load_state_dict(sd)
    sd["weight"] = sd["weight"].view(torch.uint8)
    with pytest.raises(RuntimeError, match="expected torch.float8_e4m3fn"):
        FP8Linear(128, 128, recipe="row").load_state_dict(sd)


# -- torch.compile -------------------------------------------------------------------------------------------------


def test_fp8_model_compiles_fullgraph(device):
    _need_gemm()
    import torch._dynamo.testing

    model = nn.Sequential(_linear(64, 128), nn.SiLU(), _linear(128, 64)).to(device)
    convert_model(model, recipe="row")
    x = torch.randn(2, 3, 64, device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        eager = model(x)
        torch._dynamo.reset()
        cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(model, fullgraph=True, backend=cnt)(x)
    assert cnt.frame_count == 1
    assert torch.equal(eager, compiled)


def test_compiled_layer_shared_by_named_layers_compiles_once(device):
    """Identical blocks compiled one at a time (as a compiled decoder layer is reused by every layer) share one
    graph: nothing per-layer (the layer name in stats()) may be guarded on (else one recompile per layer, and
    fullgraph=True fails at Dynamo's recompile limit)."""
    _need_gemm()
    import torch._dynamo.testing

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = _linear(64, 64)

        def forward(self, x):
            return x + self.up(x)

    blocks = nn.ModuleList([Block() for _ in range(3)]).to(device)
    convert_model(blocks, recipe="row")
    assert len({b.up.layer_name for b in blocks}) == 3
    x = torch.randn(2, 64, device=device, dtype=torch.bfloat16)
    torch._dynamo.reset()
    cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    with torch.no_grad():
        for b in blocks:
            eager = b(x)
            assert torch.equal(torch.compile(b, fullgraph=True, backend=cnt)(x), eager)
    assert cnt.frame_count == 1


@requires_gpu
@pytest.mark.parametrize("name", ["tensor", "row", "block"])
def test_fp8_linear_gpu_large(name):
    lin = _linear(4096, 4096, device="cuda")
    m = FP8Linear.from_linear(lin, name)
    x = torch.randn(512, 4096, device="cuda", dtype=torch.bfloat16)
    ref = nn.functional.linear(x.float(), dequantize_weight(m.weight, m.weight_scale, torch.float32), lin.bias.float())
    # fast accumulation over K=4096 adds ~2e-3 (measured 2.6e-3 at K=8192) to the activation rounding
    assert _rel(m(x), ref) <= TOL_VS_DEQUANT_WEIGHT


# -- the end-to-end bench suite, tiny shape (interpreter on CPU, compiled kernels on a GPU) -------------------


def test_model_bench_suite(tmp_path, monkeypatch, capsys, device):
    """``bench model`` with the tiny shape in the interpreter: runs prefill, decode (paged FP8 cache) and the
    agreement check for every recipe, writes its JSON and plot. Timings here are wall-clock and meaningless."""
    _need_gemm()
    import argparse
    import json

    from tritonfp8.bench.suites import model as suite

    from tritonfp8 import guard

    monkeypatch.setattr(suite, "_DEVICE", device)
    captured = []

    def capture_stand_in(fn):  # no CUDA graphs on CPU: record the guard policy in force, replay = the call itself
        captured.append(guard.get_config().policy)
        return lambda: fn()

    monkeypatch.setattr(suite, "_capture", capture_stand_in)
    args = argparse.Namespace(quick=True, repeats=1, out=str(tmp_path), no_save=False, profile=False, shape=["tiny"],
                              recipe="row", prefill=[16], decode_batch=[2], context=16, no_compile=True,
                              agree_tokens=16, checkpoint=None, text=None)
    with guard.policy("warn"):  # eager steps run guarded; the captured ones must not (a host sync per call)
        assert suite.run(args) == 0
    assert captured == ["ignore", "ignore"]  # the bf16 and fp8 decode steps, both under the capturable policy
    out = capsys.readouterr().out
    assert "Agreement with BF16" in out and "(graphs)" in out and "cos(update)" in out and "exact FP8" in out
    assert "BF16 vs FP32" in out and "Per module" in out and "kernels vs reference" in out
    files = sorted(p.name for p in tmp_path.iterdir())
    assert any(f.endswith(".json") for f in files) and any(f.endswith(".png") for f in files)
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert data["config"]["cuda_graphs"] is True and data["config"]["graph_guard_policy"] == "ignore"
    assert set(data["config"]["variants"]) >= {"bf16g", "fp8g", "fp8cg"}
    phases = [r["phase"] for r in data["rows"]]
    assert phases.count("prefill") == 1 and phases.count("decode") == 1 and phases.count("agreement") == 3
    for r in data["rows"]:
        if r["phase"] == "agreement":
            assert r["cos_hidden"] >= suite.MIN_COSINE, r
            assert len(r["cos_update_layers"]) == suite.SHAPES["tiny"].layers
            assert r["cos_update_first"] == r["cos_update_layers"][0]
            assert r["cos_update_min"] == min(r["cos_update_layers"]) >= 0.9, r
            assert 0.9 <= r["cos_hidden_layer1"] <= 1.0
            # The kernels compute the FP8 arithmetic of the plain-PyTorch references, module by module (only the
            # BF16 output rounding and summation order differ), and the model as a whole agrees with it.
            assert set(r["modules"]) == set(suite.FUSED_KINDS)  # the suite's default layout (--proj fused)
            assert r["cos_kernel_vs_reference"] >= 0.9999, r["kernel_vs_reference_worst"]
            assert abs(r["cos_hidden_emulated"] - r["cos_hidden"]) <= 2e-3
            for kind, m in r["modules"].items():
                assert m["cos_min"] >= 0.998 and abs(m["norm_ratio_worst"] - 1) <= 0.02, (kind, m)
            # Baselines: BF16 and FP16 against the same weights in fp32, and FP8 against fp32.
            assert r["cos_bf16_vs_fp32"] >= 0.9999 and r["cos_fp16_vs_fp32"] >= r["cos_bf16_vs_fp32"]
            assert abs(r["cos_hidden_vs_fp32"] - r["cos_hidden"]) <= 1e-3
            assert len(r["cos_hidden_layers"]) == len(r["cos_hidden_layers_bf16_vs_fp32"]) == 2
            assert r["cos_hidden_layers"][-1] == pytest.approx(r["cos_hidden"], abs=1e-3)  # before / after the norm
        elif r["phase"] == "decode":
            assert r["graphed"] == ["bf16g", "fp8g"]
            assert r["fp8g_x"] > 0 and len(r["rounds_ms"]["fp8g"]) == 1
            assert r["fp8g_x"] == pytest.approx(r["bf16g_ms"] / r["fp8g_ms"])  # graph vs graph
            assert r["fp8_x"] == pytest.approx(r["bf16_ms"] / r["fp8_ms"])  # eager vs eager
            assert r["best_variant"] in ("fp8", "fp8g")
        else:
            assert "graphed" not in r and "fp8g_x" not in r


def test_model_bench_decode_only(tmp_path, monkeypatch, capsys, device):
    """``--decode-only --no-graph``: decode rows alone (no prefill, no agreement, no capture), the 8b default shape
    replaced by the given one; the JSON says no rows are graphed."""
    _need_gemm()
    import argparse
    import json

    from tritonfp8.bench.suites import model as suite

    monkeypatch.setattr(suite, "_DEVICE", device)
    monkeypatch.setattr(suite, "_capture", lambda fn: pytest.fail("captured despite --no-graph"))
    monkeypatch.setattr(suite, "_agreement", lambda *a: pytest.fail("agreement run despite --decode-only"))
    args = argparse.Namespace(quick=True, repeats=1, out=str(tmp_path), no_save=False, profile=False, shape=["tiny"],
                              recipe="row", prefill=None, decode_batch=[2], context=16, no_compile=True,
                              agree_tokens=None, checkpoint=None, text=None, decode_only=True, no_graph=True)
    assert suite.run(args) == 0
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert [r["phase"] for r in data["rows"]] == ["decode"]
    assert data["rows"][0]["graphed"] == [] and data["config"]["cuda_graphs"] is False
    assert "Agreement with BF16" not in capsys.readouterr().out


def test_model_bench_agreement_only_on_cpu(tmp_path, monkeypatch, capsys):
    """``--agreement-only --agree-recipe row-precise``: the agreement rows alone, for the recipe given (no timing,
    no compile, no capture, no plot). The agreement itself is a stand-in here (the suite test runs the real one)."""
    import argparse
    import json

    from tritonfp8.bench.suites import model as suite

    def agreement_stand_in(s, bf16, recipes, tokens):
        return [{"shape": s.name, "recipe": r, "tokens": tokens, "ok": True} for r in recipes]

    monkeypatch.setattr(suite, "_DEVICE", "cpu")
    monkeypatch.setattr(suite, "_agreement", agreement_stand_in)
    monkeypatch.setattr(suite, "_capture", lambda fn: pytest.fail("captured despite --agreement-only"))
    monkeypatch.setattr(suite, "_bench", lambda *a, **k: pytest.fail("timed despite --agreement-only"))
    monkeypatch.setattr(suite, "to_fp8", lambda *a: pytest.fail("FP8 model built despite --agreement-only"))
    args = argparse.Namespace(quick=True, repeats=1, out=str(tmp_path), no_save=False, profile=False, shape=["tiny"],
                              recipe="row", prefill=None, decode_batch=None, context=16, no_compile=False,
                              agree_tokens=16, checkpoint=None, text=None, agreement_only=True,
                              agree_recipe=["row-precise"])
    assert suite.run(args) == 0
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert [(r["phase"], r["recipe"]) for r in data["rows"]] == [("agreement", "row-precise")]
    assert data["config"]["agreement_only"] is True and data["config"]["agreement_recipes"] == ["row-precise"]
    assert not list(tmp_path.glob("*.png"))
    assert "Agreement with BF16" in capsys.readouterr().out
    args.decode_only = True
    with pytest.raises(ValueError, match="--decode-only, --agreement-only, --prefill-only: give at most one"):
        suite.run(args)


def test_model_bench_prefill_only(tmp_path, monkeypatch, device):
    """``--prefill-only``: prefill rows alone (no agreement check, no decode step, nothing captured)."""
    import argparse
    import json

    from tritonfp8.bench.suites import model as suite

    monkeypatch.setattr(suite, "_DEVICE", device)
    monkeypatch.setattr(suite, "_agreement", lambda *a: pytest.fail("agreement ran despite --prefill-only"))
    monkeypatch.setattr(suite, "_capture", lambda fn: pytest.fail("captured despite --prefill-only"))
    monkeypatch.setattr(suite, "_bench", lambda fns, args, rep_ms, graphed=frozenset(): {k: [1.0] for k in fns})
    args = argparse.Namespace(quick=True, repeats=1, out=str(tmp_path), no_save=False, profile=False, shape=["tiny"],
                              recipe="row", prefill=[16], decode_batch=None, context=16, no_compile=True,
                              agree_tokens=16, checkpoint=None, text=None, prefill_only=True)
    assert suite.run(args) == 0
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert [r["phase"] for r in data["rows"]] == ["prefill"]
    assert data["config"]["prefill_only"] is True


def test_per_layer_agreement_is_exact_for_the_same_model():
    """The per-layer cosine compares each layer's own update: the BF16 model against itself gives 1 for every
    layer, and the reference states chain (state i+1 is layer i applied to state i)."""
    from tritonfp8.bench.suites import model as suite

    s = suite.SHAPES["tiny"]
    m = suite.build(s, "cpu")
    x, pos = suite._inputs(s, 1, 8, "cpu")
    with torch.no_grad():
        states, cos, sin = suite.layer_inputs(m, x, pos)
        assert len(states) == s.layers + 1
        h, _ = m(x, pos, logits_last=0)
        assert torch.equal(m.norm(states[-1]), h)
        r = suite.per_layer_agreement(states, m, cos, sin)
    assert r["cos_update_layers"] == [pytest.approx(1.0, abs=1e-12)] * s.layers


def test_emulated_model_shares_weights_and_uses_the_references():
    """:func:`emulated` computes the FP8 model with the plain-PyTorch references: it shares the FP8 weights (no
    copy), each linear is quantize_torch + gemm_torch of the same FP8Linear, and prefill attention is the reference
    with FP8 q/k/v and P (different from BF16 SDPA, equal to attention_torch on per-head quantized inputs)."""
    from tritonfp8.attention import attention_torch, quantize_per_head_torch
    from tritonfp8.bench.suites import model as suite
    from tritonfp8.gemm import gemm_torch
    from tritonfp8.quantize import quantize_torch

    s = suite.SHAPES["tiny"]
    fp8 = suite.to_fp8(suite.build(s, "cpu"), "block")
    em = suite.emulated(fp8)
    lin, ref_lin = fp8.layers[1].mlp.down_proj, em.layers[1].mlp.down_proj
    assert isinstance(ref_lin, suite.ReferenceFP8Linear) and ref_lin.fp8 is not lin  # a module copy ...
    assert ref_lin.fp8.weight is lin.weight and ref_lin.fp8.weight_scale is lin.weight_scale  # ... of the same data
    assert em.embed_tokens.weight is fp8.embed_tokens.weight and em.lm_head.weight is fp8.lm_head.weight
    assert not any(l.self_attn.reference for l in fp8.layers) and all(l.self_attn.reference for l in em.layers)
    x = torch.randn(3, 5, s.intermediate, dtype=torch.bfloat16)
    xq, sx = quantize_torch(x.reshape(15, -1), (1, 128))
    want = gemm_torch(xq, lin.weight, sx, lin.weight_scale, out_dtype=torch.bfloat16).reshape(3, 5, -1)
    assert torch.equal(ref_lin(x), want)
    q = torch.randn(1, 9, s.heads, s.head_dim, dtype=torch.bfloat16)
    k, v = (torch.randn(1, 9, s.kv_heads, s.head_dim, dtype=torch.bfloat16) for _ in range(2))
    (qq, sq), (kq, sk), (vq, sv) = (quantize_per_head_torch(t, s.kv_heads) for t in (q, k, v))
    want = attention_torch(qq, kq, vq, causal=True, q_descale=sq, k_descale=sk, v_descale=sv, p_fp8=True)
    got = em.layers[0].self_attn._fp8(q, k, v, None, False)
    assert got.dtype == torch.bfloat16 and torch.equal(got, want.to(torch.bfloat16))


def test_per_module_agreement_finds_a_wrong_scale():
    """Per-module agreement (on the reference arithmetic, no interpreter): a correct FP8 model has every module
    kind at E4M3's rounding level; a per-tensor weight scale doubled in one o_proj shows there as a norm ratio of 2
    (its cosine cannot see a common factor), and a scale doubled on half of one down_proj's rows lowers the
    cosine of down_proj alone, at that layer."""
    from tritonfp8.bench.suites import model as suite

    s = suite.SHAPES["tiny"]
    bf16 = suite.build(s, "cpu")
    x, pos = suite._inputs(s, 1, 32, "cpu")
    fp8 = {r: suite.to_fp8(bf16, r) for r in ("tensor", "row")}
    with torch.no_grad():
        ref, cos, sin = suite.layer_inputs(bf16, x, pos)
        agree = lambda r: suite.per_module_agreement(ref, bf16, suite.emulated(fp8[r]), cos, sin)  # noqa: E731
        good = agree("tensor")
        assert set(good) == set(suite.SEPARATE_KINDS)
        for kind, m in good.items():
            assert m["cos_min"] >= 0.998 and abs(m["norm_ratio_worst"] - 1) <= 0.02, (kind, m)
            assert len(m["cos_layers"]) == s.layers

        fp8["tensor"].layers[1].self_attn.o_proj.weight_scale.mul_(2)
        bad = agree("tensor")
        assert bad["o_proj"]["norm_ratio_worst"] == pytest.approx(2, rel=0.02)
        assert bad["o_proj"]["cos_min"] >= 0.998  # the cosine alone would not have seen it
        assert all(abs(bad[k]["norm_ratio_worst"] - 1) <= 0.02 for k in bad if k != "o_proj")

        fp8["row"].layers[0].mlp.down_proj.weight_scale[: s.hidden // 2].mul_(2)
        bad = agree("row")
        assert bad["down_proj"]["cos_min"] < 0.97 and bad["down_proj"]["worst_layer"] == 0
        assert all(bad[k]["cos_min"] >= 0.998 for k in bad if k != "down_proj")


def test_model_bench_decode_matches_prefill(monkeypatch, device):
    """The suite's decode path is a real decode: the FP8 paged-cache step for token n equals (within FP8 error) the
    last position of a prefill over n + 1 tokens, and the BF16 dense-cache step does the same for BF16."""
    _need_gemm()
    from tritonfp8.bench.suites import model as suite

    s = suite.SHAPES["tiny"]
    bf16 = suite.build(s, device)
    fp8 = suite.to_fp8(bf16, "row")
    n = 20
    x, pos = suite._inputs(s, 1, n + 1, device)
    with torch.no_grad():
        ref_h, _ = bf16(x, pos, logits_last=0)
        for model, fp8_attn in ((bf16, False), (fp8, True)):
            dense = suite.DenseCache(s, 1, n + 1, device)
            paged = suite.PagedCache(s, 1, n + 1, device)
            _prefill_caches(suite, model, x[:, :n], pos[:, :n], dense, paged)
            h, _ = model(x[:, n:], pos[:, n:], paged if fp8_attn else dense, decode=True, logits_last=0)
            tol = 1e-2 if not fp8_attn else 3 * TOL_VS_DEQUANT_WEIGHT
            assert _rel(h[:, -1], ref_h[:, -1].float()) <= tol


def _prefill_caches(suite, model, x, pos, dense, paged):
    """Run the prefill and store each layer's K/V (as the suite's attention computes them) into both caches."""
    from tritonfp8 import ops

    s = model.s
    h = model.embed_tokens(x)
    cos, sin = suite.rope_tables(s, pos, h.dtype)
    n = x.shape[1]
    slots = torch.arange(n, dtype=torch.int64, device=x.device)
    for i, layer in enumerate(model.layers):
        a = layer.self_attn
        hn = layer.input_layernorm(h)
        k = suite.apply_rope(a.k_proj(hn).view(1, n, s.kv_heads, s.head_dim), cos, sin)
        v = a.v_proj(hn).view(1, n, s.kv_heads, s.head_dim)
        dense.k[i, :, :, :n] = k.transpose(1, 2)
        dense.v[i, :, :, :n] = v.transpose(1, 2)
        paged.k_scale[i] = k.abs().amax().float() / 448
        paged.v_scale[i] = v.abs().amax().float() / 448
        ops.write_kv_cache(k[0], v[0], paged.k[i], paged.v[i], slots, paged.k_scale[i], paged.v_scale[i])
        h = layer(h, cos, sin)
    dense.length = n
    paged.set_length(n)


def test_model_bench_fused_projections_match_separate(device):
    """``fuse_projections`` only regroups the weights: the fused BF16 model matches the separate one, and with the
    rowwise recipe (per-row weight scales) the fused FP8 model does too; the fused layout is what the suite times
    by default (``--proj fused``) for both models."""
    _need_gemm()
    from tritonfp8.bench.suites import model as suite

    s = suite.SHAPES["tiny"]
    sep = suite.build(s, device)
    fused = suite.fuse_projections(copy.deepcopy(sep))
    attn, mlp = fused.layers[0].self_attn, fused.layers[0].mlp
    assert not hasattr(attn, "q_proj") and attn.qkv_proj.out_features == (s.heads + 2 * s.kv_heads) * s.head_dim
    assert not hasattr(mlp, "gate_proj") and mlp.gate_up_proj.out_features == 2 * s.intermediate
    x, pos = suite._inputs(s, 1, 16, device)
    with torch.no_grad():
        h_sep, _ = sep(x, pos, logits_last=0)
        h_fused, _ = fused(x, pos, logits_last=0)
        assert _rel(h_fused, h_sep.float()) <= 1e-2  # bf16 rounding of differently blocked CPU matmuls only
        f_sep, _ = suite.to_fp8(sep, "row")(x, pos, logits_last=0)
        f_fused, _ = suite.to_fp8(fused, "row")(x, pos, logits_last=0)
        assert _rel(f_fused, f_sep.float()) <= 1e-2
        assert _rel(f_fused, h_sep.float()) <= 3 * TOL_VS_DEQUANT_WEIGHT
