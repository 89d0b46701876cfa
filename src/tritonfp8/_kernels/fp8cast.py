"""Exact float32 -> FP8 conversion shared by every kernel that writes FP8.

Rounding rule of every FP8 result in tritonfp8, bit for bit equal to torch's ``torch.clamp(x, -fmax, fmax).to(fp8)``:
clamp to [-FMAX, FMAX], then round to nearest, ties to even (RNE) on the FP8 grid (subnormals included, the sign of
zero kept). NaN stays NaN; +-inf saturate to +-FMAX.

:func:`cast_to_fp8` implements it two ways, chosen when this module is imported:

- compiled (GPU): a NaN-propagating clamp (one ``FMNMX.NAN.XORSIGN`` per element on sm_90) and the hardware cast
  ``cvt.rn.satfinite`` (``F2FP.SATFINITE``), which is RNE. About 1.5 instructions per element.
- interpreter (``TRITON_INTERPRET=1``): its fp32 -> fp8 cast keeps the top mantissa bits instead of rounding
  (measured: truncation), so :func:`round_to_fp8_grid` first rounds in fp32 and the cast is then exact. Compiled,
  this explicit rounding costs about 11 more instructions per element (SASS measured on sm_90), which a
  bandwidth-bound kernel cannot afford; hence the switch.

Use in a kernel::

    from tritonfp8._kernels.fp8cast import cast_to_fp8        # or round_to_fp8_grid + .to()
    y = cast_to_fp8(x_fp32, OUT_DTYPE)                        # OUT_DTYPE: tl.constexpr, tl.float8e4nv / tl.float8e5

Host side, :func:`fp8_constexprs` gives the constexprs of a torch FP8 dtype, for kernels that take them explicitly.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from tritonfp8._formats import fp8_format

# Smallest normal exponent of each format: E4M3 (bias 7) 2^-6, E5M2 (bias 15) 2^-14. Below it the grid step stays
# 2^(EMIN - mantissa_bits): the subnormals.
_EMIN = {torch.float8_e4m3fn: -6, torch.float8_e5m2: -14}
_TRITON_DTYPE = {torch.float8_e4m3fn: tl.float8e4nv, torch.float8_e5m2: tl.float8e5}
# Decided at import, as triton.jit decides interpreter-or-compiled at decoration time.
_EXPLICIT_ROUNDING = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"))


def triton_fp8_dtype(dtype: torch.dtype):
    """The Triton element type of a torch FP8 dtype (``tl.float8e4nv`` / ``tl.float8e5``)."""
    fp8_format(dtype)  # TypeError naming `dtype` if unsupported
    return _TRITON_DTYPE[dtype]


def fp8_constexprs(dtype: torch.dtype) -> dict:
    """``{"EMIN", "MANT_BITS", "FMAX"}`` of a torch FP8 dtype, the arguments of :func:`round_to_fp8_grid`."""
    fmt = fp8_format(dtype)
    return {"EMIN": _EMIN[dtype], "MANT_BITS": fmt.mantissa_bits, "FMAX": fmt.max}


@triton.jit
def round_to_fp8_grid(x, EMIN: tl.constexpr, MANT_BITS: tl.constexpr, FMAX: tl.constexpr):
    """fp32 ``x`` saturated to [-FMAX, FMAX] and rounded (RNE) to the FP8 grid; still fp32, cast is then exact.

    The grid step at a value with unbiased exponent e is 2^(max(e, EMIN) - MANT_BITS). Scaling the magnitude by the
    inverse step puts it below 2^(MANT_BITS+1) <= 2^4, where adding and subtracting 1.5 * 2^23 rounds it to an
    integer with the FPU's round-to-nearest-even. Steps are powers of two built by bitcast, so every multiply is exact.
    """
    v = tl.clamp(x.to(tl.float32), -FMAX, FMAX, propagate_nan=tl.PropagateNan.ALL)
    bits = v.to(tl.int32, bitcast=True)
    sign = bits & -2147483648
    mag = (bits & 0x7FFFFFFF).to(tl.float32, bitcast=True)
    e = tl.maximum(((bits >> 23) & 0xFF) - 127, EMIN)
    step = ((e - MANT_BITS + 127) << 23).to(tl.float32, bitcast=True)
    inv_step = ((127 - (e - MANT_BITS)) << 23).to(tl.float32, bitcast=True)
    r = ((mag * inv_step + 12582912.0) - 12582912.0) * step
    # NaN -> the fp32 NaN whose top MANT_BITS mantissa bits are ones and the rest zero. The interpreter converts by
    # keeping the top mantissa bits (measured: fp32 NaN 0x7FC00000 became E4M3 0x7C = 384, not NaN); this pattern
    # becomes 0x7F, the NaN torch gives in both formats. The GPU's cvt gives NaN for any NaN.
    nan_bits: tl.constexpr = 0x7F800000 | (((1 << MANT_BITS) - 1) << (23 - MANT_BITS))
    r = tl.where(v == v, (r.to(tl.int32, bitcast=True) | sign), nan_bits)
    return r.to(tl.float32, bitcast=True)


@triton.jit
def cast_to_fp8(x, OUT_DTYPE: tl.constexpr):
    """fp32 ``x`` -> ``OUT_DTYPE`` (``tl.float8e4nv`` or ``tl.float8e5``), saturating, RNE, bit-exact with torch."""
    tl.static_assert(
        (OUT_DTYPE == tl.float8e4nv) or (OUT_DTYPE == tl.float8e5),
        "cast_to_fp8: OUT_DTYPE must be tl.float8e4nv or tl.float8e5",
    )
    if OUT_DTYPE == tl.float8e5:
        EMIN: tl.constexpr = -14
        MANT_BITS: tl.constexpr = 2
        FMAX: tl.constexpr = 57344.0
    else:
        EMIN: tl.constexpr = -6
        MANT_BITS: tl.constexpr = 3
        FMAX: tl.constexpr = 448.0
    if _EXPLICIT_ROUNDING:
        r = round_to_fp8_grid(x, EMIN, MANT_BITS, FMAX)
    else:
        # cvt.rn.satfinite rounds RNE and saturates; the clamp keeps NaN (PropagateNan.ALL; the default clamp would
        # turn NaN into a bound) and makes +-inf -> +-FMAX explicit.
        r = tl.clamp(x.to(tl.float32), -FMAX, FMAX, propagate_nan=tl.PropagateNan.ALL)
    return r.to(OUT_DTYPE)
