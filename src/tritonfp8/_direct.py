"""Direct calls of Triton 3.6's compiled CUDA launcher, with host TMA descriptors encoded once per geometry.

Why. A repeat launch through ``CompiledKernel.run`` (``triton/backends/nvidia/driver.py``, 3.6.0) still does, per
call: ``CudaLauncher.__call__`` (a nested function, two scratch-allocation checks), ``CompiledKernel.launch_metadata``
(a ``LazyDict``: the launch hooks are ``HookChain`` objects in 3.6, never ``None``), then
``wrap_handle_tensordesc.<locals>.inner``, a Python loop over every argument (~60 for the GEMM) that expands each
host ``TensorDescriptor`` through ``make_tensordesc_arg`` into ``[PyCUtensorMap, *shape, *strides]``; the
``PyCUtensorMap`` comes from ``fill_tma_descriptor`` = one ``cuTensorMapEncodeTiled`` per descriptor per launch.
The generated C ``launch`` then takes that object as an ``O`` argument (``getTmaDesc``: exact type check, 128-byte
alignment) and copies the 128-byte map by value into the kernel parameters (``*tma_ptrN``), so one filled object
can serve any number of launches: nothing in it refers to the tensor, and launches copy it.

How. For a compiled kernel whose launcher has exactly that 3.6 structure (checked: Triton version, launcher class,
the wrapper's closure names and base argument format; no global or profile scratch), :func:`runner` returns a
function that builds the argument list the wrapper would build and calls the raw C ``launch`` itself. The expansion
of each descriptor is computed by Triton's own ``make_tensordesc_arg`` and remembered, per kernel and descriptor
position, under everything that function reads: the base address, shape, strides, padding (and, to be explicit, the
block shape; the kernel's TMA metadata is fixed per position). The expansion is a pure function of that key, so a
hit is exactly what a fresh encoding would give: a tensor freed and re-allocated at the same address with another
shape or strides is a different key. Launch hooks: when any launch enter/exit hook is registered the stock path runs
(hooks and their metadata stay Triton's business); otherwise ``None`` is passed for the metadata and both hooks,
which the C launcher then skips (with an empty ``HookChain`` its calls do nothing).

Anything else (another Triton version or structure, scratch memory, a descriptor the kernel lowered without TMA
metadata is not cached but expanded per call) takes the stock path. ``TRITONFP8_DIRECT_LAUNCH=0`` (or
:func:`set_enabled`) turns this off alone; ``TRITONFP8_FAST_LAUNCH=0`` turns off the whole cached-launch path that
calls into here.
"""

from __future__ import annotations

from triton import knobs as _knobs
from triton.knobs import HookChain as _HookChain

from tritonfp8._backend import Switch

_SWITCH = Switch("TRITONFP8_DIRECT_LAUNCH")
enabled, set_enabled = _SWITCH.get, _SWITCH.set
_VERSIONS = ("3.6.0",)
_BASE_FORMAT = "iiiKKppOOOOOO"  # grid xyz, stream, function, cooperative, pdl, 2 scratch, metadata, launch md, hooks
_WRAPPER = "wrap_handle_tensordesc.<locals>.inner"
_WRAPPER_VARS = {"launcher", "tensordesc_indices", "tensordesc_meta"}
_DESC_CACHE_SIZE = 64  # encoded descriptors kept per kernel and descriptor position

_RUNNERS: dict = {}  # compiled kernel -> runner, or None where the stock path must run
_RUNNERS_SIZE = 1024
stats = {"encoded": 0, "reused": 0}  # descriptor expansions computed / served from the cache (tests, diagnostics)


class Address:
    """A descriptor base that holds an address, not a tensor: what the launch key and Triton's launcher read from a
    descriptor's ``base`` (``data_ptr()``, ``dtype``). A descriptor kept in a cache with this base keeps no tensor
    alive; one cached for an address serves any tensor of the same geometry that lives there. Compiled launches
    only: the interpreter and Triton's own dispatch need the tensor."""

    __slots__ = ("ptr", "dtype")

    def __init__(self, ptr: int, dtype):
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self) -> int:
        return self.ptr


def descriptor(base, shape: tuple, strides: tuple, block: list, padding: str = "zero"):
    """A host ``TensorDescriptor`` of ``base`` (a tensor or an :class:`Address`) built without its constructor's
    checks (callers validated the geometry once per launch plan). Give ``shape`` and ``strides`` as tuples: the
    runners' encoding cache then finds the descriptor under its fast key (lists take the slower tuple-converting
    path, with the same result)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    d = object.__new__(TensorDescriptor)
    d.base, d.shape, d.strides, d.block_shape, d.padding = base, shape, strides, block, padding
    return d


def cache_clear() -> None:
    _RUNNERS.clear()
    stats["encoded"] = stats["reused"] = 0


def _supported_version() -> bool:
    import triton

    return triton.__version__.split("+")[0] in _VERSIONS


def _closure(fn) -> dict | None:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None)
    if code is None or cells is None or set(code.co_freevars) != _WRAPPER_VARS:
        return None
    try:
        return {name: cell.cell_contents for name, cell in zip(code.co_freevars, cells)}
    except ValueError:  # an empty cell
        return None


def hooks_empty() -> bool:
    """True when no launch enter/exit hook is registered (then the launcher's hook calls would do nothing)."""
    rt = _knobs.runtime
    enter, exit_ = rt.launch_enter_hook, rt.launch_exit_hook
    return (enter is None or (type(enter) is _HookChain and not enter.calls)) and (
        exit_ is None or (type(exit_) is _HookChain and not exit_.calls))


def _build(kernel, n_vals: int):
    """The direct runner of ``kernel``, or None where its launcher is not the structure this module knows."""
    if not _supported_version():
        return None
    from triton.backends.nvidia import driver as nv

    launcher = kernel.run
    if not isinstance(launcher, nv.CudaLauncher) or getattr(nv, "_BASE_ARGS_FORMAT", None) != _BASE_FORMAT:
        return None
    if launcher.global_scratch_size or launcher.profile_scratch_size or kernel.function is None:
        return None
    sig = getattr(kernel.src, "signature", None)
    if not isinstance(sig, dict) or len(sig) != n_vals:
        return None
    n_desc = sum(1 for t in sig.values() if isinstance(t, str) and t.startswith("tensordesc"))
    wrapped = launcher.launch
    if n_desc == 0:  # wrap_handle_tensordesc returned the C launcher itself
        raw, positions, metas = wrapped, (), ()
    else:
        if getattr(wrapped, "__qualname__", None) != _WRAPPER:
            return None
        cl = _closure(wrapped)
        if cl is None:
            return None
        raw, idx, metas = cl["launcher"], cl["tensordesc_indices"], cl["tensordesc_meta"]
        if not callable(raw) or not isinstance(idx, set) or len(idx) != n_desc or not isinstance(metas, list) or len(
                metas) != n_desc or not all(type(i) is int and 0 <= i < n_vals for i in idx):
            return None
        positions = tuple(sorted(idx))
    return _Runner(kernel, launcher, raw, positions, tuple(metas), nv.make_tensordesc_arg)


class _Runner:
    __slots__ = ("function", "packed", "coop", "pdl", "raw", "slots", "encode")

    def __init__(self, kernel, launcher, raw, positions, metas, encode):
        self.function, self.packed = kernel.function, kernel.packed_metadata
        self.coop, self.pdl = launcher.launch_cooperative_grid, launcher.launch_pdl
        self.raw, self.encode = raw, encode
        self.slots = tuple((p, m, {}) for p, m in zip(positions, metas))  # (position, TMA metadata, cache)

    def expand(self, d, meta, cache: dict) -> tuple:
        """What ``make_tensordesc_arg`` gives for descriptor ``d``: from the cache under a key of plain tuples (shape
        and strides given as lists), else encoded. The key holds everything that function reads from ``d``; the
        block shape comes from ``meta``, fixed per position."""
        if meta is None:  # lowered without TMA: the expansion holds the base object itself; not cached
            return tuple(self.encode(d, meta))
        key = (d.base.data_ptr(), tuple(d.shape), tuple(d.strides), d.padding)
        e = cache.get(key)
        if e is not None:
            stats["reused"] += 1
            return e
        e = tuple(self.encode(d, meta))
        if len(cache) >= _DESC_CACHE_SIZE:
            cache.pop(next(iter(cache)))  # oldest first
        cache[key] = e
        stats["encoded"] += 1
        return e

    def __call__(self, grid3: tuple, stream: int, vals: tuple) -> None:
        args = ()
        start = 0
        for p, meta, cache in self.slots:
            d = vals[p]
            try:  # the fast key: shape and strides are tuples (torch.Size) for descriptors made from tensors
                e = cache[(d.base.data_ptr(), d.shape, d.strides, d.padding)]
                stats["reused"] += 1
            except (KeyError, TypeError):
                e = self.expand(d, meta, cache)
            args += vals[start:p] + e
            start = p + 1
        self.raw(grid3[0], grid3[1], grid3[2], stream, self.function, self.coop, self.pdl, None, None, self.packed,
                 None, None, None, *args, *vals[start:])


def runner(kernel, n_vals: int):
    """The direct runner for ``kernel`` (called with ``n_vals`` parameter values), or None: take the stock path."""
    if not _SWITCH.on:
        return None
    try:
        return _RUNNERS[kernel]
    except KeyError:
        pass
    try:
        r = _build(kernel, n_vals)
    except Exception:  # any surprise in Triton's internals: the stock path
        r = None
    if len(_RUNNERS) >= _RUNNERS_SIZE:
        _RUNNERS.pop(next(iter(_RUNNERS)))
    _RUNNERS[kernel] = r
    return r
