"""CUTLASS-style kernel names: grammar, plain-name switch, and that the name reaches the compiled symbol."""

import subprocess
import sys

import pytest

from tritonfp8 import naming
from tritonfp8.naming import KernelName, kernel_names, parse_kernel_name, set_kernel_names

from conftest import codegen_env

GEMM = KernelName(
    arch=90, op="fp8gemm", types=("e4m3", "e4m3", "f32", "bf16"), tile=(128, 256, 128), warps=8, stages=3,
    scaling="rowwise",
)


def test_issue_example_name():
    assert GEMM.build("cutlass") == "cutlass_sm90_fp8gemm_e4m3_e4m3_f32_bf16_128x256x128_w8s3_rowwise"


def test_plain_mode_env_and_api(monkeypatch):
    monkeypatch.setenv("TRITONFP8_KERNEL_NAMES", "plain")
    assert str(GEMM).startswith("tfp8_sm90_")
    set_kernel_names("cutlass")
    try:
        assert str(GEMM).startswith("cutlass_sm90_")
    finally:
        set_kernel_names(None)
    with kernel_names("plain"):
        monkeypatch.setenv("TRITONFP8_KERNEL_NAMES", "cutlass")
        assert str(GEMM).startswith("tfp8_")
    assert str(GEMM).startswith("cutlass_")


def test_bad_mode(monkeypatch):
    monkeypatch.setenv("TRITONFP8_KERNEL_NAMES", "fast")
    with pytest.raises(ValueError, match="TRITONFP8_KERNEL_NAMES"):
        naming.naming_mode()
    with pytest.raises(ValueError, match="mode"):
        set_kernel_names("fast")


@pytest.mark.parametrize("mode", ["cutlass", "plain"])
def test_round_trip(mode):
    name = GEMM.evolve(schedule="tmapersistent", extras=("precise", "biasgelu")).build(mode)
    parsed = parse_kernel_name(name)
    assert parsed["prefix"] == ("cutlass" if mode == "cutlass" else "tfp8")
    assert parsed["arch"] == 90 and parsed["op"] == "fp8gemm"
    assert parsed["types"] == ("e4m3", "e4m3", "f32", "bf16")
    assert parsed["tile"] == (128, 256, 128) and parsed["warps"] == 8 and parsed["stages"] == 3
    assert parsed["rest"] == ("tmapersistent", "rowwise", "precise", "biasgelu")


def test_invalid_fields():
    with pytest.raises(ValueError, match="lowercase"):
        GEMM.evolve(op="FP8-gemm")
    with pytest.raises(ValueError, match="tile"):
        GEMM.evolve(tile=(128, 256))
    with pytest.raises(ValueError, match="grammar"):
        parse_kernel_name("my_kernel")


def test_name_reaches_compiled_symbol(tmp_path):
    """Compile a tiny named_jit kernel for sm_90 offline; the cubin's entry symbol is the CUTLASS-style name."""
    code = r"""
import triton, triton.language as tl
from triton.compiler import ASTSource
from triton.backends.compiler import GPUTarget
from tritonfp8.naming import named_jit, KernelName

@named_jit
def k(x_ptr, n, KERNEL_NAME: tl.constexpr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) * 2, mask=o < n)

for mode in ("cutlass", "plain"):
    name = KernelName(arch=90, op="scale", types=("f32",), tile=(128, 1, 1), warps=4, stages=1).build(mode)
    src = ASTSource(fn=k, signature={"x_ptr": "*fp32", "n": "i32", "KERNEL_NAME": "constexpr", "B": "constexpr"},
                    constexprs={"KERNEL_NAME": name, "B": 128})
    ck = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    assert ck.metadata.name == name, (ck.metadata.name, name)
    print(ck.metadata.name)
"""
    script = tmp_path / "named_kernel.py"  # triton.jit needs its source in a file
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], env=codegen_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["cutlass_sm90_scale_f32_128x1x1_w4s1", "tfp8_sm90_scale_f32_128x1x1_w4s1"]
