"""Fused QKV in transformers models: :func:`fuse_qkv` swaps each Llama-style attention's q/k/v projections for one
:class:`tritonfp8.FP8QKV` and installs a forward that runs it, applies RoPE, quantizes q/k with static scales and
calls the FP8 attention kernel.

::

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
    tritonfp8.convert_model(model, recipe="row")                       # optional: FP8 o_proj / MLP
    tritonfp8.fuse_qkv(model, calibration_batches=[ids1, ids2])        # fuse + calibrate static q/k/v scales

Why the GEMM epilogue does not write FP8 q/k here. RoPE rotates pairs of columns (d, d + D/2) of each q/k head by a
position-dependent angle, and the static scale must describe the *rotated* tensor; the epilogue quantizes before
any rotation. So the fused GEMM runs with ``unquantized_dtype`` (QKV=2): it writes the BF16 result (..., N) and, from
the same fp32 accumulator, FP8 v with its static scale (v needs no RoPE: that E4M3 v goes straight to the attention
kernel). q and k are rotated in fp32 from the BF16 result and quantized with their static per-KV-head scales by
:func:`rope_quantize` (plain torch: Inductor fuses it into one kernel under ``torch.compile``; in eager it is a few
elementwise kernels). The epilogue's FP8 q/k are written and not read (Hq+Hkv)*D bytes per token; see docs/qkv.md.

Calibration: the q/k scales are amax/448 of the rotated q/k, observed by this forward (:meth:`FP8QKV.observe`);
the v scale is observed by FP8QKV itself. While a layer is calibrating it computes with BF16 q/k/v and the
attention kernel's dynamic per-head quantization (correct outputs, no static scales needed).

Decode / continuation (a KV cache holding earlier tokens): transformers' cache stores BF16 k/v, so these calls
update it with the BF16 rotated k and the BF16 v of the fused GEMM, and run the existing
``attn_implementation="tritonfp8"`` path (:func:`tritonfp8.integrations.transformers.attention_forward`). The
fused FP8 q/k/v path serves prefill (no cached tokens) with no mask or a 2-D padding mask.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Iterable

import torch
from torch import nn

from tritonfp8 import guard
from tritonfp8._formats import E4M3
from tritonfp8.qkv import FP8QKV, HEAD_DIMS, attention_descales

__all__ = ["fuse_qkv", "calibrate_qkv", "fused_qkv_layers", "rope", "rope_quantize"]

_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


# ----------------------------------------------------------------------------------------------------------------
# RoPE and the static-scale quantization of q/k


def rope(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding (transformers' ``rotate_half`` convention) of t (B, S, H, D) with cos/sin (B, S, D), in fp32."""
    tf = t.float()
    c, s = cos.float().unsqueeze(-2), sin.float().unsqueeze(-2)
    half = tf.shape[-1] // 2
    return tf * c + torch.cat((-tf[..., half:], tf[..., :half]), dim=-1) * s


def _quantize_heads(t: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """t (..., H, D) fp32 -> E4M3 with per-KV-head scale (Hkv,) (a query head uses its KV group's scale), by the
    library's rule: IEEE division, saturation to ±448, round to nearest even (as ``quantize_torch``)."""
    h = t.shape[-2]
    s = scale.reshape(-1).float()
    s = s.repeat_interleave(h // s.numel()).reshape(h, 1)
    return torch.clamp(t / s, -E4M3.max, E4M3.max).to(E4M3.torch_dtype)


def rope_quantize(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """RoPE then static per-KV-head E4M3 quantization: t (B, S, H, D) -> E4M3 (B, S, H, D) contiguous."""
    return _quantize_heads(rope(t, cos, sin), scale)


# ----------------------------------------------------------------------------------------------------------------
# the installed forward


def _reference_attention(module, q, k, v, attention_mask, kwargs):
    """The unfused path on BF16 (B, S, H, D) q and (B, Hkv, Sk, D) k/v: ``attention_forward`` (dynamic per-head
    FP8 quantization in the attention kernel; SDPA for what the kernel does not support, counted in stats())."""
    from tritonfp8.integrations.transformers import attention_forward

    dropout = getattr(module, "attention_dropout", 0.0) if module.training else 0.0
    out, _ = attention_forward(module, q.transpose(1, 2), k, v, attention_mask, dropout=dropout,
                               scaling=module.scaling, **kwargs)
    return out


def _fused_attention(module, qr, kr, vc, v8, attention_mask, out_dtype):
    """FP8 prefill: rotated fp32 q/k quantized with the static scales, the epilogue's E4M3 v, the FP8 kernel."""
    from tritonfp8.integrations.transformers import _fp8_dense, _fp8_varlen, _layer_name, _sdpa_bhsd

    qkv = module.qkv_proj
    batch = qr.shape[0]
    causal = getattr(module, "is_causal", True)

    def fp8(qr, kr, vc):
        descales = {f"{n}_descale": attention_descales(getattr(qkv, f"{n}_scale"), batch) for n in "qkv"}
        q8, k8 = _quantize_heads(qr, qkv.q_scale), _quantize_heads(kr, qkv.k_scale)
        if attention_mask is None:
            return _fp8_dense(q8, k8, v8, causal, module.scaling, out_dtype, **descales)
        return _fp8_varlen(q8, k8, v8, attention_mask, causal, module.scaling, out_dtype, **descales)

    def bf16(qr, kr, vc):
        o = _sdpa_bhsd(*(t.to(out_dtype).transpose(1, 2) for t in (qr, kr, vc)), causal, module.scaling,
                       attention_mask)
        return o.transpose(1, 2)

    # The guard checks the high-precision q/k/v for non-finite values (static-scale saturation is not checked
    # here: the per-KV-head scales do not fit the guard's single-scale test; see docs/qkv.md).
    layer = "" if torch.compiler.is_compiling() else _layer_name(module)
    return guard.guarded_call(layer, (qr, kr, vc), fp8, bf16, counters=getattr(module, "_guard_counts", None))


def _fused_forward(self, hidden_states, position_embeddings=None, attention_mask=None, cache=None, **kwargs):
    """LlamaAttention.forward with the fused FP8 QKV projection (see the module docstring)."""
    past = kwargs.pop("past_key_values", None)
    cache = cache if cache is not None else past
    if position_embeddings is None:
        raise ValueError(f"{type(self).__name__}: position_embeddings (cos, sin) are required (RoPE)")
    qkv: FP8QKV = self.qkv_proj
    b, s = hidden_states.shape[:-1]
    dt = hidden_states.dtype if hidden_states.dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
    hq, hkv, d = qkv.num_heads, qkv.num_kv_heads, qkv.head_dim
    cos, sin = position_embeddings
    calibrating = qkv.calibrating
    r = qkv(hidden_states, observe="v", unquantized_dtype=torch.float32 if calibrating else dt)
    qc, kc, vc = torch.split(r.unquantized, [hq * d, hkv * d, hkv * d], dim=-1)
    qr = rope(qc.view(b, s, hq, d), cos, sin)
    kr = rope(kc.view(b, s, hkv, d), cos, sin)
    vc = vc.view(b, s, hkv, d)
    if calibrating:
        qkv.observe("q", qr)
        qkv.observe("k", kr)
    k_full, v_full = kr.to(dt).transpose(1, 2), vc.to(dt).transpose(1, 2)
    if cache is not None:
        k_full, v_full = cache.update(k_full, v_full, self.layer_idx, kwargs=kwargs)
    fused = (not calibrating and k_full.shape[2] == s and (attention_mask is None or attention_mask.dim() == 2)
             and not (self.training and getattr(self, "attention_dropout", 0.0)))
    if fused:
        out = _fused_attention(self, qr, kr, vc, r.v, attention_mask, dt)
    else:
        out = _reference_attention(self, qr.to(dt), k_full, v_full, attention_mask, kwargs)
    out = out.to(dt).reshape(b, s, hq * d)
    return self.o_proj(out), None


_fused_classes: dict = {}


def _fused_class(cls):
    """A subclass of the attention class with :func:`_fused_forward` (isinstance checks on the model keep
    holding); one per original class."""
    if cls not in _fused_classes:
        _fused_classes[cls] = type(f"FusedQKV{cls.__name__}", (cls,), {"forward": _fused_forward,
                                                                        "__module__": __name__})
    return _fused_classes[cls]


# ----------------------------------------------------------------------------------------------------------------
# finding and converting attention modules


def _is_attention(m: nn.Module) -> bool:
    return all(hasattr(m, p) for p in _PROJECTIONS)


def fused_qkv_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """(qualified name, attention module) for every attention of ``model`` that :func:`fuse_qkv` converted."""
    return [(n, m) for n, m in model.named_modules() if type(m) in _fused_classes.values()]


def _float_weight(proj: nn.Module, qual: str):
    """(weight, bias) of an nn.Linear or an FP8Linear (dequantized to fp32) for the concatenation."""
    from tritonfp8.nn import FP8Linear, dequantize_weight

    if isinstance(proj, FP8Linear):
        return dequantize_weight(proj.weight, proj.weight_scale, torch.float32), proj.bias
    if isinstance(proj, nn.Linear):
        return proj.weight, proj.bias
    raise TypeError(f"model: {qual} must be an nn.Linear or a tritonfp8.FP8Linear to fuse, got {type(proj).__name__}")


def _heads(name: str, m: nn.Module) -> tuple[int, int, int]:
    cfg = getattr(m, "config", None)
    hq, hkv = getattr(cfg, "num_attention_heads", None), getattr(cfg, "num_key_value_heads", None)
    d = getattr(m, "head_dim", None)
    if not all(isinstance(v, int) for v in (hq, hkv, d)):
        raise TypeError(f"model: {name} ({type(m).__name__}) is not a Llama-style attention: it needs "
                        f"config.num_attention_heads, config.num_key_value_heads and head_dim")
    for attr in ("q_norm", "k_norm"):  # Qwen3/OLMo2-style q/k norms run between the projection and RoPE
        if getattr(m, attr, None) is not None:
            raise ValueError(f"model: {name} ({type(m).__name__}) has {attr}; fuse_qkv supports Llama-style "
                             "attention (projection, RoPE, attention) only")
    if getattr(m, "sliding_window", None) is not None:
        raise ValueError(f"model: {name} uses a sliding window, which the FP8 attention kernel does not support")
    if d not in HEAD_DIMS:
        raise ValueError(f"head_dim: {name} has head_dim {d}; fuse_qkv needs one of {HEAD_DIMS} (the FP8 "
                         "attention kernel's native head dims)")
    if hkv < 1 or hq % hkv:
        raise ValueError(f"model: {name}: num_attention_heads ({hq}) must be a multiple of num_key_value_heads "
                         f"({hkv})")
    return hq, hkv, d


def fuse_qkv(model: nn.Module, calibration_batches: Iterable | None = None, *, recipe=None, margin: float = 1.0
             ) -> nn.Module:
    """Replace the q/k/v projections of every Llama-style attention in ``model`` by one :class:`tritonfp8.FP8QKV`
    and install the fused forward (GEMM -> RoPE + static quantization -> FP8 attention); in place, returns ``model``.

    Attention modules are those with ``q_proj``/``k_proj``/``v_proj``/``o_proj`` (nn.Linear or FP8Linear), a
    ``config`` with ``num_attention_heads``/``num_key_value_heads`` and ``head_dim`` in (64, 128, 256); RoPE from
    the ``position_embeddings`` transformers passes. ``o_proj`` is kept as it is (FP8Linear if converted).
    ``recipe``: the FP8QKV recipe (default: the q_proj's recipe if it is an FP8Linear, else ``"row"``).

    ``calibration_batches`` (model inputs, as :func:`tritonfp8.calibrate` takes them): run to set the static q/k/v
    scales (amax/448 · ``margin``). Without them the layers stay in calibration mode (BF16 q/k/v, dynamic
    quantization in the attention kernel) until :func:`calibrate_qkv` runs, or a fused state_dict is loaded (which
    sets the scales and ends calibration). The model's attention implementation is set to ``"tritonfp8"``.
    TypeError when ``model`` has no such attention; ValueError for an unsupported one (head_dim, q/k norms,
    sliding window), raised before anything is changed.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    found = [(n, m) for n, m in model.named_modules() if _is_attention(m)]
    if not found:
        if fused_qkv_layers(model):
            raise ValueError("model: its attention q/k/v projections are fused already")
        raise TypeError(f"model: no Llama-style attention (q_proj/k_proj/v_proj/o_proj) found in "
                        f"{type(model).__name__}")
    plans = []
    for name, m in found:  # validate everything first: a bad layer leaves the model untouched
        heads = _heads(name or type(m).__name__, m)
        parts = [_float_weight(getattr(m, p), f"{name}.{p}" if name else p) for p in _PROJECTIONS[:3]]
        plans.append((name, m, heads, parts))
    for name, m, (hq, hkv, d), parts in plans:
        r = recipe if recipe is not None else getattr(m.q_proj, "recipe", "row")
        qkv = FP8QKV.from_linears(*(SimpleNamespace(weight=w, bias=b) for w, b in parts), num_heads=hq,
                                  num_kv_heads=hkv, head_dim=d, recipe=r)
        qkv.calibrating = True
        for p in _PROJECTIONS[:3]:
            delattr(m, p)
        m.qkv_proj = qkv
        m.__class__ = _fused_class(type(m))
    if hasattr(model, "set_attn_implementation"):
        from tritonfp8.integrations import transformers as tfp8

        tfp8.register()
        model.set_attn_implementation(tfp8.NAME)
        tfp8.prepare(model)
    if calibration_batches is not None:
        calibrate_qkv(model, calibration_batches, margin=margin)
    return model


def calibrate_qkv(model: nn.Module, batches: Iterable, margin: float = 1.0) -> nn.Module:
    """Set the static q/k/v scales of every fused attention of ``model`` from ``batches`` (model inputs): amax of
    the rotated q/k and of v per KV head, / 448, times ``margin``. Restarts the observation; returns ``model``."""
    from tritonfp8.nn import _call

    layers = fused_qkv_layers(model)
    if not layers:
        raise ValueError("model: no fused attention; call tritonfp8.fuse_qkv(model) first")
    if not (isinstance(margin, (int, float)) and margin > 0):
        raise ValueError(f"margin: must be a positive number, got {margin!r}")
    for _, m in layers:
        m.qkv_proj.calibrating = True
        for n in "qkv":
            getattr(m.qkv_proj, f"{n}_amax").zero_()
    seen = 0
    with torch.no_grad():
        for batch in batches:
            _call(model, batch)
            seen += 1
    if not seen:
        raise ValueError("batches: no calibration batch given (an empty iterable)")
    for _, m in layers:
        m.qkv_proj.finish_calibration(margin)
    return model
