"""Benchmarks: the shared harness (:mod:`tritonfp8.bench.harness`), the runner behind ``python -m tritonfp8 bench``
(:mod:`tritonfp8.bench.runner`), the no-GPU correctness demo (:mod:`tritonfp8.bench.demo`) and one suite per op
(``tritonfp8.bench.suites.<name>``). See docs/benchmarking.md.
"""
