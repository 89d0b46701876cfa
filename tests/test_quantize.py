"""tritonfp8.quantize / dequantize: the kernels bit for bit against quantize_torch, the reference against hand values.

On CPU the kernels run in the Triton interpreter (small shapes); on a GPU the same cases run compiled, plus the
8192 x 8192 bf16 cases of the acceptance criteria.

Tolerance (stated once): quantize then dequantize (to fp32) of a value x in a group with scale s errs by at most
``eps * |x| + s * 2**(EMIN - MANT_BITS - 1)`` (round-to-nearest on the FP8 grid: relative eps for normals, half the
subnormal step below), plus ``ROUNDOFF_FP32`` relative for the fp32 division and multiplication. eps = 2**-4 (E4M3)
and 2**-3 (E5M2) come from ``tritonfp8._formats``.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

import pytest
import torch
import triton
import triton.language as tl

from tests.conftest import requires_gpu
from tritonfp8 import _formats, naming
from tritonfp8._kernels.fp8cast import cast_to_fp8, fp8_constexprs, round_to_fp8_grid, triton_fp8_dtype
from tritonfp8.quantize import AMAX_FLOOR, dequantize, dequantize_torch, quantize, quantize_torch, scale_shape

qmod = importlib.import_module("tritonfp8.quantize")  # the package's `quantize` is the function
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
GRANULARITIES = ("tensor", "row", "col", (1, 128), (128, 128))
ROUNDOFF_FP32 = 2.0**-22  # two fp32 roundings (x / s, then q * s), with margin


def _assert_bit_exact(x, gran, dtype, scale=None):
    xq, s = quantize(x, gran, dtype, scale)
    rq, rs = quantize_torch(x, gran, dtype, scale)
    assert xq.dtype == dtype and xq.shape == x.shape and xq.is_contiguous()
    assert s.dtype == torch.float32 and tuple(s.shape) == scale_shape(x.shape, gran) == tuple(rs.shape)
    nan = torch.isnan(x.float().reshape(xq.shape)) if x.numel() else torch.zeros_like(xq, dtype=torch.bool)
    # NaN inputs map to NaN; every other element (and every scale) must match bit for bit.
    assert torch.equal(torch.isnan(xq.float()), torch.isnan(rq.float()))
    got, want = xq.view(torch.uint8)[~nan], rq.view(torch.uint8)[~nan]
    bad = (got != want).sum().item()
    assert bad == 0, f"{bad} of {got.numel()} elements differ from quantize_torch ({gran}, {dtype})"
    assert torch.equal(s.view(torch.int32), rs.view(torch.int32)), f"scales differ from quantize_torch ({gran})"
    assert torch.isfinite(s).all() or not torch.isfinite(x).all()
    return xq, s


# ------------------------------------------------------------------------------------------------------------
# Case matrix: bit-exact against the reference


@dataclass(frozen=True)
class Case:
    shape: tuple[int, ...]
    gran: object
    dtype: torch.dtype = E4M3
    in_dtype: torch.dtype = torch.bfloat16
    layout: str = "contiguous"  # "transposed" (2-D, last dim strided) | "sliced" (row stride > K, odd offset)
    content: str = "randn"  # "randn" | "wide" (magnitudes 1e-8..1e6) | "zero_blocks" | "beyond" | "nan"

    def make(self, device: str) -> torch.Tensor:
        shape = self.shape
        x = torch.randn(shape, device=device) * 3.0
        if self.content == "wide":
            x = x * 10.0 ** torch.empty(shape, device=device).uniform_(-8, 6)
        elif self.content == "zero_blocks":
            x[: min(shape[0], 128), : min(shape[-1], 128)] = 0.0  # one all-zero block / whole zero groups
            x[-1] = 0.0  # an all-zero row
        elif self.content == "beyond":
            x = x * _formats.fp8_format(self.dtype).max  # |x| up to ~12 fmax, scaled back by the dynamic scale
        elif self.content == "nan":
            x.view(-1)[:: max(1, x.numel() // 5)] = float("nan")
        x = x.to(self.in_dtype)
        if self.layout == "transposed":  # same values, column-major strides
            x = x.t().contiguous().t()
        elif self.layout == "sliced":  # row stride K + 37, start offset 3 elements: rows not 16-byte aligned
            big = torch.zeros(shape[0] + 1, shape[1] + 37, device=device, dtype=self.in_dtype)
            big[1:, 3 : 3 + shape[1]] = x
            x = big[1:, 3 : 3 + shape[1]]
        assert x.is_contiguous() == (self.layout == "contiguous")
        return x

    def __str__(self) -> str:
        g = self.gran if isinstance(self.gran, str) else "x".join(map(str, self.gran))
        t = _formats.short_name(self.in_dtype) + "_" + _formats.short_name(self.dtype)
        return f"{'x'.join(map(str, self.shape))}-{g}-{t}-{self.layout}-{self.content}"


CASES = [
    # odd sizes, every granularity, both formats (partial 128-groups: 3884 = 30*128 + 44; 496 = 3*128 + 112)
    *[Case((7, 3884), g, dt) for g in GRANULARITIES for dt in (E4M3, E5M2)],
    *[Case((33, 496), g, E4M3, torch.float16) for g in GRANULARITIES],
    *[Case((33, 496), g, E5M2, torch.float32, content="wide") for g in GRANULARITIES],
    # M = 1
    *[Case((1, 300), g) for g in GRANULARITIES],
    # partial blocks in both dims, all-zero block / groups / row
    *[Case((130, 260), g, dt, content="zero_blocks") for g in ((128, 128), (1, 128), "row") for dt in (E4M3, E5M2)],
    # values far beyond the FP8 range
    *[Case((20, 200), g, dt, torch.float32, content="beyond") for g in ("tensor", (1, 128)) for dt in (E4M3, E5M2)],
    # non-contiguous inputs: transposed, and sliced with an odd offset (misaligned rows)
    *[Case((40, 300), g, layout="transposed") for g in GRANULARITIES],
    *[Case((24, 200), g, E5M2, torch.float16, layout="sliced") for g in GRANULARITIES],
    # leading dims flattened into M
    *[Case((2, 5, 160), g) for g in GRANULARITIES],
    # NaN elements: NaN out, ignored by amax
    *[Case((9, 260), g, dt, torch.float32, content="nan") for g in GRANULARITIES for dt in (E4M3, E5M2)],
    # other group sizes (powers of two 16..128)
    Case((37, 100), (1, 32)),
    Case((37, 100), (16, 16), E5M2),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bit_exact_vs_reference(case: Case, device):
    _assert_bit_exact(case.make(device), case.gran, case.dtype)


@pytest.mark.parametrize("shape", [(), (5,), (1,), (3, 1, 4)])
def test_small_and_oddly_shaped_tensors(shape, device):
    x = torch.randn(shape, device=device)
    grans = ["tensor"] if len(shape) == 0 else GRANULARITIES
    for g in grans:
        _assert_bit_exact(x, g, E4M3)


@pytest.mark.parametrize("kind", ["row", "col", "tensor"])
@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_two_pass_paths(kind, dtype, device, monkeypatch):
    """Long rows / tall columns take an amax pass then the cast; shrink the one-pass limit to reach them here."""
    monkeypatch.setattr(qmod, "_ONE_PASS_MAX_ELEMS", 64)
    shapes = {"row": [(7, 300), (1, 513), (70, 65)], "col": [(7, 300), (70, 9), (133, 1)]}.get(kind, [(7, 300), (1, 1)])
    for shape in shapes:
        assert qmod._plan(qmod._normalize_granularity(kind), *shape, static=False).source in ("amax", "absmax")
        _assert_bit_exact(torch.randn(shape, device=device) * 50, kind, dtype)


@pytest.mark.parametrize("kind", ["row", "col", "tensor"])
def test_two_pass_reduces_several_partials(kind, device, monkeypatch):
    """Small tiles so the amax pass writes several partials per scale entry (row chunks for col, K chunks for long
    rows, programs for the tensor) and the cast pass has to reduce them; the amax sits in the last partial."""
    monkeypatch.setattr(qmod, "_ONE_PASS_MAX_ELEMS", 64)
    monkeypatch.setattr(qmod, "_TILE_ELEMS", 256)
    monkeypatch.setattr(qmod, "_TWO_PASS", "partials")  # the partial-amax scheme (the default is "default": atomic)
    shape = {"row": (5, 5000), "col": (300, 40), "tensor": (300, 40)}[kind]
    plan = qmod._plan(qmod._normalize_granularity(kind), *shape, static=False, interpreter=device != "cuda")
    assert plan.source == "amax" and plan.npart > 1
    for dtype in (E4M3, E5M2):
        x = torch.randn(shape, device=device) * 50
        x[-1, -1] = 3e4  # in the last row chunk / K chunk / program
        _assert_bit_exact(x, kind, dtype)


def test_one_launch_per_call_and_two_for_two_pass(device, monkeypatch):
    """Host cost: one kernel launch per call, two for the two-pass modes, and no fill kernel (torch.zeros), for
    the partial-amax two-pass scheme (the default "atomic" scheme adds one small fill, by design)."""
    monkeypatch.setattr(qmod, "_TWO_PASS", "partials")
    from tritonfp8._kernels import quantize as kq

    launches = []

    class Recorder:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            return lambda *args, **kwargs: launches.append(self.name)

    monkeypatch.setattr(kq, "amax_kernel", Recorder("amax"))
    monkeypatch.setattr(kq, "quantize_kernel", Recorder("cast"))
    monkeypatch.setattr(torch, "zeros", None)  # any fill in the launch path would now raise
    monkeypatch.setattr(qmod, "_ONE_PASS_MAX_ELEMS", 64)
    x = torch.empty(64, 256, device=device)
    for gran, want in [("row", ["amax", "cast"]), ("col", ["amax", "cast"]), ("tensor", ["amax", "cast"]),
                       ((1, 128), ["cast"]), ((128, 128), ["cast"])]:  # fmt: skip
        launches.clear()
        quantize(x, gran)
        assert launches == want, (gran, launches)
        assert qmod._needs_two_passes(64, 256, gran) == (len(want) == 2), gran  # what the benchmark counts
    launches.clear()
    quantize(x, "col", scale=torch.ones(1, 256, device=device))
    assert launches == ["cast"]


@pytest.mark.parametrize(
    "gran,scale_fn",
    [
        ("tensor", lambda m, k: torch.tensor(0.013)),
        ("tensor", lambda m, k: torch.tensor([0.5])),
        ("row", lambda m, k: torch.rand(m, 1) + 0.001),
        ("col", lambda m, k: torch.rand(1, k) + 0.001),
        ((1, 128), lambda m, k: torch.rand(m, math.ceil(k / 128)) + 0.001),
        ((128, 128), lambda m, k: torch.rand(math.ceil(m / 128), math.ceil(k / 128)) + 0.001),
    ],
)
@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_static_scale(gran, scale_fn, dtype, device):
    m, k = 130, 300
    x = torch.randn(m, k, device=device, dtype=torch.bfloat16) * 20
    scale = scale_fn(m, k).to(device)
    xq, s = _assert_bit_exact(x, gran, dtype, scale)
    assert torch.equal(s.reshape(-1), scale.reshape(-1))  # the given scale comes back (a view)


def test_static_scale_saturates_never_nan(device):
    """Values beyond ±fmax (and ±inf) saturate at ±fmax with a static scale; -0 stays -0."""
    for dtype in (E4M3, E5M2):
        fmax = _formats.fp8_format(dtype).max
        x = torch.tensor([[fmax * 1.01, -fmax * 3, 1e30, -1e30, float("inf"), float("-inf"), -0.0, fmax]], device=device)
        xq, _ = _assert_bit_exact(x, "tensor", dtype, torch.tensor(1.0, device=device))
        assert xq.float().tolist() == [[fmax, -fmax, fmax, -fmax, fmax, -fmax, 0.0, fmax]]
        assert xq.view(torch.uint8)[0, 6].item() == 0x80  # -0


# ------------------------------------------------------------------------------------------------------------
# The reference itself, against hand-computed values


@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_reference_hand_values(dtype):
    fmax = _formats.fp8_format(dtype).max
    # Row 0: amax 2*fmax -> scale 2 exactly; x / 2 = fmax, 0.5, -0, 0.  Row 1: all zero -> the floor scale.
    x = torch.tensor([[2 * fmax, 1.0, -0.0, 0.0], [0.0, 0.0, -0.0, 0.0]])
    xq, s = quantize_torch(x, "row", dtype)
    floor_scale = (torch.tensor(AMAX_FLOOR, dtype=torch.float32) / fmax).item()  # fp32 division
    assert s.tolist() == [[2.0], [floor_scale]] and 0 < floor_scale < 1e-14
    assert xq.float().tolist() == [[fmax, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    assert xq.view(torch.uint8)[0, 2].item() == 0x80  # -0 kept


def test_reference_rounds_to_nearest_even():
    # E4M3 step in [1, 2) is 1/8: 1.0625 is the midpoint of 1 and 1.125 -> 1 (even); 1.1875 -> 1.25 (even).
    # E5M2 step in [1, 2) is 1/4: 1.125 -> 1.0, 1.375 -> 1.5.  Static scale 1 so x / s = x.
    one = torch.tensor(1.0)
    xq, _ = quantize_torch(torch.tensor([1.0625, 1.1875, -1.0625, 1.07]), "tensor", E4M3, one)
    assert xq.float().tolist() == [1.0, 1.25, -1.0, 1.125]
    xq, _ = quantize_torch(torch.tensor([1.125, 1.375, 1.13]), "tensor", E5M2, one)
    assert xq.float().tolist() == [1.0, 1.5, 1.25]


def test_reference_partial_groups_and_blocks():
    # K = 130 with (1, 128): the second group holds 2 elements, its own amax.
    x = torch.zeros(3, 130)
    x[:, :128] = 448.0
    x[:, 128:] = torch.tensor([[1.0, -4.0]])
    _, s = quantize_torch(x, (1, 128), E4M3)
    assert s.shape == (3, 2)
    assert s[:, 0].tolist() == [1.0] * 3
    assert torch.equal(s[:, 1], torch.full((3,), 4.0) / 448.0)
    # M = 130 with (128, 128): second block row has 2 rows.
    y = torch.zeros(130, 130)
    y[128:, 128:] = 896.0
    _, s = quantize_torch(y, (128, 128), E4M3)
    floor = (torch.tensor(AMAX_FLOOR) / 448.0).item()
    assert s.tolist() == [[floor, floor], [floor, 2.0]]


@triton.jit
def _cast_kernel(x_ptr, y_ptr, z_ptr, n, OUT: tl.constexpr, EMIN: tl.constexpr, MANT_BITS: tl.constexpr,
                 FMAX: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, cast_to_fp8(x, OUT), mask=mask)
    tl.store(z_ptr + offs, round_to_fp8_grid(x, EMIN, MANT_BITS, FMAX).to(OUT), mask=mask)


@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_fp8cast_matches_torch_on_every_value_and_midpoint(dtype, device):
    """cast_to_fp8 and round_to_fp8_grid (the helpers every FP8-writing kernel uses) equal
    ``torch.clamp(x, -fmax, fmax).to(dtype)``: all finite FP8 values, every midpoint between neighbours (ties go to
    even) and the fp32 numbers just either side of it, subnormals, ±0, beyond ±fmax, ±inf, random magnitudes."""
    fmax = _formats.fp8_format(dtype).max
    grid = torch.arange(256, dtype=torch.uint8).view(dtype).float()
    grid = grid[torch.isfinite(grid)].unique()  # sorted; +0 and -0 compare equal
    mid = (grid[1:] + grid[:-1]) / 2  # exact in fp32
    big = torch.full_like(mid, 1e30)
    special = torch.tensor([0.0, -0.0, fmax * 1.0001, -fmax * 1.5, 1e30, -1e30, float("inf"), float("-inf"), 1e-45])
    x = torch.cat([grid, mid, torch.nextafter(mid, big), torch.nextafter(mid, -big), special,
                   torch.randn(4000) * 10.0 ** torch.empty(4000).uniform_(-10, 6)]).to(device)  # fmt: skip
    y, z = torch.empty_like(x, dtype=dtype), torch.empty_like(x, dtype=dtype)
    n = x.numel()
    _cast_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, OUT=triton_fp8_dtype(dtype), **fp8_constexprs(dtype), BLOCK=1024)
    want = torch.clamp(x, -fmax, fmax).to(dtype).view(torch.uint8)
    assert torch.equal(y.view(torch.uint8), want), (x[y.view(torch.uint8) != want][:8], y[y.view(torch.uint8) != want][:8])
    assert torch.equal(z.view(torch.uint8), want)
    # NaN stays NaN through both
    nan = torch.full((4,), float("nan"), device=device)
    _cast_kernel[(1,)](nan, y, z, 4, OUT=triton_fp8_dtype(dtype), **fp8_constexprs(dtype), BLOCK=1024)
    assert torch.isnan(y[:4].float()).all() and torch.isnan(z[:4].float()).all()


def test_fp8cast_constexprs():
    assert fp8_constexprs(E4M3) == {"EMIN": -6, "MANT_BITS": 3, "FMAX": 448.0}
    assert fp8_constexprs(E5M2) == {"EMIN": -14, "MANT_BITS": 2, "FMAX": 57344.0}
    # EMIN is the smallest normal exponent: 2**EMIN is the smallest normal value of each format
    assert torch.finfo(E4M3).smallest_normal == 2.0**-6 and torch.finfo(E5M2).smallest_normal == 2.0**-14


# ------------------------------------------------------------------------------------------------------------
# Round trip error bound, dequantize


@pytest.mark.parametrize("gran", GRANULARITIES)
@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_round_trip_error_bound(gran, dtype, device):
    fmt = _formats.fp8_format(dtype)
    emin = fp8_constexprs(dtype)["EMIN"]
    x = torch.randn(33, 300, device=device) * 10.0 ** torch.empty(33, 300, device=device).uniform_(-3, 3)
    xq, s = quantize(x, gran, dtype)
    back = dequantize(xq, s, torch.float32)
    s_full = qmod._expand_scale(s, 33, 300)
    bound = (fmt.eps + ROUNDOFF_FP32) * x.abs() + s_full * 2.0 ** (emin - fmt.mantissa_bits - 1) * (1 + ROUNDOFF_FP32)
    err = (back - x).abs()
    assert torch.isfinite(back).all()
    assert (err <= bound).all(), f"max err/bound {(err / bound).max().item():.3f}"
    # and the bound is not vacuous: the error reaches a sizeable share of it
    assert (err / bound).max().item() > 0.25


@pytest.mark.parametrize("gran", GRANULARITIES)
def test_dequantize_matches_reference(gran, device):
    x = torch.randn(2, 65, 260, device=device, dtype=torch.bfloat16)
    xq, s = quantize(x, gran, E5M2)
    for out in (torch.bfloat16, torch.float16, torch.float32):
        y = dequantize(xq, s, out)
        assert y.dtype == out and y.shape == x.shape
        assert torch.equal(y, dequantize_torch(xq, s, out))
    # by hand for one element of the last row: xq * its group's scale
    m, k = 2 * 65 - 1, 259
    i = {"tensor": (), "row": (m, 0), "col": (0, k), (1, 128): (m, k // 128), (128, 128): (m // 128, k // 128)}[gran]
    want = xq.reshape(130, 260)[m, k].float() * s[i]
    assert dequantize(xq, s, torch.float32).reshape(130, 260)[m, k] == want


def test_granularity_as_list(device):
    x = torch.randn(5, 300, device=device)
    a = quantize(x, [1, 128])
    b = quantize(x, (1, 128))
    assert torch.equal(a[0].view(torch.uint8), b[0].view(torch.uint8)) and torch.equal(a[1], b[1])


# ------------------------------------------------------------------------------------------------------------
# Zero-size inputs


@pytest.mark.parametrize(
    "shape,gran,want_scale",
    [
        ((0, 128), "tensor", ()),
        ((0,), "tensor", ()),
        ((4, 0), "row", (4, 1)),
        ((0, 256), "col", (1, 256)),
        ((0, 256), (1, 128), (0, 2)),
        ((4, 0), (1, 128), (4, 0)),
        ((0, 300), (128, 128), (0, 3)),
        ((2, 0, 7), "row", (0, 1)),
    ],
)
def test_zero_size(shape, gran, want_scale, device):
    x = torch.empty(shape, device=device, dtype=torch.bfloat16)
    xq, s = quantize(x, gran, E4M3)
    assert xq.shape == x.shape and xq.dtype == E4M3
    assert tuple(s.shape) == want_scale and s.dtype == torch.float32
    # scales of empty groups are the safe scale, never 0, NaN or inf
    assert torch.equal(s, torch.full(want_scale, AMAX_FLOOR, device=device) / 448.0)
    assert dequantize(xq, s).shape == x.shape


# ------------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "make,exc,words",
    [
        (lambda d: quantize(torch.ones(4, 4, dtype=torch.int32, device=d), "row"), TypeError, ["x", "int32"]),
        (lambda d: quantize(torch.ones(4, 4, device=d).to(E4M3), "row"), TypeError, ["x", "float8"]),
        (lambda d: quantize([[1.0]], "row"), TypeError, ["x", "Tensor"]),
        (lambda d: quantize(torch.ones(4, 4, device=d), "block"), ValueError, ["granularity", "'block'"]),
        (lambda d: quantize(torch.ones(4, 4, device=d), (1, 100)), ValueError, ["granularity"]),
        (lambda d: quantize(torch.ones(4, 4, device=d), (2, 128)), ValueError, ["granularity"]),
        (lambda d: quantize(torch.ones(4, 4, device=d), (128, 64)), ValueError, ["granularity"]),
        (lambda d: quantize(torch.ones(4, 4, device=d), 128), ValueError, ["granularity"]),
        (lambda d: quantize(torch.ones(4, 4, device=d), "row", torch.float16), TypeError, ["dtype", "float8"]),
        (lambda d: quantize(torch.ones(()), "row"), ValueError, ["x", "0-d"]),
        (
            lambda d: quantize(torch.ones(4, 4, device=d), "row", scale=torch.ones(1, 4, device=d)),
            ValueError,
            ["scale", "(4, 1)"],
        ),
        (
            lambda d: quantize(torch.ones(4, 4, device=d), "tensor", scale=torch.ones(2, device=d)),
            ValueError,
            ["scale", "()"],
        ),
        (
            lambda d: quantize(torch.ones(4, 300, device=d), (1, 128), scale=torch.ones(4, 2, device=d)),
            ValueError,
            ["scale", "(4, 3)"],
        ),
        (
            lambda d: quantize(torch.ones(4, 4, device=d), "tensor", scale=torch.ones((), dtype=torch.float16, device=d)),
            ValueError,
            ["scale", "float32"],
        ),
        (lambda d: quantize(torch.ones(4, 4, device=d), "tensor", scale=1.0), TypeError, ["scale", "Tensor"]),
        (lambda d: dequantize(torch.ones(4, 4, device=d), torch.ones((), device=d)), TypeError, ["xq", "float8"]),
        (
            lambda d: dequantize(torch.ones(4, 4, device=d).to(E4M3), torch.ones(3, 3, device=d)),
            ValueError,
            ["scale", "(3, 3)"],
        ),
        (
            lambda d: dequantize(torch.ones(4, 4, device=d).to(E4M3), torch.ones(4, 1, device=d, dtype=torch.float16)),
            TypeError,
            ["scale", "float32"],
        ),
        (
            lambda d: dequantize(torch.ones(4, 4, device=d).to(E4M3), torch.ones(4, 1, device=d), torch.int8),
            TypeError,
            ["dtype"],
        ),
    ],
)
def test_bad_input(make, exc, words, device):
    with pytest.raises(exc) as info:
        make(device)
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"


def test_cpu_tensor_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match=r"\bx\b.*CPU tensor"):
        quantize(torch.ones(4, 4), "row")


@requires_gpu
def test_scale_on_other_device_gpu():
    with pytest.raises(ValueError, match="scale"):
        quantize(torch.ones(4, 4, device="cuda"), "tensor", scale=torch.ones(()))


# ------------------------------------------------------------------------------------------------------------
# Kernel names


@pytest.mark.parametrize("gran", GRANULARITIES)
@pytest.mark.parametrize("static", [False, True])
def test_kernel_names_follow_grammar(gran, static, monkeypatch):
    monkeypatch.setattr(qmod, "_TWO_PASS", "partials")  # the atomic scheme's names: test_quantize_tiles.py
    plan = qmod._plan(qmod._normalize_granularity(gran), 8192, 8192, static, arch=90)
    name = plan.cast_name(torch.bfloat16, E4M3).build("cutlass")
    parsed = naming.parse_kernel_name(name)
    assert parsed["op"] == "fp8quant" and parsed["types"] == ("bf16", "e4m3")
    assert parsed["tile"] == (plan.cast.block_m, plan.cast.block_k, 1)
    scaling = {"tensor": "tensorwise", "row": "rowwise", "col": "colwise"}.get(gran, None) or (
        "group1x128" if gran == (1, 128) else "block128x128"
    )
    assert plan.fast_div == (not static and gran in ((1, 128), (128, 128)))
    if plan.kernel == "strip":  # column strips (the static col default at this size): the strip fields follow
        assert parsed["rest"][parsed["rest"].index(scaling) + 1] == "strip"
    else:
        # The scaling token ends the name, followed only by "fd" when the plan divides with the fast exact
        # division (the default for computed group/block scales).
        assert parsed["rest"][-1] == ("fd" if plan.fast_div else scaling)
        assert parsed["rest"][-2 if plan.fast_div else -1] == scaling
    assert parsed["rest"][0] == ("static" if static else {"tile": "ptr", "amax": "twopass"}[plan.source])
    if plan.amax is not None:
        assert naming.parse_kernel_name(plan.amax_name(torch.bfloat16).build())["op"] == "amax"


# ------------------------------------------------------------------------------------------------------------
# GPU: the acceptance shapes


@requires_gpu
@pytest.mark.parametrize("gran", GRANULARITIES)
@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_gpu_large_bit_exact(gran, dtype):
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) * 7
    x[:128, :128] = 0  # an all-zero block / groups
    x[5, 7] = float("nan")
    x[9, 1000] = 1e30  # beyond any FP8 range, still finite in bf16
    _assert_bit_exact(x, gran, dtype)
    _assert_bit_exact(x.t(), gran, dtype)  # column-major input


@requires_gpu
@pytest.mark.parametrize("dtype", [E4M3, E5M2])
def test_gpu_long_rows_and_static(dtype):
    x = torch.randn(64, 40000, device="cuda", dtype=torch.float16)  # K > 16384: two-pass row mode
    _assert_bit_exact(x, "row", dtype)
    _assert_bit_exact(x.t().contiguous(), "col", dtype)
    y = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for g in GRANULARITIES:
        shape = scale_shape(y.shape, g)
        _assert_bit_exact(y, g, dtype, torch.rand(shape, device="cuda") * 0.01 + 1e-6)
    inf = torch.tensor([[float("inf"), float("-inf"), 1e38, -0.0]], device="cuda")
    xq, _ = _assert_bit_exact(inf, "tensor", dtype, torch.tensor(1e-3, device="cuda"))
    fmax = _formats.fp8_format(dtype).max
    assert xq.float().tolist() == [[fmax, -fmax, fmax, 0.0]]
