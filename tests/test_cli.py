"""The command line as a user runs it: ``python -m tritonfp8 {doctor,bench,codegen}`` in a subprocess.

The subprocesses get the environment of ``conftest.codegen_env()`` (TRITON_INTERPRET removed), as a user's shell
would: on a CPU machine ``bench`` itself must notice that there is no GPU and start the interpreter demo.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import HAS_CUDA, codegen_env


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = codegen_env()
    env["COLUMNS"] = "200"  # one table row per line in the captured output
    return subprocess.run([sys.executable, "-m", "tritonfp8", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_doctor():
    p = _run("doctor")
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    for fact in ("torch", "triton", "ptxas", "TRITON_INTERPRET", "kernel names", "paths per op"):
        assert fact in out, fact
    assert "quantize" in out
    if HAS_CUDA:
        assert "compute capability" in out
    else:
        assert "no CUDA GPU" in out


@pytest.mark.skipif(HAS_CUDA, reason="on a GPU `bench --quick` runs the real benchmarks (minutes), not the demo")
def test_bench_quick_without_gpu_runs_the_demo():
    # The README's command. The demo is small: it must finish well within the timeout on a 2-core machine.
    p = _run("bench", "--quick", timeout=120)
    out = p.stdout + p.stderr
    assert "no CUDA GPU found: running the interpreter correctness demo" in out
    assert p.returncode == 0, out
    assert re.search(r"quantize\s.*PASS", out), out
    assert "FAIL" not in out, out
    assert re.search(r"demo: all \d+ checks passed", out), out


def test_codegen_list():
    p = _run("codegen", "--list")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kernel configs" in p.stdout


def test_bench_help_lists_the_quant_suite():
    p = _run("bench", "--help")
    assert p.returncode == 0, p.stderr
    assert "quant" in p.stdout


def test_doctor_path_rules():
    from tritonfp8 import doctor

    assert "wgmma" in doctor.library_path((9, 0), False)
    assert "pointer-based" in doctor.library_path((8, 9), False)
    assert "BF16 fallback" in doctor.library_path((8, 0), False)
    assert "interpreter" in doctor.library_path(None, True)
    assert "raise" in doctor.library_path(None, False)
    assert "sm_89+" in doctor.quantize_path((9, 0), False)
    assert "PyTorch reference" in doctor.quantize_path((8, 6), False)
    assert doctor.quantize_path(None, True) == doctor.library_path(None, True)
