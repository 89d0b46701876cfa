"""Benchmark harness shared by every suite: timing, rates, environment, results files, plots, Nsight Compute.

A suite (``tritonfp8/bench/suites/<name>.py``) uses it like this::

    from tritonfp8.bench import harness as H

    times = H.bench_interleaved({"ours": lambda: ours(x), "cublas": lambda: peer(x)}, repeats=args.repeats)
    t_ours, t_peer = H.summarize(times["ours"]), H.summarize(times["cublas"])
    cmp = H.compare(times["ours"], times["cublas"])      # ratio = peer_ms / ours_ms, with its spread and a verdict
    row = {"case": "8192^3", "ours_tflops": H.tflops(2 * M * N * K, t_ours.median), "ratio": cmp.ratio, ...}
    H.print_table(rows, [H.Column("case"), H.Column("ours_tflops", "ours TFLOPS", "{:.0f}"), ...], title=...)
    if not args.no_save:
        w = H.ResultsWriter("gemm", out_dir=args.out)
        w.write(rows, config={...})                        # benchmarks/results/gemm-nvidia-h200-<stamp>.json
        H.plot_bars(w.png_path, labels, {"ours": [...], "cuBLAS": [...]}, ylabel="TFLOPS", title=...)

Timing rules (why the harness looks like this):

- Every time is ``triton.testing.do_bench(fn, warmup, rep, return_mode="median")``: the median over many launches of
  one call, with the L2 cache flushed before each launch (do_bench writes a 256 MB buffer between launches; the
  flush is outside the timed events). ``flush_l2=False`` times the same loop without the flush.
- Our kernel and its peers are timed in one process, round-robin, for ``repeats`` rounds, and the order rotates
  each round, so clock and thermal drift hit every function alike. A function's result is the median of its round
  medians; its spread is the min..max of the round medians.
- The same binary varies by about ±6% between runs on the H200 (measured). A ratio is only a finding when its
  bounds (:func:`compare`) clear 1 by more than that; otherwise it is "within noise".

Units: times in milliseconds, rates in TFLOPS (1e12 flop/s) and GB/s (1e9 byte/s, decimal, as datasheets).
Nothing here needs a GPU at import time; functions that launch work on the GPU raise RuntimeError without one.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as _dt
import functools
import io
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch

# Measured on the H200: the same binary's median varies by about this fraction from run to run.
RUN_TO_RUN_NOISE = 0.06

DEFAULT_RESULTS_DIR = "benchmarks/results"

# ---------------------------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------------------------


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """``||out - ref|| / ||ref||`` (Frobenius) computed in float64; NaN or inf anywhere in ``out`` gives ``inf``.

    Works for any floating dtype including FP8 (both sides are converted to float64 on the CPU). Two empty tensors,
    or an exact zero ``ref`` matched by an exact zero ``out``, give 0.0; a zero ``ref`` with a non-zero ``out``
    gives ``inf``.
    """
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"out: shape {tuple(out.shape)} differs from ref's {tuple(ref.shape)}")
    o = out.detach().to("cpu", torch.float64)
    r = ref.detach().to("cpu", torch.float64)
    if o.numel() == 0:
        return 0.0
    if not bool(torch.isfinite(o).all()):
        return math.inf
    if not bool(torch.isfinite(r).all()):
        raise ValueError("ref: contains NaN or inf; a reference must be finite")
    num = torch.linalg.vector_norm(o - r).item()
    den = torch.linalg.vector_norm(r).item()
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def max_abs_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """``max |out - ref|`` in float64; NaN anywhere in ``out`` gives ``inf``; empty tensors give 0.0."""
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"out: shape {tuple(out.shape)} differs from ref's {tuple(ref.shape)}")
    o = out.detach().to("cpu", torch.float64)
    r = ref.detach().to("cpu", torch.float64)
    if o.numel() == 0:
        return 0.0
    if bool(torch.isnan(o).any()):
        return math.inf
    d = (o - r).abs()
    d = torch.where(torch.isnan(d), torch.full_like(d, math.inf), d)  # inf - inf where both are inf
    d = torch.where(o == r, torch.zeros_like(d), d)  # matching infinities are no error
    return float(d.max().item())


# ---------------------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------------------


def _require_cuda(what: str) -> None:
    if not torch.cuda.is_available():
        raise RuntimeError(f"{what} needs a CUDA GPU (none found)")


def _time_without_flush(fn: Callable[[], Any], warmup_ms: float, rep_ms: float) -> float:
    """do_bench's loop minus the L2 flush: median ms of ``fn`` with the caches left warm."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-4)
    n_warmup = max(1, int(warmup_ms / estimate))
    n_repeat = max(1, int(rep_ms / estimate))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


# Timer mode of :func:`time_once`: "events" (do_bench: CUDA events around each eager call) or "graph" (the calls
# captured in a CUDA graph and replayed: host launch overhead removed; see :func:`time_graph`).
_TIMER_MODE = "events"


def set_timer_mode(mode: str) -> None:
    """Select how :func:`time_once` times: ``"events"`` (default) or ``"graph"`` (``bench --graph``)."""
    global _TIMER_MODE
    if mode not in ("events", "graph"):
        raise ValueError(f"mode: expected 'events' or 'graph', got {mode!r}")
    _TIMER_MODE = mode


def timer_mode() -> str:
    return _TIMER_MODE


_FLUSH_BYTES = 256 * 1024 * 1024  # as do_bench: larger than any GPU's L2 (H200: 50 MB)


@functools.lru_cache(maxsize=1)
def _flush_buffer() -> torch.Tensor:
    return torch.empty(_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")


def warm_up_for_capture(fn: Callable[[], Any], calls: int = 3) -> None:
    """Call ``fn`` ``calls`` times on a side stream, then synchronize: what CUDA-graph capture needs first (Triton
    compiles, autotuning, torch.compile's tracing, lazily allocated workspaces all happen here, not in capture)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(calls):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def capture_graph(fn: Callable[[], Any], warmup: int = 3) -> "torch.cuda.CUDAGraph":
    """``fn`` warmed up (:func:`warm_up_for_capture`) and captured once into a ``torch.cuda.CUDAGraph``; replay it
    with ``g.replay()``. ``fn`` must be capturable: no host syncs (``.item()``, ``.tolist()``, ``.cpu()``), its
    inputs and outputs in static buffers (a replay rereads the captured addresses; tensors ``fn`` allocates come
    from the graph's private pool and are rewritten by every replay)."""
    _require_cuda("capture_graph")
    warm_up_for_capture(fn, warmup)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g


def time_graph(fn: Callable[[], Any], n_calls: int = 20, replays: int = 10, flush_l2: bool = True,
               flush_mode: str = "write") -> float:
    """Median milliseconds of one call of ``fn`` with the host out of the picture: ``n_calls`` calls (each after an
    L2 flush when ``flush_l2``) are captured in one CUDA graph, and a second graph holds the flushes alone; each
    is replayed ``replays`` times between CUDA events, and a call's time is the difference of the two medians
    divided by ``n_calls``. This is the kernel time a user sees under CUDA graphs (as serving engines run
    decode); eager calls add the host's launch overhead when the GPU is faster than the Python that feeds it.
    ``fn`` must be capturable (no host syncs, no allocations that differ per call).

    ``flush_mode``: ``"write"`` zeroes a 256 MB buffer (as ``do_bench`` does): the L2 is left full of dirty lines
    that the timed call then writes back to memory as it evicts them; ``"read"`` reduces the buffer instead, so
    the L2 holds clean lines (a decode step after the previous layer's reads); both evict ``fn``'s data."""
    _require_cuda("time_graph")
    if flush_mode not in ("write", "read"):
        raise ValueError(f"flush_mode: expected 'write' or 'read', got {flush_mode!r}")
    buf = _flush_buffer() if flush_l2 else None
    warm_up_for_capture(fn)

    def capture(with_fn: bool) -> torch.cuda.CUDAGraph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n_calls):
                if buf is not None:
                    if flush_mode == "write":
                        buf.zero_()
                    else:
                        buf.sum()
                if with_fn:
                    fn()
        return g

    g_fn, g_flush = capture(True), capture(False)

    def replay_ms(g: torch.cuda.CUDAGraph) -> float:
        g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(replays):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        return statistics.median(times)

    t_both, t_flush = replay_ms(g_fn), (replay_ms(g_flush) if buf is not None else 0.0)
    del g_fn, g_flush
    return max(t_both - t_flush, 1e-6) / n_calls


def time_once(fn: Callable[[], Any], warmup_ms: float = 25, rep_ms: float = 100, flush_l2: bool = True) -> float:
    """Median milliseconds of one call of ``fn``: ``triton.testing.do_bench`` (L2 flushed before each launch), or
    :func:`time_graph` when the timer mode is "graph" (:func:`set_timer_mode`)."""
    _require_cuda("time_once")
    if _TIMER_MODE == "graph":
        return time_graph(fn, flush_l2=flush_l2)
    return time_events(fn, warmup_ms, rep_ms, flush_l2)


def time_events(fn: Callable[[], Any], warmup_ms: float = 25, rep_ms: float = 100, flush_l2: bool = True) -> float:
    """:func:`time_once` in the "events" mode whatever :func:`set_timer_mode` says: for a ``fn`` that replays a CUDA
    graph itself (a graph replay cannot be captured into another graph, which the "graph" mode would do). A
    timer for :func:`bench_interleaved`."""
    _require_cuda("time_events")
    if flush_l2:
        import triton.testing

        return float(triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))
    return float(_time_without_flush(fn, warmup_ms, rep_ms))


def bench_interleaved(
    fns: Mapping[str, Callable[[], Any]],
    repeats: int = 3,
    warmup_ms: float = 25,
    rep_ms: float = 100,
    flush_l2: bool = True,
    timer: Callable[[Callable[[], Any], float, float, bool], float] | None = None,
) -> dict[str, list[float]]:
    """Time every function in ``fns`` round-robin for ``repeats`` rounds; returns ``{name: [median ms per round]}``.

    Round ``r`` starts at the ``r``-th function (the order rotates), so no function always runs right after the
    same neighbour. Each entry is one ``do_bench(..., return_mode="median")`` (see :func:`time_once`). Use
    :func:`summarize` for the median of the round medians and the spread. ``timer(fn, warmup_ms, rep_ms,
    flush_l2) -> ms`` replaces :func:`time_once` (tests use it to check the schedule without a GPU).
    """
    if repeats < 1:
        raise ValueError(f"repeats: expected an integer >= 1, got {repeats}")
    if not fns:
        raise ValueError("fns: expected at least one function to time")
    timer = timer or time_once
    names = list(fns)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            out[name].append(float(timer(fns[name], warmup_ms, rep_ms, flush_l2)))
    return out


@dataclass(frozen=True)
class Timing:
    """Summary of one function's round medians (ms): ``median`` of them, ``min``/``max``, and ``spread`` =
    (max - min) / median, the run-to-run variation seen in this run."""

    median: float
    min: float
    max: float
    rounds: tuple[float, ...]

    @property
    def spread(self) -> float:
        return (self.max - self.min) / self.median if self.median > 0 else math.inf


def summarize(times_ms: Sequence[float]) -> Timing:
    """Median of the round medians, and their min and max (see :class:`Timing`)."""
    if len(times_ms) == 0:
        raise ValueError("times_ms: expected at least one time")
    t = [float(x) for x in times_ms]
    return Timing(statistics.median(t), min(t), max(t), tuple(t))


@dataclass(frozen=True)
class Comparison:
    """Ours versus a peer. ``ratio`` = peer_ms / ours_ms from the medians (> 1: ours is faster); ``lo``..``hi``
    bound it using the extreme round medians (slowest ours vs fastest peer, and the reverse); ``verdict`` is
    "faster" / "slower" only when the whole range is beyond 1 ± ``noise``, else "within noise"."""

    ratio: float
    lo: float
    hi: float
    verdict: str


def compare(ours_ms: Sequence[float], peer_ms: Sequence[float], noise: float = RUN_TO_RUN_NOISE) -> Comparison:
    """Speed ratio of ours over a peer from their round medians (see :class:`Comparison`)."""
    a, b = summarize(ours_ms), summarize(peer_ms)
    ratio = b.median / a.median
    lo, hi = b.min / a.max, b.max / a.min
    if lo > 1.0 and ratio >= 1.0 + noise:
        verdict = "faster"
    elif hi < 1.0 and ratio <= 1.0 - noise:
        verdict = "slower"
    else:
        verdict = "within noise"
    return Comparison(ratio, lo, hi, verdict)


def tflops(flops: float, ms: float) -> float:
    """Rate in TFLOPS (1e12 flop/s) of ``flops`` done in ``ms`` milliseconds (a GEMM does 2*M*N*K flops)."""
    return flops / (ms * 1e-3) / 1e12


def gbps(nbytes: float, ms: float) -> float:
    """Rate in GB/s (1e9 byte/s) of ``nbytes`` moved (read + written) in ``ms`` milliseconds."""
    return nbytes / (ms * 1e-3) / 1e9


def pct(value: float | None, reference: float | None) -> float | None:
    """``100 * value / reference``; None when either is unknown or the reference is not positive."""
    if value is None or reference is None or reference <= 0:
        return None
    return 100.0 * value / reference


# ---------------------------------------------------------------------------------------------------------------
# Peaks and copy bandwidth
# ---------------------------------------------------------------------------------------------------------------

# Datasheet peaks of dense (no 2:4 sparsity) tensor-core math in TFLOPS, and HBM bandwidth in TB/s. Matched against
# torch.cuda.get_device_name() by substring, first match wins (so the NVL/PCIe parts come before the SXM ones;
# the H100 SXM reports itself as "NVIDIA H100 80GB HBM3").
GPU_PEAKS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H200 NVL", {"fp8": 1671.0, "bf16": 835.0, "hbm_tbps": 4.8}),
    ("H200", {"fp8": 1979.0, "bf16": 989.0, "hbm_tbps": 4.8}),
    ("H100 NVL", {"fp8": 1671.0, "bf16": 835.0, "hbm_tbps": 3.9}),
    ("H100 PCIe", {"fp8": 1513.0, "bf16": 756.0, "hbm_tbps": 2.0}),
    ("H100", {"fp8": 1979.0, "bf16": 989.0, "hbm_tbps": 3.35}),
    ("H800", {"fp8": 1979.0, "bf16": 989.0, "hbm_tbps": 3.35}),
    ("L40S", {"fp8": 733.0, "bf16": 362.0, "hbm_tbps": 0.864}),
)


def peak(kind: str = "fp8", gpu_name: str | None = None) -> float | None:
    """Datasheet peak for the GPU (``kind``: "fp8" / "bf16" TFLOPS dense, "hbm_tbps" TB/s); None if unknown.

    ``gpu_name`` defaults to the current CUDA device's name (None without a GPU).
    """
    if gpu_name is None:
        if not torch.cuda.is_available():
            return None
        gpu_name = torch.cuda.get_device_name()
    for key, peaks in GPU_PEAKS:
        if key.lower() in gpu_name.lower():
            if kind not in peaks:
                raise ValueError(f"kind: expected one of {sorted(peaks)}, got {kind!r}")
            return peaks[kind]
    return None


def pct_of_peak(tflops_value: float, kind: str = "fp8", gpu_name: str | None = None) -> float | None:
    """``tflops_value`` as a percentage of the datasheet dense peak (:data:`GPU_PEAKS`); None for an unknown GPU."""
    return pct(tflops_value, peak(kind, gpu_name))


def make_copy_fn(nbytes: int, device: str | torch.device = "cuda") -> tuple[Callable[[], Any], int]:
    """A device-to-device copy of ``nbytes`` bytes as a timeable callable, and the bytes it moves (read + write).

    Suites time it interleaved with their kernels (same run, same clocks) to get the copy bandwidth ceiling for
    the bytes their kernel moves.
    """
    if nbytes <= 0:
        raise ValueError(f"nbytes: expected a positive byte count, got {nbytes}")
    if _TIMER_MODE == "graph":
        # Captured into a CUDA graph, ``dst.copy_(src)`` becomes a memcpy node that runs on a copy engine: 2.5-2.7
        # TB/s on the H200 against 4.0-4.25 eager (session 6, s6-call10-copy_ref.json). An SM kernel keeps the
        # reference what it is eager: an elementwise int64 pass (4.0-4.1 TB/s from graphs at 269 MB-2 GB, within
        # 2-4% of the eager memcpy kernel).
        n8 = -(-nbytes // 8)
        src64 = torch.empty(n8, dtype=torch.int64, device=device).random_()
        dst64 = torch.empty_like(src64)
        return (lambda: torch.bitwise_or(src64, 0, out=dst64)), 2 * 8 * n8
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    src.random_(0, 256)
    dst = torch.empty_like(src)
    return (lambda: dst.copy_(src)), 2 * nbytes


def measure_copy_bandwidth(
    nbytes: int = 1 << 30, repeats: int = 3, warmup_ms: float = 25, rep_ms: float = 100
) -> float:
    """Device-to-device copy bandwidth in GB/s: bytes read + written / median time (1 GiB buffer by default).

    Measured on the H200: 4.27 TB/s (the HBM datasheet says 4.8).
    """
    _require_cuda("measure_copy_bandwidth")
    fn, moved = make_copy_fn(nbytes)
    times = bench_interleaved({"copy": fn}, repeats=repeats, warmup_ms=warmup_ms, rep_ms=rep_ms)
    return gbps(moved, summarize(times["copy"]).median)


# ---------------------------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------------------------


def _run_text(cmd: Sequence[str], timeout: float = 20) -> str | None:
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


@functools.lru_cache(maxsize=None)
def ptxas_info() -> dict[str, str | None]:
    """The ptxas Triton will use (honours ``TRITON_PTXAS_PATH``): path and version, e.g. "12.8.93"."""
    path = None
    try:
        from triton import knobs

        path = knobs.nvidia.ptxas.path
    except Exception:  # older triton or a missing bundled binary
        import triton

        cand = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
        path = cand if os.path.exists(cand) else shutil.which("ptxas")
    version = None
    if path:
        text = _run_text([path, "--version"]) or ""
        m = re.search(r"release [\d.]+, V([\d.]+)", text)
        version = m.group(1) if m else None
    return {"path": path, "version": version}


def driver_version() -> str | None:
    """NVIDIA driver version from ``nvidia-smi`` (e.g. "580.95.05"), else the driver API's CUDA version."""
    smi = shutil.which("nvidia-smi")
    if smi:
        text = _run_text([smi, "--query-gpu=driver_version", "--format=csv,noheader"])
        if text and text.strip():
            return text.strip().splitlines()[0].strip()
    try:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(v)) == 0:
            return f"CUDA {v.value // 1000}.{(v.value % 1000) // 10} (driver API; nvidia-smi not found)"
    except OSError:
        pass
    return None


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).astimezone()


def environment_info() -> dict[str, Any]:
    """Where and with what a result was measured: date (ISO 8601), GPU name, capability, SM count, memory, versions
    of torch, triton, CUDA (torch's), driver, cuDNN, the ptxas Triton uses, Python, tritonfp8, naming mode, and
    whether the Triton interpreter is on. GPU fields are None without a GPU."""
    import triton

    import tritonfp8
    from tritonfp8 import _backend, naming

    gpu: dict[str, Any] = {"gpu": None, "capability": None, "sm_count": None, "gpu_memory_gib": None}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        gpu = {
            "gpu": props.name,
            "capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count,
            "gpu_memory_gib": round(props.total_memory / 2**30, 1),
        }
    cudnn = None
    try:
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:
        cudnn = None
    try:
        mode = naming.naming_mode()
    except ValueError as e:
        mode = f"invalid ({e})"
    pt = ptxas_info()
    return {
        "date": _now().isoformat(timespec="seconds"),
        **gpu,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "driver": driver_version() if torch.cuda.is_available() else None,
        "cudnn": cudnn,
        "ptxas": pt["version"],
        "ptxas_path": pt["path"],
        "python": platform.python_version(),
        "tritonfp8": tritonfp8.__version__,
        "kernel_names": mode,
        "triton_interpret": _backend.interpreting(),
        "timer": _TIMER_MODE,
    }


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as the user typed it, shell-quoted (``python -m tritonfp8 ...`` for a module run)."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    head = argv[0]
    norm = head.replace(os.sep, "/")
    if norm.endswith("tritonfp8/__main__.py"):
        head = "python -m tritonfp8"
    elif norm.endswith(".py") and "/tritonfp8/" in norm:
        mod = norm.rsplit("/tritonfp8/", 1)[1][: -len(".py")].replace("/", ".")
        head = f"python -m tritonfp8.{mod}"
    return " ".join([head, *(shlex.quote(a) for a in argv[1:])])


def gpu_slug(gpu_name: str | None) -> str:
    """File-name form of a GPU name: "NVIDIA H200" -> "nvidia-h200"; None -> "cpu"."""
    if not gpu_name:
        return "cpu"
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-") or "gpu"


# ---------------------------------------------------------------------------------------------------------------
# Results files
# ---------------------------------------------------------------------------------------------------------------


def _jsonable(x: Any) -> Any:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _jsonable(dataclasses.asdict(x))
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, torch.dtype):
        return str(x).replace("torch.", "")
    if isinstance(x, Path):
        return str(x)
    return str(x)


class ResultsWriter:
    """Writes one suite run to ``<out_dir>/<suite>-<gpu>-<YYYYmmdd-HHMMSS>.json`` (+ a PNG of the same stem).

    The JSON holds::

        {"suite", "command", "env": environment_info(), "config": {...suite settings...},
         "rows": [{...one case: shapes, raw round medians in ms, rates, ratios...}, ...], "notes": [...]}

    Non-finite floats become null (NaN) or "inf"/"-inf" so the file stays strict JSON.
    """

    def __init__(
        self,
        suite: str,
        out_dir: str | os.PathLike = DEFAULT_RESULTS_DIR,
        env: Mapping[str, Any] | None = None,
        command: str | None = None,
    ):
        if not re.match(r"^[a-z0-9_-]+$", suite):
            raise ValueError(f"suite: expected lowercase letters, digits, '-' or '_', got {suite!r}")
        self.suite = suite
        self.out_dir = Path(out_dir)
        self.env = dict(env) if env is not None else environment_info()
        self.command = command if command is not None else command_line()
        stamp = _now().strftime("%Y%m%d-%H%M%S")
        self.stem = f"{suite}-{gpu_slug(self.env.get('gpu'))}-{stamp}"

    @property
    def json_path(self) -> Path:
        return self.out_dir / f"{self.stem}.json"

    @property
    def png_path(self) -> Path:
        return self.out_dir / f"{self.stem}.png"

    def payload(self, rows: Iterable[Mapping[str, Any]], config: Mapping[str, Any] | None = None,
                notes: Sequence[str] = ()) -> dict[str, Any]:
        return _jsonable(
            {
                "suite": self.suite,
                "command": self.command,
                "env": self.env,
                "config": dict(config or {}),
                "rows": [dict(r) for r in rows],
                "notes": list(notes),
            }
        )

    def write(self, rows: Iterable[Mapping[str, Any]], config: Mapping[str, Any] | None = None,
              notes: Sequence[str] = ()) -> Path:
        """Write the JSON file (creating ``out_dir``); returns its path."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        data = self.payload(rows, config, notes)
        self.json_path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
        return self.json_path


# ---------------------------------------------------------------------------------------------------------------
# Tables and plots
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A table column: row key (or a callable row -> value), header, format for numbers."""

    key: str | Callable[[Mapping[str, Any]], Any]
    header: str | None = None
    fmt: str = "{:.3g}"
    justify: str = "right"


def make_console(width: int = 160) -> Any:
    """A rich Console; when the output is not a terminal (a log file, CI, a pipe) it is ``width`` columns wide
    instead of rich's default 80, so tables stay one line per row. ``$COLUMNS`` still wins when set."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=width)
    return console


def format_value(v: Any, fmt: str = "{:.3g}") -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return fmt.format(v)
    if isinstance(v, int):
        return str(v)
    return str(v)


def print_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[Column | str], title: str | None = None,
    console: Any = None, caption: str | None = None,
) -> None:
    """Print ``rows`` as a rich table; missing values show as "n/a"."""
    from rich.table import Table

    console = console or make_console()
    cols = [c if isinstance(c, Column) else Column(c) for c in columns]
    table = Table(title=title, caption=caption)
    for c in cols:
        header = c.header or (c.key if isinstance(c.key, str) else "")
        table.add_column(header, justify=c.justify)
    for r in rows:
        cells = []
        for c in cols:
            v = c.key(r) if callable(c.key) else r.get(c.key)
            cells.append(format_value(v, c.fmt))
        table.add_row(*cells)
    console.print(table)


def _figure(figsize=(10, 5.5)):
    # Figure + Agg canvas directly: no pyplot, so no global backend is touched and no display is needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def plot_bars(
    path: str | os.PathLike,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    ylabel: str,
    title: str,
    hline: tuple[float, str] | None = None,
    errors: Mapping[str, Sequence[tuple[float, float] | None]] | None = None,
) -> Path:
    """Grouped bar chart: one group per label, one bar per series; ``hline=(y, text)`` draws a reference line
    (e.g. the copy bandwidth); ``errors[name][i] = (lo, hi)`` draws that bar's spread. Returns the PNG path."""
    n = len(series)
    if n == 0:
        raise ValueError("series: expected at least one series to plot")
    for name, vals in series.items():
        if len(vals) != len(labels):
            raise ValueError(f"series[{name!r}]: {len(vals)} values for {len(labels)} labels")
    fig = _figure((min(24.0, max(6.0, 0.35 * len(labels) * n + 2)), 6.0))
    ax = fig.add_subplot()
    width = 0.8 / n
    xs = range(len(labels))
    for i, (name, vals) in enumerate(series.items()):
        pos = [x - 0.4 + width * (i + 0.5) for x in xs]
        heights = [float("nan") if v is None else float(v) for v in vals]
        yerr = None
        if errors and name in errors:
            lows, highs = [], []
            for h, e in zip(heights, errors[name]):
                if e is None or math.isnan(h):
                    lows.append(0.0)
                    highs.append(0.0)
                else:
                    lows.append(max(0.0, h - e[0]))
                    highs.append(max(0.0, e[1] - h))
            yerr = [lows, highs]
        ax.bar(pos, heights, width, label=name, yerr=yerr, capsize=2 if yerr else 0)
    if hline is not None:
        ax.axhline(hline[0], color="black", linestyle="--", linewidth=1, label=hline[1])
    ax.set_xticks(list(xs))
    tilt = len(labels) > 6
    ax.set_xticklabels(list(labels), rotation=60 if tilt else 0, ha="right" if tilt else "center", fontsize=8 if tilt else 10)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


def plot_lines(
    path: str | os.PathLike,
    x: Sequence[float],
    series: Mapping[str, Sequence[float | None]],
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = False,
) -> Path:
    """Line chart of each series over ``x`` (e.g. TFLOPS over M). Returns the PNG path."""
    if not series:
        raise ValueError("series: expected at least one series to plot")
    fig = _figure()
    ax = fig.add_subplot()
    for name, vals in series.items():
        if len(vals) != len(x):
            raise ValueError(f"series[{name!r}]: {len(vals)} values for {len(x)} x positions")
        ax.plot(list(x), [float("nan") if v is None else float(v) for v in vals], marker="o", label=name)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


# ---------------------------------------------------------------------------------------------------------------
# Nsight Compute (--profile)
# ---------------------------------------------------------------------------------------------------------------

# Metrics read from ncu's raw page. Stall reasons are every "smsp__average_warps_issue_stalled_<reason>_per_issue_
# active.ratio" column (WarpStateStats): cycles a warp spends stalled for <reason> per issued instruction.
NCU_SECTIONS = ("SpeedOfLight", "WarpStateStats", "ComputeWorkloadAnalysis")
# Tensor pipe utilisation: "gmma" is Hopper's wgmma pipe, "hmma" the mma.sync one. Requested explicitly; when an
# ncu version does not know one of them the run is repeated without the extra metrics.
NCU_EXTRA_METRICS = (
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
)
_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(?P<reason>\w+?)_per_issue_active\.ratio$")
_PROFILE_ENV = "TRITONFP8_NCU"


def find_ncu() -> str | None:
    """Path of Nsight Compute's ``ncu``: ``$TRITONFP8_NCU``, then ``PATH``, then the usual CUDA install places."""
    env = os.environ.get(_PROFILE_ENV)
    if env:
        return env if os.path.exists(env) else None
    found = shutil.which("ncu")
    if found:
        return found
    import glob

    for pattern in ("/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def _num(s: str) -> float | None:
    s = s.strip().replace(",", "")
    if not s or s.lower() in ("n/a", "nan"):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def parse_ncu_raw_csv(text: str) -> tuple[list[dict[str, str]], dict[str, str]]:
    """``(rows, units)`` of ``ncu --import R --page raw --csv``: one dict per profiled kernel keyed by metric name,
    and each metric's unit.

    The raw page has a header line of metric names, a line of units (its ``ID`` cell is empty), then one line per
    kernel; ncu's own "==PROF==" / "==WARNING==" lines are skipped.
    """
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    if not lines:
        return [], {}
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header = rows[0]
    out: list[dict[str, str]] = []
    units: dict[str, str] = {}
    for r in rows[1:]:
        if len(r) != len(header):
            continue
        d = dict(zip(header, r))
        if re.fullmatch(r"\s*\d+\s*", d.get("ID", "")):
            out.append(d)
        elif not units:
            units = {k: v for k, v in d.items() if v}
    return out, units


_TIME_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}


@dataclass
class KernelProfile:
    """One kernel launch under ncu: name, duration (us), SM / memory / DRAM throughput (% of peak, elapsed),
    tensor pipe utilisation (% of peak, active cycles) and the top stall reasons (cycles per issued instruction)."""

    name: str
    duration_us: float | None
    sm_pct: float | None
    memory_pct: float | None
    dram_pct: float | None
    tensor_pct: float | None
    stalls: list[tuple[str, float]] = field(default_factory=list)


def summarize_ncu_rows(
    rows: Sequence[Mapping[str, str]], units: Mapping[str, str] | None = None, top: int = 5
) -> list[KernelProfile]:
    """Turn raw-page rows into :class:`KernelProfile` records (the top ``top`` stall reasons each)."""
    out = []
    dur_unit = (units or {}).get("gpu__time_duration.sum", "nsecond").strip()
    to_us = _TIME_TO_US.get(dur_unit, 1e-3)
    for r in rows:
        dur = _num(r.get("gpu__time_duration.sum", ""))
        tensor = [
            _num(v) for k, v in r.items() if k.startswith("sm__pipe_tensor") and "pct_of_peak_sustained_active" in k
        ]
        tensor = [t for t in tensor if t is not None]
        stalls = []
        for k, v in r.items():
            m = _STALL.match(k)
            val = _num(v)
            if m and val is not None and m.group("reason") not in ("selected",):
                stalls.append((m.group("reason"), val))
        stalls.sort(key=lambda kv: -kv[1])
        out.append(
            KernelProfile(
                name=r.get("Kernel Name", "?"),
                duration_us=None if dur is None else dur * to_us,
                sm_pct=_num(r.get("sm__throughput.avg.pct_of_peak_sustained_elapsed", "")),
                memory_pct=_num(r.get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "")),
                dram_pct=_num(r.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", "")),
                tensor_pct=max(tensor) if tensor else None,
                stalls=stalls[:top],
            )
        )
    return out


@dataclass
class NcuResult:
    """Outcome of :func:`profile_with_ncu`: ``ok``; ``message`` says what happened (ncu missing, no permission
    to read GPU counters, the child failed...); ``kernels`` the per-launch summaries; ``command`` what ran."""

    ok: bool
    message: str
    kernels: list[KernelProfile] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    log: str = ""


def ncu_command(ncu: str, report: str, child: Sequence[str], extra_metrics: bool = True,
                sections: Sequence[str] = ()) -> list[str]:
    """The ncu command line: profile only between cudaProfilerStart/Stop (the child calls them around the one case),
    leave the clocks alone (``--clock-control none``: measure at the clocks a user gets), collect the sections
    (:data:`NCU_SECTIONS` and any further ``sections``, e.g. "SourceCounters" for per-instruction stall samples)."""
    cmd = [ncu, "--target-processes", "all", "--profile-from-start", "off", "--clock-control", "none"]
    for s in dict.fromkeys((*NCU_SECTIONS, *sections)):
        cmd += ["--section", s]
    if extra_metrics:
        cmd += ["--metrics", ",".join(NCU_EXTRA_METRICS)]
    cmd += ["-f", "-o", report, *child]
    return cmd


def profile_with_ncu(
    child: Sequence[str], env: Mapping[str, str] | None = None, workdir: str | os.PathLike | None = None,
    timeout: float = 600, ncu: str | None = None, sections: Sequence[str] = (),
    keep_report: str | os.PathLike | None = None,
) -> NcuResult:
    """Run ``child`` (a command that launches the case between ``torch.cuda.profiler.start()`` and ``stop()``)
    under ``ncu`` and summarise every kernel it profiled. ``sections`` adds ncu sections to :data:`NCU_SECTIONS`;
    ``keep_report`` copies the ``.ncu-rep`` there (for ``ncu --import`` later). Never raises for a missing or
    failing ncu: the result says what went wrong."""
    ncu = ncu or find_ncu()
    if ncu is None:
        return NcuResult(
            False,
            "Nsight Compute (ncu) was not found: not on PATH, not in /usr/local/cuda*/bin or /opt/nvidia/nsight-compute; "
            f"install it or point ${_PROFILE_ENV} at the ncu binary. Nothing was profiled.",
        )
    import tempfile

    with tempfile.TemporaryDirectory(dir=workdir) as d:
        report = os.path.join(d, "profile")
        full_env = {**os.environ, **(env or {})}
        log = ""
        proc = None
        cmd: list[str] = []
        for extra in (True, False):
            cmd = ncu_command(ncu, report, child, extra_metrics=extra, sections=sections)
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout)
            except subprocess.TimeoutExpired:
                return NcuResult(False, f"ncu did not finish within {timeout:.0f} s", command=cmd)
            except OSError as e:
                return NcuResult(False, f"could not run ncu ({ncu}): {e}", command=cmd)
            log = proc.stdout + proc.stderr
            if proc.returncode == 0 or not (extra and re.search(r"metric", log, re.I)):
                break
        if "ERR_NVGPUCTRPERM" in log:
            return NcuResult(
                False,
                "ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM): run as root or allow profiling "
                "for all users (NVreg_RestrictProfilingToAdminUsers=0).",
                command=cmd, log=log,
            )
        if proc is None or proc.returncode != 0:
            return NcuResult(False, f"ncu exited with status {proc.returncode if proc else '?'}", command=cmd, log=log)
        rep_file = report + ".ncu-rep"
        if not os.path.exists(rep_file):
            return NcuResult(False, "ncu wrote no report: no kernel ran between profiler start and stop",
                             command=cmd, log=log)
        if keep_report is not None:
            shutil.copyfile(rep_file, keep_report)
        raw = subprocess.run([ncu, "--import", rep_file, "--page", "raw", "--csv"], capture_output=True, text=True,
                             timeout=timeout)
        if raw.returncode != 0:
            return NcuResult(False, f"ncu --import failed (status {raw.returncode})", command=cmd,
                             log=log + raw.stdout + raw.stderr)
        kernels = summarize_ncu_rows(*parse_ncu_raw_csv(raw.stdout))
    if not kernels:
        return NcuResult(False, "ncu profiled no kernel", command=cmd, log=log)
    return NcuResult(True, f"{len(kernels)} kernel launch(es) profiled", kernels, cmd, log)


def print_ncu_result(result: NcuResult, label: str, console: Any = None) -> None:
    """Print the profile of one case: a table of the launches, then each launch's top stall reasons."""
    console = console or make_console()
    if not result.ok:
        console.print(f"[bold yellow]--profile ({label}):[/] {result.message}")
        if result.log:
            console.print(result.log[-3000:], markup=False, highlight=False)
        return
    rows = [
        {
            "kernel": k.name if len(k.name) <= 90 else k.name[:87] + "...",
            "us": k.duration_us,
            "sm": k.sm_pct,
            "mem": k.memory_pct,
            "dram": k.dram_pct,
            "tensor": k.tensor_pct,
            "stalls": ", ".join(f"{r} {v:.2g}" for r, v in k.stalls[:3]) or "n/a",
        }
        for k in result.kernels
    ]
    print_table(
        rows,
        [
            Column("kernel", justify="left"),
            Column("us", "time us", "{:.1f}"),
            Column("sm", "SM % peak", "{:.1f}"),
            Column("mem", "memory % peak", "{:.1f}"),
            Column("dram", "DRAM % peak", "{:.1f}"),
            Column("tensor", "tensor pipe %", "{:.1f}"),
            Column("stalls", "top stalls (cycles/issue)", justify="left"),
        ],
        title=f"Nsight Compute: {label} (--clock-control none)",
        console=console,
        caption="stalls: warp cycles stalled per issued instruction, by reason (WarpStateStats)",
    )
