"""Offline sm_90 code generation of the grouped (MoE) GEMM: the one GEMM kernel with GROUPED = 1/2/3 compiles with
FP8 wgmma (QGMMA), no register spills and shared memory within the 227 KB of an H100/H200 block.

Compiled in a subprocess with the interpreter off (``conftest.codegen_env``): ``triton.jit`` returns an interpreter
object when TRITON_INTERPRET is set at import time.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import codegen_env

pytestmark = pytest.mark.codegen

SMEM_LIMIT_SM90 = 232448
SPECS = ["grouped_fast_tensorwise_g8", "grouped_fast_rowwise", "grouped_precise_tensorwise", "grouped_block_128x128", "grouped_masked_decode"]


def _check(r: dict, key: str) -> None:
    assert r["qgmma"] > 0 and r["hmma"] == 0, (key, r)
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["stack_bytes"] == 0, (key, r)
    assert 0 < r["registers"] <= 255, (key, r)
    assert r["shared_bytes"] <= SMEM_LIMIT_SM90, (key, r["shared_bytes"])


def test_grouped_main_config_cli():
    """``python -m tritonfp8 codegen grouped_fast_tensorwise --arch 90 --json``: 64 groups, sizes prefix-summed in
    the kernel, per-group scales, the dense GEMM's 128x256x128 tile."""
    proc = subprocess.run(
        [sys.executable, "-m", "tritonfp8", "codegen", "grouped_fast_tensorwise", "--arch", "90", "--json"],
        env=codegen_env(), capture_output=True, text=True, timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)
    assert r["name"].startswith("cutlass_sm90_fp8groupedgemm_e4m3_e4m3_f32_bf16_128x256x128_w8s4_tmapersistent")
    _check(r, "grouped_fast_tensorwise")


def test_grouped_variants_compile():
    code = f"""
import json
from tritonfp8 import codegen
out = {{}}
for k in {SPECS + ["grouped_fast_tensorwise"]!r}:
    out[k] = codegen.inspect_kernel(k, arch=90, compare_names=False).as_dict()
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], env=codegen_env(), capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = json.loads(proc.stdout.strip().splitlines()[-1])
    for k in SPECS:
        _check(reports[k], k)
    assert reports["grouped_masked_decode"]["name"].startswith("cutlass_sm90_fp8maskedgemm_")
    # 8 groups (their vectors padded to 32 lanes, ``gemm.group_pad``) give a K loop no longer than 64 groups do
    # (with 8-wide vectors: 950 instructions against 809, the loop's addresses in vector registers; session 14).
    g8 = reports["grouped_fast_tensorwise_g8"]["gmma_loop"]
    g64 = reports["grouped_fast_tensorwise"]["gmma_loop"]
    assert 0 < g8 <= g64, (g8, g64)
