"""FP8 element formats: the one place that knows their limits and their names.

E4M3 here is the OCP "fn" variant (``torch.float8_e4m3fn``): no infinities, max ±448.
E5M2 (``torch.float8_e5m2``) keeps IEEE infinities, max finite ±57344.
Every tolerance derived from a format (its unit roundoff ``eps = 2**-(mantissa_bits+1)``) comes from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class FP8Format:
    torch_dtype: torch.dtype
    short: str  # used in kernel names: "e4m3" / "e5m2"
    triton_sig: str  # Triton signature string: "fp8e4nv" / "fp8e5"
    max: float  # largest finite magnitude
    mantissa_bits: int

    @property
    def eps(self) -> float:
        """Unit roundoff of round-to-nearest: half the gap between 1 and the next value."""
        return 2.0 ** -(self.mantissa_bits + 1)


E4M3 = FP8Format(torch.float8_e4m3fn, "e4m3", "fp8e4nv", 448.0, 3)
E5M2 = FP8Format(torch.float8_e5m2, "e5m2", "fp8e5", 57344.0, 2)

FP8_FORMATS: dict[torch.dtype, FP8Format] = {E4M3.torch_dtype: E4M3, E5M2.torch_dtype: E5M2}

# Short names of the non-FP8 element types used in kernel names and Triton signatures.
_SHORT = {
    torch.bfloat16: ("bf16", "bf16"),
    torch.float16: ("f16", "fp16"),
    torch.float32: ("f32", "fp32"),
    torch.float8_e4m3fn: ("e4m3", "fp8e4nv"),
    torch.float8_e5m2: ("e5m2", "fp8e5"),
    torch.int32: ("s32", "i32"),
    torch.int64: ("s64", "i64"),
}

FLOAT_INPUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def fp8_format(dtype: torch.dtype, arg: str = "dtype") -> FP8Format:
    """The FP8Format of ``dtype``; TypeError naming ``arg`` if it is not an FP8 type we support."""
    try:
        return FP8_FORMATS[dtype]
    except KeyError:
        raise TypeError(
            f"{arg}: expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}"
        ) from None


def short_name(dtype: torch.dtype) -> str:
    """CUTLASS-style short element name: e4m3, e5m2, bf16, f16, f32."""
    return _SHORT[dtype][0]


def triton_sig(dtype: torch.dtype) -> str:
    """Triton signature element string for a pointer/descriptor of ``dtype``."""
    return _SHORT[dtype][1]
