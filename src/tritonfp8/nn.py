"""FP8 drop-in for ``nn.Linear``, named recipes, and in-place model conversion.

A recipe is a frozen :class:`Recipe`: how activations and weights are scaled, in which FP8 formats, and how the
GEMM accumulates. The named ones (:data:`RECIPES`):

=================  ========================  ==========================  ==========================
name               activations (per call)    weight (once)               accumulation
=================  ========================  ==========================  ==========================
``tensor``         dynamic per-tensor ``()``  per-tensor ``()``           fast
``tensor-static``  static per-tensor ``()``   per-tensor ``()``           fast
``row``            per-token ``(M, 1)``       per-channel ``(N, 1)``      fast
``block``          1×128 ``(M, K/128)``       128×128 ``(N/128, K/128)``  precise (per K block)
=================  ========================  ==========================  ==========================

``"<name>-precise"`` (or ``recipe(name, accumulate="precise")``) promotes the accumulation into fp32 at least every
128 K, which matches cuBLAS exact accumulation; ``fast`` lets the tensor core accumulate over all of K in reduced
precision (as cuBLAS ``use_fast_accum``). All scales are fp32 dequantization factors: ``x ≈ xq.float() * scale``.

``tensor-static`` quantizes activations with a stored ``input_scale`` (set by :func:`tritonfp8.calibrate` from the
calibration batches' amax, or by hand; 1.0 until then) instead of a per-call amax: one reduction pass less per call,
and the only recipe whose activations can saturate, which the precision guard watches (:mod:`tritonfp8.guard`).

Layout: :class:`FP8Linear` keeps the weight as nn.Linear does, (out_features, in_features) row-major — (N, K),
K contiguous, which is the K-major operand FP8 wgmma reads — as E4M3, quantized once. Inputs (..., K) in
bf16/fp16/fp32 give outputs (..., N) in the input's dtype. Inference only: there is no backward.

Shape rule: the GEMM reads both operands through TMA, which needs 16-byte aligned rows, so ``in_features`` and
``out_features`` must be multiples of 16. :func:`convert_model` leaves other layers in BF16 and logs why (or raises
with ``strict=True``); :meth:`FP8Linear.from_linear` raises ValueError.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from dataclasses import dataclass, replace
from typing import Callable, Iterable

import torch
import torch.nn.functional as F
from torch import nn

from tritonfp8 import _backend, guard, ops
from tritonfp8._formats import FLOAT_INPUT_DTYPES, fp8_format

log = logging.getLogger("tritonfp8")

__all__ = ["Recipe", "RECIPES", "recipe", "FP8Linear", "convert_model", "calibrate", "CalibrationReport"]

# TMA: 16-byte aligned row strides; one FP8 element is one byte.
FEATURE_MULTIPLE = 16


@dataclass(frozen=True)
class Recipe:
    """How an :class:`FP8Linear` quantizes and multiplies.

    ``activation``/``weight``: granularities as :func:`tritonfp8.quantize` takes them ("tensor", "row", (1, 128),
    (128, 128)); ``static_activation``: activations use the stored per-tensor ``input_scale`` instead of a
    per-call amax (activation granularity must be "tensor"); ``accumulate``: "fast" or "precise".
    """

    name: str
    activation: object = "tensor"
    weight: object = "tensor"
    accumulate: str = "fast"
    activation_dtype: torch.dtype = torch.float8_e4m3fn
    weight_dtype: torch.dtype = torch.float8_e4m3fn
    static_activation: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation", ops.granularity_from_str(ops.granularity_to_str(self.activation)))
        object.__setattr__(self, "weight", ops.granularity_from_str(ops.granularity_to_str(self.weight)))
        if self.accumulate not in ("fast", "precise"):
            raise ValueError(f"accumulate: expected 'fast' or 'precise', got {self.accumulate!r}")
        fp8_format(self.activation_dtype, "activation_dtype")
        fp8_format(self.weight_dtype, "weight_dtype")
        if self.static_activation and self.activation != "tensor":
            raise ValueError(
                f"static_activation: a static activation scale is per tensor; activation must be 'tensor', "
                f"got {self.activation!r}"
            )

    @property
    def fmax(self) -> float:
        return fp8_format(self.activation_dtype).max


RECIPES: dict[str, Recipe] = {
    "tensor": Recipe("tensor", "tensor", "tensor", "fast"),
    "tensor-static": Recipe("tensor-static", "tensor", "tensor", "fast", static_activation=True),
    "row": Recipe("row", "row", "row", "fast"),
    "block": Recipe("block", (1, 128), (128, 128), "precise"),
}
for _n in ("tensor", "tensor-static", "row"):
    RECIPES[f"{_n}-precise"] = replace(RECIPES[_n], name=f"{_n}-precise", accumulate="precise")
del _n


def recipe(name: str | Recipe = "row", **overrides) -> Recipe:
    """The named recipe (or ``name`` itself if a :class:`Recipe`), with fields replaced by ``overrides``.

    ``recipe("row", accumulate="precise")`` is ``RECIPES["row-precise"]``; ValueError naming ``recipe`` for an
    unknown name.
    """
    if isinstance(name, Recipe):
        r = name
    elif isinstance(name, str) and name in RECIPES:
        r = RECIPES[name]
    else:
        raise ValueError(f"recipe: expected one of {', '.join(RECIPES)} or a tritonfp8.nn.Recipe, got {name!r}")
    if not overrides:
        return r
    new = replace(r, **overrides)
    # A named recipe when one matches (e.g. row + accumulate="precise" is "row-precise"), else a derived name.
    for named in RECIPES.values():
        if replace(named, name=new.name) == new:
            return named
    return replace(new, name=r.name + "+" + ",".join(f"{k}={v}" for k, v in sorted(overrides.items())))


_resolve_recipe = recipe


# ----------------------------------------------------------------------------------------------------------------
# weight quantization and dequantization (pure torch where no kernel is needed)


def _quantize_weight(w: torch.Tensor, r: Recipe) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, K) float weight -> (N, K) FP8 and its fp32 scale, with the recipe's weight granularity.

    On CUDA the quantization kernel runs; on CPU the plain-PyTorch reference (bit-identical to the kernel by
    contract), so models convert on CPU without the interpreter.
    """
    w = w.detach()
    if w.device.type == "cuda":
        return ops.quantize(w, r.weight, r.weight_dtype)
    from tritonfp8.quantize import quantize_torch

    xq, s = quantize_torch(w.float() if w.dtype not in FLOAT_INPUT_DTYPES else w, r.weight, r.weight_dtype)
    return xq, s


def dequantize_weight(weight: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """(N, K) FP8 weight and its scale -> ``weight.float() * scale`` in ``dtype`` (plain PyTorch, traceable)."""
    from tritonfp8.quantize import dequantize_torch

    return dequantize_torch(weight, scale, dtype)


def apply_keeping_dtypes(module: nn.Module, base_apply, fn, recurse: bool, names) -> nn.Module:
    """``nn.Module._apply`` (``base_apply``) that moves the buffers ``names`` between devices but never casts them:
    ``.to(dtype)`` / ``.half()`` / ``.bfloat16()`` would otherwise turn FP8 weights and fp32 scales into floats."""
    keep = {name: module._buffers[name] for name in names if module._buffers.get(name) is not None}
    for name in keep:
        module._buffers[name] = None
    base_apply(fn, recurse)
    for name, t in keep.items():
        # Apply fn to an empty tensor of the same dtype to learn only where fn moves tensors.
        probe = fn(torch.empty(0, dtype=t.dtype, device=t.device))
        module._buffers[name] = t if probe.device == t.device else t.to(probe.device)
    return module


# ----------------------------------------------------------------------------------------------------------------
# FP8Linear


def fp8_capable(device: torch.device) -> bool:
    """Whether FP8Linear computes in FP8 on ``device``: CUDA needs FP8 tensor cores (sm_89+); CPU tensors run the
    kernels in the Triton interpreter (tests) and count as capable."""
    return device.type != "cuda" or _backend.has_fp8_tensor_cores(device)


def check_shape(in_features: int, out_features: int) -> str | None:
    """Why a Linear of this shape cannot run in FP8 (None if it can)."""
    bad = [f"{name}={v}" for name, v in (("in_features", in_features), ("out_features", out_features))
           if v % FEATURE_MULTIPLE]
    if bad:
        return (f"{' and '.join(bad)} not a multiple of {FEATURE_MULTIPLE} (the FP8 GEMM reads rows through TMA, "
                "which needs 16-byte alignment)")
    return None


class FP8Linear(nn.Module):
    """``y = x Wᵀ + b`` with W stored in FP8 (quantized once) and x quantized per call, as the recipe says.

    Buffers: ``weight`` (N, K) FP8 (nn.Linear layout, K contiguous); ``weight_scale`` fp32 dequantization
    factors, () / (N, 1) / (ceil(N/128), ceil(K/128)) by recipe; ``input_scale`` () fp32 for static recipes.
    ``bias`` (N,) is a parameter without gradient in the original Linear's dtype.

    ``state_dict`` round-trips through :meth:`load_state_dict`; loading an ``nn.Linear`` state dict (float weight,
    no ``weight_scale``) quantizes the weight with this layer's recipe, so a converted model loads its original
    BF16 checkpoint.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        recipe: str | Recipe = "row",
        device=None,
        dtype: torch.dtype = torch.bfloat16,
    ) -> None:
        super().__init__()
        reason = check_shape(in_features, out_features)
        if reason:
            raise ValueError(f"FP8Linear: {reason}")
        self.in_features = in_features
        self.out_features = out_features
        self.recipe = _resolve_recipe(recipe)
        r = self.recipe
        self.layer_name = "FP8Linear"
        self.register_buffer("weight", torch.zeros(out_features, in_features, dtype=r.weight_dtype, device=device))
        scale_shape = ops.quantize_scale_shape((out_features, in_features), r.weight)
        self.register_buffer("weight_scale", torch.ones(scale_shape, dtype=torch.float32, device=device))
        if r.static_activation:
            self.register_buffer("input_scale", torch.ones((), dtype=torch.float32, device=device))
        else:
            self.input_scale = None
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_features, dtype=dtype, device=device), requires_grad=False)
        else:
            self.register_parameter("bias", None)
        # Device counters of compiled, guarded forwards: [nonfinite, saturation, fallbacks, errors].
        self.register_buffer("_guard_counts", torch.zeros(4, dtype=torch.int64, device=device), persistent=False)
        guard.register_device_counters(self)

    # -- construction ------------------------------------------------------------------------------------------

    @classmethod
    def from_linear(cls, linear: nn.Linear, recipe: str | Recipe = "row", name: str | None = None) -> "FP8Linear":
        """An FP8Linear with ``linear``'s weight quantized (once) and its bias copied; ValueError naming
        ``linear`` when its shape cannot run in FP8."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear: expected a torch.nn.Linear, got {type(linear).__name__}")
        reason = check_shape(linear.in_features, linear.out_features)
        if reason:
            raise ValueError(f"linear{' ' + name if name else ''}: {reason}")
        w = linear.weight
        if w.dtype not in FLOAT_INPUT_DTYPES:
            raise TypeError(f"linear: expected a bf16/fp16/fp32 weight, got {w.dtype}")
        bias_dtype = linear.bias.dtype if linear.bias is not None else w.dtype
        m = cls(linear.in_features, linear.out_features, linear.bias is not None, recipe, device="meta",
                dtype=bias_dtype)
        wq, ws = _quantize_weight(w, m.recipe)
        m.weight = wq.contiguous()
        m.weight_scale = ws.reshape(m.weight_scale.shape).float().contiguous()
        if m.input_scale is not None:
            m.input_scale = torch.ones((), dtype=torch.float32, device=w.device)
        if linear.bias is not None:
            m.bias = nn.Parameter(linear.bias.detach().clone(), requires_grad=False)
        m._guard_counts = torch.zeros(4, dtype=torch.int64, device=w.device)
        if name:
            m.layer_name = name
        return m

    # -- state dict: accept an nn.Linear checkpoint ------------------------------------------------------------

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        wkey, skey = prefix + "weight", prefix + "weight_scale"
        w = state_dict.get(wkey)
        if w is not None and w.dtype in FLOAT_INPUT_DTYPES and skey not in state_dict:
            # An nn.Linear checkpoint: quantize its weight with this layer's recipe.
            wq, ws = _quantize_weight(w.to(self.weight.device), self.recipe)
            state_dict = dict(state_dict)
            state_dict[wkey] = wq
            state_dict[skey] = ws.reshape(self.weight_scale.shape)
            if self.input_scale is not None and prefix + "input_scale" not in state_dict:
                state_dict[prefix + "input_scale"] = self.input_scale
        elif w is not None and w.dtype != self.weight.dtype:
            error_msgs.append(
                f"{wkey}: expected {self.weight.dtype} (recipe {self.recipe.name!r}) or a float nn.Linear weight, "
                f"got {w.dtype}"
            )
            return
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    # -- keep FP8/fp32 buffers through .to(dtype) / .half() ----------------------------------------------------

    def _apply(self, fn, recurse: bool = True):
        return apply_keeping_dtypes(self, super()._apply, fn, recurse,
                                    ("weight", "weight_scale", "input_scale", "_guard_counts"))

    # -- forward -----------------------------------------------------------------------------------------------

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"recipe={self.recipe.name!r}")

    def _bias_for(self, dtype: torch.dtype) -> torch.Tensor | None:
        b = self.bias
        if b is None or b.dtype in (dtype, torch.float32):
            return b
        return b.to(dtype)

    def _forward_fp8(self, x: torch.Tensor) -> torch.Tensor:
        r = self.recipe
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        xq, sx = ops.quantize(x2, r.activation, r.activation_dtype, self.input_scale)
        # One GEMM for every recipe: the scale shapes say tensor / row / block (the kernel applies block scales in
        # its K loop).
        y = ops.gemm(xq, self.weight, sx, self.weight_scale, out_dtype=x.dtype, bias=self._bias_for(x.dtype),
                     accumulate=r.accumulate)
        return y.reshape(*lead, self.out_features)

    def _forward_bf16(self, x: torch.Tensor) -> torch.Tensor:
        """The same layer without quantizing x: F.linear with the dequantized FP8 weight, in x's dtype."""
        w = dequantize_weight(self.weight, self.weight_scale, x.dtype)
        return F.linear(x, w, self._bias_for(x.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.in_features:
            raise ValueError(f"x: expected last dim {self.in_features} (in_features), got shape {tuple(x.shape)}")
        if x.dtype not in FLOAT_INPUT_DTYPES:
            raise TypeError(f"x: expected bf16, fp16 or fp32, got {x.dtype}")
        # Eager only: inside a compiled graph the device check is not traced (the quantize and gemm ops fall back
        # to BF16 themselves on GPUs without FP8 tensor cores, with their own one-time warnings).
        if not torch.compiler.is_compiling() and not fp8_capable(x.device):
            guard.record_fallback(self.layer_name, guard.NO_FP8, warn=False)
            _backend.warn_once("no-fp8", "tritonfp8: this GPU has no FP8 tensor cores (needs sm_89 or newer); "
                                         "FP8Linear layers compute in BF16 (counted in tritonfp8.stats())")
            return self._forward_bf16(x)
        # The layer name only labels eager fallbacks in stats(); compiled calls count on the device (counters), and
        # reading a per-layer string there would make Dynamo guard on it: one recompile per layer (the H200 model
        # bench hit the recompile limit at 8 layers, 2026-11-29).
        layer = "" if torch.compiler.is_compiling() else self.layer_name
        return guard.guarded_call(
            layer, x, self._forward_fp8, self._forward_bf16,
            scale=self.input_scale, fmax=self.recipe.fmax, counters=self._guard_counts,
        )


# ----------------------------------------------------------------------------------------------------------------
# model conversion


def _matcher(skip) -> Callable[[str], bool]:
    """``skip``: None, a pattern, a list of patterns (regular expressions searched in the qualified module name,
    so "lm_head" matches "model.lm_head"), or a callable ``name -> bool``."""
    if skip is None:
        return lambda name: False
    if callable(skip):
        return skip
    pats = [skip] if isinstance(skip, str) else list(skip)
    regs = []
    for p in pats:
        if not isinstance(p, str):
            raise TypeError(f"skip: expected name patterns (str), a callable or None, got {p!r}")
        regs.append(re.compile(p))
    return lambda name: any(r.search(name) for r in regs)


def _eligible_linears(model: nn.Module, skip, strict: bool):
    """(qualified name, parent, attribute, linear) for each nn.Linear to convert; notes the rest as BF16."""
    skipped = _matcher(skip)
    out = []
    for name, mod in model.named_modules():
        for attr, child in mod.named_children():
            if type(child) is not nn.Linear:
                continue
            qual = f"{name}.{attr}" if name else attr
            if skipped(qual):
                guard.record_kept_bf16(qual, "skipped by pattern")
                continue
            reason = check_shape(child.in_features, child.out_features)
            if reason is None and not fp8_capable(child.weight.device):
                reason = "this GPU has no FP8 tensor cores (needs sm_89 or newer)"
                _backend.warn_once("no-fp8-convert", f"tritonfp8.convert_model: {reason}; the model stays in BF16 "
                                                     "(see tritonfp8.stats())")
            if reason is not None:
                if strict:
                    raise ValueError(f"model: cannot convert {qual} to FP8: {reason}")
                guard.record_kept_bf16(qual, reason)
                continue
            out.append((qual, mod, attr, child))
    return out


def convert_model(model: nn.Module, recipe: str | Recipe = "row", skip=("lm_head",), strict: bool = False
                  ) -> nn.Module:
    """Replace every ``nn.Linear`` of ``model`` in place by an :class:`FP8Linear` (weights quantized once).

    ``skip``: module-name patterns (regular expressions searched in the qualified name) or a callable; matched
    layers stay as they are (default: ``lm_head``). Layers whose shape cannot run in FP8 (features not multiples of
    16) or on a GPU without FP8 tensor cores stay in BF16 with the reason logged (logger ``"tritonfp8"``) and listed
    in ``tritonfp8.stats().kept_bf16`` — or, with ``strict=True``, raise ValueError. Returns ``model``.
    Subclasses of nn.Linear are left alone (their forward may do more than a matmul).
    """
    r = _resolve_recipe(recipe)
    for qual, parent, attr, lin in _eligible_linears(model, skip, strict):
        setattr(parent, attr, FP8Linear.from_linear(lin, r, name=qual))
        guard.forget_kept_bf16(qual)
    return model


# ----------------------------------------------------------------------------------------------------------------
# calibration


@dataclass
class CalibrationReport:
    """Per layer: relative error of the FP8 output vs the BF16 layer on the calibration data, and the decision;
    ``attention``: the attention layers' report when they were calibrated too."""

    threshold: float
    errors: dict  # name -> relative Frobenius error (float)
    converted: list  # names now FP8Linear
    kept_bf16: list  # names kept as nn.Linear because their error exceeded the threshold
    input_amax: dict  # name -> activation amax seen (static recipes use it for input_scale)
    attention: object = None  # tritonfp8.integrations.transformers.AttentionCalibrationReport, or None

    def __str__(self) -> str:
        lines = [f"calibration (threshold {self.threshold:.3g}): {len(self.converted)} FP8, "
                 f"{len(self.kept_bf16)} kept in BF16"]
        for name, e in self.errors.items():
            lines.append(f"  {'bf16' if name in self.kept_bf16 else 'fp8 ':4s} {name}: rel. error {e:.4f}")
        if self.attention is not None:
            lines.append(str(self.attention))
        return "\n".join(lines)


def _call(model: nn.Module, batch):
    if isinstance(batch, dict):
        return model(**batch)
    if isinstance(batch, (tuple, list)):
        return model(*batch)
    return model(batch)


def calibrate(
    model: nn.Module,
    batches: Iterable,
    recipe: str | Recipe = "row",
    threshold: float | None = None,
    skip=("lm_head",),
    strict: bool = False,
    attention: bool | None = None,
) -> CalibrationReport:
    """Measure each Linear's FP8 error against BF16 on real data, convert the good ones, keep the rest in BF16.

    ``model`` holds ``nn.Linear`` layers (BF16); ``batches`` are model inputs (a tensor, a tuple of positional
    arguments or a dict of keyword arguments each). For every eligible layer (see :func:`convert_model` for
    ``skip``/``strict``) a hook feeds the layer's real input to its FP8 candidate and accumulates the relative
    Frobenius error ``||y_fp8 - y_bf16|| / ||y_bf16||`` over all batches (per-layer error: each layer sees the
    BF16 model's activations). Layers above ``threshold`` stay nn.Linear (listed in ``tritonfp8.stats()``), the
    others are replaced in place; static recipes get ``input_scale = amax / fmax`` from the batches.

    ``threshold`` defaults to ``2 · eps`` of the activation format (E4M3: 2 · 2^-4 = 0.125): a well-scaled FP8 GEMM
    stays near ``eps`` (both operands rounded, errors averaging over K), so twice that flags layers whose
    activations have outliers per-tensor/row scaling cannot serve.

    ``attention``: also calibrate the FP8 attention layers in the same pass
    (:func:`tritonfp8.integrations.transformers.calibrate_attention`: error vs ``attention_torch``, layers above
    the threshold kept on SDPA; report in ``report.attention``). None (default): when ``model`` uses the
    ``"tritonfp8"`` attention implementation; True: required (ValueError if no call reached it); False: never.
    ``threshold``, when given, applies to both; the attention default is the same rule for E4M3.
    """
    r = _resolve_recipe(recipe)
    attention_threshold = threshold
    if threshold is None:
        threshold = 2 * fp8_format(r.activation_dtype).eps
    cands = _eligible_linears(model, skip, strict)
    acc: dict = {}
    fp8: dict = {}
    hooks = []

    def make_hook(qual):
        def hook(mod, args, out):
            x = args[0]
            cand = fp8[qual]
            with guard.policy("ignore"):
                y8 = cand._forward_fp8(x) if cand.input_scale is None else _static_probe(cand, x)
            d = (y8.double() - out.double())
            e = acc[qual]
            e[0] += d.square().sum()
            e[1] += out.double().square().sum()
            e[2] = torch.maximum(e[2], x.detach().abs().amax().double())
        return hook

    for qual, parent, attr, lin in cands:
        fp8[qual] = FP8Linear.from_linear(lin, r, name=qual)
        acc[qual] = [torch.zeros((), dtype=torch.float64, device=lin.weight.device) for _ in range(3)]
        hooks.append(lin.register_forward_hook(make_hook(qual)))
    probe = _attention_probe(model, attention)
    try:
        with torch.no_grad(), probe or contextlib.nullcontext():
            for batch in batches:
                _call(model, batch)
    finally:
        for h in hooks:
            h.remove()

    report = CalibrationReport(threshold=threshold, errors={}, converted=[], kept_bf16=[], input_amax={})
    if probe is not None:
        report.attention = probe.decide(attention_threshold, require=bool(attention))
    for qual, parent, attr, lin in cands:
        err2, ref2, amax = (float(t) for t in acc[qual])
        rel = _rel_from_sums(err2, ref2)
        report.errors[qual] = rel
        report.input_amax[qual] = amax
        if rel > threshold:
            report.kept_bf16.append(qual)
            guard.record_kept_bf16(qual, f"calibration: FP8 relative error {rel:.4f} > threshold {threshold:.4g}")
            continue
        m = fp8[qual]
        if m.input_scale is not None and amax > 0:
            m.input_scale.fill_(amax / r.fmax)
        setattr(parent, attr, m)
        guard.forget_kept_bf16(qual)
        report.converted.append(qual)
    return report


def _rel_from_sums(err2: float, ref2: float) -> float:
    """Relative Frobenius error ``sqrt(err2 / ref2)`` from the accumulated squared sums of a calibration; inf for a
    non-finite one (a NaN output never passes a threshold: nothing is converted on that evidence)."""
    rel = (err2 / ref2) ** 0.5 if ref2 > 0 else (0.0 if err2 == 0 else float("inf"))
    return float("inf") if rel != rel else rel


def _attention_probe(model: nn.Module, attention: bool | None):
    """The transformers integration's attention calibration for :func:`calibrate`, or None. Without the integration
    imported no model can use its attention (importing it registers it), so ``attention=None`` imports nothing."""
    if attention is False:
        return None
    tfp8 = sys.modules.get("tritonfp8.integrations.transformers")
    if attention is None and (tfp8 is None or not tfp8.uses_fp8_attention(model)):
        return None
    if tfp8 is None:
        import tritonfp8.integrations.transformers as tfp8
    return tfp8._AttentionProbe(model)


def _static_probe(cand: FP8Linear, x: torch.Tensor) -> torch.Tensor:
    """A static-scale candidate measured with the scale calibration will give it: this batch's amax / fmax."""
    old = cand.input_scale.clone()
    cand.input_scale.copy_((x.detach().abs().amax().float() / cand.recipe.fmax).clamp_min(1e-12))
    try:
        return cand._forward_fp8(x)
    finally:
        cand.input_scale.copy_(old)
