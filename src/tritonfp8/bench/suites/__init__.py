"""Benchmark suites, one module per op, listed in :data:`tritonfp8.cli.BENCH_SUITES`.

A suite module exposes ``DESCRIPTION: str``, optionally ``add_arguments(parser)``, ``run(args) -> int`` and, for
``--profile``, ``profile_case(args) -> (callable, label)`` (one launch of a representative case). ``args`` has
``quick``, ``repeats``, ``out``, ``no_save`` and ``profile``. Suites time with :mod:`tritonfp8.bench.harness` and
import their kernels inside ``run`` (not at module import), so listing the suites defines no kernel.
"""
