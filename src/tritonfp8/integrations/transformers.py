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
a flagged call runs SDPA in the input dtype.

Not yet: the FP8 paged KV cache (:func:`tritonfp8.write_kv_cache` / :func:`tritonfp8.decode_attention`) is not wired
into transformers' Cache classes; decode steps read transformers' BF16 cache through the prefill kernel.
``python -m tritonfp8 bench model`` uses the paged FP8 cache in its own Llama-style decoder.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tritonfp8 import guard, ops
from tritonfp8.nn import convert_model

NAME = "tritonfp8"
UNSUPPORTED_MASK = "unsupported-mask"

__all__ = ["NAME", "register", "attention_forward", "convert", "from_config", "prepare"]


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


def _fp8_varlen(q, k, v, mask, causal, scaling, out_dtype, **descales):
    """Unpad by the (B, Sk) padding mask, run varlen FP8 attention, scatter back (padded query rows get 0).
    ``descales``: as :func:`_fp8_dense` ((B, Hkv) per-head descales are per sequence in the varlen layout too)."""
    b, sq, hq, d = q.shape
    sk = k.shape[1]
    kmask = mask[:, -sk:].bool()
    qmask = kmask[:, -sq:]
    lens_k = kmask.sum(1, dtype=torch.int32)
    lens_q = qmask.sum(1, dtype=torch.int32)
    cu_k = F.pad(lens_k.cumsum(0, dtype=torch.int32), (1, 0))
    cu_q = F.pad(lens_q.cumsum(0, dtype=torch.int32), (1, 0))
    host = torch.stack([lens_q.max(), lens_k.max()]).tolist()  # host sync: the varlen kernel needs the max lengths
    qi = qmask.reshape(-1).nonzero().squeeze(1)
    ki = kmask.reshape(-1).nonzero().squeeze(1)
    qv = q.reshape(b * sq, hq, d).index_select(0, qi)
    kv = k.reshape(b * sk, *k.shape[2:]).index_select(0, ki)
    vv = v.reshape(b * sk, *v.shape[2:]).index_select(0, ki)
    o = ops.attention(qv, kv, vv, causal=causal, softmax_scale=scaling, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                      max_seqlen_q=int(host[0]), max_seqlen_k=int(host[1]), out_dtype=out_dtype, **descales)
    out = o.new_zeros((b * sq, hq, v.shape[-1]))
    out.index_copy_(0, qi, o)
    return out.reshape(b, sq, hq, v.shape[-1])


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
    """transformers attention interface: query (B, Hq, Sq, D), key/value (B, Hkv, Sk, D) -> ((B, Sq, Hq, D), None)."""
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

    out = guard.guarded_call(layer, (q, k, v), fp8, bf16, counters=getattr(module, "_guard_counts", None))
    return out, None


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
