"""Command line: ``python -m tritonfp8 {bench,codegen,doctor,tune}``.

Each subcommand lives in its own module and is imported only when used, so ``doctor`` works even when a
kernel module fails to import.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# bench suites: name -> module exposing ``DESCRIPTION``, ``add_arguments(parser)`` and ``run(args) -> int``.
BENCH_SUITES = {
    "quant": "tritonfp8.bench.suites.quant",
    "gemm": "tritonfp8.bench.suites.gemm",
    "grouped": "tritonfp8.bench.suites.grouped",
    "attention": "tritonfp8.bench.suites.attention",
    "decode": "tritonfp8.bench.suites.decode",
    "model": "tritonfp8.bench.suites.model",
}


def _available_suites() -> dict:
    out = {}
    for name, mod_name in BENCH_SUITES.items():
        try:
            out[name] = importlib.import_module(mod_name)
        except ModuleNotFoundError as e:
            if e.name != mod_name:
                raise
    return out


def _add_common_bench_args(p: argparse.ArgumentParser, in_suite: bool = False) -> None:
    # In a suite's subparser the defaults are SUPPRESS: argparse copies every subparser default over the parent's
    # values, so `bench --quick quant` would otherwise lose --quick.
    d = (lambda v: argparse.SUPPRESS) if in_suite else (lambda v: v)
    p.add_argument("--quick", action="store_true", default=d(False), help="a few representative shapes, fewer repeats")
    p.add_argument("--repeats", type=int, default=d(None), help="interleaved rounds per case (default 3, quick 2)")
    p.add_argument("--out", default=d("benchmarks/results"), help="folder for the JSON results and PNG plots")
    p.add_argument("--no-save", action="store_true", default=d(False), help="print the table only; write no files")
    p.add_argument("--profile", action="store_true", default=d(False),
                   help="run one case under Nsight Compute (ncu) and summarise")
    p.add_argument("--graph", action="store_true", default=d(False),
                   help="time calls replayed from a CUDA graph (L2 flushed between calls): kernel time without "
                        "the host's launch overhead, for ours and every peer alike")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tritonfp8", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    bench = sub.add_parser(
        "bench",
        help="benchmark our kernels against the vendor libraries (CPU: an interpreter correctness demo)",
    )
    _add_common_bench_args(bench)
    bench_sub = bench.add_subparsers(dest="suite")
    for name, mod in _available_suites().items():
        sp = bench_sub.add_parser(name, help=getattr(mod, "DESCRIPTION", name))
        _add_common_bench_args(sp, in_suite=True)
        if hasattr(mod, "add_arguments"):
            mod.add_arguments(sp)

    cg = sub.add_parser("codegen", help="compile a library kernel for a target arch offline and report SASS facts")
    cg.add_argument("kernel", nargs="?", help="kernel config name (omit with --list)")
    cg.add_argument("--arch", type=int, default=90, help="target compute capability, e.g. 90 (sm_90), 89, 100")
    cg.add_argument("--list", action="store_true", help="list the kernel configs that can be compiled")
    cg.add_argument("--no-compare", action="store_true", help="skip the cutlass-vs-plain name comparison")
    cg.add_argument("--sass", action="store_true", help="also print the SASS listing")
    cg.add_argument("--json", action="store_true", help="print the report as JSON")

    sub.add_parser("doctor", help="GPU, FP8 support, versions and which code paths the library will use")

    tune = sub.add_parser("tune", help="autotune kernels offline and write a per-GPU config table")
    tune.add_argument("op", choices=["gemm"], help="which op to tune")
    tune.add_argument("--shapes", default=None, help="M,N,K triples 'MxNxK;...' or a named set (default: the shipped set)")
    tune.add_argument("--out", default=None, help="JSON file to write (default: the package's table for this GPU)")
    tune.add_argument("--quick", action="store_true", help="fewer candidate configs")
    tune.add_argument("--graph", action="store_true",
                      help="time candidates and the peer as CUDA-graph replays (no host launch overhead)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        from tritonfp8.bench import runner

        return runner.run(args, _available_suites())
    if args.command == "codegen":
        from tritonfp8 import _codegen_cli

        return _codegen_cli.run(args)
    if args.command == "doctor":
        from tritonfp8 import doctor

        return doctor.run(args)
    if args.command == "tune":
        from tritonfp8 import tune

        return tune.run(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
