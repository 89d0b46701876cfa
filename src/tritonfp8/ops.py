"""Every public op as a ``torch.library`` custom op, with a fake (meta) implementation.

Why: ``torch.compile(fullgraph=True)`` must see each op as one opaque node whose output shapes it can compute
without running the kernel. Our launchers build TensorDescriptors, pick configs and validate on the host — code
Dynamo should not trace into. A custom op hides that: Dynamo records ``torch.ops.tritonfp8.<op>`` and asks the
fake implementation (pure shape/dtype rules, registered below) for the output metadata. CUDA-graph capture works
because none of the implementations syncs the host in the hot path (no ``.item()``/``.tolist()`` on device
tensors: varlen attention needs ``max_seqlen_*`` passed in for that; see ``docs/integration.md``).

The registered ops (namespace ``tritonfp8``), each called through the Python wrapper of the same name in this module,
whose signature is the public op's:

================================  =======================================================================
``quantize``                      ``(x, granularity, dtype, scale) -> (xq, scale)``
``dequantize``                    ``(xq, scale, dtype) -> x``
``gemm`` / ``gemm_out``           ``(a, b, scale_a, scale_b, out_dtype, bias, activation, accumulate) -> c``;
                                  ``gemm_out`` writes into ``out`` (mutated)
``attention``                     prefill FlashAttention forward ``-> (out, lse)`` (lse empty unless asked)
``write_kv_cache``                scatters quantized k/v into the paged caches (mutated)
``decode_attention``              paged-cache decode ``-> out``
``grouped_gemm``                  ``(a, b, scale_a, scale_b, group_offsets, m_sizes, out_dtype, bias, activation,
                                  accumulate) -> c`` (MoE, contiguous groups; exactly one of offsets / sizes)
``grouped_gemm_masked``           ``(a, b, scale_a, scale_b, masked_m, out_dtype, bias, activation, accumulate) -> c``
``qkv_projection``                ``(x, w_qkv, x_scale, w_scale, q_scale, k_scale, v_scale, num_heads, num_kv_heads,
                                  head_dim, bias, accumulate, unquantized_dtype) -> (q, k, v, unquantized)`` (fused
                                  QKV GEMM + E4M3 epilogue; ``unquantized`` empty unless asked; the wrapper adds the
                                  attention descales, plain torch ops)
================================  =======================================================================

Granularity travels through the schema as a string: ``"tensor"``, ``"row"``, ``"col"`` or ``"<G>x<H>"`` for a
``(G, H)`` group/block (``(1, 128)`` → ``"1x128"``).

The implementations import the op modules (``tritonfp8.quantize`` etc.) on first call, so this module imports even
while one of them is missing; calling that op then raises ``NotImplementedError`` naming the module.

Eager calls skip the dispatcher: outside tracing (no ``torch.compile``, no fake or dispatch mode active, plain
tensors) the wrapper calls the implementation directly, which saves the custom-op dispatch (several µs per call;
it matters for decode, where a step makes hundreds of small calls). Results are the same either way.
"""

from __future__ import annotations

import importlib
from typing import Sequence

import torch
from torch.library import custom_op

from tritonfp8._formats import fp8_format

__all__ = [
    "quantize",
    "dequantize",
    "gemm",
    "attention",
    "write_kv_cache",
    "decode_attention",
    "grouped_gemm",
    "grouped_gemm_masked",
    "qkv_projection",
    "granularity_to_str",
    "granularity_from_str",
    "quantize_scale_shape",
    "OPS",
]

# Names of the registered ops: torch.ops.tritonfp8.<name>.
OPS = ("quantize", "dequantize", "gemm", "gemm_out", "attention", "write_kv_cache", "decode_attention",
       "grouped_gemm", "grouped_gemm_masked", "qkv_projection")


_FNS: dict = {}


def _impl(module: str, name: str):
    """The public implementation ``tritonfp8.<module>.<name>``, imported on first use."""
    fn = _FNS.get((module, name))
    if fn is not None:
        return fn
    try:
        mod = importlib.import_module(f"tritonfp8.{module}")
    except ModuleNotFoundError as e:
        if e.name == f"tritonfp8.{module}":
            raise NotImplementedError(
                f"tritonfp8.ops.{name}: the module tritonfp8.{module} is not available in this build"
            ) from None
        raise
    fn = getattr(mod, name, None)
    if fn is None:
        raise NotImplementedError(f"tritonfp8.ops.{name}: tritonfp8.{module} has no {name}()")
    _FNS[(module, name)] = fn
    return fn


_IMPL_MODULES = ("quantize", "gemm", "attention", "decode", "grouped", "qkv")


def _import_implementations() -> None:
    """Import the op modules that exist in this build (the package binds the public names after this)."""
    for m in _IMPL_MODULES:
        try:
            importlib.import_module(f"tritonfp8.{m}")
        except ModuleNotFoundError as e:
            if e.name != f"tritonfp8.{m}":
                raise


def _direct(*tensors) -> bool:
    """True when the wrapper may call the implementation directly (plain eager execution)."""
    if torch.compiler.is_compiling():
        return False
    if torch._C._len_torch_dispatch_stack() > 0:  # FakeTensorMode, FlopCounter, make_fx, ...
        return False
    # Tensor subclasses (e.g. a FakeTensor outside its mode) go through the op; anything that is not a tensor goes to
    # the implementation, whose validation names the argument and what it expected.
    return not any(isinstance(t, torch.Tensor) and type(t) not in (torch.Tensor, torch.nn.Parameter) for t in tensors)


def _eager_only(op: str, extra: dict) -> dict:
    """Options of the public functions that only eager calls take (``config=`` pins, ``check=True`` host checks),
    those set (not None/False): passed through on the direct path; under tracing a set one is a TypeError naming
    it (:func:`_reject_eager_only`)."""
    return {k: v for k, v in extra.items() if v is not None and v is not False}


def _reject_eager_only(op: str, given: dict) -> None:
    if given:
        raise TypeError(
            f"{op}: {', '.join(sorted(given))}: eager-only option(s) (a pinned config or a host-side check); "
            "not available under torch.compile or fake-tensor tracing"
        )


# ----------------------------------------------------------------------------------------------------------------
# granularity <-> schema string


def granularity_to_str(granularity) -> str:
    """``"tensor"``/``"row"``/``"col"`` unchanged, ``(G, H)`` → ``"GxH"``; ValueError naming ``granularity``."""
    if isinstance(granularity, str):
        g = granularity.strip().lower()
        if g in ("tensor", "row", "col"):
            return g
        try:
            return granularity_to_str(granularity_from_str(g))
        except ValueError:
            pass
    elif isinstance(granularity, Sequence) and len(granularity) == 2:
        try:
            a, b = (int(v) for v in granularity)
        except (TypeError, ValueError):
            a = b = 0
        if a >= 1 and b >= 1 and (a, b) == tuple(granularity):
            return f"{a}x{b}"
    raise ValueError(
        f"granularity: expected 'tensor', 'row', 'col', (1, 128) or (128, 128), got {granularity!r}"
    )


def granularity_from_str(g: str):
    """Inverse of :func:`granularity_to_str`: ``"1x128"`` → ``(1, 128)``, names unchanged."""
    if g in ("tensor", "row", "col"):
        return g
    parts = g.split("x")
    if len(parts) == 2 and all(p.isdigit() and int(p) >= 1 for p in parts):
        return (int(parts[0]), int(parts[1]))
    raise ValueError(f"granularity: expected 'tensor', 'row', 'col' or 'GxH', got {g!r}")


def quantize_scale_shape(shape: Sequence, granularity) -> tuple:
    """Shape of the scale :func:`tritonfp8.quantize` returns for an input of ``shape`` (works with SymInts).

    Leading dims are flattened into M (rows): ``"tensor"`` → ``()``, ``"row"`` → ``(M, 1)``, ``"col"`` →
    ``(1, K)``, ``(1, G)`` → ``(M, ceil(K/G))``, ``(G, H)`` → ``(ceil(M/G), ceil(K/H))``.
    """
    g = granularity_from_str(granularity) if isinstance(granularity, str) else granularity
    if g == "tensor":
        return ()
    k = shape[-1] if len(shape) else 1
    m = 1
    for d in shape[:-1]:
        m = m * d
    if g == "row":
        return (m, 1)
    if g == "col":
        return (1, k)
    gm, gk = g
    return ((m + gm - 1) // gm, (k + gk - 1) // gk)


# ----------------------------------------------------------------------------------------------------------------
# quantize / dequantize


@custom_op("tritonfp8::quantize", mutates_args=())
def _quantize_op(
    x: torch.Tensor, granularity: str, dtype: torch.dtype, scale: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    xq, s = _impl("quantize", "quantize")(x, granularity_from_str(granularity), dtype=dtype, scale=scale)
    if scale is not None:
        s = s.clone()  # a static scale comes back as a view of the input; a custom op's output may not alias one
    return xq, s


@_quantize_op.register_fake
def _(x, granularity, dtype, scale):
    fp8_format(dtype)
    xq = x.new_empty(x.shape, dtype=dtype)
    return xq, x.new_empty(quantize_scale_shape(x.shape, granularity), dtype=torch.float32)


def quantize(x: torch.Tensor, granularity, dtype: torch.dtype = torch.float8_e4m3fn, scale=None):
    """:func:`tritonfp8.quantize` as a traceable op: ``(xq, scale)``, scales fp32 dequantization factors."""
    g = granularity_to_str(granularity)
    if _direct(x, scale):
        return _impl("quantize", "quantize")(x, granularity_from_str(g), dtype=dtype, scale=scale)
    return torch.ops.tritonfp8.quantize(x, g, dtype, scale)


@custom_op("tritonfp8::dequantize", mutates_args=())
def _dequantize_op(xq: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return _impl("quantize", "dequantize")(xq, scale, dtype)


@_dequantize_op.register_fake
def _(xq, scale, dtype):
    return xq.new_empty(xq.shape, dtype=dtype)


def dequantize(xq: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """:func:`tritonfp8.dequantize` as a traceable op: ``xq.float() * scale`` (broadcast per group) in ``dtype``."""
    if _direct(xq, scale):
        return _impl("quantize", "dequantize")(xq, scale, dtype)
    return torch.ops.tritonfp8.dequantize(xq, scale, dtype)


# ----------------------------------------------------------------------------------------------------------------
# grouped gemm (MoE): output shapes are host-known ((total_M, N), (G, M_max, N)): the fakes need no group sizes.


@custom_op("tritonfp8::grouped_gemm", mutates_args=())
def _grouped_gemm_op(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
    group_offsets: torch.Tensor | None, m_sizes: torch.Tensor | None, out_dtype: torch.dtype,
    bias: torch.Tensor | None, activation: str | None, accumulate: str,
) -> torch.Tensor:
    return _impl("grouped", "grouped_gemm")(
        a, b, scale_a, scale_b, group_offsets=group_offsets, m_sizes=m_sizes, out_dtype=out_dtype, bias=bias,
        activation=activation, accumulate=accumulate, check=False,
    )


@_grouped_gemm_op.register_fake
def _(a, b, scale_a, scale_b, group_offsets, m_sizes, out_dtype, bias, activation, accumulate):
    if b.dim() != 3 or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"b: expected (G, N, K) with K = {a.shape[-1]} (a's last dim), got shape {tuple(b.shape)}")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype)


@custom_op("tritonfp8::grouped_gemm_masked", mutates_args=())
def _grouped_gemm_masked_op(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, masked_m: torch.Tensor,
    out_dtype: torch.dtype, bias: torch.Tensor | None, activation: str | None, accumulate: str,
) -> torch.Tensor:
    return _impl("grouped", "grouped_gemm_masked")(
        a, b, scale_a, scale_b, masked_m=masked_m, out_dtype=out_dtype, bias=bias, activation=activation,
        accumulate=accumulate, check=False,
    )


@_grouped_gemm_masked_op.register_fake
def _(a, b, scale_a, scale_b, masked_m, out_dtype, bias, activation, accumulate):
    if a.dim() != 3 or b.dim() != 3 or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"a, b: expected (G, M_max, K) and (G, N, K), got {tuple(a.shape)} and {tuple(b.shape)}")
    return a.new_empty((a.shape[0], a.shape[1], b.shape[1]), dtype=out_dtype)


def grouped_gemm(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
    group_offsets: torch.Tensor | None = None, m_sizes: torch.Tensor | None = None,
    out_dtype: torch.dtype = torch.bfloat16, bias: torch.Tensor | None = None, activation: str | None = None,
    accumulate: str = "fast", **eager_only,
) -> torch.Tensor:
    """:func:`tritonfp8.grouped_gemm` as a traceable op (one graph node; group sizes stay on the device).
    ``config=``, ``out=`` and ``check=True`` are eager-only."""
    extra = _eager_only("grouped_gemm", eager_only)
    if _direct(a, b, scale_a, scale_b, group_offsets, m_sizes, bias):
        return _impl("grouped", "grouped_gemm")(
            a, b, scale_a, scale_b, group_offsets=group_offsets, m_sizes=m_sizes, out_dtype=out_dtype, bias=bias,
            activation=activation, accumulate=accumulate, **extra,
        )
    _reject_eager_only("grouped_gemm", extra)
    return torch.ops.tritonfp8.grouped_gemm(a, b, scale_a, scale_b, group_offsets, m_sizes, out_dtype, bias,
                                            activation, accumulate)


def grouped_gemm_masked(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *, masked_m: torch.Tensor,
    out_dtype: torch.dtype = torch.bfloat16, bias: torch.Tensor | None = None, activation: str | None = None,
    accumulate: str = "fast", **eager_only,
) -> torch.Tensor:
    """:func:`tritonfp8.grouped_gemm_masked` as a traceable op. ``config=``, ``out=``, ``check=True`` eager-only."""
    extra = _eager_only("grouped_gemm_masked", eager_only)
    if _direct(a, b, scale_a, scale_b, masked_m, bias):
        return _impl("grouped", "grouped_gemm_masked")(
            a, b, scale_a, scale_b, masked_m=masked_m, out_dtype=out_dtype, bias=bias, activation=activation,
            accumulate=accumulate, **extra,
        )
    _reject_eager_only("grouped_gemm_masked", extra)
    return torch.ops.tritonfp8.grouped_gemm_masked(a, b, scale_a, scale_b, masked_m, out_dtype, bias, activation,
                                                   accumulate)


# ----------------------------------------------------------------------------------------------------------------
# gemm


def _gemm_out_shape(a: torch.Tensor, b: torch.Tensor) -> tuple:
    return (*a.shape[:-1], b.shape[0])


@custom_op("tritonfp8::gemm", mutates_args=())
def _gemm_op(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    out_dtype: torch.dtype,
    bias: torch.Tensor | None,
    activation: str | None,
    accumulate: str,
) -> torch.Tensor:
    return _impl("gemm", "gemm")(
        a, b, scale_a, scale_b, out_dtype=out_dtype, bias=bias, activation=activation, accumulate=accumulate
    )


@_gemm_op.register_fake
def _(a, b, scale_a, scale_b, out_dtype, bias, activation, accumulate):
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"b: expected (N, K) with K = {a.shape[-1]} (a's last dim), got shape {tuple(b.shape)}")
    return a.new_empty(_gemm_out_shape(a, b), dtype=out_dtype)


@custom_op("tritonfp8::gemm_out", mutates_args=("out",))
def _gemm_out_op(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    bias: torch.Tensor | None,
    activation: str | None,
    accumulate: str,
    out: torch.Tensor,
) -> None:
    _impl("gemm", "gemm")(
        a, b, scale_a, scale_b, out_dtype=out.dtype, bias=bias, activation=activation, accumulate=accumulate, out=out
    )


@_gemm_out_op.register_fake
def _(a, b, scale_a, scale_b, bias, activation, accumulate, out):
    return None


def gemm(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    *,
    out_dtype: torch.dtype = torch.bfloat16,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
    accumulate: str = "fast",
    out: torch.Tensor | None = None,
    **eager_only,
) -> torch.Tensor:
    """:func:`tritonfp8.gemm` as a traceable op: ``(a·scale_a) @ (b·scale_b)ᵀ (+ bias, activation)``.

    a (..., K) FP8 K-contiguous, b (N, K) FP8 (nn.Linear weight layout); scales fp32 dequantization factors.
    With ``out`` the result is written there (the op mutates ``out``) and ``out`` is returned.
    ``config=`` (a pinned kernel config) is passed through in eager calls only.
    """
    extra = _eager_only("gemm", eager_only)
    if _direct(a, b, scale_a, scale_b, bias, out):
        return _impl("gemm", "gemm")(
            a, b, scale_a, scale_b, out_dtype=out_dtype, bias=bias, activation=activation,
            accumulate=accumulate, out=out, **extra,
        )
    _reject_eager_only("gemm", extra)
    if out is not None:
        if out.dtype != out_dtype and out_dtype is not None:
            raise TypeError(f"out: expected dtype {out_dtype} (out_dtype), got {out.dtype}")
        torch.ops.tritonfp8.gemm_out(a, b, scale_a, scale_b, bias, activation, accumulate, out)
        return out
    return torch.ops.tritonfp8.gemm(a, b, scale_a, scale_b, out_dtype, bias, activation, accumulate)


# ----------------------------------------------------------------------------------------------------------------
# attention (prefill)


@custom_op("tritonfp8::attention", mutates_args=())
def _attention_op(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    softmax_scale: float | None,
    q_descale: torch.Tensor | None,
    k_descale: torch.Tensor | None,
    v_descale: torch.Tensor | None,
    cu_seqlens_q: torch.Tensor | None,
    cu_seqlens_k: torch.Tensor | None,
    max_seqlen_q: int | None,
    max_seqlen_k: int | None,
    out_dtype: torch.dtype,
    return_lse: bool,
    out_scale: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    res = _attention_call(
        q, k, v, causal, softmax_scale, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k,
        max_seqlen_q, max_seqlen_k, out_dtype, return_lse, out_scale,
    )
    if return_lse:
        return res
    return res, q.new_empty((0,), dtype=torch.float32)


def _attention_call(q, k, v, causal, softmax_scale, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k,
                    max_seqlen_q, max_seqlen_k, out_dtype, return_lse, out_scale):
    kw = {} if out_scale is None else {"out_scale": out_scale}
    return _impl("attention", "attention")(
        q, k, v, causal=causal, softmax_scale=softmax_scale, q_descale=q_descale, k_descale=k_descale,
        v_descale=v_descale, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k, out_dtype=out_dtype, return_lse=return_lse, **kw,
    )


@_attention_op.register_fake
def _(q, k, v, causal, softmax_scale, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k,
      max_seqlen_q, max_seqlen_k, out_dtype, return_lse, out_scale):
    out = q.new_empty((*q.shape[:-1], v.shape[-1]), dtype=out_dtype)
    if not return_lse:
        return out, q.new_empty((0,), dtype=torch.float32)
    if cu_seqlens_q is not None:  # varlen: q (total_q, Hq, D) -> lse (Hq, total_q)
        lse = q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)
    else:  # dense: q (B, Sq, Hq, D) -> lse (B, Hq, Sq)
        lse = q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)
    return out, lse


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    softmax_scale: float | None = None,
    q_descale: torch.Tensor | None = None,
    k_descale: torch.Tensor | None = None,
    v_descale: torch.Tensor | None = None,
    cu_seqlens_q: torch.Tensor | None = None,
    cu_seqlens_k: torch.Tensor | None = None,
    max_seqlen_q: int | None = None,
    max_seqlen_k: int | None = None,
    out_dtype: torch.dtype = torch.bfloat16,
    return_lse: bool = False,
    out_scale: torch.Tensor | None = None,
    **eager_only,
):
    """:func:`tritonfp8.attention` as a traceable op (FlashAttention layout: q (B, Sq, Hq, D), k/v (B, Sk, Hkv, D);
    varlen: (total, H, D) with int32 ``cu_seqlens_*``). Returns ``out`` or ``(out, lse)`` with ``return_lse``.
    ``out_scale``: the dequantization factor of an E4M3 output."""
    args = (q, k, v, causal, softmax_scale, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k,
            max_seqlen_q, max_seqlen_k, out_dtype, return_lse, out_scale)
    extra = _eager_only("attention", eager_only)
    if _direct(q, k, v, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k, out_scale):
        if extra:
            return _impl("attention", "attention")(
                q, k, v, causal=causal, softmax_scale=softmax_scale, q_descale=q_descale, k_descale=k_descale,
                v_descale=v_descale, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, out_dtype=out_dtype, return_lse=return_lse,
                out_scale=out_scale, **extra,
            )
        return _attention_call(*args)
    _reject_eager_only("attention", extra)
    out, lse = torch.ops.tritonfp8.attention(*args)
    return (out, lse) if return_lse else out


# ----------------------------------------------------------------------------------------------------------------
# paged KV cache: write + decode


@custom_op("tritonfp8::write_kv_cache", mutates_args=("k_cache", "v_cache"))
def _write_kv_cache_op(
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> None:
    _impl("decode", "write_kv_cache")(k, v, k_cache, v_cache, slot_mapping, k_scale, v_scale)


@_write_kv_cache_op.register_fake
def _(k, v, k_cache, v_cache, slot_mapping, k_scale, v_scale):
    return None


def write_kv_cache(k, v, k_cache, v_cache, slot_mapping, k_scale, v_scale, **eager_only) -> None:
    """:func:`tritonfp8.write_kv_cache` as a traceable op: quantize k/v (T, Hkv, D) with the static scales and
    scatter them into ``k_cache``/``v_cache`` (num_blocks, block_size, Hkv, D) at ``slot_mapping`` (in place).
    ``check=True`` (host-side slot validation) is passed through in eager calls only."""
    extra = _eager_only("write_kv_cache", eager_only)
    if _direct(k, v, k_cache, v_cache, slot_mapping, k_scale, v_scale):
        return _impl("decode", "write_kv_cache")(k, v, k_cache, v_cache, slot_mapping, k_scale, v_scale, **extra)
    _reject_eager_only("write_kv_cache", extra)
    torch.ops.tritonfp8.write_kv_cache(k, v, k_cache, v_cache, slot_mapping, k_scale, v_scale)


@custom_op("tritonfp8::decode_attention", mutates_args=())
def _decode_attention_op(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    k_descale: torch.Tensor | None,
    v_descale: torch.Tensor | None,
    softmax_scale: float | None,
    num_splits: int | None,
    out_dtype: torch.dtype,
    max_seqlen: int | None,
) -> torch.Tensor:
    return _impl("decode", "decode_attention")(
        q, k_cache, v_cache, block_table, seq_lens, k_descale=k_descale, v_descale=v_descale,
        softmax_scale=softmax_scale, num_splits=num_splits, out_dtype=out_dtype, max_seqlen=max_seqlen,
    )


@_decode_attention_op.register_fake
def _(q, k_cache, v_cache, block_table, seq_lens, k_descale, v_descale, softmax_scale, num_splits, out_dtype,
      max_seqlen):
    return q.new_empty((*q.shape[:-1], v_cache.shape[-1]), dtype=out_dtype)


def decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    *,
    k_descale: torch.Tensor | None = None,
    v_descale: torch.Tensor | None = None,
    softmax_scale: float | None = None,
    num_splits: int | None = None,
    out_dtype: torch.dtype = torch.bfloat16,
    max_seqlen: int | None = None,
    **eager_only,
) -> torch.Tensor:
    """:func:`tritonfp8.decode_attention` as a traceable op: q (B, Sq, Hq, D) against the paged E4M3 caches.

    ``max_seqlen`` (an upper bound of ``seq_lens``) lets the split heuristic run without reading seq_lens.
    ``check=``/``config=`` are passed through in eager calls only."""
    args = (q, k_cache, v_cache, block_table, seq_lens, k_descale, v_descale, softmax_scale, num_splits, out_dtype,
            max_seqlen)
    extra = _eager_only("decode_attention", eager_only)
    if _direct(q, k_cache, v_cache, block_table, seq_lens, k_descale, v_descale):
        return _impl("decode", "decode_attention")(
            q, k_cache, v_cache, block_table, seq_lens, k_descale=k_descale, v_descale=v_descale,
            softmax_scale=softmax_scale, num_splits=num_splits, out_dtype=out_dtype, max_seqlen=max_seqlen, **extra,
        )
    _reject_eager_only("decode_attention", extra)
    return torch.ops.tritonfp8.decode_attention(*args)


# ----------------------------------------------------------------------------------------------------------------
# fused QKV projection


@custom_op("tritonfp8::qkv_projection", mutates_args=())
def _qkv_projection_op(
    x: torch.Tensor, w_qkv: torch.Tensor, x_scale: torch.Tensor, w_scale: torch.Tensor, q_scale: torch.Tensor,
    k_scale: torch.Tensor, v_scale: torch.Tensor, num_heads: int, num_kv_heads: int, head_dim: int,
    bias: torch.Tensor | None, accumulate: str, unquantized_dtype: torch.dtype | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    r = _impl("qkv", "qkv_projection")(
        x, w_qkv, x_scale, w_scale, num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
        q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, bias=bias, accumulate=accumulate,
        unquantized_dtype=unquantized_dtype, num_seqs=1 if x.dim() == 2 else None,
    )
    unq = r.unquantized if r.unquantized is not None else x.new_empty((0,), dtype=torch.float32)
    return r.q, r.k, r.v, unq


@_qkv_projection_op.register_fake
def _(x, w_qkv, x_scale, w_scale, q_scale, k_scale, v_scale, num_heads, num_kv_heads, head_dim, bias, accumulate,
      unquantized_dtype):
    n = (num_heads + 2 * num_kv_heads) * head_dim
    if w_qkv.dim() != 2 or w_qkv.shape[0] != n or w_qkv.shape[1] != x.shape[-1]:
        raise ValueError(f"qkv_projection: w_qkv must be (N, K) with N = (Hq + 2*Hkv) * D = {n} and K = "
                         f"{x.shape[-1]}, got shape {tuple(w_qkv.shape)}")
    lead = tuple(x.shape[:-1])
    e4 = torch.float8_e4m3fn
    q = x.new_empty((*lead, num_heads, head_dim), dtype=e4)
    k = x.new_empty((*lead, num_kv_heads, head_dim), dtype=e4)
    v = x.new_empty((*lead, num_kv_heads, head_dim), dtype=e4)
    if unquantized_dtype is None:
        unq = x.new_empty((0,), dtype=torch.float32)
    else:
        unq = x.new_empty((*lead, n), dtype=unquantized_dtype)
    return q, k, v, unq


def qkv_projection(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    x_scale: torch.Tensor,
    w_scale: torch.Tensor,
    *,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    q_scale: torch.Tensor,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
    bias: torch.Tensor | None = None,
    accumulate: str = "fast",
    unquantized_dtype: torch.dtype | None = None,
    num_seqs: int | None = None,
    **eager_only,
):
    """:func:`tritonfp8.qkv_projection` as a traceable op: ``QKVProjection(q, k, v, q_descale, k_descale,
    v_descale, unquantized)``, E4M3 q/k/v for :func:`tritonfp8.attention`. ``config=`` in eager calls only."""
    extra = _eager_only("qkv_projection", eager_only)
    if _direct(x, w_qkv, x_scale, w_scale, q_scale, k_scale, v_scale, bias):
        return _impl("qkv", "qkv_projection")(
            x, w_qkv, x_scale, w_scale, num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
            q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, bias=bias, accumulate=accumulate,
            unquantized_dtype=unquantized_dtype, num_seqs=num_seqs, **extra,
        )
    _reject_eager_only("qkv_projection", extra)
    from tritonfp8 import qkv  # a plain import: Dynamo traces it (importlib.import_module it skips)
    # Host-side checks (shapes and dtypes only) before the op, so tracing reports bad input as eager calls do.
    batch = qkv._validate(x, w_qkv, num_heads, num_kv_heads, head_dim, q_scale, k_scale, v_scale,
                          unquantized_dtype, num_seqs)
    q, k, v, unq = torch.ops.tritonfp8.qkv_projection(
        x, w_qkv, x_scale, w_scale, q_scale, k_scale, v_scale, num_heads, num_kv_heads, head_dim, bias, accumulate,
        unquantized_dtype,
    )
    descales = [qkv.attention_descales(s, batch) for s in (q_scale, k_scale, v_scale)]
    return qkv.QKVProjection(q, k, v, *descales, unq if unquantized_dtype is not None else None)
