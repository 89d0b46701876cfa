"""Hugging Face transformers: FP8 attention as ``attn_implementation="tritonfp8"``, and FP8 linears in one line.

::

    import tritonfp8.integrations.transformers as tfp8     # registers "tritonfp8" with transformers
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="tritonfp8", dtype=torch.bfloat16)
    tfp8.convert(model, recipe="row")                       # nn.Linear -> FP8Linear (lm_head kept in BF16)

    # or both at once:
    model = tfp8.from_config(cfg, recipe="row", dtype=torch.bfloat16)

What runs: every attention call of the model (prefill and each decode step, with transformers' own KV cache)
goes to :func:`tritonfp8.ops.attention` — BF16 q/k/v quantized per (batch, KV head) to E4M3 by the fused kernel,
FP8 flash attention, BF16 out. transformers hands us q (B, Hq, Sq, D) and k/v (B, Hkv, Sk, D); we pass the
(B, S, H, D) transposed views (no copy). Causal masking is bottom-right aligned, so one rule serves prefill
(Sq = Sk) and decode (Sq = 1 sees all Sk keys).

Masks: the registered mask function is transformers' FlashAttention one: ``None`` when nothing is padded, else the
2-D (B, Sk) padding mask. With a padding mask the batch is unpadded into the varlen layout (``cu_seqlens``); that
needs the per-sequence lengths on the host (one sync per call). Other masks (4-D custom masks, sliding windows,
softcapping) are not supported by the FP8 kernel: those calls run PyTorch SDPA and are counted as fallbacks in
:func:`tritonfp8.stats` (reason ``"unsupported-mask"``), never silently.

The precision guard (:mod:`tritonfp8.guard`) checks q, k and v for non-finite values under its current policy;
a flagged call runs SDPA in the input dtype. :func:`calibrate_attention` (also run by :func:`tritonfp8.calibrate`
for models with this attention) measures each layer's FP8 error against :func:`tritonfp8.attention_torch` and keeps
the layers above a threshold on SDPA (module attribute :data:`KEEP_SDPA`, listed in ``tritonfp8.stats().kept_bf16``).

Not yet: the FP8 paged KV cache (:func:`tritonfp8.write_kv_cache` / :func:`tritonfp8.decode_attention`) is not wired
into transformers' Cache classes; decode steps read transformers' BF16 cache through the prefill kernel.
``python -m tritonfp8 bench model`` uses the paged FP8 cache in its own Llama-style decoder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple

import torch
import torch.nn.functional as F

from tritonfp8 import guard, ops
from tritonfp8._formats import E4M3
from tritonfp8.attention import attention_torch
from tritonfp8.nn import _call, _rel_from_sums, convert_model

NAME = "tritonfp8"
UNSUPPORTED_MASK = "unsupported-mask"
# Module attribute set by calibrate_attention: True keeps the layer's attention on SDPA.
KEEP_SDPA = "tritonfp8_keep_sdpa"

__all__ = ["NAME", "KEEP_SDPA", "register", "attention_forward", "convert", "from_config", "prepare",
           "calibrate_attention", "AttentionCalibrationReport", "uses_fp8_attention"]


def _layer_name(module) -> str:
    idx = getattr(module, "layer_idx", None)
    return f"attention[{idx}]" if idx is not None else "attention"


def _sdpa_bhsd(q, k, v, causal: bool, scaling, attention_mask=None):
    """Reference path in (B, H, S, D): SDPA with GQA expansion and bottom-right causal alignment."""
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
    sq, sk = q.shape[2], k.shape[2]
    mask = None
    if attention_mask is not None:
        mask = attention_mask
        if mask.dim() == 2:  # (B, Sk) padding mask, True = attend
            mask = mask[:, None, None, -sk:].bool()
    if causal and sq > 1:
        tri = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(diagonal=sk - sq)
        mask = tri if mask is None else (mask.bool() & tri if mask.dtype == torch.bool else mask.masked_fill(~tri, float("-inf")))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scaling)


def _fp8_dense(q, k, v, causal, scaling, out_dtype, **descales):
    """q (B, Sq, Hq, D), k/v (B, Sk, Hkv, D) -> (B, Sq, Hq, D) through the FP8 kernel (``descales``: the
    ``q_descale``/``k_descale``/``v_descale`` of E4M3 inputs)."""
    return ops.attention(q, k, v, causal=causal, softmax_scale=scaling, out_dtype=out_dtype, **descales)


class _Varlen(NamedTuple):
    """The varlen layout of a padded batch: flat indices of the real query rows (of B·Sq) and key rows (of B·Sk),
    int32 ``cu_seqlens_q``/``cu_seqlens_k`` (B + 1,) and the max lengths (host ints)."""

    qi: torch.Tensor
    ki: torch.Tensor
    cu_q: torch.Tensor
    cu_k: torch.Tensor
    max_q: int
    max_k: int


def _varlen_layout(mask, sq: int, sk: int) -> _Varlen:
    """Layout of the (B, Sk) padding mask (True = a real token) for Sq queries; the last Sq keys are the queries."""
    kmask = mask[:, -sk:].bool()
    qmask = kmask[:, -sq:]
    lens_k = kmask.sum(1, dtype=torch.int32)
    lens_q = qmask.sum(1, dtype=torch.int32)
    cu_k = F.pad(lens_k.cumsum(0, dtype=torch.int32), (1, 0))
    cu_q = F.pad(lens_q.cumsum(0, dtype=torch.int32), (1, 0))
    host = torch.stack([lens_q.max(), lens_k.max()]).tolist()  # host sync: the varlen kernel needs the max lengths
    return _Varlen(qmask.reshape(-1).nonzero().squeeze(1), kmask.reshape(-1).nonzero().squeeze(1), cu_q, cu_k,
                   int(host[0]), int(host[1]))


def _rows(x, idx):
    """(B, S, H, D) -> the (len(idx), H, D) rows ``idx`` of its flattened (B·S) rows."""
    return x.reshape(-1, *x.shape[2:]).index_select(0, idx)


def _unrows(o, idx, b: int, s: int):
    """Inverse of :func:`_rows`: (len(idx), H, D) -> (B, S, H, D), rows not in ``idx`` (padding) 0."""
    out = o.new_zeros((b * s, *o.shape[1:]))
    out.index_copy_(0, idx, o)
    return out.reshape(b, s, *o.shape[1:])


def _fp8_varlen(q, k, v, mask, causal, scaling, out_dtype, **descales):
    """Unpad by the (B, Sk) padding mask, run varlen FP8 attention, scatter back (padded query rows get 0).
    ``descales``: as :func:`_fp8_dense` ((B, Hkv) per-head descales are per sequence in the varlen layout too)."""
    b, sq = q.shape[:2]
    lay = _varlen_layout(mask, sq, k.shape[1])
    o = ops.attention(_rows(q, lay.qi), _rows(k, lay.ki), _rows(v, lay.ki), causal=causal, softmax_scale=scaling,
                      cu_seqlens_q=lay.cu_q, cu_seqlens_k=lay.cu_k, max_seqlen_q=lay.max_q, max_seqlen_k=lay.max_k,
                      out_dtype=out_dtype, **descales)
    return _unrows(o, lay.qi, b, sq)


# Query rows per step of the calibration's attention_torch (its fp32 scores: Hq x rows x Sk per step).
_REF_ROWS = 512


def attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """transformers attention interface: query (B, Hq, Sq, D), key/value (B, Hkv, Sk, D) -> ((B, Sq, Hq, D), None).

    A module marked :data:`KEEP_SDPA` by :func:`calibrate_attention` runs SDPA (a calibration decision, listed
    once in ``stats().kept_bf16``, not a per-call fallback)."""
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    layer = _layer_name(module)
    unsupported = (
        (attention_mask is not None and attention_mask.dim() != 2)
        or kwargs.get("sliding_window") is not None
        or kwargs.get("softcap") is not None
        or (dropout and module.training)
    )
    if unsupported:
        guard.record_fallback(layer, UNSUPPORTED_MASK, "a mask, sliding window, softcap or dropout the FP8 "
                                                       "kernel does not support")
        out = _sdpa_bhsd(query, key, value, causal, scaling, attention_mask)
        return out.transpose(1, 2), None

    probe = _probe
    measuring = probe is not None and module in probe.names and not torch.compiler.is_compiling()
    if not measuring and getattr(module, KEEP_SDPA, False):
        out = _sdpa_bhsd(query, key, value, causal, scaling, attention_mask)
        return out.transpose(1, 2), None

    out_dtype = query.dtype if query.dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
    q, k, v = query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2)  # (B, S, H, D) views

    def fp8(q, k, v):
        if attention_mask is None:
            o = _fp8_dense(q, k, v, causal, scaling, out_dtype)
        else:
            o = _fp8_varlen(q, k, v, attention_mask, causal, scaling, out_dtype)
        return o.to(query.dtype)

    def bf16(q, k, v):
        o = _sdpa_bhsd(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal, scaling, attention_mask)
        return o.transpose(1, 2).to(query.dtype)

    if measuring:
        return probe.measure(module, q, k, v, attention_mask, causal, scaling, fp8).to(query.dtype), None
    out = guard.guarded_call(layer, (q, k, v), fp8, bf16, counters=getattr(module, "_guard_counts", None))
    return out, None


# ----------------------------------------------------------------------------------------------------------------
# calibration against attention_torch

# The calibration in progress (set by _AttentionProbe while its batches run), else None.
_probe: "_AttentionProbe | None" = None


@dataclass
class AttentionCalibrationReport:
    """Per attention module (qualified name): relative error of the FP8 output vs :func:`tritonfp8.attention_torch`
    on the calibration data, and the decision."""

    threshold: float
    errors: dict  # name -> relative Frobenius error (float; inf for a non-finite one)
    fp8: list  # names running FP8 attention
    kept_sdpa: list  # names kept on SDPA because their error exceeded the threshold

    def __str__(self) -> str:
        lines = [f"attention calibration (threshold {self.threshold:.3g}): {len(self.fp8)} FP8, "
                 f"{len(self.kept_sdpa)} kept on SDPA"]
        for name, e in self.errors.items():
            lines.append(f"  {'sdpa' if name in self.kept_sdpa else 'fp8 ':4s} {name}: rel. error {e:.4f}")
        return "\n".join(lines)


class _AttentionProbe:
    """While active (``with``), each supported call of ``model``'s attention modules computes the FP8 output and
    the fp32 reference, accumulates the squared error and reference norms per module, and returns the reference:
    the next layers see reference activations, so each layer's error is its own (as in :func:`tritonfp8.calibrate`,
    whose Linear hooks see the BF16 model)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.names = {m: n for n, m in model.named_modules()}
        self.acc: dict = {}  # module -> [sum |o - ref|^2, sum |ref|^2] float64 on the device

    def __enter__(self) -> "_AttentionProbe":
        global _probe
        if _probe is not None:
            raise RuntimeError("tritonfp8: an attention calibration is already running")
        _probe = self
        return self

    def __exit__(self, *exc) -> None:
        global _probe
        _probe = None

    def measure(self, module, q, k, v, mask, causal, scaling, fp8) -> torch.Tensor:
        """q (B, Sq, Hq, D), k/v (B, Sk, Hkv, D); ``fp8``: attention_forward's FP8 path. Returns the fp32 reference
        (B, Sq, Hq, D), padded query rows 0 as on the FP8 path."""
        with guard.policy("ignore"):  # measure FP8 itself; a non-finite input shows as a NaN error
            o = fp8(q, k, v)
        if mask is None:
            ref = attention_torch(q, k, v, causal=causal, softmax_scale=scaling, query_chunk=_REF_ROWS)
        else:  # per sequence on the real tokens; only the real query rows are compared
            b, sq = q.shape[:2]
            lay = _varlen_layout(mask, sq, k.shape[1])
            ref = attention_torch(_rows(q, lay.qi), _rows(k, lay.ki), _rows(v, lay.ki), causal=causal,
                                  softmax_scale=scaling, cu_seqlens_q=lay.cu_q, cu_seqlens_k=lay.cu_k,
                                  query_chunk=_REF_ROWS)
            o = _rows(o, lay.qi)
        e = self.acc.setdefault(module, [torch.zeros((), dtype=torch.float64, device=q.device) for _ in range(2)])
        r = ref.double()
        e[0] += (o.double() - r).square().sum()
        e[1] += r.square().sum()
        return ref if mask is None else _unrows(ref, lay.qi, b, sq)

    def decide(self, threshold: float | None, require: bool = True) -> AttentionCalibrationReport:
        """Mark the modules above ``threshold`` :data:`KEEP_SDPA` (and record why), clear the others' marks.
        ``require``: ValueError when no call was measured."""
        if require and not self.acc:
            raise ValueError("model: no attention call reached the FP8 attention (load the model with "
                             f"attn_implementation={NAME!r} or tfp8.convert it; unsupported masks run SDPA)")
        if threshold is None:
            threshold = 2 * E4M3.eps
        report = AttentionCalibrationReport(threshold=threshold, errors={}, fp8=[], kept_sdpa=[])
        for module, (err2, ref2) in self.acc.items():
            name = self.names[module]
            rel = _rel_from_sums(float(err2), float(ref2))
            report.errors[name] = rel
            keep = rel > threshold or rel == float("inf")  # never FP8 on non-finite evidence, whatever the threshold
            setattr(module, KEEP_SDPA, keep)
            if keep:
                report.kept_sdpa.append(name)
                guard.record_kept_bf16(name, f"calibration: FP8 attention relative error {rel:.4f} > threshold "
                                             f"{threshold:.4g}")
            else:
                report.fp8.append(name)
                guard.forget_kept_bf16(name)
        return report


def uses_fp8_attention(model: torch.nn.Module) -> bool:
    """Whether ``model``'s attention implementation (``config._attn_implementation``) is :func:`attention_forward`."""
    impl = getattr(getattr(model, "config", None), "_attn_implementation", None)
    if impl is None:
        return False
    from transformers import AttentionInterface

    return AttentionInterface._global_mapping.get(impl) is attention_forward


def calibrate_attention(model: torch.nn.Module, batches: Iterable, threshold: float | None = None
                        ) -> AttentionCalibrationReport:
    """Measure each attention layer's FP8 error against :func:`tritonfp8.attention_torch` on real data and keep
    the layers above ``threshold`` on SDPA.

    ``batches``: model inputs, as :func:`tritonfp8.calibrate` takes them. For every call of :func:`attention_forward`
    by a module of ``model`` that the FP8 kernel serves, the FP8 output (the path the call would take) is compared
    with the fp32 ``attention_torch`` of the same q/k/v (causal flag and ``scaling`` as called; with a padding mask
    per sequence on the real tokens, padded query rows not compared); the error is
    ``sqrt(Σ||o - ref||² / Σ||ref||²)`` over all calls. The model sees the reference output meanwhile. A module
    above ``threshold`` gets ``KEEP_SDPA`` set (its calls run SDPA from then on) and is listed in
    ``tritonfp8.stats().kept_bf16`` with its error; the others get the mark cleared. Modules no call reached keep
    their state. A non-finite error (NaN counts as inf) never passes, whatever the threshold.

    ``threshold`` defaults to the rule of :func:`tritonfp8.calibrate`, ``2 · eps`` of E4M3 (0.125): q, k, v and P
    are each rounded to E4M3 (relative RMS error about 2.6% per rounding), which gives about 5% on N(0, 1) data
    (docs/attention.md); twice eps flags layers whose q/k/v outliers per-head scaling cannot serve.
    ValueError if no call of ``model`` reached the FP8 attention (another ``attn_implementation``, no batch, or
    only unsupported masks).
    """
    with _AttentionProbe(model) as probe, torch.no_grad():
        for batch in batches:
            _call(model, batch)
    return probe.decide(threshold)


_registered = False


def register(name: str = NAME) -> None:
    """Register :func:`attention_forward` (and the FlashAttention-style mask) with transformers as ``name``.

    Idempotent; importing this module calls it. Needs transformers >= 5 (``AttentionInterface``).
    """
    global _registered
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, flash_attention_mask

    AttentionInterface.register(name, attention_forward)
    AttentionMaskInterface.register(name, flash_attention_mask)
    _registered = True


def prepare(model: torch.nn.Module) -> torch.nn.Module:
    """Give each attention module of ``model`` a device counter for the guard's compiled path (see
    :mod:`tritonfp8.guard`), so fallbacks inside ``torch.compile`` graphs are counted in :func:`tritonfp8.stats`."""
    for name, m in model.named_modules():
        if hasattr(m, "layer_idx") and hasattr(m, "o_proj") and not hasattr(m, "_guard_counts"):
            dev = next(iter([*m.parameters(), *m.buffers()])).device
            m.register_buffer("_guard_counts", torch.zeros(4, dtype=torch.int64, device=dev), persistent=False)
            m.layer_name = _layer_name(m)
            guard.register_device_counters(m)
    return model


def convert(model: torch.nn.Module, recipe="row", skip=("lm_head",), strict: bool = False,
            attention: bool = True) -> torch.nn.Module:
    """FP8 linears (:func:`tritonfp8.convert_model`) and, with ``attention``, the FP8 attention for ``model``."""
    convert_model(model, recipe=recipe, skip=skip, strict=strict)
    if attention:
        register()
        model.set_attn_implementation(NAME)
        prepare(model)
    return model


def from_config(config, recipe="row", skip=("lm_head",), dtype: torch.dtype = torch.bfloat16, device=None,
                **kwargs) -> torch.nn.Module:
    """``AutoModelForCausalLM.from_config(config, attn_implementation="tritonfp8")`` converted to FP8 (random
    weights; for a checkpoint, load it with ``from_pretrained(..., attn_implementation="tritonfp8")`` and
    :func:`convert` it)."""
    from transformers import AutoModelForCausalLM

    register()
    model = AutoModelForCausalLM.from_config(config, attn_implementation=NAME, dtype=dtype, **kwargs)
    if device is not None:
        model = model.to(device)
    convert_model(model, recipe=recipe, skip=skip)
    return prepare(model)


register()
