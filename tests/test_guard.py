"""Precision guard: policies triggered by crafted inputs, counts in stats(), compiled behaviour, calibrate().

Crafted inputs: ``inf``/``nan`` in the activations (any recipe) and values far beyond the E4M3 max 448 under a
static input scale of 1 (recipe "tensor-static": ``|x| > 448 · scale`` saturates). Tolerance where outputs are
compared with a reference: ``E4M3.eps`` relative (the activation rounding; see tests/test_nn.py).
"""

import warnings

import pytest
import torch
from torch import nn

import tritonfp8
from tritonfp8 import guard
from tritonfp8._formats import E4M3
from tritonfp8.nn import FP8Linear, calibrate, dequantize_weight


def _need_gemm():
    try:
        from tritonfp8.gemm import gemm  # noqa: F401
    except ImportError:
        pytest.skip("tritonfp8.gemm is not in this build yet")


@pytest.fixture(autouse=True)
def _clean():
    guard.reset_stats()
    old = guard.get_config()
    yield
    guard.set_policy(old.policy, max_saturation=old.max_saturation)
    guard.reset_stats()


def _layer(recipe="row", device="cpu", name="layer0"):
    lin = nn.Linear(64, 32, dtype=torch.bfloat16, device=device)
    with torch.no_grad():
        lin.weight.normal_(0, 0.125)
    m = FP8Linear.from_linear(lin, recipe, name=name)
    if m.input_scale is not None:
        m.input_scale.fill_(1.0)
    return m


def _saturating_input(device, frac_rows=1):
    x = torch.randn(8, 64, device=device, dtype=torch.bfloat16)
    x[:frac_rows, :4] = 1.0e4  # far beyond 448 · scale (scale 1)
    return x


# -- configuration -----------------------------------------------------------------------------------------------


def test_policy_config_and_aliases():
    assert guard.set_policy("warn").policy == "warn-and-fallback"
    with guard.policy("error", max_saturation=0.5) as cfg:
        assert cfg.policy == "error" and guard.get_config().max_saturation == 0.5
    assert guard.get_config().policy == "warn-and-fallback"
    with pytest.raises(ValueError, match="policy"):
        guard.set_policy("panic")
    with pytest.raises(ValueError, match="max_saturation"):
        guard.set_policy(max_saturation=2.0)


def test_input_flags_counts():
    x = torch.tensor([1.0, float("inf"), float("nan"), -500.0, 447.0, float("-inf")])
    assert guard.input_flags(x).tolist() == [3, 0]  # dynamic scale: nothing finite saturates
    assert guard.input_flags(x, torch.tensor(1.0)).tolist() == [3, 3]  # -500, +inf, -inf beyond 448
    assert guard.input_flags(x, torch.tensor(2.0)).tolist() == [3, 2]


# -- eager policies ----------------------------------------------------------------------------------------------


def test_error_policy_raises_on_inf(device):
    m = _layer(device=device)
    x = torch.randn(4, 64, device=device, dtype=torch.bfloat16)
    x[2, 5] = float("inf")
    with guard.policy("error"), pytest.raises(guard.GuardError, match="layer0: input has 1 non-finite"):
        m(x)
    assert isinstance(guard.GuardError("x"), ValueError)
    s = tritonfp8.stats()
    assert s.errors == {"layer0": {"nonfinite": 1}} and s.total_fallbacks == 0


def test_error_policy_raises_on_saturation(device):
    m = _layer("tensor-static", device=device)
    with guard.policy("error"), pytest.raises(guard.GuardError, match=r"beyond the FP8 max 448"):
        m(_saturating_input(device))
    assert tritonfp8.stats().errors["layer0"]["saturation"] == 1


def test_warn_policy_falls_back_to_bf16_and_counts(device):
    m = _layer("tensor-static", device=device)
    x = _saturating_input(device)
    guard.set_policy("warn-and-fallback")
    with pytest.warns(RuntimeWarning, match="layer0: .* beyond the FP8 max .*computing in BF16"):
        y = m(x)
    ref = nn.functional.linear(x, dequantize_weight(m.weight, m.weight_scale, torch.bfloat16), m.bias)
    assert torch.equal(y, ref)  # the BF16 path: unquantized x, dequantized weight
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second fallback of the same layer and reason is counted silently
        m(x)
    s = tritonfp8.stats()
    assert s.fallbacks == {"layer0": {"saturation": 2}} and s.total_fallbacks == 2
    assert s.detections["layer0"]["saturation"] == 2
    assert "fallback layer0: saturation × 2" in str(s)
    assert s.as_dict()["total_fallbacks"] == 2
    tritonfp8.reset_stats()
    assert tritonfp8.stats().total_fallbacks == 0


def test_warn_policy_nan_keeps_other_rows_finite(device):
    """FP8 with a dynamic scale would turn every output NaN; the BF16 fallback confines NaN to its row."""
    m = _layer("tensor", device=device)
    x = torch.randn(4, 64, device=device, dtype=torch.bfloat16)
    x[1, 0] = float("nan")
    with guard.policy("warn"), pytest.warns(RuntimeWarning, match="non-finite"):
        y = m(x)
    assert torch.isnan(y[1]).all() and torch.isfinite(y[[0, 2, 3]]).all()
    assert tritonfp8.stats().fallbacks["layer0"]["nonfinite"] == 1


def test_saturation_below_threshold_is_not_flagged(device):
    _need_gemm()
    m = _layer("tensor-static", device=device)
    x = _saturating_input(device)  # 4 of 512 values saturate: 0.78%
    with guard.policy("error", max_saturation=0.01):
        y = m(x)
    assert torch.isfinite(y).all() and tritonfp8.stats().total_errors == 0


def test_ignore_policy_computes_fp8_and_counts_nothing(device):
    _need_gemm()
    m = _layer("tensor-static", device=device)
    x = _saturating_input(device)
    with guard.policy("ignore"):
        y = m(x)
    assert torch.equal(y, m._forward_fp8(x))  # clipped at 448, as asked
    s = tritonfp8.stats()
    assert s.total_fallbacks == 0 and s.total_errors == 0 and not s.detections


def test_clean_input_passes_all_policies(device):
    _need_gemm()
    m = _layer("row", device=device)
    x = torch.randn(4, 64, device=device, dtype=torch.bfloat16)
    outs = []
    for p in ("ignore", "warn", "error"):
        with guard.policy(p):
            outs.append(m(x))
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])
    assert tritonfp8.stats().total_fallbacks == 0


# -- compiled ----------------------------------------------------------------------------------------------------


def _compile(m):
    import torch._dynamo.testing

    torch._dynamo.reset()
    cnt = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    return torch.compile(m, fullgraph=True, backend=cnt), cnt


def test_compiled_warn_policy_falls_back_inside_the_graph(device):
    m = _layer("tensor-static", device=device, name="blk.q")
    x = _saturating_input(device)
    with guard.policy("warn"), torch.no_grad():
        f, cnt = _compile(m)
        y = f(x)
        y2 = f(x)
    assert cnt.frame_count == 1  # torch.cond: no graph break
    ref = nn.functional.linear(x, dequantize_weight(m.weight, m.weight_scale, torch.bfloat16), m.bias)
    assert torch.equal(y, ref) and torch.equal(y2, ref)
    s = tritonfp8.stats()
    assert s.fallbacks["blk.q"]["compiled"] == 2 and s.detections["blk.q"]["saturation"] == 2


def test_compiled_error_policy_raises_lazily(device):
    _need_gemm()
    m = _layer("tensor", device=device, name="blk.k")
    x = torch.randn(4, 64, device=device, dtype=torch.bfloat16)
    x[0, 0] = float("inf")
    with guard.policy("error"), torch.no_grad():
        f, cnt = _compile(m)
        f(x)
    assert cnt.frame_count == 1
    with pytest.raises(guard.GuardError, match="blk.k: 1 compiled call"):
        guard.raise_pending()
    with pytest.raises(guard.GuardError, match="refused 1 call"):
        tritonfp8.stats(raise_errors=True)
    tritonfp8.reset_stats()
    guard.raise_pending()  # nothing pending after a reset


# -- calibrate ---------------------------------------------------------------------------------------------------


class _TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64, dtype=torch.bfloat16)
        self.b = nn.Linear(64, 32, dtype=torch.bfloat16)
        with torch.no_grad():
            self.a.weight.normal_(0, 0.125)
            self.b.weight.normal_(0, 0.125)
            self.b.weight[:, 0] = 0  # b's outlier channel carries no weight: its output is all "small" values

    def forward(self, x):
        h = self.a(x)
        h = h.clone()
        h[:, 0] = 1.0e6  # an outlier channel: a per-tensor scale of 1e6/448 flushes every other value to 0
        return self.b(h)


def test_calibrate_keeps_outlier_layer_in_bf16(device):
    _need_gemm()
    model = _TwoLayers().to(device)
    batches = [torch.randn(8, 64, device=device, dtype=torch.bfloat16) for _ in range(2)]
    report = calibrate(model, batches, recipe="tensor")
    assert report.threshold == 2 * E4M3.eps
    assert report.converted == ["a"] and report.kept_bf16 == ["b"]
    assert report.errors["a"] <= E4M3.eps and report.errors["b"] > 0.5
    assert isinstance(model.a, FP8Linear) and type(model.b) is nn.Linear
    assert "calibration: FP8 relative error" in tritonfp8.stats().kept_bf16["b"]
    assert "kept in BF16" in str(report)


def test_calibrate_sets_static_input_scale(device):
    _need_gemm()
    model = nn.Sequential(nn.Linear(64, 32, dtype=torch.bfloat16)).to(device)
    batches = [torch.randn(8, 64, device=device, dtype=torch.bfloat16) * 3 for _ in range(2)]
    amax = max(float(b.abs().amax()) for b in batches)
    report = calibrate(model, batches, recipe="tensor-static", skip=())
    assert report.converted == ["0"]
    assert float(model[0].input_scale) == pytest.approx(amax / E4M3.max, rel=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none found); run on the H200")
def test_compiled_inductor_fallback_gpu():
    """GPU: inductor compiles the guarded FP8Linear (torch.cond) in one graph; clean inputs give the FP8 result,
    saturating ones the BF16 fallback, and the device counters report the fallback."""
    lin = nn.Linear(4096, 4096, dtype=torch.bfloat16, device="cuda")
    m = FP8Linear.from_linear(lin, "tensor-static", name="gpu.layer")
    m.input_scale.fill_(4.0 / E4M3.max)
    x = torch.randn(256, 4096, device="cuda", dtype=torch.bfloat16)
    bad = x.clone()
    bad[:8] = 1.0e4  # 0.2% of the values beyond 448 * scale
    with guard.policy("warn"), torch.no_grad():
        torch._dynamo.reset()
        f = torch.compile(m, fullgraph=True)
        assert torch.equal(f(x), m._forward_fp8(x))
        assert torch.equal(f(bad), m._forward_bf16(bad))
    assert tritonfp8.stats().fallbacks["gpu.layer"]["compiled"] == 1


# -- CUDA-graph capture --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["warn", "error"])
def test_host_deciding_policy_inside_graph_capture_raises_clearly(device, monkeypatch, policy):
    """Inside a CUDA-graph capture the eager guard cannot read its counts (a host sync): it raises a RuntimeError
    naming the layer, the policy and the capturable alternative, before syncing (capture simulated on CPU)."""
    _need_gemm()
    m = _layer("row", device=device, name="blk.o")
    x = torch.randn(4, 64, device=device, dtype=torch.bfloat16)
    monkeypatch.setattr(guard, "_capturing", lambda t: True)
    monkeypatch.setattr(torch.Tensor, "tolist", lambda self: pytest.fail("host sync inside the capture"))
    with guard.policy(policy), pytest.raises(RuntimeError, match=r"blk\.o.*capture under .*policy\('ignore'\)"):
        m(x)
    with guard.policy("ignore"):  # the capturable policy never reaches the check
        assert torch.equal(m(x), m._forward_fp8(x))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none found); run on the H200")
def test_fp8linear_captures_into_cuda_graph_gpu():
    """GPU: an FP8Linear (dynamic row recipe) captured under policy "ignore" replays to the eager result for new
    input values written into the static buffer; under "warn" the capture raises the guard's clear error."""
    from tritonfp8.bench import harness as H

    lin = nn.Linear(4096, 4096, dtype=torch.bfloat16, device="cuda")
    m = FP8Linear.from_linear(lin, "row", name="gpu.graph")
    x = torch.randn(32, 4096, device="cuda", dtype=torch.bfloat16)
    out = {}
    with guard.policy("ignore"), torch.no_grad():
        g = H.capture_graph(lambda: out.__setitem__("y", m(x)))
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(out["y"], m(x))
    with guard.policy("warn"), torch.no_grad(), pytest.raises(RuntimeError, match="CUDA-graph capture"):
        H.warm_up_for_capture(lambda: m(x), 1)
        g2 = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g2):
            m(x)
