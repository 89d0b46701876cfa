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
