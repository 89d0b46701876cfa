"""FP8 quantization: ``xq, scale = quantize(x, granularity, dtype)`` and its inverse ``dequantize(xq, scale)``.

Scales are fp32 *dequantization* factors: ``x ≈ xq.float() * scale``, the scale broadcast over its group.

Granularities (``x`` seen as a 2-D (M, K) matrix: M = product of the leading dims, K = the last dim; a 1-D x is
(1, K)):

============  ==========================  =====================================================================
granularity   scale shape                 one scale per
============  ==========================  =====================================================================
"tensor"      ``()``                      the whole tensor (any shape, 0-d included)
"row"         ``(M, 1)``                  row of the (M, K) view
"col"         ``(1, K)``                  column of the (M, K) view (leading dims flattened into M)
(1, G)        ``(M, ceil(K/G))``          G consecutive elements of a row; the last group of a row may be partial
(G, G)        ``(ceil(M/G), ceil(K/G))``  G x G block of the (M, K) view; edge blocks may be partial
============  ==========================  =====================================================================

G is 128 (DeepSeek-V3 style 1x128 activations / 128x128 weights); any power of two from 16 to 128 is accepted.
Granularities may be given as tuples or lists.

Rounding rule (kernel and reference, bit for bit):

- ``amax`` = max |x| over the group, in fp32; NaN elements are ignored by it.
- ``scale = max(amax, AMAX_FLOOR) / fmax`` in IEEE fp32 division, ``AMAX_FLOOR = 2**-40`` (≈ 9.1e-13, exact in
  fp32): an all-zero group gets the finite scale ``2**-40 / fmax`` and exact zeros. ``fmax`` is 448 (E4M3) or
  57344 (E5M2).
- ``xq = fp8(round_nearest_even(clamp(x / scale, -fmax, fmax)))`` with IEEE fp32 division: values saturate at
  ±fmax, never NaN or inf, -0 stays -0. The (1, G) and (G, G) kernels with computed scales get that division's
  result without a per-element division (the group's correctly rounded reciprocal, then a multiply and two FMA
  corrections: ``_kernels/quantize._div_by_scale``, exactness argument there and in tests/test_quantize_fastdiv.py;
  1.07x faster on the H200); the bits are the same.
- A given ``scale`` (static quantization) replaces the computed one; nothing else changes.
- NaN elements quantize to NaN. ±inf makes its group's amax and scale inf: the group's finite values become 0 and
  the inf itself NaN (inf / inf). Guarding against that is the precision guard's job, not this op's.

Outputs: ``xq`` is contiguous with x's shape; scales are contiguous fp32. Non-contiguous 2-D inputs are read in place
through their strides (fast when the last dim is the contiguous one); other inputs whose leading dims cannot be
flattened without a copy are copied once by ``reshape``.

``quantize_torch`` / ``dequantize_torch`` are the plain-PyTorch references (CPU or GPU), reused by the GEMM and
attention references.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Sequence, Union

import torch
import triton

from tritonfp8 import _backend
from tritonfp8._formats import FLOAT_INPUT_DTYPES, fp8_format, short_name

Granularity = Union[str, Sequence[int]]

AMAX_FLOOR = 2.0**-40
GROUP_SIZES = (16, 32, 64, 128)

# Largest (M, K) tile, in elements, that one program quantizes in registers in one pass. Longer rows (row mode) and
# taller columns (col mode) take two passes: an amax kernel, then the cast. 16384 bf16 = 32 KB per program; at 8
# warps that is 64 fp32 values per thread. Tests lower it to reach the two-pass paths with small shapes.
_ONE_PASS_MAX_ELEMS = 16384
# Elements per program for elementwise tiles (static scales, second passes): 8192 bf16 = 16 KB of reads in flight.
_TILE_ELEMS = 8192


def _row_col_two_pass(kind: str, m: int, k: int) -> bool:
    """Whether computed row / col scales of an (m, k) input take two passes (amax kernel, then the cast)."""
    if kind == "row":
        return _pow2(k) > _ONE_PASS_MAX_ELEMS
    return kind == "col" and _pow2(m) * 16 > _ONE_PASS_MAX_ELEMS


def _needs_two_passes(m: int, k: int, granularity: Granularity) -> bool:
    """Whether quantizing an (m, k) input with computed scales of ``granularity`` reads it twice: tensor scales
    always (no element can be cast before the whole tensor's amax is known), row / col when a row / column does
    not fit one program (:func:`_row_col_two_pass`); (1, G) and (G, G) never."""
    kind = _normalize_granularity(granularity)[0]
    return kind == "tensor" or _row_col_two_pass(kind, m, k)


# --------------------------------------------------------------------------------------------------------------
# Granularity and scale shapes


def _normalize_granularity(granularity: Granularity) -> tuple:
    """("tensor",) | ("row",) | ("col",) | ("group", G) | ("block", G); ValueError naming ``granularity``."""
    if isinstance(granularity, str):
        if granularity in ("tensor", "row", "col"):
            return (granularity,)
    elif isinstance(granularity, (tuple, list)) and len(granularity) == 2:
        a, b = granularity
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b)) and b in GROUP_SIZES:
            if a == 1:
                return ("group", b)
            if a == b:
                return ("block", b)
    raise ValueError(
        f"granularity: expected 'tensor', 'row', 'col', (1, G) or (G, G) with G in {GROUP_SIZES}, "
        f"got {granularity!r}"
    )


def _as_2d_shape(shape: Sequence[int]) -> tuple[int, int]:
    if len(shape) == 0:
        return 1, 1
    k = shape[-1]
    m = 1
    for d in shape[:-1]:
        m *= d
    return m, k


def scale_shape(x_shape: Sequence[int], granularity: Granularity) -> tuple[int, ...]:
    """Shape of the scale that :func:`quantize` returns for an input of ``x_shape``."""
    g = _normalize_granularity(granularity)
    m, k = _as_2d_shape(x_shape)
    kind = g[0]
    if kind == "tensor":
        return ()
    if kind == "row":
        return (m, 1)
    if kind == "col":
        return (1, k)
    G = g[1]
    if kind == "group":
        return (m, triton.cdiv(k, G))
    return (triton.cdiv(m, G), triton.cdiv(k, G))


def _group_dims(g: tuple, m: int, k: int) -> tuple[int, int]:
    """Group extent along M and K (the whole dimension for "all"; at least 1)."""
    kind = g[0]
    whole_m, whole_k = max(m, 1), max(k, 1)
    return {
        "tensor": (whole_m, whole_k),
        "row": (1, whole_k),
        "col": (whole_m, 1),
        "group": (1, g[-1]),
        "block": (g[-1], g[-1]),
    }[kind]


# --------------------------------------------------------------------------------------------------------------
# Plain-PyTorch reference


def _amax_per_group(x2: torch.Tensor, g: tuple) -> torch.Tensor:
    """fp32 max |x| per group of the (M, K) matrix ``x2``, NaN ignored, zero padding for partial groups."""
    m, k = x2.shape
    gm, gk = _group_dims(g, m, k)
    whole_m, whole_k = g[0] in ("tensor", "col"), g[0] in ("tensor", "row")
    sm = 1 if whole_m else triton.cdiv(m, gm)  # a whole (even empty) dimension still has one scale
    sk = 1 if whole_k else triton.cdiv(k, gk)
    a = x2.float().abs()
    a = torch.where(torch.isnan(a), torch.zeros_like(a), a)
    a = torch.nn.functional.pad(a, (0, sk * gk - k, 0, sm * gm - m))
    return a.reshape(sm, gm, sk, gk).amax(dim=(1, 3))


def _group_of(dim: int, n_scales: int) -> int | None:
    """Group size along a dim of ``dim`` elements that has ``n_scales`` scales: 1, the whole dim, or the power of
    two G >= 2 with ceil(dim / G) == n_scales (unique when n_scales > 1). None if there is none."""
    if n_scales == dim:
        return 1
    if n_scales == 1:
        return max(dim, 1)
    g = 2
    while g < 2 * max(dim, 1):
        if triton.cdiv(dim, g) == n_scales:
            return g
        g *= 2
    return None


def _expand_scale(scale: torch.Tensor, m: int, k: int, arg: str = "scale") -> torch.Tensor:
    """``scale`` (shape (), (1,) or 2-D) broadcast to (m, k), group sizes inferred from the shape."""
    if scale.dim() == 0 or (scale.dim() == 1 and scale.shape[0] == 1):
        return scale.reshape(1, 1).expand(m, k)
    if scale.dim() == 2:
        g0 = _group_of(m, scale.shape[0])
        g1 = _group_of(k, scale.shape[1])
        if g0 is not None and g1 is not None:
            i0 = torch.arange(m, device=scale.device) // g0
            i1 = torch.arange(k, device=scale.device) // g1
            return scale.index_select(0, i0).index_select(1, i1)
    raise ValueError(
        f"{arg}: shape {tuple(scale.shape)} does not match data of 2-D shape ({m}, {k}); expected (), (1,), (M, 1), "
        "(1, K), (M, ceil(K/G)) or (ceil(M/G), ceil(K/G)) for a power of two G"
    )


def quantize_torch(
    x: torch.Tensor,
    granularity: Granularity,
    dtype: torch.dtype = torch.float8_e4m3fn,
    scale: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain-PyTorch reference of :func:`quantize` (same rounding rule, same shapes, bit for bit)."""
    g = _normalize_granularity(granularity)
    fmt = fp8_format(dtype)
    m, k = _as_2d_shape(x.shape)
    x2 = x.reshape(m, k).float()
    shape = scale_shape(x.shape, granularity)
    # Divisors are tensors on x's device: torch's CUDA division by a CPU scalar multiplies by its reciprocal
    # (BinaryDivTrueKernel.cu, "may lose one bit"), which is not the IEEE division of the rule.
    if scale is None:
        amax = _amax_per_group(x2, g)
        s = torch.clamp(amax, min=AMAX_FLOOR) / amax.new_full((), fmt.max)
        s = s.reshape(shape)
    else:
        s = scale.reshape(shape).float().to(x2.device)
    y = x2 / _expand_scale(s, m, k)
    xq = torch.clamp(y, -fmt.max, fmt.max).to(dtype)
    return xq.reshape(x.shape), s


def dequantize_torch(xq: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """``xq.float() * scale`` (scale broadcast per tensor/row/column/group/block, as its shape says), cast to dtype."""
    m, k = _as_2d_shape(xq.shape)
    full = _expand_scale(scale.float(), m, k)
    return (xq.reshape(m, k).float() * full).to(dtype).reshape(xq.shape)


# --------------------------------------------------------------------------------------------------------------
# Launch plan: a small pure function of the granularity and the shape.


@dataclass(frozen=True)
class _Tile:
    block_m: int
    block_k: int
    num_warps: int


@dataclass(frozen=True)
class _Plan:
    """How one quantize call runs. ``source``: "tile" (one pass), "amax" (amax kernel, then cast) or "given".

    Two-pass plans also carry the amax grid (``progs_m`` x ``progs_k`` programs, each writing its partial amax) and
    ``npart``, the number of partials per scale entry that the cast kernel reduces (``block_p`` its power of two).
    """

    kind: str
    group: int
    scaling: str  # kernel-name scaling token
    source: str
    scale_axis: str  # "row" | "col" | "tile"
    cast: _Tile
    amax: _Tile | None = None
    reduce: str | None = None  # amax kernel reduction: "all" | "row" | "col"
    arch: int = 90
    progs_m: int = 1
    progs_k: int = 1
    npart: int = 1
    # Cast kernel: "tile" = quantize_kernel; "groups" = quantize_groups_kernel ((1, G) / (G, G) only), whose tile
    # is cast.block_m rows x `groups` groups (or blocks) of G along K, cast.block_k == groups * G; "tma" =
    # quantize_tma_kernel; "strip" = quantize_col_strip_kernel (col scales; see _col_strip_plan).
    kernel: str = "tile"
    groups: int = 1
    maxnreg: int = 0  # register cap per thread of the cast kernel (0: the compiler's choice)
    chunk_m: int = 0  # "groups" kernel: rows per step (0: the whole tile at once)
    extras: tuple[str, ...] = ()  # kernel-name tokens of a non-default two-pass scheme ("atomic", "p<P>")
    # Variant switches (bench quant --variants): per-element division by the scale's reciprocal with two exact
    # corrections (cast kernels, computed scales only); evict-first loads and streaming stores ("groups" kernel);
    # a persistent "groups" grid of `persist` programs per SM that prefetches its next tile; an amax pass that
    # prefetches its next tile.
    fast_div: bool = False
    evict: bool = False
    persist: int = 0
    persist_l2: bool = False  # persistent grid prefetching its next tile into L2 instead of registers
    prefetch: bool = False
    # kernel "tma" (quantize_tma_kernel): pipeline stages of its TMA loads; FP8 written by TMA too
    tma_stages: int = 0
    tma_store: bool = False
    # kernel "strip" (quantize_col_strip_kernel, col cast variant colstrip<K>r<R>...): cast.block_k columns per
    # program, cast.block_m rows per loop step, `splits` programs per strip, row loop pipelined `strip_stages` deep
    splits: int = 0
    strip_stages: int = 0
    prefetch_cast: bool = False  # "strip": next chunk loaded into registers before the current one is cast

    @property
    def block_p(self) -> int:
        return _pow2(self.npart)

    def partial_shape(self, m: int, k: int) -> tuple[int, ...]:
        """Shape of the partial-amax buffer (see ``amax_kernel``): fp32 partials, or the zeroed int32 amax of the
        atomic reductions."""
        return {"all": (self.progs_m * self.progs_k,), "col": (self.progs_m, k), "row": (m, self.progs_k),
                "atomic_all": (1,), "atomic_col": (k,)}[self.reduce]  # fmt: skip

    def cast_constexprs(self, out_dtype: torch.dtype) -> dict:
        from tritonfp8._kernels.fp8cast import triton_fp8_dtype

        if self.kernel in ("groups", "tma"):
            # in the kernels' parameter order (the launcher passes the values positionally)
            tile = {
                "GROUPS": self.groups,
                "G": self.group,
                "BLOCKWISE": self.kind == "block",
                "SCALE_SRC": self.source,
                "OUT_DTYPE": triton_fp8_dtype(out_dtype),
                "FMAX": fp8_format(out_dtype).max,
                "AMAX_FLOOR": AMAX_FLOOR,
                "FAST_DIV": self.fast_div,
            }
            if self.kernel == "tma":
                return {"BLOCK_M": self.cast.block_m, **tile, "STAGES": self.tma_stages, "TMA_STORE": self.tma_store}
            return {"BLOCK_M": self.cast.block_m, "CHUNK_M": self.chunk_m or self.cast.block_m, **tile,
                    "EVICT": self.evict, "PERSIST": ("l2" if self.persist_l2 else "regs") if self.persist else ""}
        if self.kernel == "strip":
            return {
                "BLOCK_K": self.cast.block_k,
                "CHUNK_M": self.cast.block_m,
                "SCALE_SRC": self.source,
                "OUT_DTYPE": triton_fp8_dtype(out_dtype),
                "FMAX": fp8_format(out_dtype).max,
                "AMAX_FLOOR": AMAX_FLOOR,
                "FAST_DIV": self.fast_div,
                "STAGES": self.strip_stages,
                "PREFETCH": self.prefetch_cast,
            }
        return {
            "BLOCK_M": self.cast.block_m,
            "BLOCK_K": self.cast.block_k,
            "BLOCK_P": self.block_p,
            "SCALE_AXIS": self.scale_axis,
            "SCALE_SRC": self.source,
            "OUT_DTYPE": triton_fp8_dtype(out_dtype),
            "FMAX": fp8_format(out_dtype).max,
            "AMAX_FLOOR": AMAX_FLOOR,
            "FAST_DIV": self.fast_div,
        }

    def amax_constexprs(self) -> dict:
        return {"BLOCK_M": self.amax.block_m, "BLOCK_K": self.amax.block_k, "REDUCE": self.reduce,
                "PREFETCH": self.prefetch}  # fmt: skip

    def cast_name(self, in_dtype: torch.dtype, out_dtype: torch.dtype):
        from tritonfp8.naming import KernelName

        schedule = {"tile": "ptr", "amax": "twopass", "absmax": "twopass", "given": "static"}[self.source]
        if self.kernel == "tma":
            schedule = "tma" if self.source == "tile" else "tmastatic"
        return KernelName(
            arch=self.arch,
            op="fp8quant",
            types=(short_name(in_dtype), short_name(out_dtype)),
            tile=(self.cast.block_m, self.cast.block_k, 1),
            warps=self.cast.num_warps,
            stages=self.tma_stages or self.strip_stages or 1,
            schedule=schedule,
            scaling=self.scaling,
            extras=self._cast_extras(),
        )

    def _cast_extras(self) -> tuple[str, ...]:
        # The groups kernel's tile (block_m, groups * G) tells it from quantize_kernel's (block_m, G) except at one
        # group per program: "g1" then. "c<C>" / "r<R>": chunked (G, G) sweep, register cap. Names end with the
        # scaling token, then "fd" where the fast exact division is used (the default for computed group scales).
        fd = ("fd",) if self.fast_div else ()
        if self.kernel == "tile":
            return self.extras + fd
        if self.kernel == "strip":
            return ("strip", f"r{self.splits}") + (("pf",) if self.prefetch_cast else ()) + self.extras + fd
        toks = ("g1",) if self.groups == 1 else ()
        toks += tuple(f"{p}{v}" for p, v in (("c", self.chunk_m), ("r", self.maxnreg), ("t", self.tma_stages)) if v)
        toks += ("s",) if self.tma_store else ()
        toks += (f"p{self.persist}",) if self.persist else ()
        return toks + (("l2",) if self.persist_l2 else ()) + fd + (("ev",) if self.evict else ())

    def amax_name(self, in_dtype: torch.dtype):
        from tritonfp8.naming import KernelName

        return KernelName(
            arch=self.arch,
            op="amax",
            types=(short_name(in_dtype), "f32"),
            tile=(self.amax.block_m, self.amax.block_k, 1),
            warps=self.amax.num_warps,
            stages=1,
            schedule="ptr",
            scaling=self.scaling,
            extras=self.extras + (("pf",) if self.prefetch else ()),
        )


def _pow2(n: int) -> int:
    return 1 << (max(int(n), 1) - 1).bit_length()  # triton.next_power_of_2 without its per-call JIT-wrapper cost


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _warps(elems: int) -> int:
    # About 32 elements per thread: 8 x 16-byte bf16 vectors in flight per thread, no spills (see codegen tests).
    return max(1, min(16, elems // 1024)) if elems >= 4096 else 4


def _tile(block_m: int, block_k: int) -> _Tile:
    return _Tile(block_m, block_k, _warps(block_m * block_k))


def _elementwise_tile(m: int, k: int) -> _Tile:
    """Tile of passes that need no whole group: wide along the contiguous K axis, rows to fill _TILE_ELEMS."""
    block_k = min(max(_pow2(k), 16), 1024)
    block_m = max(1, min(_pow2(m), _TILE_ELEMS // block_k))
    return _tile(block_m, block_k)


# Partial amax entries of the two-pass modes. Every cast program re-reads the partials of its scale entries from L2,
# so they stay few: "all" keeps at most 512 amax programs (8192 x 8192 bf16: 128 KB read per program, about 4
# programs per SM of an H200's 132), and "col" at most 16 row chunks, so a 64 x 128 cast tile (16 KB of bf16)
# re-reads at most 16 x 128 x 4 B = 8 KB of partials from L2, never DRAM.
_MAX_PARTIALS_ALL = 512
_MAX_PARTIALS_COL = 16
_COL_STRIP = 128  # two-pass col: 128 columns = 256 B of bf16 per row, 16 threads x 16-byte vectors


# Tiling of (1, G) and (G, G) quantization (issue 2: 1x128 at 79.6%, 128x128 at 74.9% of copy bandwidth on the
# H200 at 8192 x 8192, the row kernel at 90%). Variants, selectable for the benchmark (``bench quant --variants``)
# or by TRITONFP8_QUANT_TILING:
#
# - "legacy": quantize_kernel, (1, G): 64 rows x G columns per program (8192 elements, 8 warps): 64 segments of
#   256 B of bf16 per program and 64 scattered 4-byte scale stores; (G, G): one block per program, 16 warps.
# - "g<N>w<W>" (e.g. "g64w8"): quantize_groups_kernel, N groups (blocks) side by side along K per program, W warps.
#   (1, G): 8192 // (N * G) rows per program, so g64 at G = 128 is one 16 KB bf16 row per program, the row
#   kernel's pattern; (G, G): G rows x N blocks. "m<M>" ((1, G)): M rows per program instead, e.g. g64w16m2: two
#   16 KB rows, 32 KB of loads in flight per program.
# - Suffixes of g<N>w<W> (not with c<C>): "p<P>": a persistent grid of P programs per SM, each walking tiles pid,
#   pid + grid, ... and loading its next tile before it quantizes the current one (two tiles in registers, so loads
#   stay in flight through the reduce/divide/store phase; "p<P>l2": the next tile is prefetched into L2 instead, no
#   registers); "fd": fast exact division (the group's reciprocal once,
#   then FMUL + 2 FMA corrections per element instead of the IEEE division's ~10 instructions and a branch; computed
#   scales only, _kernels/quantize._div_by_scale); "ev": evict-first loads and streaming (.cs) stores.
#   E.g. g1w8p2fd: 128 x 128 blocks, 8 warps, 2 programs per SM, fast division. "legacyfd": the legacy tiling
#   (quantize_kernel; the (G, G) default) with fast division.
# - "t<S>[s]" with "p<P>" (e.g. g1w8t3p2fd): quantize_tma_kernel, the persistent grid loading its tiles by TMA in a
#   loop that Triton software-pipelines S stages deep (S - 1 tiles of loads in flight per program, in shared
#   memory, none in registers); "s": the FP8 tile leaves by TMA store too. Needs what TMA needs: x with a
#   contiguous last dim, 16-byte aligned base and row stride, a tile of at most 256 x 256 elements; P shrinks to
#   what fits in shared memory (_TMA_SMEM). Other inputs fall back to the same g<N>w<W> tiling without t/p.
# - "auto" (default): see _group_plan.
TILINGS_HELP = (
    "auto, legacy[fd], wide (1 x G only: long row segments per program) or "
    "g<N>w<W>[m<M>][c<C>][r<R>][t<S>[s]][p<P>][fd][ev] "
    "(N groups/blocks along K per program, W warps, (1, G) only: M rows per program instead of 8192 // (N * G), "
    "(G, G) only: C rows per step, read twice; R registers cap; P persistent programs per SM with the next tile "
    "prefetched into registers, or into L2 with l2 (p2l2), or with t<S> TMA loads pipelined S stages deep through "
    "shared memory (s: TMA stores of the FP8 too); fd fast exact division; ev evict-first loads / streaming "
    "stores), e.g. g64w8, g1w16c32, g1w8p2fd, g1w16p2l2fd, g1w8t3p2fd"
)
_TILING = os.environ.get("TRITONFP8_QUANT_TILING", "auto").strip().lower() or "auto"
# (1, G) inputs with fewer elements than this keep the legacy tiling: with 16 KB row segments per program they
# would get too few programs to spread over 132 SMs (M = 1..16 rows of 8192: 1..16 programs instead of 64..1024).
_WIDE_MIN_ELEMS = 1 << 21
# "auto" = "wide": measured on the H200 (benchmarks/results/quant-nvidia-h200-20261129-115248.json, 8192 x 8192
# bf16 -> e4m3 (1, 128)): 82.5% of copy bandwidth vs 78.5% for the legacy tiling, 1.05x, interleaved.
_WIDE_BY_DEFAULT = True
# "auto" divides with the fast exact division ("fd" suffix; computed scales only): measured on the H200
# (benchmarks/results/quant-nvidia-h200-20261129-134821.json / -134831.json, 8192 x 8192 bf16 -> e4m3, bit-exact
# against the reference there; exactness proof in _kernels/quantize._div_by_scale and tests/test_quantize_fastdiv.py):
# (128, 128) 79.6% of copy vs 74.2% (legacyfd, 1.07x); (1, 128) 87.4% vs 81.5% (g64w8fd = wide + fd, 1.07x).
_FAST_DIV_BY_DEFAULT = True
# Shared memory per SM that the TMA pipelines (t<S>) of the resident programs may fill: an H100/H200 SM has 228 KB,
# up to 227 KB per program; the rest is left to the reductions' scratch and the per-program reserve.
_TMA_SMEM = 200 * 1024
# "auto" for (128, 128) blocks of computed scales: the TMA-pipelined persistent tiling g1w16t6p1fd (one 128 x 128
# block per step, 16 warps, 6-stage pipeline = 5 blocks in shared memory, one program per SM, fast division) where
# TMA can read x and 5 blocks fit (16-bit inputs). Measured on the H200, 8192 x 8192 bf16 -> e4m3, five
# interleaved rounds each: eager 58.9 us vs 65.5 us for legacyfd (88.4% vs 79.6% of copy, 1.11x,
# quant-nvidia-h200-20261129-155615.json); CUDA-graph replays 56.6 vs 62.1 us (1.10x; g1w16t4p1fd 55.4 us,
# -155607.json). Below _TMA_AUTO_MIN_ELEMS (a persistent grid of 132 programs needs several blocks per program to
# pipeline), for static scales and fp32 inputs (not measured) the legacy tiling stays.
_TMA_AUTO_TILING = "g1w16t6p1fd"
_TMA_AUTO_MIN_ELEMS = 1 << 24


@dataclass(frozen=True)
class _TilingSpec:
    """A parsed tiling name: mode "auto" | "legacy" | "wide" | "groups", and for "groups" the g<N>w<W> fields."""

    mode: str
    groups: int = 0
    warps: int = 0
    chunk: int = 0
    maxnreg: int = 0
    rows: int = 0
    persist: int = 0
    fast_div: bool = False
    evict: bool = False
    persist_l2: bool = False
    tma_stages: int = 0
    tma_store: bool = False


def _parse_tiling(name: str) -> _TilingSpec:
    """The fields of a tiling name (see TILINGS_HELP); ValueError naming the tiling."""
    if name in ("auto", "legacy", "wide"):
        return _TilingSpec(name)
    if name == "legacyfd":
        return _TilingSpec("legacy", fast_div=True)
    mt = re.fullmatch(r"g(\d+)w(\d+)(?:m(\d+))?(?:c(\d+))?(?:r(\d+))?(?:t(\d+)(s)?)?(?:p(\d+)(l2)?)?(fd)?(ev)?",
                      name)  # fmt: skip
    if mt:
        n, w, rows, c, r, t, p = (int(mt.group(i) or 0) for i in (1, 2, 3, 4, 5, 6, 8))
        ts, l2, fd, ev = (mt.group(i) is not None for i in (7, 9, 10, 11))
        pow2 = all(v >= 1 and v & (v - 1) == 0 for v in (n, c or 1, rows or 1))
        plain_sweep = not c or not (p or fd or ev or t)  # the chunked (G, G) sweep has none of the suffixes
        p_ok = mt.group(8) is None or 1 <= p <= 16
        # TMA pipeline: 2..8 stages, a persistent grid (p<P>), no L2 prefetch or cache hints of its own
        t_ok = mt.group(6) is None or (2 <= t <= 8 and p and not (l2 or ev))
        if pow2 and w in (1, 2, 4, 8, 16, 32) and (r == 0 or 24 <= r <= 255) and p_ok and t_ok and plain_sweep:
            return _TilingSpec("groups", n, w, c, r, rows, p, fd, ev, l2, t, ts)
    raise ValueError(
        f"quantize tiling: expected {TILINGS_HELP} (N, C powers of two, W in 1..32, R in 24..255, P in 1..16, "
        f"S in 2..8 with p<P> and without l2/ev, no p/t/fd/ev with c), got {name!r}"
    )


def _set_knob(var: str, parse, name: str) -> str:
    """Set the module setting ``var`` (e.g. "_TILING") to ``name`` once ``parse`` accepts it (ValueError
    otherwise); returns the previous value. The setters below are for benchmarks and tests."""
    parse(name)
    prev = globals()[var]
    globals()[var] = name
    return prev


def _set_tiling(name: str) -> str:
    """Select the (1, G) / (G, G) tiling (see _TILING); returns the previous one."""
    return _set_knob("_TILING", _parse_tiling, name)


# Two-pass (tensor, col) scheme, selectable like the tiling (``bench quant --variants``, TRITONFP8_QUANT_TWO_PASS):
#
# - "partials" (the first default; measured on the H200: tensor 47.7%, col 30.8% of copy at 8192 x 8192): the amax pass
#   writes partials without atomics (no fill kernel); every cast program reduces the partials of its scale entries
#   again (tensor: 512 words per 16 KB tile; col: 16 x 128 words = 8 KB per 16 KB tile: half the input re-read
#   from L2 in all).
# - "atomic[p<P>][wide]": the amax pass keeps its running max in x's dtype and folds it into a zeroed int32 buffer
#   with atomic max (one per program for the tensor, one per column of its K tile for col), on a grid of P
#   programs per SM (default 2) that is resident at once, so the sweep runs top to bottom in time and the cast,
#   walking the tiles in reverse, starts on rows still in L2. The cast reads the finished amax: one word per tile
#   (tensor), BLOCK_K words (col: 32 x 256 tiles, 512 B rows, 1 KB of amax per 16 KB tile; "wide": 8 x 1024 tiles).
#   Costs a 4-byte (tensor) / 4K-byte (col) zero fill before the amax pass.
#
# Ceiling of any two-pass scheme at 8192 x 8192 bf16 (128 MiB in, 64 MiB out): DRAM moves 2 x 128 + 64 = 320 MiB
# against the copy's 192 MiB: 60% of copy. Walking the cast in reverse saves what the amax pass left in the 50 MB
# L2 (at most ~40 MB of x, less when the two L2 halves hold copies of the same lines, and the cast's FP8 writes
# evict it as it goes): about 64-68% of copy at best. More needs x kept on chip across a grid-wide barrier (a
# resident persistent kernel: ~132 x 200 KB of shared memory and registers plus L2 is still short of 128 MiB);
# a delayed (static) scale is one pass, as fast as the static path.
# "atomic" (the base of "default"): measured on the H200 (benchmarks/results/quant-nvidia-h200-20261129-115248.json, 8192 x 8192):
# tensor 54.0% of copy vs 47.7% ("partials"), 1.13x; col 38.9% vs 30.9%, 1.26x, interleaved.
# - Suffixes "pf" and "fd" of atomic[p<P>][wide]: "pf" makes the amax pass load its next tile before it folds the
#   current one (offline SASS of the default col amax pass, sm_90: ptxas interleaves the 8 16-byte loads per thread
#   with the maxes and keeps only 2 in flight, so the pass waits on DRAM latency; the tensor one keeps all 8);
#   "fd": fast exact division in the cast pass (see the tiling suffix "fd").
# - "default": "atomic" for the tensor, "atomicpf" for col (measured on the H200, quant-nvidia-h200-20261129-134821
#   .json, 8192 x 8192: the prefetching amax pass made col 1.20x faster, 38.9 -> 46.5% of copy, and the tensor
#   0.73x slower).
TWO_PASS_HELP = ("default (atomic for the tensor, atomicpf for col), partials or atomic[p<P>][wide][pf][fd] "
                 "(tensor/col: atomic-max amax pass, P programs per SM; pf: amax pass prefetches its next tile; fd: "
                 "fast exact division in the cast)")
_TWO_PASS = os.environ.get("TRITONFP8_QUANT_TWO_PASS", "default").strip().lower() or "default"
_AMAX_ELEMS = 16384  # elements per amax-pass tile of the atomic scheme: 32 KB of bf16 per load, 8 warps


def _parse_two_pass(name: str) -> tuple[str, int, bool, bool, bool]:
    """("partials", 0, False, False, False) or ("atomic", programs per SM, wide col tile, prefetching amax pass, fast
    division); ValueError naming the scheme."""
    if name == "partials":
        return "partials", 0, False, False, False
    if name == "default":
        return "atomic", 2, False, False, False  # col's "pf": see _scheme
    mt = re.fullmatch(r"atomic(?:p(\d+))?(wide)?(pf)?(fd)?", name)
    if mt and 1 <= int(mt.group(1) or 2) <= 16:
        return ("atomic", int(mt.group(1) or 2), *(mt.group(i) is not None for i in (2, 3, 4)))
    raise ValueError(f"quantize two-pass scheme: expected {TWO_PASS_HELP} (P in 1..16), got {name!r}")


def _set_two_pass(name: str) -> str:
    """Select the tensor/col two-pass scheme (see _TWO_PASS); returns the previous one."""
    return _set_knob("_TWO_PASS", _parse_two_pass, name)


def _scheme(kind: str) -> str:
    """The two-pass scheme granularity ``kind`` ("tensor" / "col") uses under the current setting."""
    if _TWO_PASS == "default":
        return "atomicpf" if kind == "col" else "atomic"
    return _TWO_PASS


# Cast tile of col scales (static scales, and the cast pass of the two-pass "atomic" schemes without "wide"),
# selectable like the tiling (``bench quant --variants colcast64x256``, TRITONFP8_QUANT_COL_CAST): "auto" or
# "colcast<M>x<K>" (powers of two, M * K in 2048..32768). Each cast program loads BLOCK_K fp32 scales (static) or
# amax words (two-pass) besides its tile: the static default (the elementwise 8 x 1024 tile) reads 4 KB of scales per
# 16 KB of bf16 (25% more loads, from L2), the two-pass default (32 x 256) 1 KB. Measured on the H200
# (quant-nvidia-h200-20261129-151543.json, 8192 x 8192): static col 74.6% of copy vs static row 87.2%, tensor 90.7%.
#
# "colstrip<K>r<R>[c<C>][w<W>][s<S>][pf][fd]" (quantize_col_strip_kernel): column strips of K columns, R programs per
# strip (row splits; 8192 x 8192 at K = 256: 32 strips, so r8..r16 gives 2..4 programs per SM of 132), each loading
# or deriving its K scales once and looping over its rows in chunks of C rows (default 8192 // K: 16 KB of bf16
# per step), W warps (default: ~32 elements per thread), the loop software-pipelined S stages deep by Triton
# (num_stages; default 1: none; offline, sm_90, S > 1 pipelines through shared memory with two CTA barriers per step)
# or "pf": the next chunk loaded into registers before the current one is cast (no barrier); fd: fast exact
# division (two-pass cast only; static scales keep div_rn). Offline SASS, sm_90, 8192 x 8192 bf16: the scales are
# redistributed through shared memory once, before the loop; the loop has 16-byte loads and stores, no barrier
# (S = 1), no spills; registers: colstrip256r8 78, ...pf 128, colstrip256r16c16w8pf 64, colstrip256r16c16w8fd 128
# (fd with 32 elements per thread: 195).
COL_CAST_HELP = ("auto, colcast<M>x<K> (col cast tile, M x K elements, powers of two; e.g. colcast64x256) or "
                 "colstrip<K>r<R>[c<C>][w<W>][s<S>][pf][fd] (column strips of K columns, R programs per strip, C rows "
                 "per step, W warps, S pipeline stages or pf register prefetch of the next step, fd fast division in "
                 "the two-pass cast; e.g. colstrip256r8pf)")
_COL_CAST = os.environ.get("TRITONFP8_QUANT_COL_CAST", "auto").strip().lower() or "auto"


@dataclass(frozen=True)
class _ColStrip:
    """A parsed colstrip name (see COL_CAST_HELP); 0 = the default for chunk and warps."""

    block_k: int
    splits: int
    chunk: int = 0
    warps: int = 0
    stages: int = 1
    prefetch: bool = False
    fast_div: bool = False


def _is_col_cast_name(name: str) -> bool:
    return name.startswith(("colcast", "colstrip"))


def _parse_col_cast(name: str) -> tuple[int, int] | _ColStrip | None:
    """None for "auto", the (BLOCK_M, BLOCK_K) of a colcast<M>x<K> name or the fields of a colstrip name;
    ValueError naming it."""
    if name == "auto":
        return None
    mt = re.fullmatch(r"colcast(\d+)x(\d+)", name)
    if mt:
        bm, bk = int(mt.group(1)), int(mt.group(2))
        if all(v >= 1 and v & (v - 1) == 0 for v in (bm, bk)) and bk >= 16 and 2048 <= bm * bk <= 32768:
            return bm, bk
    mt = re.fullmatch(r"colstrip(\d+)r(\d+)(?:c(\d+))?(?:w(\d+))?(?:s(\d+))?(pf)?(fd)?", name)
    if mt:
        bk, r, c, w, st = (int(mt.group(i) or 0) for i in range(1, 6))
        pow2 = all(v >= 1 and v & (v - 1) == 0 for v in (bk, c or 1)) and "0" not in (mt.group(3), mt.group(4))
        if (pow2 and 16 <= bk <= 2048 and 1 <= r <= 4096 and (c or 1) * bk <= 32768 and (w or 1) in (1, 2, 4, 8, 16, 32)
                and (mt.group(5) is None or 1 <= st <= 8) and not (st > 1 and mt.group(6))):
            return _ColStrip(bk, r, c, w, st or 1, mt.group(6) is not None, mt.group(7) is not None)
    raise ValueError(
        f"quantize col cast tile: expected {COL_CAST_HELP} (colcast: K >= 16, M * K in 2048..32768; colstrip: K a "
        f"power of two in 16..2048, R in 1..4096, C a power of two with C * K <= 32768, W in 1..32, S in 1..8, "
        f"not both s<S> (S > 1) and pf), got {name!r}"
    )


def _set_col_cast(name: str) -> str:
    """Select the col cast tile (see _COL_CAST); returns the previous one."""
    return _set_knob("_COL_CAST", _parse_col_cast, name)


def _col_cast_tile(m: int, k: int, default: _Tile) -> _Tile:
    """The col cast tile under the current _COL_CAST setting, clipped to the input (``default`` for "auto" and
    colstrip, which :func:`_col_strip_plan` handles)."""
    sel = _parse_col_cast(_COL_CAST)
    if sel is None or isinstance(sel, _ColStrip):
        return default
    bm, bk = sel
    return _tile(max(1, min(_pow2(m), bm)), max(16, min(_pow2(k), bk)))


# "auto" col casts of inputs of >= _COL_STRIP_AUTO_MIN_ELEMS: column strips. Measured on the H200 (8192 x 8192 bf16 ->
# e4m3, five interleaved rounds per run, three runs):
# - static scales, colstrip256r16c16w8pf: 57.6 vs 70.9 us for the 8 x 1024 tiles (91.3% vs 73.9% of copy, 1.23x,
#   quant-nvidia-h200-20261129-163359.json); as the default 89.9% (median; -164242.json) and 90.1% (rounds 57.6-58.0
#   us, -164518.json).
# - the default two-pass scheme's cast, colstrip512r16pf: the whole op 101.4 vs 112.7 us (1.11x, -163359.json) and
#   101.6 vs 114.3 us (1.12x, rounds 100.4-102.9, -164518.json); in the run between (-164242.json), where even the
#   static strip and the (128, 128) default had slow rounds, it alternated 101-121 us (median 120.3).
# Smaller inputs (unmeasured) and named two-pass schemes keep the tile kernel.
_COL_STRIP_AUTO_STATIC = "colstrip256r16c16w8pf"
_COL_STRIP_AUTO_TWO_PASS: str | None = "colstrip512r16pf"
_COL_STRIP_AUTO_MIN_ELEMS = 1 << 22


def _col_strip_plan(plan: _Plan, m: int, k: int) -> _Plan:
    """``plan`` (a static or atomic two-pass col plan) with its cast run by quantize_col_strip_kernel when the
    current _COL_CAST is a colstrip name, or "auto" on a large input (see _COL_STRIP_AUTO_STATIC); clipped to the
    input: strips at most pow2(K) wide, chunks at most pow2(M) rows, at most one program per chunk."""
    sel = _parse_col_cast(_COL_CAST)
    if sel is None and m * k >= _COL_STRIP_AUTO_MIN_ELEMS:
        if plan.source == "given":
            sel = _parse_col_cast(_COL_STRIP_AUTO_STATIC)
        elif plan.source == "absmax" and _TWO_PASS == "default" and _COL_STRIP_AUTO_TWO_PASS:
            sel = _parse_col_cast(_COL_STRIP_AUTO_TWO_PASS)
    if not isinstance(sel, _ColStrip):
        return plan
    block_k = max(16, min(_pow2(k), sel.block_k))
    chunk = max(1, min(_pow2(m), sel.chunk or max(1, _TILE_ELEMS // sel.block_k)))
    warps = sel.warps or _warps(chunk * block_k)
    return dataclasses.replace(plan, kernel="strip", cast=_Tile(chunk, block_k, warps),
                               splits=max(1, min(sel.splits, _cdiv(m, chunk))), strip_stages=sel.stages,
                               prefetch_cast=sel.prefetch,
                               fast_div=plan.fast_div or (sel.fast_div and plan.source != "given"))  # fmt: skip


def _is_two_pass_name(name: str) -> bool:
    return name in ("partials", "default") or name.startswith("atomic")


def _set_variant(variant: str | tuple[str, str]) -> tuple[str, str]:
    """A benchmark variant: a two-pass scheme (tensor/col), a col cast or a (1, G) / (G, G) tiling; returns the
    previous setting of the same knob as a (knob, name) token: give it back to _set_variant to restore. The token
    names its knob because a previous name alone can be ambiguous ("auto" is both a tiling and a col cast: handing
    "auto" back after a col cast variant would reset the tiling and leave the col cast variant selected).
    ValueError on unknown names."""
    setters = {"col_cast": _set_col_cast, "two_pass": _set_two_pass, "tiling": _set_tiling}
    if isinstance(variant, tuple):
        knob, name = variant
    else:
        name = variant
        knob = "col_cast" if _is_col_cast_name(name) else "two_pass" if _is_two_pass_name(name) else "tiling"
    return knob, setters[knob](name)


def _variant_applies(name: str, kind: str) -> bool:
    """Whether the benchmark should time variant ``name`` on granularity ``kind`` ("tensor", "row", "col", "group",
    "block"): two-pass schemes on tensor/col; tilings on (1, G) / (G, G), except those meant for the other one
    ("wide" and m<M> are (1, G) tilings, c<C> a (G, G) one) and (G, G) tiles of more than 2 blocks (64 KB+ of
    bf16 per program: spills)."""
    if _is_col_cast_name(name):
        return kind == "col"
    if _is_two_pass_name(name):
        return kind in ("tensor", "col")
    if kind not in ("group", "block"):
        return False
    t = _parse_tiling(name)
    if t.mode == "wide" or t.rows:
        return kind == "group"
    if t.chunk:
        return kind == "block"
    return kind == "group" or t.groups <= 2


def _wide_groups(n_groups: int) -> int:
    """Groups per program of the wide (1, G) tiling: the power of two in 64..8 (at most pow2(n_groups)) that pads
    the last K tile least, the larger on ties: K = 8192 -> 64 (no padding), K = 7168 (56 groups) -> 8."""
    best = None
    for n in (64, 32, 16, 8):
        n = min(n, _pow2(n_groups))
        waste = _cdiv(n_groups, n) * n - n_groups
        if best is None or waste < best[0]:
            best = (waste, n)
    return best[1]


def _group_plan(base: dict, kind: str, group: int, m: int, k: int, static: bool, tiling: str,
                k_contiguous: bool = True, tma_ok: bool = False, in_bytes: int = 2) -> _Plan:  # fmt: skip
    source = "given" if static else "tile"
    t = _parse_tiling(tiling)
    mode, n, w, c, r, rows = t.mode, t.groups, t.warps, t.chunk, t.maxnreg, t.rows
    fast_div = t.fast_div
    if mode == "auto":
        if (kind == "block" and group == 128 and not static and in_bytes == 2 and m * k >= _TMA_AUTO_MIN_ELEMS
                and tma_ok):
            plan = _group_plan(base, kind, group, m, k, static, _TMA_AUTO_TILING, k_contiguous, tma_ok, in_bytes)
            if plan.kernel == "tma":
                return plan
        # The default stays on the tiling measured on the H200 (1x128 at 8192^2: 79.6% of copy,
        # benchmarks/results/quant-nvidia-h200-20261129-094659.json) until the wide one has been timed against it.
        mode = "wide" if _WIDE_BY_DEFAULT else "legacy"
        fast_div = _FAST_DIV_BY_DEFAULT
    if mode == "wide":
        # Wide row segments only pay when K is the contiguous axis: on a column-major x a 1 x 8192 tile would touch
        # one 32-byte sector per element, where the legacy 64-row tile reads 128 B runs down each column.
        if kind == "group" and m * k >= _WIDE_MIN_ELEMS and k_contiguous:
            n = _wide_groups(_cdiv(k, group))
            block_m = max(1, min(_pow2(m), _TILE_ELEMS // (n * group)))
            mode, w = "groups", _warps(block_m * n * group)
        else:
            mode = "legacy"
    if mode == "legacy":
        block_m = group if kind == "block" else max(1, min(_pow2(m), _TILE_ELEMS // group))
        axis = "row" if kind == "group" else "tile"
        return _Plan(**base, source=source, scale_axis=axis, cast=_tile(block_m, group),
                     fast_div=fast_div and not static)  # fmt: skip
    n = max(1, min(n, _pow2(_cdiv(k, group))))
    block_m = group if kind == "block" else max(1, min(_pow2(m), rows or _TILE_ELEMS // (n * group)))
    if t.tma_stages:
        # Triton's pipeline keeps S - 1 buffers of x's tile (measured offline, sm_90), plus the FP8 tile staged for
        # the TMA store.
        smem = (t.tma_stages - 1) * block_m * n * group * in_bytes + (block_m * n * group if t.tma_store else 0)
        box_ok = block_m <= 256 and n * group <= 256  # a TMA box has at most 256 elements per dimension
        if tma_ok and box_ok and smem <= _TMA_SMEM and (k % 16 == 0 or not t.tma_store):
            return _Plan(**base, source=source, scale_axis="row" if kind == "group" else "tile",
                         cast=_Tile(block_m, n * group, w), kernel="tma", groups=n, maxnreg=r,
                         fast_div=fast_div and not static, persist=min(t.persist, _TMA_SMEM // smem),
                         tma_stages=t.tma_stages, tma_store=t.tma_store)  # fmt: skip
        t = dataclasses.replace(t, persist=0)  # fallback: the same tiling, one tile per program, pointer loads
    return _Plan(**base, source=source, scale_axis="row" if kind == "group" else "tile",
                 cast=_Tile(block_m, n * group, w), kernel="groups", groups=n, maxnreg=r,
                 chunk_m=c if kind == "block" and c < group else 0, fast_div=fast_div and not static,
                 evict=t.evict, persist=t.persist, persist_l2=t.persist_l2)  # fmt: skip


def _atomic_plan(base: dict, kind: str, m: int, k: int, interpreter: bool, sms: int) -> _Plan:
    """Two-pass tensor/col plan of the "atomic" scheme (see _TWO_PASS)."""
    _, per_sm, wide, prefetch, fast_div = _parse_two_pass(_scheme(kind))
    block_k = min(max(_pow2(k), 16), 1024)
    block_m = max(1, min(_pow2(m), _AMAX_ELEMS // block_k))
    amax = _Tile(block_m, block_k, min(8, _warps(block_m * block_k)))
    tiles_m, tiles_k = _cdiv(m, amax.block_m), _cdiv(k, amax.block_k)
    # A power of two of row bands: at power-of-two M tiles every program reads the same number of tiles.
    progs = 4 if interpreter else per_sm * sms
    progs_m = min(tiles_m, 1 << max(0, (progs // tiles_k).bit_length() - 1))
    if kind == "col" and not wide:
        cast = _col_cast_tile(m, k, _tile(max(1, min(_pow2(m), _TILE_ELEMS // 256)), min(max(_pow2(k), 16), 256)))
    else:
        cast = _elementwise_tile(m, k)
    plan = _Plan(**base, source="absmax", scale_axis="col" if kind == "col" else "tile", cast=cast, amax=amax,
                 reduce="atomic_col" if kind == "col" else "atomic_all", progs_m=progs_m, progs_k=tiles_k,
                 extras=("atomic", f"p{per_sm}"), prefetch=prefetch, fast_div=fast_div)  # fmt: skip
    return _col_strip_plan(plan, m, k) if kind == "col" else plan


def _plan(g: tuple, m: int, k: int, static: bool, arch: int = 90, interpreter: bool = False,
          k_contiguous: bool = True, sms: int = 132, tma_ok: bool = False, in_bytes: int = 2) -> _Plan:  # fmt: skip
    """How to quantize an (m, k) input. ``tma_ok``: x can be read by TMA (see quantize: contiguous last dim,
    16-byte aligned base and row stride); ``in_bytes``: its element size."""
    kind = g[0]
    group = g[1] if len(g) > 1 else 0
    scaling = {
        "tensor": "tensorwise",
        "row": "rowwise",
        "col": "colwise",
        "group": f"group1x{group}",
        "block": f"block{group}x{group}",
    }[kind]
    base = dict(kind=kind, group=group, scaling=scaling, arch=arch)

    if kind in ("group", "block"):
        return _group_plan(base, kind, group, m, k, static, _TILING, k_contiguous, tma_ok, in_bytes)
    if static:
        axis = {"tensor": "tile", "row": "row", "col": "col"}[kind]
        cast = _elementwise_tile(m, k)
        if kind == "col":
            return _col_strip_plan(_Plan(**base, source="given", scale_axis=axis, cast=_col_cast_tile(m, k, cast)),
                                   m, k)  # fmt: skip
        return _Plan(**base, source="given", scale_axis=axis, cast=cast)
    if kind == "row" and not _row_col_two_pass(kind, m, k):
        block_k = max(_pow2(k), 16)
        block_m = max(1, min(_pow2(m), _TILE_ELEMS // block_k))
        return _Plan(**base, source="tile", scale_axis="row", cast=_tile(block_m, block_k))
    if kind == "col" and not _row_col_two_pass(kind, m, k):
        block_m = _pow2(m)
        block_k = max(16, min(_pow2(k), _TILE_ELEMS // block_m))
        return _Plan(**base, source="tile", scale_axis="col", cast=_tile(block_m, block_k))
    if kind in ("col", "tensor") and _TWO_PASS != "partials":
        return _atomic_plan(base, kind, m, k, interpreter, sms)
    # Two passes: amax kernel writing partials, then the cast reducing them.
    if kind == "col":
        # Column strips of _COL_STRIP columns; the amax pass splits M into at most _MAX_PARTIALS_COL row chunks,
        # enough chunks that strips x chunks fills the GPU (~512 programs).
        block_k = min(max(_pow2(k), 16), _COL_STRIP)
        tile = _tile(max(1, min(_pow2(m), _TILE_ELEMS // block_k)), block_k)
        tiles_m, strips = _cdiv(m, tile.block_m), _cdiv(k, block_k)
        chunks = 2 if interpreter else min(_MAX_PARTIALS_COL, _pow2(_cdiv(512, strips)))
        progs_m = max(1, min(tiles_m, chunks))
        return _Plan(**base, source="amax", scale_axis="col", cast=tile, amax=tile, reduce="col",
                     progs_m=progs_m, progs_k=strips, npart=progs_m)  # fmt: skip
    tile = _elementwise_tile(m, k)
    tiles_m, tiles_k = _cdiv(m, tile.block_m), _cdiv(k, tile.block_k)
    if kind == "row":
        # Each program reduces a few K tiles of one row band: at 4 tiles of 16 KB a program reads 64 KB, about 2 us of
        # one SM's share of HBM bandwidth (4.3 TB/s / 132 SMs), which bounds the tail of the last wave.
        progs_k = _cdiv(tiles_k, 4)
        return _Plan(**base, source="amax", scale_axis="row", cast=tile, amax=tile, reduce="row",
                     progs_m=tiles_m, progs_k=progs_k, npart=progs_k)  # fmt: skip
    cap = 16 if interpreter else _MAX_PARTIALS_ALL
    progs_k = min(tiles_k, cap)
    progs_m = max(1, min(tiles_m, cap // progs_k))
    return _Plan(**base, source="amax", scale_axis="tile", cast=tile, amax=tile, reduce="all",
                 progs_m=progs_m, progs_k=progs_k, npart=progs_m * progs_k)  # fmt: skip


def _cast_programs(plan: _Plan, m: int, tiles_k: int, sms: int) -> int:
    """Cast grid size: one program per tile, or (persistent "groups" plans) at most ``persist`` per SM."""
    if plan.kernel == "strip":
        return tiles_k * plan.splits
    tiles = _cdiv(m, plan.cast.block_m) * tiles_k
    return min(tiles, plan.persist * sms) if plan.persist else tiles


@dataclass(frozen=True)
class _Launch:
    """Everything of a call that depends only on the cache key of :func:`_launch`: grids, kernel names, the
    positional constexpr values in signature order, warps, buffer shapes. Built once per key, so a repeated call
    spends no time planning or naming."""

    plan: _Plan
    cast_grid: tuple[int]
    cast_tail: tuple  # TILES_K, NPART, then the constexprs, in quantize_kernel's order
    cast_warps: int
    cast_options: dict  # extra launch options of the cast kernel (maxnreg)
    amax_grid: tuple[int] | None
    amax_tail: tuple | None  # PROGS_M, PROGS_K, then the constexprs, in amax_kernel's order
    amax_warps: int
    partial_shape: tuple[int, ...] | None
    partial_zeroed: bool = False  # atomic scheme: the amax buffer is int32 zeros (torch.zeros: a fill kernel)


_LAUNCHES: dict[tuple, _Launch] = {}


def _launch(g: tuple, m: int, k: int, static: bool, in_dtype, out_dtype, arch: int, interpreter: bool,
            k_contiguous: bool = True, sms: int = 132, tma_ok: bool = False) -> _Launch:  # fmt: skip
    from tritonfp8.naming import naming_mode

    mode = naming_mode()
    key = (g, m, k, static, in_dtype, out_dtype, arch, interpreter, mode, _ONE_PASS_MAX_ELEMS, _TILE_ELEMS, _TILING,
           k_contiguous, _TWO_PASS, _COL_CAST, sms, tma_ok)  # fmt: skip
    hit = _LAUNCHES.get(key)
    if hit is not None:
        return hit
    plan = _plan(g, m, k, static, arch=arch, interpreter=interpreter, k_contiguous=k_contiguous, sms=sms,
                 tma_ok=tma_ok, in_bytes=in_dtype.itemsize)
    tiles_k = _cdiv(k, plan.cast.block_k)
    cx = plan.cast_constexprs(out_dtype)
    name = plan.cast_name(in_dtype, out_dtype).build(mode)
    if plan.kernel in ("groups", "tma"):
        cast_tail = (tiles_k, *cx.values(), name)
    elif plan.kernel == "strip":
        cast_tail = (tiles_k, plan.splits, *cx.values(), name)
    else:
        cast_tail = (tiles_k, plan.npart, *cx.values(), name)
    amax_grid = amax_tail = partial_shape = None
    if plan.amax is not None:
        amax_grid = (plan.progs_m * plan.progs_k,)
        ax = plan.amax_constexprs()
        amax_tail = (plan.progs_m, plan.progs_k, *ax.values(), plan.amax_name(in_dtype).build(mode))
        partial_shape = plan.partial_shape(m, k)
    hit = _Launch(
        plan=plan,
        cast_grid=(_cast_programs(plan, m, tiles_k, sms),),
        cast_tail=cast_tail,
        cast_warps=plan.cast.num_warps,
        cast_options={"maxnreg": plan.maxnreg} if plan.maxnreg else {},
        amax_grid=amax_grid,
        amax_tail=amax_tail,
        amax_warps=plan.amax.num_warps if plan.amax is not None else 0,
        partial_shape=partial_shape,
        partial_zeroed=plan.source == "absmax",
    )
    if len(_LAUNCHES) >= 4096:  # many distinct shapes (e.g. varying token counts): start over, never grow unbounded
        _LAUNCHES.clear()
    _LAUNCHES[key] = hit
    return hit


# --------------------------------------------------------------------------------------------------------------
# Public ops


def _check_input(x, op: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{op}: x: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_INPUT_DTYPES:
        raise TypeError(f"{op}: x: expected a bfloat16, float16 or float32 tensor, got {x.dtype}")


def _check_scale(scale, expected: tuple[int, ...], device: torch.device, kind: str) -> None:
    if scale.dtype != torch.float32:
        raise ValueError(f"quantize: scale: expected a float32 tensor (dequantization factors), got {scale.dtype}")
    ok = tuple(scale.shape) == expected or (kind == "tensor" and tuple(scale.shape) == (1,))
    if not ok:
        want = "() or (1,)" if kind == "tensor" else str(expected)
        raise ValueError(f"quantize: scale: expected shape {want} for {kind} granularity, got {tuple(scale.shape)}")
    if scale.device != device:
        raise ValueError(f"quantize: scale: expected a tensor on {device} (where x is), got {scale.device}")


_GRANULARITIES: dict = {}  # granularity as given (str or tuple of two ints) -> normalized, filled on first use


def _granularity(granularity: Granularity) -> tuple:
    """:func:`_normalize_granularity` with a cache for strings and tuples of exact ints (a float or bool tuple
    compares equal to an int one, so it never takes the cache and gets the ValueError)."""
    t = type(granularity)
    cacheable = t is str or (t is tuple and len(granularity) == 2 and all(type(v) is int for v in granularity))
    if cacheable:
        g = _GRANULARITIES.get(granularity)
        if g is not None:
            return g
    g = _normalize_granularity(granularity)
    if cacheable:
        _GRANULARITIES[granularity] = g
    return g
_OUT_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
_ARCH: dict = {}  # torch.device -> int arch (90 for sm_90), or None: no FP8 conversions (PyTorch fallback)


def _device_arch(device: torch.device) -> int | None:
    """Arch of ``device`` for kernel names, None when it cannot convert to FP8; cached per device (the capability
    query and the current-device lookup cost microseconds per call)."""
    arch = _ARCH.get(device, -1)
    if arch == -1:
        if device.type == "cuda" and device.index is None:
            return _device_arch(torch.device("cuda", torch.cuda.current_device()))
        arch = _backend.arch_of(device) if _backend.has_fp8_tensor_cores(device) else None
        if device.type == "cuda":  # the interpreter's answer depends on TRITON_INTERPRET: not cached
            _ARCH[device] = arch
    return arch


_SMS: dict = {}  # torch.device -> SM count (CUDA), sizes the resident amax grid of the atomic two-pass scheme


def _sm_count(device: torch.device) -> int:
    n = _SMS.get(device)
    if n is None:
        if device.type != "cuda":
            return 1  # interpreter: the plans use a fixed small grid
        index = device.index if device.index is not None else torch.cuda.current_device()
        n = _SMS[device] = torch.cuda.get_device_properties(index).multi_processor_count
    return n


def _scale_shape_2d(kind: str, g: tuple, m: int, k: int) -> tuple[int, ...]:
    if kind == "tensor":
        return ()
    if kind == "row":
        return (m, 1)
    if kind == "col":
        return (1, k)
    G = g[1]
    return (m, _cdiv(k, G)) if kind == "group" else (_cdiv(m, G), _cdiv(k, G))


def quantize(
    x: torch.Tensor,
    granularity: Granularity,
    dtype: torch.dtype = torch.float8_e4m3fn,
    scale: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize ``x`` to FP8 with fp32 dequantization scales: ``x ≈ xq.float() * scale``.

    Args:
        x: bf16/fp16/fp32 tensor, any shape (row/col/group/block: at least 1-D, seen as (M, K), M = product of the
            leading dims). Any strides.
        granularity: "tensor", "row", "col", (1, G) or (G, G), G = 128 (16..128, powers of two).
        dtype: torch.float8_e4m3fn (±448) or torch.float8_e5m2 (±57344).
        scale: optional static fp32 scale of the granularity's scale shape (tensor: () or (1,)), on x's device;
            used instead of computing one.

    Returns:
        ``(xq, scale)``: xq contiguous, x's shape, ``dtype``; scale fp32, shape per the module table (the given
        scale, reshaped to it, when static).

    One pass over x for row (K <= 16384), col (M <= 1024), (1, G), (G, G) and static scales; two passes (amax, then
    cast) for "tensor" and longer rows/columns. Rounding rule and NaN/inf behaviour: see the module docstring.
    """
    if not isinstance(x, torch.Tensor) or x.dtype not in FLOAT_INPUT_DTYPES:
        _check_input(x, "quantize")
    g = _granularity(granularity)
    if dtype not in _OUT_DTYPES:
        fp8_format(dtype)  # TypeError naming dtype
    kind = g[0]
    if kind != "tensor" and x.dim() == 0:
        raise ValueError(f"quantize: x: expected at least 1 dimension for {kind} granularity, got a 0-d tensor")
    device = x.device
    if scale is not None:
        if not isinstance(scale, torch.Tensor):
            raise TypeError(f"quantize: scale: expected a torch.Tensor or None, got {type(scale).__name__}")
        _backend.check_device("quantize", [("x", x), ("scale", scale)])
        shape = scale_shape(x.shape, granularity)
        _check_scale(scale, shape, device, kind)
    elif device.type != "cuda":
        _backend.check_device("quantize", [("x", x)])  # ValueError on CPU without the interpreter, other devices

    arch = _device_arch(device)
    if arch is None:
        _backend.warn_once(
            "quantize-fallback",
            "tritonfp8.quantize: this GPU has no FP8 conversion instructions (needs sm_89+); using the PyTorch path",
        )
        return quantize_torch(x, granularity, dtype, scale)

    if x.numel() == 0:
        return quantize_torch(x, granularity, dtype, scale)  # empty xq; scales of empty groups: the safe scale

    if x.dim() == 2:
        x2 = x
        m, k = x.shape
    else:
        m, k = _as_2d_shape(x.shape)
        x2 = x.reshape(m, k)
    stride_xm, stride_xk = x2.stride()
    # TMA (tiling t<S>) reads rows of a contiguous last dim from a 16-byte aligned base at a 16-byte aligned stride
    # (rows that do not overlap: no broadcast views with stride 0).
    tma_ok = (stride_xk == 1 and (stride_xm * x.element_size()) % 16 == 0 and (stride_xm >= k or m == 1)
              and x2.data_ptr() % 16 == 0)  # fmt: skip
    lc = _launch(g, m, k, scale is not None, x.dtype, dtype, arch, device.type != "cuda", stride_xk == 1,
                 _sm_count(device), tma_ok)  # fmt: skip
    xq = torch.empty((m, k), dtype=dtype, device=device)
    if scale is not None:
        s = scale.reshape(shape)
    else:
        s = torch.empty(_scale_shape_2d(kind, g, m, k), dtype=torch.float32, device=device)
    # Scale addressing (see _kernels/quantize.py): "all" dimensions get stride 0.
    if kind == "tensor":
        s2, stride_sm, stride_sk = s, 0, 0
    else:
        s2 = s
        stride_sm = 0 if kind == "col" else s.stride(0)
        stride_sk = 0 if kind == "row" else s.stride(1)

    from tritonfp8._kernels import quantize as kq

    if lc.amax_grid is not None:
        # Partials are written by every amax program before the cast reads them: torch.empty, no fill kernel. The
        # atomic scheme max-reduces into int32 zeros instead.
        if lc.partial_zeroed:
            part = torch.zeros(lc.partial_shape, dtype=torch.int32, device=device)
        else:
            part = torch.empty(lc.partial_shape, dtype=torch.float32, device=device)
        kq.amax_kernel[lc.amax_grid](
            x2, part, m, k, stride_xm, stride_xk, *lc.amax_tail, num_warps=lc.amax_warps, num_stages=1
        )
    else:
        part = s2  # unused by the kernel
    if lc.plan.kernel == "tma":
        from triton.tools.tensor_descriptor import TensorDescriptor

        box = [lc.plan.cast.block_m, lc.plan.cast.block_k]
        x_desc = TensorDescriptor(x2, [m, k], [stride_xm, 1], box)
        q_arg = TensorDescriptor(xq, [m, k], [k, 1], box) if lc.plan.tma_store else xq
        kq.quantize_tma_kernel[lc.cast_grid](
            x_desc, q_arg, s2, m, k, stride_sm, stride_sk, *lc.cast_tail,
            num_warps=lc.cast_warps, num_stages=1, **lc.cast_options,
        )  # fmt: skip
        return (xq.reshape(x.shape) if x.dim() != 2 else xq), s
    if lc.plan.kernel == "strip":
        kq.quantize_col_strip_kernel[lc.cast_grid](
            x2, xq, s2, part, m, k, stride_xm, stride_xk, stride_sk, *lc.cast_tail,
            num_warps=lc.cast_warps, num_stages=1,
        )  # fmt: skip
        return (xq.reshape(x.shape) if x.dim() != 2 else xq), s
    if lc.plan.kernel == "groups":
        kq.quantize_groups_kernel[lc.cast_grid](
            x2, xq, s2, m, k, stride_xm, stride_xk, stride_sm, stride_sk, *lc.cast_tail,
            num_warps=lc.cast_warps, num_stages=1, **lc.cast_options,
        )  # fmt: skip
        if x.dim() != 2:
            xq = xq.reshape(x.shape)
        return xq, s
    kq.quantize_kernel[lc.cast_grid](
        x2, xq, s2, part, m, k, stride_xm, stride_xk, stride_sm, stride_sk, *lc.cast_tail,
        num_warps=lc.cast_warps, num_stages=1,
    )  # fmt: skip
    if x.dim() != 2:
        xq = xq.reshape(x.shape)
    return xq, s


def dequantize(xq: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """``xq.float() * scale`` cast to ``dtype``; the scale's shape says the granularity (see the module table).

    Plain PyTorch (runs wherever xq lives). ``scale`` is fp32, shape (), (1,), (M, 1), (1, K), (M, ceil(K/G)) or
    (ceil(M/G), ceil(K/G)) for xq seen as (M, K).
    """
    if not isinstance(xq, torch.Tensor):
        raise TypeError(f"dequantize: xq: expected a torch.Tensor, got {type(xq).__name__}")
    fp8_format(xq.dtype, "xq")
    if not isinstance(scale, torch.Tensor):
        raise TypeError(f"dequantize: scale: expected a torch.Tensor, got {type(scale).__name__}")
    if scale.dtype != torch.float32:
        raise TypeError(f"dequantize: scale: expected a float32 tensor, got {scale.dtype}")
    if dtype not in FLOAT_INPUT_DTYPES:
        raise TypeError(f"dequantize: dtype: expected torch.bfloat16, torch.float16 or torch.float32, got {dtype}")
    if scale.device != xq.device:
        raise ValueError(f"dequantize: scale is on {scale.device} but xq is on {xq.device}; expected one device")
    m, k = _as_2d_shape(xq.shape)
    _expand_scale(scale, m, k, arg="dequantize: scale")  # ValueError naming scale on a mismatched shape
    return dequantize_torch(xq, scale, dtype)
