"""The fast exact division of the quantization kernels (``_kernels/quantize._div_by_scale``, variant suffix "fd").

Compiled, a kernel with FAST_DIV divides x by its group's data-derived scale s as

    d, r, nr = s, RN(1/s), -RN(1/s)         (once per group; d = r = 0, nr = -0 for s = inf)
    q = RN(x * r);  xn = 0 - x
    q = fma(fma(d, q, xn), nr, q)           (twice)

with single-rounding FMA (FFMA). The interpreter cannot run it (its fma rounds twice), so this module replays the
same steps in numpy with an exactly rounded fp32 FMA and compares them with IEEE division (what ``div_rn`` and the
torch reference compute): the fp32 quotient bit for bit wherever |x| >= 2^-103, and the FP8 result (e4m3 and e5m2,
torch's saturating cast after the clamp, as in ``quantize_torch``) everywhere, NaN as NaN. Inputs: every bf16 bit
pattern, and random fp32 values, against scales of the rule ``max(amax, 2^-40) / fmax`` for amax values over the
whole fp32 range (the floor, huge values, inf, and amax = |x| itself), keeping |x| <= amax as the data guarantee.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tritonfp8.quantize import AMAX_FLOOR

F32, F64 = np.float32, np.float64


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """fp32 fma(a, b, c) rounded once (round to nearest even), elementwise.

    a * b is exact in float64 (24 + 24 bits); TwoSum gives the sum exactly as hi + lo; RN to fp32 of hi is the answer
    unless hi is exactly halfway between two fp32 values and lo breaks the tie."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = a.astype(F64) * b.astype(F64)
        c64 = c.astype(F64)
        hi = p + c64
        bv = hi - p
        lo = (p - (hi - bv)) + (c64 - bv)
        f = hi.astype(F32)
        # Neighbour of f on hi's side, and whether hi is exactly the midpoint between them.
        toward = np.where(hi > f.astype(F64), np.inf, -np.inf).astype(F32)
        nb = np.nextafter(f, toward)
        mid = (f.astype(F64) + nb.astype(F64)) / 2
        tie = np.isfinite(hi) & (hi == mid) & (lo != 0)
        # At a tie, RN picked f (even); the exact value lies beyond the midpoint when lo points away from f.
        beyond = tie & ((lo > 0) == (nb.astype(F64) > f.astype(F64)))
        out = np.where(beyond, nb, f)
        nan_in = np.isnan(p) | np.isnan(c64)
    return np.where(nan_in | np.isnan(hi), F32(np.nan), out).astype(F32)


def _fast_div(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The kernel's steps (see the module docstring), fp32 in, fp32 out."""
    x, s = x.astype(F32), s.astype(F32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        r = (F64(1.0) / s.astype(F64)).astype(F32)  # correctly rounded (innocuous double rounding: 53 >= 2*24+2)
        d = np.where(s <= np.finfo(F32).max, s, F32(0))
        nr = (r.view(np.uint32) ^ np.uint32(0x80000000)).view(F32)
        q = (x.astype(F64) * r.astype(F64)).astype(F32)
        xn = F32(0) - x
        for _ in range(2):
            q = _fma32(_fma32(d, q, xn), nr, q)
    return q


def _ieee_div(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        return (x.astype(F64) / s.astype(F64)).astype(F32)


def _scale_of(amax: np.ndarray, fmax: float) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (np.maximum(amax.astype(F32), F32(AMAX_FLOOR)).astype(F64) / F64(fmax)).astype(F32)


def _to_fp8_bytes(q: np.ndarray, dtype: torch.dtype, fmax: float) -> np.ndarray:
    t = torch.from_numpy(q.astype(F32))
    return torch.clamp(t, -fmax, fmax).to(dtype).view(torch.uint8).numpy()


def _check(x: np.ndarray, amax: np.ndarray) -> None:
    """Fast vs IEEE division of x by the scale of amax (same shapes; |x| <= amax or x NaN), both FP8 formats."""
    for dtype, fmax in ((torch.float8_e4m3fn, 448.0), (torch.float8_e5m2, 57344.0)):
        s = _scale_of(amax, fmax)
        fast, ieee = _fast_div(x, s), _ieee_div(x, s)
        both_nan = np.isnan(fast) & np.isnan(ieee)
        with np.errstate(invalid="ignore"):
            resolvable = np.abs(x.astype(F64)) >= 2.0**-103
        same32 = both_nan | (fast.view(np.uint32) == ieee.view(np.uint32))
        bad = ~same32 & resolvable
        assert not bad.any(), f"fp32 quotient differs for x={x[bad][:5]}, s={s[bad][:5]}: {fast[bad][:5]} vs {ieee[bad][:5]}"
        q8f, q8i = _to_fp8_bytes(fast, dtype, fmax), _to_fp8_bytes(ieee, dtype, fmax)
        bad8 = (q8f != q8i) & ~both_nan  # NaN stays NaN (its FP8 sign bit is not part of the rule)
        assert not bad8.any(), f"{dtype} differs for x={x[bad8][:5]}, s={s[bad8][:5]}"


def _amax_values(rng: np.random.Generator, n: int) -> np.ndarray:
    """amax over the fp32 range: random exponents/mantissas, the floor region, the top, inf, mantissa extremes."""
    e = rng.integers(-149, 128, n)
    m = rng.random(n) + 1.0
    vals = (m * np.exp2(e.astype(F64))).astype(F32)
    special = np.array([0.0, AMAX_FLOOR, AMAX_FLOOR * 0.5, 1e-45, 1.0, 1.9999999, 448.0, 57344.0, 3.0e38,
                        np.finfo(F32).max, np.inf], dtype=F32)  # fmt: skip
    ones = (np.exp2(rng.integers(-100, 100, 16).astype(F64)) * (2 - 2.0**-23)).astype(F32)  # all-ones mantissas
    return np.concatenate([vals[np.isfinite(vals)], special, ones])


def _every_bf16() -> np.ndarray:
    bits = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    return bits.view(F32)


@pytest.mark.parametrize("n_scales", [48])
def test_fast_division_every_bf16_input(n_scales):
    """Every bf16 bit pattern against scales over the whole range (x restricted to |x| <= amax, NaN kept)."""
    rng = np.random.default_rng(1)
    xs = _every_bf16()
    for amax in _amax_values(rng, n_scales):
        keep = np.isnan(xs) | (np.abs(xs) <= amax)
        x = xs[keep]
        _check(x, np.full_like(x, amax))


def test_fast_division_quotients_at_the_top():
    """amax = |x| itself (the group's largest element, quotient ~fmax) for every bf16 x, and fp32 x in between."""
    xs = _every_bf16()
    x = xs[np.isfinite(xs)]
    _check(x, np.abs(x))
    rng = np.random.default_rng(2)
    x32 = (rng.standard_normal(200_000) * np.exp2(rng.integers(-120, 120, 200_000))).astype(F32)
    x32 = x32[np.isfinite(x32)]
    _check(x32, np.abs(x32))
    # amax somewhat above |x|, fp32 x with full mantissas.
    amax = (np.abs(x32).astype(F64) * (1 + 7 * rng.random(x32.size))).astype(F32)
    ok = np.isfinite(amax)
    _check(x32[ok], amax[ok])


def test_fast_division_zero_signs_and_infinite_scale():
    """-0 stays -0; an infinite scale (amax = inf) gives x * 0: signed zeros for finite x, NaN for +-inf."""
    x = np.array([0.0, -0.0, 1.0, -1.0, 3e38, -3e38, np.inf, -np.inf, np.nan, 1e-45, -1e-45], dtype=F32)
    s = _scale_of(np.full_like(x, np.inf), 448.0)
    assert np.isinf(s).all()
    got, want = _fast_div(x, s), _ieee_div(x, s)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    fin = ~np.isnan(want)
    assert np.array_equal(got[fin].view(np.uint32), want[fin].view(np.uint32))
    z = np.array([0.0, -0.0], dtype=F32)
    for amax in (0.0, 1.0, 3e38):
        got = _fast_div(z, _scale_of(np.full_like(z, amax), 448.0))
        assert np.array_equal(got.view(np.uint32), z.view(np.uint32))


def test_exact_fma_emulation():
    """The emulated fp32 fma rounds once: cases where a * b + c rounded twice differs."""
    a = np.array([1 + 2.0**-12], dtype=F32)
    b = np.array([1 + 2.0**-12], dtype=F32)
    c = np.array([-(1 + 2.0**-11)], dtype=F32)
    assert _fma32(a, b, c)[0] == F32(2.0**-24)  # exact: the product's low bit survives only without rounding
    assert (a * b + c)[0] == F32(0.0)
    # A tie of the f64 sum broken by the low part: 1 + 2^-24 (halfway) + 2^-80 rounds up.
    a = np.array([1 + 2.0**-23], dtype=F32)
    b = np.array([2.0**-57], dtype=F32)
    c = np.array([1.0], dtype=F32)
    assert _fma32(np.array([F32(2.0**-24)]), np.array([F32(1.0)]), c)[0] == F32(1.0)  # exact tie: to even
    got = _fma32(np.array([F32(2.0**-24) * F32(1 + 2.0**-23)]), np.array([F32(1.0)]), c)[0]
    assert got == F32(1 + 2.0**-23)  # just above the tie: up
    assert np.isnan(_fma32(np.array([F32(0.0)]), np.array([F32(np.inf)]), c))[0]
    del a, b
