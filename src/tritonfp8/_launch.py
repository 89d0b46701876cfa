"""Low-overhead kernel launches: call a compiled Triton kernel's launcher directly on repeat calls.

Why. ``kernel[grid](*args, **constexprs)`` runs Triton's JIT dispatch on every call: it binds and specializes every
argument (each integer checked for ``== 1`` and divisibility by 16, each pointer for 16-byte alignment), builds a
cache key that includes ``str(options)``, looks the kernel up, and only then calls the compiled launcher. For the
FP8 GEMM (about 60 parameters, most of them constexprs) the whole eager call measured ~240 us of host time per
call on the H200's host, against ~25 us for ``torch._scaled_mm``, while the kernels themselves took the same time
under CUDA-graph replay (``benchmarks/results/gemm-host-overhead-20261129-113400.json``): at decode sizes the
GPU waited on Python.

How. :func:`launch` keys each call by what Triton's specialization can depend on — for every runtime argument its
kind and the properties Triton specializes on (integers: ``== 1``, ``% 16 == 0``, 32- or 64-bit; tensors: dtype
and 16-byte alignment; host TMA descriptors: element type, block shape, base alignment and the same integer facts
of each shape and stride entry; ``None``; floats), plus the device and the exact constexpr/option values. The first
call with a key goes through ``kernel[grid]`` (compiling if needed) and remembers the compiled kernel and the
values of the remaining (constexpr and defaulted) parameters; later calls with the same key call the compiled
kernel's launcher with the same argument list Triton itself would pass. The key is at least as fine as Triton's
own specialization, so a cached binary is only reused where Triton would reuse it.

Not used under the Triton interpreter, for warm-up (compile-only) calls, or when ``TRITONFP8_FAST_LAUNCH=0``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from triton import knobs
from triton.runtime.driver import driver

from tritonfp8 import _backend, _direct

_SWITCH = _backend.Switch("TRITONFP8_FAST_LAUNCH")
enabled, set_enabled = _SWITCH.get, _SWITCH.set  # set_enabled(on) -> the previous setting
_CACHE: dict[tuple, tuple] = {}
_CACHE_SIZE = 1024
_I32 = 1 << 31
# While :func:`recording` is active, every :func:`launch` appends (compiled kernel, grid3, tail values) here, or
# None for a launch that cannot be replayed (interpreter, no compiled kernel): callers that keep a launch plan
# (attention) replay the kernels in order through :func:`run_compiled` with fresh runtime arguments.
_RECORDS: list | None = None


@contextlib.contextmanager
def recording():
    """Collect the launches made inside the block (see ``_RECORDS``); yields the list."""
    global _RECORDS
    prev, _RECORDS = _RECORDS, []
    try:
        yield _RECORDS
    finally:
        _RECORDS = prev


def _compiled(kernel) -> bool:
    """``fn[grid](...)`` returned a compiled kernel whose launcher can be called again (not a warm-up future)."""
    return kernel is not None and not hasattr(kernel, "result")


def _record(fn, grid, n_args: int, kwargs: dict, kernel) -> None:
    if _RECORDS is None:
        return
    if not _compiled(kernel) or _backend.interpreting():
        _RECORDS.append(None)
        return
    _RECORDS.append((kernel, (tuple(grid) + (1, 1))[:3], _tail_values(fn, n_args, kwargs)))


def cache_clear() -> None:
    _CACHE.clear()


def cache_size() -> int:
    return len(_CACHE)


def _int_spec(v: int) -> tuple:
    return (v == 1, v % 16 == 0, -_I32 <= v < _I32)


def arg_spec(v: Any):
    """The specialization-relevant facts of one runtime argument (hashable), or raise TypeError for kinds this
    module does not know (the caller then takes Triton's own path). Tags keep kinds apart; the common kinds are
    tested first by exact type (this runs for every argument of every launch)."""
    t = type(v)
    if t is int:
        return (v == 1, v % 16 == 0, -_I32 <= v < _I32)
    if v is None:
        return None
    if isinstance(v, torch.Tensor):
        return (v.dtype, v.data_ptr() % 16 == 0)
    if t is float:
        return "f"
    if t is bool:
        return ("b", v)
    base = getattr(v, "base", None)
    if isinstance(base, torch.Tensor) and hasattr(v, "block_shape"):  # triton.tools / gluon tensor descriptors
        # (a Gluon descriptor's shared-memory layout is part of the kernel's specialization: in the key too)
        return ("d", base.dtype, base.data_ptr() % 16 == 0, tuple(v.block_shape),
                tuple(_int_spec(int(s)) for s in v.shape), tuple(_int_spec(int(s)) for s in v.strides),
                getattr(v, "padding", None), getattr(v, "layout", None))
    if isinstance(v, int):  # numpy-like integer subclasses
        return ("i",) + _int_spec(int(v))
    raise TypeError(f"no launch key for an argument of type {type(v).__name__}")


def _runtime_value(v) -> bool:
    """A tensor or a tensor descriptor: a value that differs from call to call under one specialization."""
    return isinstance(v, torch.Tensor) or isinstance(getattr(v, "base", None), torch.Tensor)


def kwarg_spec(v):
    """The launch-key entry of one keyword argument: constexprs and options by value; runtime arguments passed by
    keyword (an optional descriptor such as the GEMM's ``y2``) by their specialization facts (:func:`arg_spec`), so
    the key neither holds the tensor nor hashes a descriptor (dataclasses are unhashable). Only used when the
    keyword values do not hash as they are: checking every value costs ~10x the plain key (60 GEMM keywords)."""
    return ("rt", arg_spec(v)) if _runtime_value(v) else v


def runtime_kwargs(fn, n_args: int, kwargs: dict) -> tuple:
    """(position in the tail after the first ``n_args`` parameters, name) of each runtime keyword argument: a
    replay substitutes the call's own value there."""
    names = [p[0] for p in _params(fn)[n_args:]]
    return tuple((names.index(k), k) for k, v in kwargs.items() if _runtime_value(v))


def _params(fn) -> list[tuple]:
    """(name, has_default, default) of each parameter of a jitted kernel, in order."""
    if hasattr(fn, "params"):
        return [(p.name, p.has_default, p.default) for p in fn.params]
    # the interpreter's function object (CPU tests of launch plans): the Python signature
    import inspect

    return [(n, p.default is not p.empty, p.default) for n, p in inspect.signature(fn.fn).parameters.items()]


def param_index(fn, name: str) -> int:
    """Position of parameter ``name`` in a jitted kernel's signature."""
    return [p[0] for p in _params(fn)].index(name)


def _tail_values(fn, n_args: int, kwargs: dict) -> tuple:
    """Values of the parameters after the first ``n_args`` (kwargs, else the declared defaults), in order."""
    out = []
    params = _params(fn)
    for name, has_default, default in params[n_args:]:
        if name in kwargs:
            out.append(kwargs[name])
        elif has_default:
            out.append(default)
        else:
            raise TypeError(f"{getattr(fn, '__name__', fn)}: no value for parameter {name!r}")
    return tuple(out)


def launch(fn, grid: tuple, *args, **kwargs):
    """``fn[grid](*args, **kwargs)``, through the compiled kernel's launcher once this specialization was seen.

    ``args``: the leading parameters of ``fn`` in order (runtime values); ``kwargs``: the rest (constexprs, optional
    parameters) and launch options (num_warps, num_stages, maxnreg, ...).
    """
    if not _SWITCH.on or _backend.interpreting():
        kernel = fn[grid](*args, **kwargs)
        _record(fn, grid, len(args), kwargs, kernel)
        return kernel
    try:
        head = (fn, torch.cuda.current_device(), tuple(arg_spec(a) for a in args))
        try:  # constexprs and options are hashable values: the common case, keyed as they are (hot path)
            key = head + (tuple(kwargs.items()),)
            entry = _CACHE.get(key)
        except TypeError:  # a runtime argument passed by keyword (a descriptor: unhashable) -> its facts
            key = head + (tuple((k, kwarg_spec(v)) for k, v in kwargs.items()),)
            entry = _CACHE.get(key)
    except TypeError:  # an argument kind without a key, or an unhashable constexpr: Triton's own path
        kernel = fn[grid](*args, **kwargs)
        _record(fn, grid, len(args), kwargs, kernel)
        return kernel
    if entry is None:
        kernel = fn[grid](*args, **kwargs)
        if _compiled(kernel):
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))  # oldest first
            _CACHE[key] = (kernel, _tail_values(fn, len(args), kwargs), runtime_kwargs(fn, len(args), kwargs))
        _record(fn, grid, len(args), kwargs, kernel)
        return kernel
    kernel, tail, rt = entry
    if rt:  # this call's values of the runtime arguments passed by keyword (the cached tail holds the first call's)
        tail = list(tail)
        for i, name in rt:
            tail[i] = kwargs[name]
        tail = tuple(tail)
    g = tuple(grid) + (1, 1)
    run_compiled(kernel, g[:3], args + tail)
    if _RECORDS is not None:
        _RECORDS.append((kernel, g[:3], tail))
    return kernel


def run_compiled(kernel, grid3: tuple, vals: tuple) -> None:
    """Call a compiled kernel's launcher with every parameter value in signature order (what Triton's own dispatch
    passes), on the current stream. ``grid3``: (x, y, z). Where the launcher has Triton 3.6's known structure, its
    C entry point is called directly with host TMA descriptors encoded once per geometry (see ``_direct``)."""
    stream = driver.active.get_current_stream(driver.active.get_current_device())
    direct = _direct.runner(kernel, len(vals))
    if direct is not None and _direct.hooks_empty():
        direct(grid3, stream, vals)
        return
    kernel.run(grid3[0], grid3[1], grid3[2], stream, kernel.function, kernel.packed_metadata,
               kernel.launch_metadata(grid3, stream, *vals), knobs.runtime.launch_enter_hook,
               knobs.runtime.launch_exit_hook, *vals)
