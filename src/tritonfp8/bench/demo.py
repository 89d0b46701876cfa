"""Correctness demo of every available op: small cases, each checked against the op's plain-PyTorch reference.

``python -m tritonfp8 bench --quick`` runs this when there is no CUDA GPU: the same Triton kernels the GPU would
run execute in the Triton interpreter on CPU tensors. It also runs on a GPU (``python -m tritonfp8.bench.demo``),
on CUDA tensors.

The interpreter must be switched on before any kernel is defined (``triton.jit`` decides at decoration time), and
importing ``tritonfp8`` may define kernels. So without a GPU, :func:`main` re-runs itself in a child process with
``TRITON_INTERPRET=1`` unless the variable was already set when this process started.

Registry contract (how an op joins the demo)
--------------------------------------------
Add ``(op name, module name)`` to :data:`DEMO_OPS`, and give the module a function::

    def demo_cases(device: str) -> list[DemoCase | dict]:
        ...

Each case has ``case`` (a short label: shape, options), ``run`` (a callable with no arguments that launches the
op on ``device`` and returns ``(out, ref)``: tensors, or equal-length tuples of tensors compared pairwise, ``ref``
from the op's ``*_torch`` reference) and ``tol``: the bound on ``rel_error(out, ref)`` =
``||out - ref|| / ||ref||`` in float64, derived from the FP8 format (e.g. ``4 * E4M3.eps``). ``tol = 0`` asks for
bit-exact equality (FP8 tensors are compared bit for bit). ``note`` (optional) says where the tolerance comes from.
A dict with those keys works as well as a :class:`DemoCase`, so op modules need not import this one. Keep cases
small: the whole demo should take well under a minute in the interpreter on two CPU cores. NaN never passes.

A module that does not exist yet is skipped with a note; a module that exists but fails to import, or a case that
raises, is a failure. Ops without ``demo_cases`` fall back to the built-in cases below, if any (quantize has them).
"""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import torch

# (op, module). Order is the table's order.
DEMO_OPS: tuple[tuple[str, str], ...] = (
    ("quantize", "tritonfp8.quantize"),
    ("gemm", "tritonfp8.gemm"),
    ("attention", "tritonfp8.attention"),
    ("decode", "tritonfp8.decode"),
)


@dataclass(frozen=True)
class DemoCase:
    """One demo check: ``run() -> (out, ref)``; passes when ``rel_error(out, ref) <= tol`` (``tol=0``: bit-exact)."""

    case: str
    run: Callable[[], tuple[Any, Any]]
    tol: float
    note: str = ""


@dataclass
class DemoResult:
    op: str
    case: str
    ok: bool
    max_abs: float | None = None
    rel: float | None = None
    tol: float | None = None
    seconds: float = 0.0
    detail: str = ""


def _as_case(c: DemoCase | Mapping[str, Any]) -> DemoCase:
    if isinstance(c, DemoCase):
        return c
    if isinstance(c, Mapping):
        return DemoCase(case=str(c["case"]), run=c["run"], tol=float(c["tol"]), note=str(c.get("note", "")))
    return DemoCase(case=str(c.case), run=c.run, tol=float(c.tol), note=str(getattr(c, "note", "")))


def _pairs(out: Any, ref: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    if isinstance(out, torch.Tensor) and isinstance(ref, torch.Tensor):
        return [(out, ref)]
    if isinstance(out, (tuple, list)) and isinstance(ref, (tuple, list)) and len(out) == len(ref):
        return [p for o, r in zip(out, ref) for p in _pairs(o, r)]
    raise TypeError("run(): expected (out, ref) as two tensors or two equal-length tuples of tensors")


def _bits_equal(o: torch.Tensor, r: torch.Tensor) -> bool:
    """Exact equality: FP8 (and other 1-byte floats) bit for bit; other dtypes by value, NaN never equal."""
    if o.dtype != r.dtype or o.shape != r.shape:
        return False
    if o.element_size() == 1 and o.is_floating_point():
        return torch.equal(o.contiguous().view(torch.uint8).cpu(), r.contiguous().view(torch.uint8).cpu())
    o64, r64 = o.detach().cpu().to(torch.float64), r.detach().cpu().to(torch.float64)
    if bool(torch.isnan(o64).any()):
        return False
    return torch.equal(o64, r64)


def check_case(op: str, c: DemoCase) -> DemoResult:
    """Run one case and judge it; any exception is a failure whose detail is the exception."""
    from tritonfp8.bench.harness import max_abs_error, rel_error

    torch.manual_seed(0)
    t0 = time.perf_counter()
    try:
        out, ref = c.run()
        pairs = _pairs(out, ref)
        max_abs = max((max_abs_error(o, r) for o, r in pairs), default=0.0)
        rel = max((rel_error(o, r) for o, r in pairs), default=0.0)
        if c.tol == 0.0:
            ok = all(_bits_equal(o, r) for o, r in pairs)
            detail = "bit-exact" if ok else "not bit-exact"
        else:
            ok = math.isfinite(rel) and rel <= c.tol
            detail = c.note
    except Exception as e:  # a crash is a failed check, reported, not raised
        return DemoResult(op, c.case, False, tol=c.tol, seconds=time.perf_counter() - t0,
                          detail=f"{type(e).__name__}: {e}")
    return DemoResult(op, c.case, ok, max_abs, rel, c.tol, time.perf_counter() - t0, detail or c.note)


# ---------------------------------------------------------------------------------------------------------------
# Built-in cases for ops whose module has no demo_cases() yet
# ---------------------------------------------------------------------------------------------------------------


def _quantize_cases(mod: Any, device: str) -> list[DemoCase]:
    """quantize(x, granularity) vs quantize_torch: the FP8 values and the scales must match bit for bit."""
    quantize, quantize_torch = mod.quantize, mod.quantize_torch
    grans = list(getattr(mod, "GRANULARITIES", ("tensor", "row", "col", (1, 128), (128, 128))))
    cases = []
    for g in grans:
        for dtype in (torch.float8_e4m3fn,):
            # 48 rows: not a multiple of the block sizes; 256 columns: two 1x128 blocks per row.
            def run(g=g, dtype=dtype):
                x = torch.randn(48, 256, device=device, dtype=torch.bfloat16) * 3
                return quantize(x, g, dtype=dtype), quantize_torch(x, g, dtype=dtype)

            gs = g if isinstance(g, str) else f"{g[0]}x{g[1]}"
            cases.append(DemoCase(f"{gs} e4m3 48x256 bf16", run, 0.0, "values and scales bit-exact"))
    return cases


BUILTIN_CASES: dict[str, Callable[[Any, str], list[DemoCase]]] = {"quantize": _quantize_cases}


def collect(device: str) -> tuple[list[tuple[str, DemoCase]], list[str], list[DemoResult]]:
    """``(cases, notes, failures)``: every case of every available op, notes on skipped ops, and import failures."""
    cases: list[tuple[str, DemoCase]] = []
    notes: list[str] = []
    failures: list[DemoResult] = []
    for op, mod_name in DEMO_OPS:
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as e:
            if e.name == mod_name:
                notes.append(f"{op}: {mod_name} does not exist yet: skipped")
                continue
            failures.append(DemoResult(op, "(import)", False, detail=f"ModuleNotFoundError: {e}"))
            continue
        except Exception as e:
            failures.append(DemoResult(op, "(import)", False, detail=f"{type(e).__name__}: {e}"))
            continue
        fn = getattr(mod, "demo_cases", None)
        try:
            if fn is not None:
                op_cases: Iterable[Any] = fn(device)
            elif op in BUILTIN_CASES:
                op_cases = BUILTIN_CASES[op](mod, device)
            else:
                notes.append(f"{op}: {mod_name} has no demo_cases(device): skipped")
                continue
            got = [_as_case(c) for c in op_cases]
        except Exception as e:
            failures.append(DemoResult(op, "(demo_cases)", False, detail=f"{type(e).__name__}: {e}"))
            continue
        if not got:
            notes.append(f"{op}: demo_cases() returned no case")
        cases += [(op, c) for c in got]
    return cases, notes, failures


def run_demo(device: str | None = None, console: Any = None) -> int:
    """Run every demo case in this process and print the table; 0 when all pass, 1 otherwise.

    The caller is responsible for the interpreter being on when ``device`` is "cpu" (see :func:`main`).
    """
    from tritonfp8 import _backend
    from tritonfp8.bench.harness import Column, make_console, print_table

    console = console or make_console()
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" and not _backend.interpreting():
        console.print("[bold red]demo: CPU tensors need TRITON_INTERPRET=1 set before the kernels are imported[/]")
        return 2
    where = "Triton interpreter on CPU" if device == "cpu" else f"CUDA ({torch.cuda.get_device_name()})"
    console.print(f"correctness demo: every available op on small shapes, {where}, against its *_torch reference")
    t0 = time.perf_counter()
    cases, notes, results = collect(device)
    for op, c in cases:
        results.append(check_case(op, c))
    rows = [
        {
            "op": r.op,
            "case": r.case,
            "max_abs": r.max_abs,
            "rel": r.rel,
            "tol": ("bit-exact" if r.tol == 0.0 else r.tol) if r.tol is not None else None,
            "result": "[green]PASS[/]" if r.ok else "[bold red]FAIL[/]",
            "s": r.seconds,
        }
        for r in results
    ]
    print_table(
        rows,
        [
            Column("op", justify="left"),
            Column("case", justify="left"),
            Column("max_abs", "max |out-ref|", "{:.3g}"),
            Column("rel", "rel error", "{:.3g}"),
            Column("tol", "tolerance", "{:.3g}"),
            Column("result", justify="center"),
            Column("s", "seconds", "{:.1f}"),
        ],
        title="tritonfp8 correctness demo",
        console=console,
        caption="rel error = ||out - ref|| / ||ref|| in float64 against the op's *_torch reference",
    )
    failed = [r for r in results if not r.ok]
    for r in failed:
        console.print(f"[bold red]FAIL[/] {r.op} / {r.case}: {r.detail}", highlight=False)
    for n in notes:
        console.print(f"note: {n}")
    elapsed = time.perf_counter() - t0
    if not results:
        console.print("[yellow]no op is available yet: nothing was checked[/]")
        return 0
    if failed:
        console.print(f"[bold red]demo: {len(failed)} of {len(results)} checks FAILED[/] ({elapsed:.1f} s)")
        return 1
    console.print(f"[bold green]demo: all {len(results)} checks passed[/] ({elapsed:.1f} s)")
    return 0


def run_in_subprocess(argv: list[str] | None = None, timeout: float | None = None) -> int:
    """Run the demo in a fresh Python with ``TRITON_INTERPRET=1`` (so the kernels are defined under the
    interpreter); its output goes to this process's stdout/stderr. Returns its exit status."""
    env = dict(os.environ)
    env["TRITON_INTERPRET"] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        return subprocess.call([sys.executable, "-m", "tritonfp8.bench.demo", *(argv or [])], env=env,
                               timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"demo: did not finish within {timeout} s", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """``python -m tritonfp8.bench.demo``: the demo on the GPU if there is one, else in the interpreter."""
    import argparse

    from tritonfp8 import _backend

    p = argparse.ArgumentParser(prog="python -m tritonfp8.bench.demo", description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: cuda if present, else cpu")
    args = p.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" and not _backend.interpreting():
        return run_in_subprocess(["--device", "cpu"])
    return run_demo(device)


if __name__ == "__main__":
    sys.exit(main())
