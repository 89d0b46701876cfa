"""Fused QKV projection: one FP8 GEMM on the concatenated weight [Wq; Wk; Wv] whose epilogue writes q, k and v as
E4M3 in the layout :func:`tritonfp8.attention` reads, with their descales; no separate quantization pass.

Layouts. ``x`` (B, S, K) or (T, K) (varlen tokens) FP8 with its scale; ``w_qkv`` (N, K) FP8 with
N = (Hq + 2*Hkv) * D: rows [0, Hq*D) are Wq (head-major, as ``q_proj.weight``), then Wk, then Wv. Outputs:
q (B, S, Hq, D), k and v (B, S, Hkv, D) (or (T, H, D)), E4M3, contiguous: the FlashAttention layout of
:func:`tritonfp8.attention`, which reads them without a copy.

Scales. ``q_scale``, ``k_scale``, ``v_scale`` are *static* fp32 dequantization factors (q ≈ q_fp8 * q_scale): shape
``()`` / ``(1,)`` (per tensor) or ``(Hkv,)`` (per KV head; for q, per group of query heads sharing a KV head, the
granularity the attention kernel reads). The epilogue quantizes the fp32 GEMM result (after scales and bias) by the
library's rule: IEEE division by the scale, saturation to ±448, round to nearest even (as
:func:`tritonfp8.quantize_torch`), so the result equals ``gemm(..., out_dtype=torch.float32)`` followed by
``quantize_torch`` bit for bit, and is one rounding more accurate than a BF16 GEMM output quantized afterwards.

Why static scales. A dynamic per-head amax scale needs the amax over the whole sequence before the first value
is rounded; one epilogue sees one tile, so it would take a second pass over q/k/v (an atomic amax in the GEMM, then
a quantize kernel), which is what this op removes. The attention kernel reads one descale per (batch, KV head), not
per token block, so a per-(tile, head) scale would need a kernel change there. Static scales come from calibration
(:class:`FP8QKV` observes per-head amax in ``calibrating`` mode) or from a checkpoint (e.g. ``k_scale``/``v_scale``
of FP8 KV-cache checkpoints); values beyond ``448 * scale`` saturate.

V layout. The attention kernel reads Vᵀ (sequence-contiguous, keys permuted in 32-key chunks); with E4M3 inputs
:func:`tritonfp8.attention` makes it with one copy pass over V (no quantization: ``_quantize_heads(quantize=False,
transpose=True)``). The epilogue writes V in the (tokens, Hkv, D) layout: writing Vᵀ from the GEMM would need the
attention API to take a pre-transposed V; that copy (Hkv*D bytes per token) is what remains.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from tritonfp8 import _backend
from tritonfp8._formats import E4M3

__all__ = ["qkv_projection", "qkv_projection_torch", "quantize_qkv_torch", "head_scales", "attention_descales",
           "QKVProjection", "FP8QKV", "HEAD_DIMS"]

# Head dims the epilogue writes: those the attention kernel reads without padding (a copy).
HEAD_DIMS = (64, 128, 256)


class QKVProjection(NamedTuple):
    """Result of :func:`qkv_projection`: E4M3 ``q``/``k``/``v`` and their fp32 descales, ready for
    ``tritonfp8.attention(r.q, r.k, r.v, q_descale=r.q_descale, k_descale=r.k_descale, v_descale=r.v_descale)``;
    ``unquantized``: the (..., N) GEMM result in ``unquantized_dtype`` when asked for, else None."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    q_descale: torch.Tensor
    k_descale: torch.Tensor
    v_descale: torch.Tensor
    unquantized: torch.Tensor | None = None


def _check_heads(num_heads, num_kv_heads, head_dim) -> None:
    for name, v in (("num_heads", num_heads), ("num_kv_heads", num_kv_heads), ("head_dim", head_dim)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"qkv_projection: {name} must be a positive int, got {v!r}")
    if num_heads % num_kv_heads:
        raise ValueError(
            f"qkv_projection: num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})"
        )
    if head_dim not in HEAD_DIMS:
        raise ValueError(
            f"qkv_projection: head_dim must be one of {HEAD_DIMS} (the attention kernel's native head dims), "
            f"got {head_dim}"
        )


def _check_scale(name: str, s, num_kv_heads: int) -> None:
    if not isinstance(s, torch.Tensor):
        raise TypeError(f"qkv_projection: {name} must be a float32 torch.Tensor, got {type(s).__name__}")
    if s.dtype != torch.float32:
        raise TypeError(f"qkv_projection: {name} must be float32 dequantization factors, got {s.dtype}")
    if tuple(s.shape) not in ((), (1,), (num_kv_heads,)):
        raise ValueError(
            f"qkv_projection: {name} must have shape () or (1,) (per tensor) or (Hkv,) = ({num_kv_heads},) "
            f"(per KV head), got {tuple(s.shape)}"
        )


def head_scales(q_scale: torch.Tensor, k_scale: torch.Tensor, v_scale: torch.Tensor, num_heads: int,
                num_kv_heads: int) -> torch.Tensor:
    """The epilogue's scale vector: one fp32 factor per head of the GEMM's columns, (Hq + 2*Hkv,) contiguous
    (a query head carries its KV group's q scale). Plain torch ops: traceable."""
    group = num_heads // num_kv_heads
    q = q_scale.reshape(-1).expand(num_kv_heads).repeat_interleave(group)
    return torch.cat([q, k_scale.reshape(-1).expand(num_kv_heads), v_scale.reshape(-1).expand(num_kv_heads)])


def attention_descales(scale: torch.Tensor, batch: int | None) -> torch.Tensor:
    """A q/k/v scale as :func:`tritonfp8.attention` takes it: () per tensor, (B, Hkv) per KV head."""
    if scale.numel() == 1 and scale.dim() <= 1:
        return scale.reshape(())
    return scale.reshape(1, -1).expand(batch, scale.shape[-1])


def _validate(x, w_qkv, num_heads, num_kv_heads, head_dim, q_scale, k_scale, v_scale, unquantized_dtype,
              num_seqs) -> int | None:
    """Checks the QKV-specific arguments (the GEMM checks the rest); returns the batch of per-head descales."""
    for name, t in (("x", x), ("w_qkv", w_qkv)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"qkv_projection: {name} must be a torch.Tensor, got {type(t).__name__}")
    if x.dim() not in (2, 3):
        raise ValueError(f"qkv_projection: x must be (B, S, K) or (T, K) (varlen tokens), got shape {tuple(x.shape)}")
    _check_heads(num_heads, num_kv_heads, head_dim)
    n = (num_heads + 2 * num_kv_heads) * head_dim
    if w_qkv.dim() != 2 or w_qkv.shape[0] != n:
        raise ValueError(
            f"qkv_projection: w_qkv must be (N, K) with N = (Hq + 2*Hkv) * D = ({num_heads} + 2*{num_kv_heads}) * "
            f"{head_dim} = {n} ([Wq; Wk; Wv]), got shape {tuple(w_qkv.shape)}"
        )
    for name, s in (("q_scale", q_scale), ("k_scale", k_scale), ("v_scale", v_scale)):
        _check_scale(name, s, num_kv_heads)
    if unquantized_dtype is not None and unquantized_dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise TypeError(
            f"qkv_projection: unquantized_dtype must be None, torch.bfloat16, torch.float16 or torch.float32, "
            f"got {unquantized_dtype}"
        )
    per_head = any(s.numel() > 1 for s in (q_scale, k_scale, v_scale))
    if x.dim() == 3:
        if num_seqs is not None and num_seqs != x.shape[0]:
            raise ValueError(f"qkv_projection: num_seqs ({num_seqs}) must equal x.shape[0] ({x.shape[0]}) or be None")
        return x.shape[0]
    if per_head and num_seqs is None:
        raise ValueError(
            "qkv_projection: num_seqs is needed for per-KV-head scales with 2-D (varlen) x: the attention "
            "descales are (num_seqs, Hkv)"
        )
    if num_seqs is not None and (not isinstance(num_seqs, int) or num_seqs < 1):
        raise ValueError(f"qkv_projection: num_seqs must be a positive int, got {num_seqs!r}")
    return num_seqs


def quantize_qkv_torch(c: torch.Tensor, num_heads: int, num_kv_heads: int, head_dim: int, q_scale, k_scale,
                       v_scale) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Reference of the epilogue's quantization: split the (..., N) GEMM result into q/k/v heads and quantize each
    with :func:`tritonfp8.quantize_torch` (per-head scales as (1, D) group scales). Returns E4M3 q, k, v."""
    from tritonfp8.quantize import quantize_torch

    lead = tuple(c.shape[:-1])
    m = math.prod(lead)
    c2 = c.reshape(m, -1).float()
    hs = head_scales(q_scale, k_scale, v_scale, num_heads, num_kv_heads).to(c.device)
    outs, col, h0 = [], 0, 0
    for heads in (num_heads, num_kv_heads, num_kv_heads):
        part = c2[:, col: col + heads * head_dim]
        s = hs[h0: h0 + heads].reshape(1, heads).expand(m, heads)
        xq, _ = quantize_torch(part, (1, head_dim), E4M3.torch_dtype, scale=s)
        outs.append(xq.reshape(*lead, heads, head_dim))
        col += heads * head_dim
        h0 += heads
    return outs[0], outs[1], outs[2]


def qkv_projection_torch(x, w_qkv, x_scale, w_scale, *, num_heads, num_kv_heads, head_dim, q_scale, k_scale,
                         v_scale, bias=None, num_seqs=None) -> QKVProjection:
    """Plain-PyTorch reference: :func:`tritonfp8.gemm_torch` in fp32, then :func:`quantize_qkv_torch`."""
    from tritonfp8.gemm import gemm_torch

    batch = _validate(x, w_qkv, num_heads, num_kv_heads, head_dim, q_scale, k_scale, v_scale, None, num_seqs)
    c = gemm_torch(x, w_qkv, x_scale, w_scale, out_dtype=torch.float32, bias=bias)
    q, k, v = quantize_qkv_torch(c, num_heads, num_kv_heads, head_dim, q_scale, k_scale, v_scale)
    return QKVProjection(q, k, v, *(attention_descales(s, batch) for s in (q_scale, k_scale, v_scale)))


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
    config=None,
) -> QKVProjection:
    """``x @ [Wq; Wk; Wv]ᵀ (+ bias)`` quantized in the GEMM epilogue into E4M3 q, k, v for :func:`tritonfp8.attention`.

    x (B, S, K) or (T, K) FP8 and w_qkv (N, K) FP8, N = (num_heads + 2*num_kv_heads) * head_dim, with ``x_scale`` /
    ``w_scale`` / ``bias`` / ``accumulate`` / ``config`` exactly as :func:`tritonfp8.gemm` takes them (per tensor,
    per row, block scales). ``q_scale``/``k_scale``/``v_scale``: static fp32 dequantization factors, () / (1,) or
    (num_kv_heads,) (see the module docstring). head_dim: 64, 128 or 256. ``unquantized_dtype`` (bf16/fp16/fp32):
    also return the (..., N) GEMM result in that dtype (same launch). ``num_seqs``: with 2-D (varlen) x and a
    per-head scale, the number of sequences (the attention descales are (num_seqs, Hkv)).

    Returns :class:`QKVProjection`: q (..., Hq, D), k/v (..., Hkv, D) E4M3 contiguous, descales () or (B, Hkv).
    """
    from tritonfp8._kernels.gemm import QkvTargets
    from tritonfp8.gemm import _gemm, gemm

    batch = _validate(x, w_qkv, num_heads, num_kv_heads, head_dim, q_scale, k_scale, v_scale, unquantized_dtype,
                      num_seqs)
    lead = tuple(x.shape[:-1])
    dev = x.device
    descales = [attention_descales(s, batch) for s in (q_scale, k_scale, v_scale)]
    K = x.shape[-1]
    no_fp8_tc = dev.type == "cuda" and not _backend.has_fp8_tensor_cores(dev)
    if K == 0 or no_fp8_tc or math.prod(lead) == 0:
        # No FP8 epilogue to run (or nothing to compute): the GEMM in fp32, then the reference quantization.
        c = gemm(x, w_qkv, x_scale, w_scale, out_dtype=torch.float32, bias=None if bias is None else bias.float(),
                 accumulate=accumulate, config=config)
        q, k, v = quantize_qkv_torch(c, num_heads, num_kv_heads, head_dim, q_scale, k_scale, v_scale)
        unq = c.to(unquantized_dtype) if unquantized_dtype is not None else None
        return QKVProjection(q, k, v, *descales, unq)
    e4 = E4M3.torch_dtype
    q = torch.empty(lead + (num_heads, head_dim), dtype=e4, device=dev)
    k = torch.empty(lead + (num_kv_heads, head_dim), dtype=e4, device=dev)
    v = torch.empty(lead + (num_kv_heads, head_dim), dtype=e4, device=dev)
    hs = head_scales(q_scale, k_scale, v_scale, num_heads, num_kv_heads).to(dev).contiguous()
    targets = QkvTargets(q, k, v, hs, num_heads, num_kv_heads, head_dim, store_c=unquantized_dtype is not None)
    unq = _gemm(x, w_qkv, x_scale, w_scale, out_dtype=unquantized_dtype or torch.bfloat16, bias=bias,
                activation=None, accumulate=accumulate, out=None, config=config, qkv=targets)
    return QKVProjection(q, k, v, *descales, unq if unquantized_dtype is not None else None)


class FP8QKV(nn.Module):
    """Fused q/k/v projection module: ``forward(x)`` returns :class:`QKVProjection` (E4M3 q, k, v + descales) for
    :func:`tritonfp8.attention`, from one FP8 GEMM on the concatenated weight.

    Buffers: ``weight`` (N, K) FP8 = [Wq; Wk; Wv] quantized with the recipe's weight granularity (per tensor of the
    concatenation, per output channel, or 128x128 blocks), ``weight_scale``; ``q_scale``/``k_scale``/``v_scale``
    (Hkv,) fp32 static per-KV-head dequantization factors (1.0 until calibrated or set); ``bias`` (N,) or None.
    Activations are quantized per call as the recipe says (``tensor``, ``row`` or ``block``; static activation
    recipes are not supported here).

    Calibration: with ``calibrating = True`` the forward runs the GEMM to fp32, records the per-KV-head amax of q,
    k and v and returns *unquantized* bf16 q/k/v (descales None; :func:`tritonfp8.attention` quantizes those per
    head itself); :meth:`finish_calibration` sets the scales to amax / 448 (times ``margin``).
    """

    def __init__(self, in_features: int, num_heads: int, num_kv_heads: int, head_dim: int, bias: bool = False,
                 recipe="row", device=None) -> None:
        super().__init__()
        from tritonfp8.nn import _resolve_recipe, check_shape

        _check_heads(num_heads, num_kv_heads, head_dim)
        self.in_features = in_features
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.out_features = (num_heads + 2 * num_kv_heads) * head_dim
        reason = check_shape(in_features, self.out_features)
        if reason:
            raise ValueError(f"FP8QKV: {reason}")
        self.recipe = _resolve_recipe(recipe)
        if self.recipe.static_activation:
            raise ValueError(f"recipe: FP8QKV quantizes activations per call; got static recipe {self.recipe.name!r}")
        e4 = E4M3.torch_dtype
        self.register_buffer("weight", torch.zeros(self.out_features, in_features, dtype=e4, device=device))
        self.register_buffer("weight_scale", torch.ones((), dtype=torch.float32, device=device))
        for name in ("q_scale", "k_scale", "v_scale"):
            self.register_buffer(name, torch.ones(num_kv_heads, dtype=torch.float32, device=device))
            self.register_buffer(name.replace("scale", "amax"),
                                 torch.zeros(num_kv_heads, dtype=torch.float32, device=device), persistent=False)
        self.bias = nn.Parameter(torch.zeros(self.out_features, device=device), requires_grad=False) if bias else None
        self.calibrating = False

    @classmethod
    def from_linears(cls, q_proj: nn.Linear, k_proj: nn.Linear, v_proj: nn.Linear, *, num_heads: int,
                     num_kv_heads: int, head_dim: int, recipe="row") -> "FP8QKV":
        """From the three projections of one attention layer (e.g. ``LlamaAttention.q_proj``/``k_proj``/``v_proj``);
        the bias, if any, must be on all three or none."""
        from tritonfp8.nn import _quantize_weight

        biases = [p.bias is not None for p in (q_proj, k_proj, v_proj)]
        if any(biases) and not all(biases):
            raise ValueError("from_linears: q_proj, k_proj and v_proj must all have a bias or none")
        w = torch.cat([q_proj.weight, k_proj.weight, v_proj.weight]).detach()
        m = cls(w.shape[1], num_heads, num_kv_heads, head_dim, bias=all(biases), recipe=recipe, device=w.device)
        if w.shape[0] != m.out_features:
            raise ValueError(f"from_linears: the projections have {w.shape[0]} output rows in all, expected "
                             f"(Hq + 2*Hkv) * D = {m.out_features}")
        wq, ws = _quantize_weight(w, m.recipe)
        m.weight.copy_(wq)
        m.weight_scale = ws.to(torch.float32).clone()
        if m.bias is not None:
            m.bias.data = torch.cat([q_proj.bias, k_proj.bias, v_proj.bias]).detach().float()
        return m

    _KEEP_DTYPES = ("weight", "weight_scale", "q_scale", "k_scale", "v_scale", "q_amax", "k_amax", "v_amax")

    def _apply(self, fn, recurse: bool = True):
        # .to(dtype) / .half() / .bfloat16() keep the E4M3 weight and the fp32 scales (as FP8Linear does).
        from tritonfp8.nn import apply_keeping_dtypes

        return apply_keeping_dtypes(self, super()._apply, fn, recurse, self._KEEP_DTYPES)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # Loaded q/k/v scales are calibrated scales (a fused model's state_dict, or checkpoint scales): the module
        # leaves calibrating mode.
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        if all(prefix + f"{n}_scale" in state_dict for n in ("q", "k", "v")):
            self.calibrating = False

    def finish_calibration(self, margin: float = 1.0) -> None:
        """q/k/v scales := margin * amax / 448 per KV head (1.0 where nothing was seen); leaves calibrating mode."""
        for name in ("q", "k", "v"):
            amax = getattr(self, f"{name}_amax") * margin
            getattr(self, f"{name}_scale").copy_(torch.where(amax > 0, amax / E4M3.max, torch.ones_like(amax)))
            getattr(self, f"{name}_amax").zero_()
        self.calibrating = False

    def observe(self, name: str, t: torch.Tensor) -> None:
        """Calibration: fold ``t`` (..., heads, D) of q/k/v (``name``) into the per-KV-head amax. Used by
        :meth:`forward` and by callers that transform q/k before quantizing them (RoPE, see
        :func:`tritonfp8.fuse_qkv`): the scale must describe the tensor that is actually quantized."""
        if name not in ("q", "k", "v"):
            raise ValueError(f"observe: name must be 'q', 'k' or 'v', got {name!r}")
        amax = t.detach().float().reshape(-1, self.num_kv_heads, t.shape[-2] // self.num_kv_heads * t.shape[-1])
        buf = getattr(self, f"{name}_amax")
        buf.copy_(torch.maximum(buf, amax.abs().amax(dim=(0, 2))))

    def forward(self, x: torch.Tensor, num_seqs: int | None = None, *, unquantized_dtype: torch.dtype | None = None,
                observe: str = "qkv") -> QKVProjection:
        """``unquantized_dtype``: also return the (..., N) GEMM result (see :func:`qkv_projection`).
        ``observe`` (calibrating mode only): which of q/k/v this call records (default all three)."""
        from tritonfp8 import ops

        r = self.recipe
        xq, xs = ops.quantize(x, r.activation, r.activation_dtype)
        heads = dict(num_heads=self.num_heads, num_kv_heads=self.num_kv_heads, head_dim=self.head_dim)
        if not self.calibrating:
            return ops.qkv_projection(xq, self.weight, xs, self.weight_scale, q_scale=self.q_scale,
                                      k_scale=self.k_scale, v_scale=self.v_scale, bias=self.bias,
                                      accumulate=r.accumulate, num_seqs=num_seqs,
                                      unquantized_dtype=unquantized_dtype, **heads)
        c = ops.gemm(xq, self.weight, xs, self.weight_scale, out_dtype=torch.float32, bias=self.bias,
                     accumulate=r.accumulate)
        lead, d, hkv = tuple(x.shape[:-1]), self.head_dim, self.num_kv_heads
        parts = torch.split(c, [self.num_heads * d, hkv * d, hkv * d], dim=-1)
        outs = []
        for name, part, h in zip(("q", "k", "v"), parts, (self.num_heads, hkv, hkv)):
            part = part.reshape(*lead, h, d)
            if name in observe:
                self.observe(name, part)
            outs.append(part.to(torch.bfloat16))
        unq = c.to(unquantized_dtype) if unquantized_dtype is not None else None
        return QKVProjection(outs[0], outs[1], outs[2], None, None, None, unq)
