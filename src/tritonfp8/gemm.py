"""FP8 GEMM: ``C = (a·scale_a) @ (b·scale_b)ᵀ (+ bias, then activation)``.

Layouts: ``a`` (..., K) FP8 with K contiguous (leading dims are flattened into M); ``b`` (N, K) FP8, K contiguous:
the ``nn.Linear`` weight layout. FP8 wgmma reads both operands K-major, so neither is transposed in memory.
Types: E4M3 × E4M3, E4M3 × E5M2, E5M2 × E4M3 (and E5M2 × E5M2, which the tensor cores also take).

Scales are fp32 *dequantization* factors (``x ≈ x_fp8.float() * scale``, as ``torch._scaled_mm``). The mode is read
from their shapes:

- ``scale_a``: ``()``, ``(1,)`` or ``(1, 1)``: per tensor; ``(M, 1)`` (or ``a.shape[:-1] + (1,)``): per row of a.
- ``scale_b``: ``()``, ``(1,)`` or ``(1, 1)``: per tensor; ``(N, 1)`` or ``(1, N)``: per row of b (per output
  channel).
- Block scales (DeepSeek-V3 style), both together, Kb = ceil(K/128): ``scale_a`` ``(M, Kb)`` (or
  ``a.shape[:-1] + (Kb,)``): one scale per 1×128 group of a row of a; ``scale_b`` ``(ceil(N/128), Kb)``: one per
  128×128 block of b, or ``(N, Kb)``: one per 1×128 group of a row of b. The last group/block of a row or column
  may be partial. Shapes that also fit the modes above (K <= 128) mean the same product and take those modes.
  Block scales are applied inside the K loop, in fp32, at every 128-wide K step: the accumulation is always
  "precise" (``accumulate`` is ignored for them). Any strides are accepted. The Triton kernel reads the scale
  tensors in place; the Gluon kernel (Hopper's default for 1x128 x 128x128 block scales at large M) loads a's
  scales by TMA from the outer-dim-major layout (strides (1, M), as ``torch._scaled_mm`` takes it) and copies
  ``scale_a`` into it (M padded to a multiple of 4) when it is stored otherwise, e.g. the row-major (M, Kb) that
  :func:`tritonfp8.quantize` returns: M x Kb fp32 per call.

Accumulation: ``"fast"`` lets the Hopper tensor core accumulate FP8 products in its reduced-precision accumulator
over all of K (as cuBLAS ``use_fast_accum=True``); ``"precise"`` adds every 128-wide K block into an fp32 accumulator
(the error of cuBLAS exact accumulation). The result is computed in fp32 (scales, bias, activation) and rounded
once to ``out_dtype`` (bf16, fp16 or fp32).

Requirements: K and N multiples of 16 (TMA needs 16-byte aligned row strides; pad with zeros otherwise: zero
columns of K change nothing). ``a``/``b`` views that TMA cannot read (last stride != 1, row stride or base not
16-byte aligned) are copied with ``.contiguous()`` first: a copy of ``b`` costs a full read and write of the
weight, so pass weights contiguous. Zero-size M or N give an empty result; K = 0 gives ``activation(bias)`` (or
zeros).

Where it runs: Hopper (sm_90): TMA + wgmma kernels; Ada (sm_89): pointer-load kernels on FP8 tensor cores; older
GPUs: a BF16 fallback (exact FP8 -> BF16 conversion, cuBLAS BF16 matmul) with a one-time warning; CPU tensors with
``TRITON_INTERPRET=1``: the same Triton kernels in the interpreter (tests).
"""

from __future__ import annotations

import dataclasses
import math

import torch

from tritonfp8 import _backend
from tritonfp8._formats import FP8_FORMATS
from tritonfp8._kernels.gemm_configs import (GemmConfig, block_config, fit_stages, heuristic_config, pinned_config,
                                             qkv_config, select_config)

__all__ = ["gemm", "gemm_torch", "error_bound", "GemmConfig", "pinned_config", "demo_cases", "ACTIVATIONS",
           "OUT_DTYPES", "SCALE_BLOCK"]

OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
ACTIVATIONS = (None, "relu", "gelu", "silu")
ACCUMULATE = ("fast", "precise")

# Block scaling (1x128 groups of a, 128x128 blocks or 1x128 groups of b), applied in the kernel's K loop.
SCALE_BLOCK = 128


# ------------------------------------------------------------------------------------------------------------------
# Reference


def _activation_torch(x: torch.Tensor, activation: str | None) -> torch.Tensor:
    if activation is None:
        return x
    if activation == "relu":
        return torch.relu(x)
    if activation == "gelu":
        return torch.nn.functional.gelu(x)  # exact (erf) form
    if activation == "silu":
        return torch.nn.functional.silu(x)
    raise ValueError(f"activation: expected one of {ACTIVATIONS}, got {activation!r}")


def gemm_torch(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    *,
    out_dtype: torch.dtype = torch.bfloat16,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
    compute_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Plain-PyTorch reference: dequantize, matmul in ``compute_dtype`` (fp32; fp64 for error studies), add bias,
    apply the activation, round once to ``out_dtype``. Same layouts and scale shapes as :func:`gemm`; block scales
    dequantize each 1×128 group / 128×128 block of a and b with its own scale before the one matmul."""
    K = a.shape[-1]
    M, N = math.prod(a.shape[:-1]), b.shape[0]
    a2 = a.reshape(-1, K).to(compute_dtype)
    if _block_mode(scale_a, scale_b, tuple(a.shape[:-1]), M, N, K) is not None:
        a2 = a2 * _expand_block(scale_a.reshape(M, -1).to(compute_dtype), M, K, 1)
        gb = SCALE_BLOCK if scale_b.shape[0] != N else 1
        b2 = b.to(compute_dtype) * _expand_block(scale_b.to(compute_dtype), N, K, gb)
    else:
        sa = scale_a.to(compute_dtype).reshape(-1)
        a2 = a2 * (sa[:, None] if sa.numel() > 1 else sa)
        sb = scale_b.to(compute_dtype).reshape(-1)
        b2 = b.to(compute_dtype) * (sb[:, None] if sb.numel() > 1 else sb)
    c = a2 @ b2.T
    if bias is not None:
        c = c + bias.to(compute_dtype)
    c = _activation_torch(c, activation)
    return c.to(out_dtype).reshape(*a.shape[:-1], b.shape[0])


def _expand_block(s: torch.Tensor, rows: int, K: int, row_group: int) -> torch.Tensor:
    """Scale ``s`` (ceil(rows/row_group), ceil(K/128)) broadcast to (rows, K): row r, column k gets
    ``s[r // row_group, k // 128]``."""
    ir = torch.arange(rows, device=s.device) // row_group
    ik = torch.arange(K, device=s.device) // SCALE_BLOCK
    return s.index_select(0, ir).index_select(1, ik)


def _block_mode(scale_a, scale_b, lead: tuple, M: int, N: int, K: int) -> int | None:
    """The row group of b's block scales (128: 128x128 blocks, 1: 1x128 groups) when (scale_a, scale_b) are block
    scales and do not also fit the per-tensor/per-row modes (K <= 128 makes those the same product); else None."""
    kb = -(-K // SCALE_BLOCK)
    sa, sb = tuple(scale_a.shape), tuple(scale_b.shape)
    if _legacy_shape(sa, ((M, 1), lead + (1,))) and _legacy_shape(sb, ((N, 1), (1, N))):
        return None
    if sa not in ((M, kb), lead + (kb,)):
        return None
    if sb == (-(-N // SCALE_BLOCK), kb):
        return SCALE_BLOCK
    if sb == (N, kb):
        return 1
    return None


def _legacy_shape(shape: tuple, row_shapes: tuple) -> bool:
    """``shape`` is a per-tensor or per-row scale shape (see :func:`_scale_mode`)."""
    return (math.prod(shape) == 1 and len(shape) <= 2) or shape in row_shapes


def _gemm_bf16_fallback(a2, b, sa, sb, a_vec, b_vec, bias, activation, out2):
    """GPUs without FP8 tensor cores: FP8 -> BF16 is exact (3/2 mantissa bits fit in 7, the exponent range fits),
    so the products are exact; cuBLAS BF16 matmul accumulates in fp32 and rounds the sum to bf16, then the scaled
    result is rounded to out_dtype: two roundings, so its error bound is 2^-8 plus :func:`error_bound`."""
    c = torch.matmul(a2.to(torch.bfloat16), b.to(torch.bfloat16).T).float()
    c = c * (sa[:, None] if a_vec else sa) * (sb[None, :] if b_vec else sb)
    if bias is not None:
        c = c + bias.float()
    out2.copy_(_activation_torch(c, activation))
    return out2


# ------------------------------------------------------------------------------------------------------------------
# Error bound (the one stated bound: tests, demo and benchmark use it)

_UNIT_ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}
# Hopper's FP8 wgmma accumulates in a reduced-precision adder that keeps about 13 significant bits (DeepSeek-V3
# report: "around 14 bits"; 13 here for truncation). Modelled as a random walk over the K/32 wgmma k-steps:
# 2^-13 * sqrt(K/32); measured (H200, bf16 out, N(0,1) data): total 2.6e-3 at K=8192 and 4.7e-3 at K=28672, of which
# 1.66e-3 is the bf16 output rounding. A factor 1.5 covers the measured growth beyond sqrt(K).
_FAST_ACC_BITS = 13


def error_bound(out_dtype: torch.dtype, K: int, accumulate: str = "precise", *, tensor_core: bool = False) -> float:
    """Bound on ``||C - C_ref||_F / ||C_ref||_F``, C_ref the exact product of the dequantized inputs (+ bias, act).

    ``u_out`` (the single rounding to out_dtype: bf16 2^-8, fp16 2^-11, fp32 2^-24) plus the accumulation error:
    fp32 accumulation (``"precise"``, or any mode in the interpreter): ``K * 2^-24`` (first-order worst case);
    ``"fast"`` on FP8 tensor cores (``tensor_core=True``): ``1.5 * 2^-13 * sqrt(K / 32)``.
    ``"precise"`` on tensor cores adds the fast term for one K block (``min(K, 128)``): each block of <= 128 is a
    fresh wgmma chain, summed in the tensor core's reduced precision before its fp32 promotion (measured with fp32
    output at K = 160-288: 1.2-1.4e-4, against 1.5e-5 for the fp32-only term; bf16/fp16 outputs hide it).
    """
    u = _UNIT_ROUNDOFF[out_dtype]
    if not tensor_core:
        return u + K * 2.0**-24
    fast = lambda k: 1.5 * 2.0**-_FAST_ACC_BITS * math.sqrt(max(k, 32) / 32)  # noqa: E731
    if accumulate == "fast":
        return u + fast(K)
    return u + K * 2.0**-24 + fast(min(K, 128))


# ------------------------------------------------------------------------------------------------------------------
# Validation


def _check_tensor(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")


def _check_operands(a, b, scale_a, scale_b) -> None:
    """The four GEMM inputs are tensors and a, b are FP8 (shared by gemm and grouped_gemm)."""
    for name, t in (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b)):
        _check_tensor(name, t)
    if a.dtype not in FP8_FORMATS:
        raise TypeError(f"a: expected torch.float8_e4m3fn or torch.float8_e5m2, got {a.dtype}")
    if b.dtype not in FP8_FORMATS:
        raise TypeError(f"b: expected torch.float8_e4m3fn or torch.float8_e5m2, got {b.dtype}")


def _scale_mode(name: str, s: torch.Tensor, rows: int, row_shapes: tuple[tuple[int, ...], ...], what: str) -> bool:
    """True for a vector scale (one per row), False for a per-tensor scalar; ValueError/TypeError otherwise."""
    if s.dtype != torch.float32:
        raise TypeError(f"{name}: expected a torch.float32 dequantization scale, got {s.dtype}")
    shape = tuple(s.shape)
    if s.numel() == 1 and len(shape) <= 2:
        return False
    if shape in row_shapes:
        return True
    allowed = ", ".join(str(x) for x in ((), (1,), *row_shapes))
    raise ValueError(
        f"{name}: expected shape () or (1,) (per tensor) or one of {allowed} ({what}), or block scales "
        f"(a: (M, ceil(K/128)), b: (ceil(N/128), ceil(K/128)) or (N, ceil(K/128))), got {shape}"
    )


def _check_block_pairing(scale_a, scale_b, lead: tuple, M: int, N: int, K: int) -> None:
    """Block scales come in pairs: one operand with block scales and the other without raises a ValueError that
    names the other operand and the shapes it may have."""
    kb = -(-K // SCALE_BLOCK)
    nb = -(-N // SCALE_BLOCK)
    sa, sb = tuple(scale_a.shape), tuple(scale_b.shape)
    a_block = sa in ((M, kb), lead + (kb,)) and not _legacy_shape(sa, ((M, 1), lead + (1,)))
    b_block = sb in ((nb, kb), (N, kb)) and not _legacy_shape(sb, ((N, 1), (1, N)))
    if a_block and not b_block:
        raise ValueError(
            f"scale_b: with block scales for a ({sa} = (M, ceil(K/128))), expected ({nb}, {kb}) (one per 128x128 "
            f"block of b) or ({N}, {kb}) (one per 1x128 group of b), got {sb}"
        )
    if b_block and not a_block:
        raise ValueError(
            f"scale_a: with block scales for b ({sb}), expected ({M}, {kb}) (M, ceil(K/128)): one per 1x128 group "
            f"of a, got {sa}"
        )


def _tma_ready(t: torch.Tensor) -> bool:
    """TMA reads a 2-D view directly: last stride 1, row stride and base 16-byte aligned (FP8: 16 elements)."""
    return t.stride(-1) == 1 and t.stride(0) % 16 == 0 and t.data_ptr() % 16 == 0


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What a call's metadata decided, validated once (see :func:`gemm`'s plan cache)."""

    M: int
    N: int
    K: int
    lead: tuple
    a_vec: bool
    b_vec: bool
    b_group: int | None
    precise: bool
    config: GemmConfig
    arch: int
    sms: int
    # Launch templates of this plan (see _kernels.gemm._Template) by the 16-byte alignment of the scale and bias
    # pointers and the kernel-name mode: the rest of the template key is fixed by the plan's own key.
    templates: dict = dataclasses.field(default_factory=dict, compare=False, hash=False)


# Launch plans by call metadata (shapes, strides, dtypes, devices, options, pinned config): a repeat call skips the
# validation, the device queries and the config choice. The eager call measured ~200 us of host time on the
# H200's host against ~25 us for torch._scaled_mm (benchmarks/results/gemm-host-overhead-*.json), most of it
# Python. Only plain launches are recorded: CUDA tensors, nonempty shapes, operands already TMA-ready, scales and
# bias used as given, FP8 tensor cores; anything else (and every first call) takes the full path.
_PLANS: dict[tuple, _Plan] = {}
_PLAN_CACHE_SIZE = 512


def _pad_k(t: torch.Tensor, k16: int) -> torch.Tensor:
    """(rows, k) FP8 -> a contiguous (rows, k16) copy, zero columns appended."""
    p = torch.zeros((t.shape[0], k16), device=t.device, dtype=t.dtype)
    p[:, : t.shape[1]] = t
    return p


def _plan_key(a, b, scale_a, scale_b, out_dtype, bias, activation, accumulate, out, config) -> tuple:
    from tritonfp8._kernels.gemm_configs import pinned

    return (
        a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device,
        scale_a.shape, scale_a.stride(), scale_a.dtype, scale_a.device,
        scale_b.shape, scale_b.stride(), scale_b.dtype, scale_b.device, out_dtype,
        None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.device), activation, accumulate,
        None if out is None else (out.shape, out.stride(), out.dtype, out.device), config, pinned(),
    )


def _run_plan(plan: _Plan, a, b, scale_a, scale_b, out_dtype, bias, activation, out):
    """Launch a recorded plan; None when this call's pointers are not TMA-ready (the full path then copies)."""
    a2 = a.reshape(plan.M, plan.K)
    if not (_tma_ready(a2) and _tma_ready(b)):
        return None
    o = out if out is not None else torch.empty(plan.lead + (plan.N,), device=a.device, dtype=out_dtype)
    o2 = o.view(plan.M, plan.N)
    if o2.data_ptr() % 16:
        return None
    from tritonfp8._kernels import gemm as kernels
    from tritonfp8.naming import naming_mode

    block = plan.b_group is not None
    sa = scale_a.reshape(plan.M, -1) if block else scale_a.reshape(-1)
    sb = scale_b if block else scale_b.reshape(-1)
    bits = (sa.data_ptr() % 16 == 0, sb.data_ptr() % 16 == 0, bias is None or bias.data_ptr() % 16 == 0,
            naming_mode())
    t = plan.templates.get(bits)
    if t is not None and a.is_cuda:
        t.launch(a2, b, sa, sb, bias, o2)
        return o
    rec: list = []
    kernels.launch_gemm(
        a2, b, sa, sb, bias, activation, o2, plan.config,
        a_vec=plan.a_vec, b_vec=plan.b_vec, precise=plan.precise, arch=plan.arch, sms=plan.sms,
        b_block_rows=plan.b_group, _record=rec,
    )
    if rec:
        plan.templates[bits] = rec[0]
    return o


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
    config: GemmConfig | None = None,
) -> torch.Tensor:
    """``act((a·scale_a) @ (b·scale_b)ᵀ + bias)`` rounded to ``out_dtype``.

    a: (..., K) FP8 (float8_e4m3fn / float8_e5m2), K contiguous. b: (N, K) FP8, K contiguous (nn.Linear weight).
    scale_a: fp32, () / (1,) per tensor or (M, 1) per row of a. scale_b: fp32, () / (1,) per tensor or (N, 1) /
    (1, N) per row of b. Dequantization factors: a ≈ a_fp8.float() * scale_a.
    Block scales (Kb = ceil(K/128)): scale_a (M, Kb) per 1×128 group of a, with scale_b (ceil(N/128), Kb) per
    128×128 block of b or (N, Kb) per 1×128 group of b; any strides (the Gluon kernel copies a row-major scale_a
    into the outer-dim-major layout it loads by TMA: see the module doc); applied in fp32 at
    every 128-wide K step (always precise accumulation; ``accumulate`` does not change it); a pinned ``config``
    must have block_k = 128.
    out_dtype: torch.bfloat16 (default), torch.float16 or torch.float32. bias: (N,) in out_dtype or fp32.
    activation: None, "relu", "gelu" (exact erf form) or "silu". accumulate: "fast" or "precise" (see module doc).
    out: optional (..., N) contiguous tensor of ``out_dtype`` to write into. config: pin a kernel configuration
    (tests, tuning); normally chosen from the tuned table of this GPU or the heuristics.
    K not a multiple of 16: a and b are copied with zero columns up to one (TMA's 16-byte rows; a copy of both per
    call: pad a weight once to avoid it). N must be a multiple of 16 (ValueError otherwise).
    Returns a (..., N) tensor of ``out_dtype``.
    """
    try:
        key = _plan_key(a, b, scale_a, scale_b, out_dtype, bias, activation, accumulate, out, config)
        plan = _PLANS.get(key)
    except (AttributeError, TypeError):  # not tensors, or unhashable options: the full path says what is wrong
        key = plan = None
    if plan is not None:
        res = _run_plan(plan, a, b, scale_a, scale_b, out_dtype, bias, activation, out)
        if res is not None:
            return res
    return _gemm(a, b, scale_a, scale_b, out_dtype=out_dtype, bias=bias, activation=activation,
                 accumulate=accumulate, out=out, config=config, plan_key=key)


def _gemm(a, b, scale_a, scale_b, *, out_dtype, bias, activation, accumulate, out, config, qkv=None,
          plan_key=None):
    """:func:`gemm`, and the fused QKV projection (``qkv``: a ``_kernels.gemm.QkvTargets``, see
    :mod:`tritonfp8.qkv`): then ``out`` is written only when ``qkv.store_c`` (else None: no (M, N) output is
    allocated), the caller has ruled out K = 0 and GPUs without FP8 tensor cores, and a swap-AB / split-K config
    choice is replaced by :func:`~tritonfp8._kernels.gemm_configs.qkv_config`."""
    _check_operands(a, b, scale_a, scale_b)
    if a.dim() < 2:
        raise ValueError(f"a: expected (..., M, K) with at least 2 dims, got shape {tuple(a.shape)}")
    if b.dim() != 2:
        raise ValueError(f"b: expected (N, K) (the nn.Linear weight layout), got shape {tuple(b.shape)}")
    K = a.shape[-1]
    N = b.shape[0]
    if b.shape[1] != K:
        raise ValueError(f"b: expected (N, K) with K = {K} (a's last dim), got shape {tuple(b.shape)}")
    if N % 16:
        raise ValueError(
            f"b: N = {N} must be a multiple of 16 (TMA needs 16-byte aligned output rows); pad b with zero rows"
        )
    if not isinstance(out_dtype, torch.dtype) or out_dtype not in OUT_DTYPES:
        raise TypeError(f"out_dtype: expected torch.bfloat16, torch.float16 or torch.float32, got {out_dtype}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: expected one of {ACTIVATIONS}, got {activation!r}")
    if accumulate not in ACCUMULATE:
        raise ValueError(f"accumulate: expected 'fast' or 'precise', got {accumulate!r}")
    lead = tuple(a.shape[:-1])
    M = math.prod(lead)
    for name, sc in (("scale_a", scale_a), ("scale_b", scale_b)):
        if sc.dtype != torch.float32:
            raise TypeError(f"{name}: expected a torch.float32 dequantization scale, got {sc.dtype}")
    b_group = _block_mode(scale_a, scale_b, lead, M, N, K)
    block = b_group is not None
    if block:
        a_vec = b_vec = False
    else:
        _check_block_pairing(scale_a, scale_b, lead, M, N, K)
        a_vec = _scale_mode("scale_a", scale_a, M, ((M, 1), lead + (1,)), "per row of a")
        b_vec = _scale_mode("scale_b", scale_b, N, ((N, 1), (1, N)), "per row of b")
    if bias is not None:
        _check_tensor("bias", bias)
        if bias.dtype not in (out_dtype, torch.float32):
            raise TypeError(f"bias: expected dtype {out_dtype} (out_dtype) or torch.float32, got {bias.dtype}")
        if tuple(bias.shape) != (N,):
            raise ValueError(f"bias: expected shape ({N},) (one per output column N), got {tuple(bias.shape)}")
    if out is not None:
        _check_tensor("out", out)
        if out.dtype != out_dtype:
            raise TypeError(f"out: expected dtype {out_dtype} (out_dtype), got {out.dtype}")
        if tuple(out.shape) != lead + (N,):
            raise ValueError(f"out: expected shape {lead + (N,)}, got {tuple(out.shape)}")
        if not out.is_contiguous():
            raise ValueError("out: expected a contiguous tensor")
    if config is not None and not isinstance(config, GemmConfig):
        raise TypeError(f"config: expected a GemmConfig or None, got {type(config).__name__}")
    device = _backend.check_device(
        "gemm", (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias), ("out", out))
    )

    c_only_qkv = qkv is not None and not qkv.store_c
    if out is None:
        out = torch.empty((0,) if c_only_qkv else lead + (N,), device=device, dtype=out_dtype)
    if M == 0 or N == 0:
        return out
    out2 = out if c_only_qkv else out.view(M, N)
    if block:
        # 2-D (M, Kb) and (Nb or N, Kb) views with any strides: the kernel reads them in place.
        sa = scale_a.reshape(M, -1)
        sb = scale_b
    else:
        sa = scale_a.reshape(-1).contiguous()
        sb = scale_b.reshape(-1).contiguous()
    if bias is not None:
        bias = bias.contiguous()
    if qkv is not None and (K == 0 or (device.type == "cuda" and not _backend.has_fp8_tensor_cores(device))):
        raise RuntimeError("gemm: internal: the fused QKV epilogue needs K > 0 and FP8 tensor cores")
    if K == 0:
        c = torch.zeros((M, N), device=device, dtype=torch.float32)
        if bias is not None:
            c = c + bias.float()
        out2.copy_(_activation_torch(c, activation))
        return out
    a2 = a.reshape(M, K)
    if K % 16:
        # TMA needs 16-byte aligned rows: a and b are copied with zero columns up to a multiple of 16 (zeros add
        # nothing to any product; the scale shapes do not change: ceil(K16 / 128) = ceil(K / 128)).
        K = -(-K // 16) * 16
        a2, b2 = _pad_k(a2, K), _pad_k(b, K)
    else:
        # A contiguous tensor can still start off 16-byte alignment (a storage offset): clone(), not contiguous().
        if not _tma_ready(a2):
            a2 = a2.clone(memory_format=torch.contiguous_format)
        b2 = b if _tma_ready(b) else b.clone(memory_format=torch.contiguous_format)

    if device.type == "cuda" and not _backend.has_fp8_tensor_cores(device):
        _backend.warn_once(
            "gemm-bf16-fallback",
            "tritonfp8.gemm: this GPU has no FP8 tensor cores (needs sm_89+); using the BF16 fallback "
            "(exact FP8->BF16 conversion, BF16 matmul)",
        )
        if block:
            # No FP8 tensor cores: dequantize per block (exact in fp32) and multiply in fp32.
            out2.copy_(gemm_torch(a2, b2, sa, sb, out_dtype=out_dtype, bias=bias, activation=activation))
            return out
        return _gemm_bf16_fallback(a2, b2, sa, sb, a_vec, b_vec, bias, activation, out2).view(out.shape)

    from tritonfp8._kernels import gemm as kernels

    arch = _backend.arch_of(device)
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        sms = kernels.num_sms(idx)
        gpu_name = torch.cuda.get_device_name(idx)
    else:
        sms, gpu_name = kernels.INTERPRETER_SMS, None
    precise = accumulate == "precise" or block
    source = "pinned"
    if config is None:
        config, source = select_config(
            M, N, K, precise=precise, arch=arch, num_sms=sms, out_size=out.element_size(), gpu_name=gpu_name,
            block=block,
        )
        if source == "table" and arch >= 90:
            # Tables are tuned with bf16 output; a wider output needs a bigger staging buffer: refit the stages.
            config = fit_stages(config, out.element_size())
        if config.schedule == "glws" and (qkv is not None or (block and b_group != SCALE_BLOCK)
                                          or a.dtype != torch.float8_e4m3fn or b.dtype != torch.float8_e4m3fn):
            # The Gluon kernel has no fused-QKV epilogue, its 1x128 groups of b spill (offline: 86 spill stores),
            # and it was checked and timed on the GPU with E4M3 x E4M3 only: those take the Triton kernel (a pinned
            # config still runs it).
            if block:
                config = block_config(M, N, K, arch=arch, num_sms=sms, out_size=out.element_size())
            else:
                config = heuristic_config(M, N, K, precise=precise, arch=arch, num_sms=sms,
                                          out_size=out.element_size())
    if qkv is not None and source != "pinned" and (config.swap_ab or config.split_k > 1):
        config = qkv_config(out.element_size())
    if arch < 90 and config.uses_tma:
        raise ValueError(f"config: schedule {config.schedule!r} needs TMA (sm_90+); this device is sm_{arch}")
    if block and config.block_k != SCALE_BLOCK:
        raise ValueError(
            f"config: block scales need block_k = {SCALE_BLOCK} (one scale column per K step), got {config.block_k}"
        )
    # TMA stores need a 16-byte aligned base (a contiguous `out` may still start at an odd offset of its storage).
    dst = out2 if out2.data_ptr() % 16 == 0 or c_only_qkv else torch.empty((M, N), device=device, dtype=out_dtype)
    if plan_key is not None and qkv is None and dst is out2 and a2.data_ptr() == a.data_ptr() \
            and b2 is b and (block or (sa.data_ptr() == scale_a.data_ptr() and sb.data_ptr() == scale_b.data_ptr())) \
            and (bias is None or bias.is_contiguous()):
        if len(_PLANS) >= _PLAN_CACHE_SIZE:
            _PLANS.pop(next(iter(_PLANS)))  # oldest first
        _PLANS[plan_key] = _Plan(M, N, K, lead, a_vec, b_vec, b_group, precise, config, arch, sms)
    kernels.launch_gemm(
        a2, b2, sa, sb, bias, activation, dst, config,
        a_vec=a_vec, b_vec=b_vec, precise=precise, arch=arch, sms=sms, b_block_rows=b_group, qkv=qkv,
    )
    if dst is not out2:
        out2.copy_(dst)
    return out


# ------------------------------------------------------------------------------------------------------------------
# Demo (``python -m tritonfp8 bench --quick`` without a GPU; contract in tritonfp8/bench/demo.py)


def demo_cases(device: str) -> list[dict]:
    """Small checks against :func:`gemm_torch`: per-tensor and rowwise scales, bias + activation, swap-AB decode.

    Tolerance: :func:`error_bound` (bf16 output rounding 2^-8 plus the accumulation error of the mode on this
    device; fast accumulation on a GPU adds 1.5 * 2^-13 * sqrt(K/32)).
    """
    g = torch.Generator().manual_seed(0)

    def rnd(*shape, dtype=torch.float8_e4m3fn, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).to(dtype).to(device)

    cases = []
    on_tc = device == "cuda"

    def case(label, M, N, K, *, a_dtype=torch.float8_e4m3fn, b_dtype=torch.float8_e4m3fn, rowwise=False,
             bias=False, activation=None):
        def run():
            a = rnd(M, K, dtype=a_dtype)
            b = rnd(N, K, dtype=b_dtype)
            if rowwise:
                sa = (torch.rand(M, 1, generator=g) + 0.5).to(device)
                sb = (torch.rand(1, N, generator=g) + 0.5).to(device)
            else:
                sa = torch.tensor(0.5, device=device)
                sb = torch.tensor(0.25, device=device)
            bb = torch.randn(N, generator=g).to(device) if bias else None
            out = gemm(a, b, sa, sb, bias=bb, activation=activation)
            ref = gemm_torch(a, b, sa, sb, bias=bb, activation=activation, out_dtype=torch.float64,
                             compute_dtype=torch.float64)
            return out, ref

        tol = error_bound(torch.bfloat16, K, "fast", tensor_core=on_tc)
        cases.append({"case": label, "run": run, "tol": tol, "note": "error_bound(): bf16 rounding + accumulation"})

    case("e4m3 200x96x128 per-tensor", 200, 96, 128)
    case("e4m3 130x64x96 rowwise +bias gelu", 130, 64, 96, rowwise=True, bias=True, activation="gelu")
    case("e5m2 x e4m3 8x128x256 decode (swap-AB)", 8, 128, 256, a_dtype=torch.float8_e5m2)
    return cases
