"""CUTLASS-style names for every compiled kernel.

CUTLASS names each kernel procedurally from its configuration (``cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_bf16_...
_128x256x128_...``) so a profiler trace tells which tile, types and schedule ran. tritonfp8 does the same; one
function (:func:`kernel_name`) builds every name, and :func:`named_jit` hands it to Triton through ``repr=`` so the
cubin's entry symbol, Nsight and ``torch.profiler`` all show it.

Grammar (fields joined by ``_``; ``[...]`` optional)::

    name     := prefix "_sm" ARCH "_" OP "_" types "_" tile "_" "w" WARPS "s" STAGES ["_" SCHEDULE] ["_" SCALING] {"_" EXTRA}
    prefix   := "cutlass" | "tfp8"            # "tfp8" under plain naming (A/B experiments)
    types    := T {"_" T}                     # A, B, accumulator, output element types (fewer for unary ops)
    T        := "e4m3" | "e5m2" | "bf16" | "f16" | "f32" | "s32"
    tile     := M "x" N "x" K                 # the CUTLASS GemmShape of one program's tile
    SCHEDULE := e.g. "tma", "tmapersistent", "tmaws" (warp-specialized), "splitk4", "ptr"
    SCALING  := "tensorwise" | "rowwise" | "blockwise" | ...  (the scale granularity the kernel applies)
    EXTRA    := lowercase alphanumerics, e.g. "precise", "causal", "hd128"

Example: ``cutlass_sm90_fp8gemm_e4m3_e4m3_f32_bf16_128x256x128_w8s3_tmapersistent_rowwise``.

Why the prefix matters: ptxas checks whether a kernel's name contains "cutlass" and changes its optimisation.
On sm_100 that changes the SASS; on sm_90 we measured byte-identical SASS (see ``python -m tritonfp8 codegen``,
which compiles both names and reports whether they differ). The library never assumes a speedup from the name.

Plain naming: ``TRITONFP8_KERNEL_NAMES=plain`` in the environment, or :func:`set_kernel_names("plain")`, or the
:func:`kernel_names` context manager. Because the name is a compile-time constant of the kernel, the two names are
two separately compiled (and cached) kernels.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from dataclasses import dataclass, field, replace
from typing import Iterator

import triton

PREFIXES = ("cutlass", "tfp8")
_MODE_ENV = "TRITONFP8_KERNEL_NAMES"
_mode_override: str | None = None

_TOKEN = re.compile(r"^[a-z0-9]+$")
_NAME_RE = re.compile(
    r"^(?P<prefix>cutlass|tfp8)_sm(?P<arch>\d+)_(?P<op>[a-z0-9]+)_(?P<types>(?:(?:e4m3|e5m2|bf16|f16|f32|s32)_)+)"
    r"(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)_w(?P<warps>\d+)s(?P<stages>\d+)(?P<rest>(?:_[a-z0-9]+)*)$"
)


def naming_mode() -> str:
    """ "cutlass" (default) or "plain"."""
    mode = _mode_override or os.environ.get(_MODE_ENV, "cutlass")
    mode = mode.strip().lower()
    if mode not in ("cutlass", "plain"):
        raise ValueError(f"{_MODE_ENV}: expected 'cutlass' or 'plain', got {mode!r}")
    return mode


def set_kernel_names(mode: str | None) -> None:
    """Name kernels "cutlass" (default) or "plain" from now on; None returns to the environment's choice."""
    global _mode_override
    if mode is not None and mode not in ("cutlass", "plain"):
        raise ValueError(f"mode: expected 'cutlass', 'plain' or None, got {mode!r}")
    _mode_override = mode


@contextlib.contextmanager
def kernel_names(mode: str) -> Iterator[None]:
    """Within the block, compile and launch kernels under ``mode`` names ("cutlass" or "plain")."""
    global _mode_override
    old = _mode_override
    set_kernel_names(mode)
    try:
        yield
    finally:
        _mode_override = old


@dataclass(frozen=True)
class KernelName:
    """The fields of a kernel name. ``str(KernelName(...))`` is the name under the current naming mode."""

    arch: int
    op: str
    types: tuple[str, ...]
    tile: tuple[int, int, int]
    warps: int
    stages: int
    schedule: str | None = None
    scaling: str | None = None
    extras: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for tok in (self.op, *self.types, *(x for x in (self.schedule, self.scaling) if x), *self.extras):
            if not _TOKEN.match(tok):
                raise ValueError(f"kernel name field {tok!r}: expected lowercase letters and digits only")
        if len(self.tile) != 3:
            raise ValueError(f"tile: expected (M, N, K), got {self.tile}")

    def build(self, mode: str | None = None) -> str:
        return _build_name(self, "cutlass" if (mode or naming_mode()) == "cutlass" else "tfp8")

    def __str__(self) -> str:
        return self.build()

    def with_mode(self, mode: str) -> str:
        return self.build(mode)

    def evolve(self, **kw) -> "KernelName":
        return replace(self, **kw)


def kernel_name(**fields) -> str:
    """Build a kernel name from its fields (see :class:`KernelName`) under the current naming mode."""
    return KernelName(**fields).build()


def parse_kernel_name(name: str) -> dict:
    """Split a name back into prefix, arch, op, types, tile, warps, stages and trailing fields."""
    m = _NAME_RE.match(name)
    if m is None:
        raise ValueError(f"name: {name!r} does not follow the tritonfp8 kernel-name grammar")
    rest = [x for x in m.group("rest").split("_") if x]
    return {
        "prefix": m.group("prefix"),
        "arch": int(m.group("arch")),
        "op": m.group("op"),
        "types": tuple(x for x in m.group("types").split("_") if x),
        "tile": (int(m.group("m")), int(m.group("n")), int(m.group("k"))),
        "warps": int(m.group("warps")),
        "stages": int(m.group("stages")),
        "rest": tuple(rest),
    }


def _repr_from_constexpr(spec) -> str:
    """Triton ``repr=`` hook: the compiled symbol is the kernel's ``KERNEL_NAME`` constexpr."""
    name = spec.constants.get("KERNEL_NAME")
    if not name:
        raise ValueError("kernels built with named_jit need a KERNEL_NAME constexpr")
    return str(name)


def named_jit(fn=None, **kwargs):
    """``triton.jit`` whose compiled symbol is the ``KERNEL_NAME: tl.constexpr`` argument.

    The name is a constexpr so that the "cutlass" and plain variants are two specializations of one kernel: same
    source, separate cache entries, and nothing else differs between them.
    """
    if fn is None:
        return lambda f: named_jit(f, **kwargs)
    return triton.jit(fn, repr=_repr_from_constexpr, **kwargs)


@functools.lru_cache(maxsize=4096)
def _build_name(k: KernelName, prefix: str) -> str:
    """The symbol of ``k`` (cached: launchers build names on every call)."""
    m, n, kk = k.tile
    parts = [prefix, f"sm{k.arch}", k.op, *k.types, f"{m}x{n}x{kk}", f"w{k.warps}s{k.stages}"]
    parts += [x for x in (k.schedule, k.scaling) if x]
    parts += list(k.extras)
    return "_".join(parts)
