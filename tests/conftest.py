"""Test set-up shared by every test file.

Without a CUDA GPU the Triton kernels run in the CPU interpreter: ``TRITON_INTERPRET=1`` must be set before
triton is imported (``triton.jit`` decides at decoration time), so it is set here, first.
On a GPU machine the same tests run the compiled kernels on CUDA tensors (fixture ``device``).
"""

import os

import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

requires_gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU (none found); run on the H200")


@pytest.fixture
def device() -> str:
    """Where kernel tests run: the GPU when there is one, else CPU tensors under the Triton interpreter."""
    return "cuda" if HAS_CUDA else "cpu"


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def codegen_cli(*args: str, timeout: float = 600):
    """``python -m tritonfp8 codegen *args`` in a subprocess with the interpreter off (see :func:`codegen_env`)."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "tritonfp8", "codegen", *args],
        env=codegen_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def codegen_env() -> dict:
    """Environment for a subprocess that compiles for sm_90 offline: the interpreter must be off there."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    return env


def _cpu_timer(fn, warmup_ms, rep_ms, flush_l2):
    """Stand-in for the harness timer on CPU: one call's wall time in ms (checks bookkeeping, not speed)."""
    import time

    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


@pytest.fixture
def cpu_tools(monkeypatch):
    """The tune module with CPU problems (interpreter kernels) and the stand-in timer: the tuner's and the GEMM
    bench suite's bookkeeping without a GPU. Skips on a GPU machine, where the real runs cover it."""
    if HAS_CUDA:
        pytest.skip("checks the CPU stand-in path; on a GPU the real tune/bench runs cover it")
    from tritonfp8 import tune

    monkeypatch.setattr(tune, "_DEVICE", "cpu")
    monkeypatch.setattr(tune, "_TIMER", _cpu_timer)
    return tune

