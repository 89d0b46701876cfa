"""Where a call runs: the CUDA GPU, the Triton interpreter on CPU, or a PyTorch fallback.

A path is chosen per call from the tensors' device and the GPU's capability:
- CUDA tensor, sm_90 (Hopper): TMA + wgmma kernels.
- CUDA tensor, sm_89 (Ada): FP8 tensor cores, no TMA/wgmma: pointer-based kernels.
- CUDA tensor, older GPU: no FP8 tensor cores: BF16 fallback with a one-time warning.
- CPU tensor and ``TRITON_INTERPRET=1``: the same Triton kernels, run by the interpreter (tests, demos).
- CPU tensor without the interpreter: a clear error (the kernels need a GPU).
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Iterable

import torch


def interpreting() -> bool:
    """True when Triton kernels run in the CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


class Switch:
    """An on/off setting: ``default`` unless the environment variable ``env`` is set ("0" off, anything else on) at
    import; switchable at run time (tests, A/B timing)."""

    def __init__(self, env: str, default: bool = True):
        self.on = os.environ.get(env, "1" if default else "0") != "0"

    def get(self) -> bool:
        return self.on

    def set(self, on: bool) -> bool:
        """Turn it on or off; returns the previous setting."""
        prev, self.on = self.on, bool(on)
        return prev


def sync(device) -> None:
    """Wait for the GPU when ``device`` ("cuda", "cuda:1", a torch.device) is a CUDA device; no-op for the CPU runs
    of the benchmark and tuning bookkeeping."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


@functools.lru_cache(maxsize=None)
def capability(device_index: int = 0) -> tuple[int, int] | None:
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability(device_index)


def has_fp8_tensor_cores(device: torch.device) -> bool:
    if device.type != "cuda":
        return interpreting()
    cap = capability(device.index if device.index is not None else torch.cuda.current_device())
    return cap is not None and cap >= (8, 9)


def is_hopper(device: torch.device) -> bool:
    if device.type != "cuda":
        return False
    cap = capability(device.index if device.index is not None else torch.cuda.current_device())
    return cap is not None and cap[0] == 9


def arch_of(device: torch.device) -> int:
    """Compute capability as an int (90 for sm_90); the interpreter reports 90 so names match Hopper's."""
    if device.type != "cuda":
        return 90
    major, minor = capability(device.index if device.index is not None else torch.cuda.current_device())
    return major * 10 + minor


def check_device(op: str, tensors: Iterable[tuple[str, torch.Tensor | None]]) -> torch.device:
    """All named tensors on one device, and that device able to run Triton kernels.

    Raises ValueError naming the argument that is elsewhere, or naming the CPU tensor when the
    interpreter is off.
    """
    device = None
    first = None
    for name, t in tensors:
        if t is None:
            continue
        if device is None:
            device, first = t.device, name
        elif t.device != device:
            raise ValueError(
                f"{op}: {name} is on {t.device} but {first} is on {device}; all tensors must be on one device"
            )
    if device is None:
        raise ValueError(f"{op}: no tensor given")
    if device.type == "cpu" and not interpreting():
        raise ValueError(
            f"{op}: {first} is a CPU tensor; the Triton kernels need a CUDA tensor "
            "(or set TRITON_INTERPRET=1 to run them in the CPU interpreter, for tests)"
        )
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"{op}: {first} is on {device}; expected a CUDA tensor")
    return device


_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    """Emit ``message`` as a RuntimeWarning the first time ``key`` is seen in this process."""
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=3)
