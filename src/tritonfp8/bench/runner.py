"""``python -m tritonfp8 bench [SUITE] [--quick] [--profile] ...``: runs benchmark suites, or the demo without a GPU.

- No CUDA GPU: says so and runs the interpreter correctness demo (:mod:`tritonfp8.bench.demo`); exit status is the
  demo's (0 when every check passes).
- ``bench SUITE``: runs that suite; ``bench`` alone runs every available suite in turn. A suite is a module with
  ``DESCRIPTION``, optional ``add_arguments(parser)`` and ``run(args) -> int``; ``args`` carries the common options
  (``quick``, ``repeats`` (resolved here: 3, or 2 with ``--quick``), ``out``, ``no_save``, ``profile``) and the
  suite's own, at their defaults when the suite was not named on the command line.
- ``--profile``: instead of the benchmark table, runs one case of the suite (``suite.profile_case(args) ->
  (callable, label)``) in a child process under Nsight Compute and prints SM throughput, tensor-pipe utilisation
  and the top warp-stall reasons. Without ``ncu`` it says so and profiles nothing.

The profiled child is ``python -m tritonfp8.bench.runner --profile-child``: it reads the suite name and arguments
from ``$TRITONFP8_PROFILE_ARGS`` (JSON), runs the case twice to compile and warm up, then once between
``torch.cuda.profiler.start()`` and ``stop()`` (ncu runs with ``--profile-from-start off``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any, Mapping

import torch

_CHILD_ENV = "TRITONFP8_PROFILE_ARGS"


def _resolve_common(args: argparse.Namespace) -> argparse.Namespace:
    ns = argparse.Namespace(**vars(args))
    for k, v in (("quick", False), ("repeats", None), ("out", "benchmarks/results"), ("no_save", False),
                 ("profile", False), ("graph", False)):
        if not hasattr(ns, k):
            setattr(ns, k, v)
    if ns.repeats is None:
        ns.repeats = 2 if ns.quick else 3
    if ns.repeats < 1:
        raise SystemExit(f"--repeats: expected an integer >= 1, got {ns.repeats}")
    return ns


def suite_args(args: argparse.Namespace, suite: Any) -> argparse.Namespace:
    """``args`` completed with the suite's own options at their defaults where the command line did not set them."""
    ns = _resolve_common(args)
    if hasattr(suite, "add_arguments"):
        p = argparse.ArgumentParser(add_help=False)
        suite.add_arguments(p)
        for k, v in vars(p.parse_args([])).items():
            if not hasattr(ns, k):
                setattr(ns, k, v)
    return ns


def _no_gpu(args: argparse.Namespace) -> int:
    from tritonfp8 import _backend
    from tritonfp8.bench import demo, harness

    console = harness.make_console()
    console.print(
        "[bold yellow]no CUDA GPU found: running the interpreter correctness demo[/] (the same Triton kernels, "
        "executed by the Triton interpreter on CPU tensors, small shapes; no timings: speed needs a GPU)"
    )
    if getattr(args, "profile", False):
        ncu = harness.find_ncu()
        console.print(
            "[yellow]--profile needs a CUDA GPU: nothing is profiled.[/] "
            + (f"(ncu found at {ncu})" if ncu else "(Nsight Compute `ncu` is not installed here either)")
        )
    if getattr(args, "suite", None):
        console.print(f"note: suite {args.suite!r} needs a GPU; the demo covers every op instead")
    console.file.flush()
    if _backend.interpreting():
        # TRITON_INTERPRET was set when this process started: kernels imported so far are interpreter kernels.
        return demo.run_demo("cpu", console)
    return demo.run_in_subprocess(["--device", "cpu"])


def _jsonable_args(ns: argparse.Namespace) -> dict:
    out = {}
    for k, v in vars(ns).items():
        try:
            json.dumps(v)
        except TypeError:
            continue
        out[k] = v
    return out


def _profile(args: argparse.Namespace, suites: Mapping[str, Any]) -> int:
    from tritonfp8.bench import harness

    console = harness.make_console()
    if args.suite:
        name = args.suite
    else:
        with_case = [n for n, m in suites.items() if hasattr(m, "profile_case")]
        if not with_case:
            console.print("[yellow]--profile: no available suite defines profile_case(args)[/]")
            return 1
        name = with_case[0]
        console.print(f"--profile: no suite named; profiling suite {name!r}")
    suite = suites[name]
    if not hasattr(suite, "profile_case"):
        console.print(f"[yellow]--profile: suite {name!r} defines no profile_case(args); nothing to profile[/]")
        return 1
    ns = suite_args(args, suite)
    payload = {"suite": name, "module": suite.__name__, "args": _jsonable_args(ns)}
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        label_file = os.path.join(d, "label.txt")
        payload["label_file"] = label_file
        env = {_CHILD_ENV: json.dumps(payload)}
        child = [sys.executable, "-m", "tritonfp8.bench.runner", "--profile-child"]
        console.print(f"--profile: running one {name} case under Nsight Compute (this replays each kernel; "
                      "it takes a while)")
        result = harness.profile_with_ncu(child, env=env)
        label = open(label_file).read().strip() if os.path.exists(label_file) else name
    harness.print_ncu_result(result, label, console)
    return 0 if result.ok else 1


def _profile_child() -> int:
    payload = json.loads(os.environ[_CHILD_ENV])
    suite = importlib.import_module(payload["module"])
    ns = argparse.Namespace(**payload["args"])
    fn, label = suite.profile_case(ns)
    with open(payload["label_file"], "w") as f:
        f.write(str(label))
    cuda = torch.cuda.is_available()  # False only in the CPU tests of this plumbing (with a stand-in ncu)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(2):  # compile, autotune and warm up outside the profiled window
        fn()
    sync()
    if cuda:
        torch.cuda.profiler.start()
    fn()
    sync()
    if cuda:
        torch.cuda.profiler.stop()
    return 0


def run(args: argparse.Namespace, suites: Mapping[str, Any]) -> int:
    """Entry point of ``python -m tritonfp8 bench`` (called by :mod:`tritonfp8.cli`); returns the exit status."""
    if not torch.cuda.is_available():
        return _no_gpu(args)
    if getattr(args, "profile", False):
        return _profile(_resolve_common(args), suites)
    suite_name = getattr(args, "suite", None)
    if suite_name:
        names = [suite_name]
    else:
        names = list(suites)
        if not names:
            print("bench: no benchmark suite is available", file=sys.stderr)
            return 1
    from tritonfp8.bench import harness

    harness.set_timer_mode("graph" if getattr(args, "graph", False) else "events")
    status = 0
    for name in names:
        rc = int(suites[name].run(suite_args(args, suites[name])) or 0)
        if rc != 0:
            print(f"bench: suite {name!r} exited with status {rc}", file=sys.stderr)
            status = status or rc
    return status


if __name__ == "__main__":
    if sys.argv[1:] == ["--profile-child"]:
        sys.exit(_profile_child())
    print("usage: python -m tritonfp8 bench ... (this module's own entry is the --profile child)", file=sys.stderr)
    sys.exit(2)
