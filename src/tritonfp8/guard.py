"""Precision guard: detect inputs FP8 cannot represent, act on a policy, and count every fallback.

What is checked, per guarded call (an :class:`tritonfp8.nn.FP8Linear` forward, the transformers attention hook),
on the high-precision input *before* it is quantized:

- non-finite values (NaN, ±inf): a dynamic scale computed from an amax that is inf or NaN poisons the whole tensor
  (every output becomes NaN), while BF16 would confine the damage to the affected rows;
- saturation: the fraction of values with ``|x| > fmax · scale`` (they clip to ±fmax, 448 for E4M3). Only a
  *static* scale (a calibrated or user-given ``input_scale``) can saturate: a dynamic scale is amax / fmax, so
  nothing finite exceeds fmax after scaling. A call is flagged when the fraction exceeds ``max_saturation``.

Policies (:func:`set_policy`, the :func:`policy` context manager, or ``TRITONFP8_GUARD=error|warn|ignore``):

- ``"ignore"`` (default): nothing is computed; no cost, no host sync, CUDA-graph safe. The other two policies
  cannot be captured into a CUDA graph in eager mode (their decision needs the host): a guarded call inside a
  capture raises a RuntimeError that says so, instead of the bare CUDA error the sync would give.
- ``"warn-and-fallback"`` (alias ``"warn"``): a flagged call warns (once per layer and reason) and is computed in
  BF16 (activations unquantized, the dequantized FP8 weight), and the fallback is counted.
- ``"error"``: a flagged call raises :class:`GuardError` (a ValueError) naming the layer and what was found.

Cost: the check is one fused reduction over the input on the device, plus — in eager mode — one host sync per
call to read the two counts (``.tolist()``), which is inherent to deciding on the host. Under ``torch.compile``
there is no host decision: the counts stay on the device, ``torch.cond`` selects the FP8 or the BF16 branch inside
the graph (no graph break), and the detections accumulate in a device counter of each module that
:func:`stats` reads later. Under compile the ``"error"`` policy therefore cannot raise inside the graph: it computes
in FP8, counts the detection, and :func:`raise_pending` (or the next :func:`stats` with ``raise_errors=True``)
raises afterwards.

:func:`stats` reports every fallback (per layer and reason), the errors raised, and the layers kept in BF16 at
conversion or calibration time and why. Nothing falls back silently.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import warnings
import weakref
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Iterator

import torch

log = logging.getLogger("tritonfp8")

POLICIES = ("error", "warn-and-fallback", "ignore")
_ALIASES = {"warn": "warn-and-fallback", "fallback": "warn-and-fallback"}
_ENV = "TRITONFP8_GUARD"

# Reasons, as they appear in stats().
NONFINITE = "nonfinite"
SATURATION = "saturation"
NO_FP8 = "no-fp8-tensor-cores"

# Index of each device counter in a module's ``_guard_counts`` buffer (compiled calls).
_C_NONFINITE, _C_SATURATION, _C_FALLBACK, _C_ERROR = range(4)


class GuardError(ValueError):
    """An input the policy ``"error"`` refuses: non-finite values or too many values clipped at the FP8 max."""


def _normalize_policy(policy: str) -> str:
    p = _ALIASES.get(str(policy).strip().lower(), str(policy).strip().lower())
    if p not in POLICIES:
        raise ValueError(f"policy: expected one of {', '.join(POLICIES)} (or 'warn'), got {policy!r}")
    return p


@dataclass(frozen=True)
class GuardConfig:
    """The guard's settings. ``max_saturation``: largest tolerated fraction of values clipped at the FP8 max."""

    policy: str = "ignore"
    max_saturation: float = 1e-3

    def __post_init__(self) -> None:
        object.__setattr__(self, "policy", _normalize_policy(self.policy))
        if not (0.0 <= float(self.max_saturation) <= 1.0):
            raise ValueError(f"max_saturation: expected a fraction in [0, 1], got {self.max_saturation!r}")


_config = GuardConfig(policy=os.environ.get(_ENV, "ignore") or "ignore")


def get_config() -> GuardConfig:
    return _config


def set_policy(policy: str | None = None, *, max_saturation: float | None = None) -> GuardConfig:
    """Set the process-wide guard policy (and/or saturation threshold); returns the new config."""
    global _config
    kw = {}
    if policy is not None:
        kw["policy"] = policy
    if max_saturation is not None:
        kw["max_saturation"] = max_saturation
    _config = replace(_config, **kw)
    return _config


@contextlib.contextmanager
def policy(policy: str, *, max_saturation: float | None = None) -> Iterator[GuardConfig]:
    """Within the block, guard with ``policy`` (and ``max_saturation``); restores the previous config after."""
    global _config
    old = _config
    try:
        yield set_policy(policy, max_saturation=max_saturation)
    finally:
        _config = old


# ----------------------------------------------------------------------------------------------------------------
# the check


def input_flags(x: torch.Tensor, scale: torch.Tensor | None = None, fmax: float = 448.0) -> torch.Tensor:
    """Device tensor ``[nonfinite, saturated]`` (int64 counts) of ``x`` before quantization with ``scale``.

    ``scale``: the static fp32 dequantization scale (``()``, or broadcastable to x); None for a dynamic scale,
    where nothing finite saturates and only non-finite values are counted. No host sync.
    """
    nonfinite = (~torch.isfinite(x)).sum()
    if scale is None:
        saturated = torch.zeros_like(nonfinite)
    else:
        # |x| > fmax * scale, inf included (NaN compares false: it is counted as non-finite only).
        saturated = (x.abs().float() > (scale.float() * fmax)).sum()
    return torch.stack([nonfinite, saturated])


def _flagged(flags: torch.Tensor, numel: int, cfg: GuardConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(nonfinite?, saturated beyond the threshold?) as device bools."""
    limit = cfg.max_saturation * max(numel, 1)
    return flags[0] > 0, flags[1].double() > limit


def describe(flags: list[int], numel: int, fmax: float) -> tuple[str, str]:
    """(reason, human detail) of host-side counts ``[nonfinite, saturated]``."""
    nonfinite, saturated = flags
    if nonfinite:
        return NONFINITE, f"{nonfinite} non-finite value(s) (NaN/inf) among {numel}"
    frac = saturated / max(numel, 1)
    return SATURATION, f"{saturated} of {numel} values ({frac:.2%}) beyond the FP8 max {fmax:g} × scale"


# ----------------------------------------------------------------------------------------------------------------
# counting


@dataclass
class GuardStats:
    """What :func:`stats` returns.

    - ``fallbacks[layer][reason]``: calls computed in BF16 instead of FP8, by reason.
    - ``errors[layer][reason]``: calls refused under the ``"error"`` policy (raised, or counted under compile).
    - ``detections[layer][reason]``: flagged calls, whatever the policy did.
    - ``kept_bf16[layer]``: layers left in BF16 when converting or calibrating, and why.
    """

    fallbacks: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    detections: dict = field(default_factory=dict)
    kept_bf16: dict = field(default_factory=dict)

    @property
    def total_fallbacks(self) -> int:
        return sum(sum(r.values()) for r in self.fallbacks.values())

    @property
    def total_errors(self) -> int:
        return sum(sum(r.values()) for r in self.errors.values())

    def as_dict(self) -> dict:
        return {
            "fallbacks": {k: dict(v) for k, v in self.fallbacks.items()},
            "errors": {k: dict(v) for k, v in self.errors.items()},
            "detections": {k: dict(v) for k, v in self.detections.items()},
            "kept_bf16": dict(self.kept_bf16),
            "total_fallbacks": self.total_fallbacks,
            "total_errors": self.total_errors,
        }

    def __str__(self) -> str:
        lines = [f"tritonfp8 guard: {self.total_fallbacks} fallback(s), {self.total_errors} error(s), "
                 f"{len(self.kept_bf16)} layer(s) kept in BF16"]
        for title, table in (("fallback", self.fallbacks), ("error", self.errors)):
            for layer, reasons in sorted(table.items()):
                for reason, n in sorted(reasons.items()):
                    lines.append(f"  {title:8s} {layer}: {reason} × {n}")
        for layer, reason in sorted(self.kept_bf16.items()):
            lines.append(f"  bf16     {layer}: {reason}")
        return "\n".join(lines)


class _Registry:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fallbacks: dict = defaultdict(lambda: defaultdict(int))
        self.errors: dict = defaultdict(lambda: defaultdict(int))
        self.detections: dict = defaultdict(lambda: defaultdict(int))
        self.kept_bf16: dict = {}
        self.warned: set = set()
        # Modules whose compiled forwards count on the device (``_guard_counts`` buffers).
        self.modules: weakref.WeakSet = weakref.WeakSet()


_reg = _Registry()


def record_fallback(layer: str, reason: str, detail: str = "", warn: bool = True) -> None:
    """Count one call of ``layer`` computed in BF16 for ``reason``; warn the first time per (layer, reason)."""
    with _reg.lock:
        _reg.fallbacks[layer][reason] += 1
        first = (layer, reason) not in _reg.warned
        _reg.warned.add((layer, reason))
    if warn and first:
        warnings.warn(
            f"tritonfp8: {layer}: {detail or reason}; computing in BF16 (counted in tritonfp8.stats(); "
            "further fallbacks of this layer for this reason are counted without a warning)",
            RuntimeWarning,
            stacklevel=3,
        )


def record_detection(layer: str, reason: str) -> None:
    with _reg.lock:
        _reg.detections[layer][reason] += 1


def record_error(layer: str, reason: str) -> None:
    with _reg.lock:
        _reg.errors[layer][reason] += 1


def record_kept_bf16(layer: str, reason: str) -> None:
    """Note that ``layer`` stays in BF16 (conversion or calibration decision); logged at INFO level."""
    with _reg.lock:
        _reg.kept_bf16[layer] = reason
    log.info("tritonfp8: %s kept in BF16: %s", layer, reason)


def forget_kept_bf16(layer: str) -> None:
    with _reg.lock:
        _reg.kept_bf16.pop(layer, None)


def register_device_counters(module: torch.nn.Module) -> None:
    """Make :func:`stats` read ``module._guard_counts`` (its compiled forwards count there)."""
    _reg.modules.add(module)


def _device_counts() -> list[tuple[str, list[int]]]:
    out = []
    for m in list(_reg.modules):
        c = getattr(m, "_guard_counts", None)
        if c is not None and c.numel():
            out.append((getattr(m, "layer_name", None) or type(m).__name__, [int(v) for v in c.tolist()]))
    return out


def stats(reset: bool = False, raise_errors: bool = False) -> GuardStats:
    """Every fallback, error and BF16 layer so far (host and device counters merged; reading device counters syncs).

    ``reset`` clears the counters after reading. ``raise_errors`` raises :class:`GuardError` if a compiled call
    was refused under the ``"error"`` policy (see :func:`raise_pending`).
    """
    s = GuardStats()
    with _reg.lock:
        for src, dst in ((_reg.fallbacks, s.fallbacks), (_reg.errors, s.errors), (_reg.detections, s.detections)):
            for layer, reasons in src.items():
                dst[layer] = dict(reasons)
        s.kept_bf16 = dict(_reg.kept_bf16)
    for layer, c in _device_counts():
        for idx, reason in ((_C_NONFINITE, NONFINITE), (_C_SATURATION, SATURATION)):
            if c[idx]:
                s.detections.setdefault(layer, {})
                s.detections[layer][reason] = s.detections[layer].get(reason, 0) + c[idx]
        if c[_C_FALLBACK]:
            s.fallbacks.setdefault(layer, {})
            s.fallbacks[layer]["compiled"] = s.fallbacks[layer].get("compiled", 0) + c[_C_FALLBACK]
        if c[_C_ERROR]:
            s.errors.setdefault(layer, {})
            s.errors[layer]["compiled"] = s.errors[layer].get("compiled", 0) + c[_C_ERROR]
    if reset:
        reset_stats()
    if raise_errors and s.total_errors:
        raise GuardError(f"tritonfp8 guard refused {s.total_errors} call(s) under policy 'error':\n{s}")
    return s


def raise_pending() -> None:
    """Raise :class:`GuardError` if a compiled forward flagged an input under the ``"error"`` policy (syncs)."""
    for layer, c in _device_counts():
        if c[_C_ERROR]:
            raise GuardError(f"{layer}: {c[_C_ERROR]} compiled call(s) had inputs FP8 cannot represent "
                             f"(non-finite: {c[_C_NONFINITE]}, saturated: {c[_C_SATURATION]})")


def reset_stats() -> None:
    """Clear all counters (host and device) and the once-per-layer warning memory; BF16 layer notes are kept."""
    with _reg.lock:
        _reg.fallbacks.clear()
        _reg.errors.clear()
        _reg.detections.clear()
        _reg.warned.clear()
    for m in list(_reg.modules):
        c = getattr(m, "_guard_counts", None)
        if c is not None:
            c.zero_()


# ----------------------------------------------------------------------------------------------------------------
# the guarded call


def _capturing(x: torch.Tensor) -> bool:
    """Whether the current CUDA stream is being captured into a CUDA graph (False for CPU tensors)."""
    return x.is_cuda and torch.cuda.is_current_stream_capturing()


def guarded_call(
    layer: str,
    x,
    fp8_fn,
    bf16_fn,
    *,
    scale: torch.Tensor | None = None,
    fmax: float = 448.0,
    counters: torch.Tensor | None = None,
):
    """Run ``fp8_fn(*xs)`` or, when the guard flags the inputs under the current policy, ``bf16_fn(*xs)`` (or raise).

    ``x``: one tensor or a tuple of tensors (checked together; each is passed to the functions). ``scale``: the
    static quantization scale of a single x (None: dynamic). ``counters``: the module's int64 (4,) device counter,
    used by compiled calls (see the module docstring).
    """
    xs = tuple(x) if isinstance(x, (tuple, list)) else (x,)
    cfg = _config
    if cfg.policy == "ignore":
        return fp8_fn(*xs)
    flags = input_flags(xs[0], scale, fmax)
    for t in xs[1:]:
        flags = flags + input_flags(t, None, fmax)
    numel = sum(t.numel() for t in xs)
    if torch.compiler.is_compiling():
        nonfinite, saturated = _flagged(flags, numel, cfg)
        bad = nonfinite | saturated
        if counters is not None:
            inc = torch.stack([
                nonfinite.long(),
                (saturated & ~nonfinite).long(),
                (bad & (cfg.policy == "warn-and-fallback")).long(),
                (bad & (cfg.policy == "error")).long(),
            ])
            counters.add_(inc)
        if cfg.policy == "error":
            return fp8_fn(*xs)
        return torch.cond(bad, bf16_fn, fp8_fn, xs)
    if _capturing(xs[0]):
        # .tolist() inside a CUDA-graph capture fails with a bare CUDA error ("operation not permitted when stream
        # is capturing") and invalidates the capture; say why and what works instead.
        raise RuntimeError(
            f"{layer or 'tritonfp8'}: guard policy {cfg.policy!r} decides on the host (one sync per call), which "
            "CUDA-graph capture forbids; capture under tritonfp8.guard.policy('ignore') (no check, no sync), or "
            "check the inputs in an eager run before capturing"
        )
    counts = flags.tolist()  # host sync: inherent to deciding on the host (documented above)
    nonfinite, saturated = counts
    if not nonfinite and saturated <= cfg.max_saturation * max(numel, 1):
        return fp8_fn(*xs)
    reason, detail = describe(counts, numel, fmax)
    record_detection(layer, reason)
    if cfg.policy == "error":
        record_error(layer, reason)
        raise GuardError(f"{layer}: input has {detail}; FP8 cannot represent it (guard policy 'error')")
    record_fallback(layer, reason, detail)
    return bf16_fn(*xs)
