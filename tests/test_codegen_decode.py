"""The decode kernels compile for sm_90 offline (no GPU needed): tensor-core products, no spills.

Each main config of ``tritonfp8._kernels.decode.codegen_specs()`` is compiled by the CLI in a subprocess
(``python -m tritonfp8 codegen NAME --arch 90 --json --no-compare``) with the interpreter off (``codegen_env()``).
The products are fp16 ``tl.dot``s (E4M3 upcast exactly to fp16), so the tensor-core instructions are HMMA
(mma.sync, 16/32 query rows) or HGMMA (wgmma, 64 rows), never QGMMA.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import codegen_cli, codegen_env
from tritonfp8 import naming
from tritonfp8._kernels.decode import codegen_specs

SPECS = codegen_specs()
# The configs the heuristic picks for the benchmark shapes (GQA 4/8, Sq 1 and 4, one split or several) plus
# the write and combine kernels; the remaining specs compile in the lead's sweep (`codegen --list`).
MAIN = [
    "decode_e4m3_gqa4_page16",
    "decode_e4m3_gqa8_page16",
    "decode_e4m3_gqa8_page16_splitkv",
    "decode_e4m3_gqa8_sq4",
    "decode_e4m3_gqa8_sq16",
    "decode_e4m3_gqa8_page16_bn32w1s4",
    "decode_e4m3_gqa4_page64_tma_bn128",  # DecodeConfig(kv_load="tma"): TMA page loads
    "kvcache_write_bf16_e4m3",
    "decode_combine_bf16",
    "decode_combine_bf16_pdl",  # DecodeConfig(merge="kernel", pdl=True)
]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return codegen_cli(*args)


@pytest.fixture(scope="module")
def reports() -> dict[str, subprocess.CompletedProcess]:
    with ThreadPoolExecutor(max_workers=2) as pool:  # the test machine has 2 cores
        return dict(zip(MAIN, pool.map(lambda n: _cli(n, "--arch", "90", "--json", "--no-compare"), MAIN)))


def test_main_configs_are_registered():
    assert set(MAIN) <= set(SPECS)


@pytest.mark.parametrize("name", MAIN)
def test_compiles_for_sm90_without_spills(name, reports):
    proc = reports[name]
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)
    assert r["arch"] == 90
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0, r
    assert r["stack_bytes"] == 0, r
    assert 0 < r["registers"] <= 255, r
    parsed = naming.parse_kernel_name(r["name"])
    assert parsed["prefix"] == "cutlass" and parsed["arch"] == 90
    if name.startswith("decode_e4m3"):
        assert parsed["op"] == "decode" and parsed["types"][0] == "e4m3"
        assert r["hmma"] + r["hgmma"] > 0, r  # both products on tensor cores
        assert r["qgmma"] == 0, r  # fp16 products by design (see the module docstring)
    else:
        assert r["hmma"] == r["hgmma"] == r["qgmma"] == 0, r


def test_int32_offsets_use_fewer_instructions_than_int64(reports):
    """OFFS_I32 (caches under 2 GiB per tensor) must shrink the kernel: the point of the flag. The same config
    with 64-bit page arithmetic is compiled next to the main one."""
    i64 = _cli("decode_e4m3_gqa8_page16_i64", "--arch", "90", "--json", "--no-compare")
    assert i64.returncode == 0, i64.stderr[-3000:]
    r64 = json.loads(i64.stdout)
    r32 = json.loads(reports["decode_e4m3_gqa8_page16"].stdout)
    assert r32["instructions"] < r64["instructions"], (r32["instructions"], r64["instructions"])


def test_pdl_combine_waits_on_the_grid_dependency(reports):
    """The PDL combine kernel's griddepcontrol.wait survives to SASS (ACQBULK) before its loads of the partials, and
    its name says pdl; the plain combine kernel has no such wait. Exactly one load precedes the wait: v_descale's
    (session 41), which the split kernel does not write."""
    r = json.loads(reports["decode_combine_bf16_pdl"].stdout)
    assert naming.parse_kernel_name(r["name"])["rest"][-1] == "pdl", r["name"]
    sass = _cli("decode_combine_bf16_pdl", "--arch", "90", "--sass", "--no-compare")
    plain = _cli("decode_combine_bf16", "--arch", "90", "--sass", "--no-compare")
    assert sass.returncode == 0 and plain.returncode == 0, (sass.stderr[-2000:], plain.stderr[-2000:])
    lines = sass.stdout.splitlines()
    wait = next(i for i, line in enumerate(lines) if "ACQBULK" in line)
    loads = [i for i, line in enumerate(lines) if "LDG" in line]
    assert sum(i < wait for i in loads) == 1 and len(loads) > 1, (wait, loads)
    assert "ACQBULK" not in plain.stdout


def test_warp_split_form_compiles_without_loop_spills():
    """DecodeConfig(warp_split=True) on sm_90: both products on HMMA, no spill inside a loop (the cutlass_ name's
    few spill stores sit in the merge after the loop), and the name says wsplit. Not a heuristic pick (measured
    0.99x the one-warp TMA kernel at B 32 ctx 4096, slower elsewhere: docs/decode.md), so not in MAIN."""
    proc = _cli("decode_e4m3_gqa4_page64_bn128w4s3_wsplit_vstage", "--arch", "90", "--json", "--no-compare")
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)
    assert r["hmma"] > 0 and r["qgmma"] == r["hgmma"] == 0, r
    assert r["loop_spills"] == 0, r
    assert naming.parse_kernel_name(r["name"])["rest"][-1] == "wsplit", r["name"]


_PTX_COUNTS = """
import json, re, sys
from tritonfp8 import codegen
out = {}
for name in sys.argv[1:]:
    k = codegen.compile_spec(codegen.registry()[name], 90)
    ptx = k.asm["ptx"]
    sass, _ = codegen.disassemble(k.asm["cubin"])
    out[name] = {
        "hinted": len(re.findall(r"cp\\.async\\.[^\\s]*L2::cache_hint", ptx)),
        "copies": len(re.findall(r"cp\\.async\\.bulk\\.tensor", ptx)),
        "policies": ptx.count("createpolicy.fractional.L2::evict_first"),
        "utmaldg": [line.strip() for line in sass.splitlines() if "UTMALDG" in line],
    }
print(json.dumps(out))
"""


def assert_l2ef_hints(tagged: str, plain: str) -> None:
    """Offline sm_90 compiles of codegen specs ``tagged`` (an ``l2ef`` kernel) and ``plain`` (untagged): every K/V
    TMA tile load of ``tagged``'s PTX carries the evict-first policy (one createpolicy) and every UTMALDG of its SASS
    takes a memory descriptor (the policy); ``plain`` has neither."""
    import sys

    proc = subprocess.run([sys.executable, "-c", _PTX_COUNTS, tagged, plain], env=codegen_env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)
    t, p = r[tagged], r[plain]
    assert t["copies"] > 0 and t["hinted"] == t["copies"], t
    assert t["policies"] == 1, t
    assert t["utmaldg"] and all("desc[" in x for x in t["utmaldg"]), t["utmaldg"]
    assert p["hinted"] == p["policies"] == 0, p
    assert p["utmaldg"] and not any("desc[" in x for x in p["utmaldg"]), p["utmaldg"]


@pytest.mark.parametrize("part", ["page64_tma_bn64w1s4_splitkv_vstage", "page16_tmab_bn32w1s4_splitkv_vstage"])
def test_l2_evict_first_hints_reach_the_tma_loads(part):
    """DecodeConfig(l2_evict_first=True) on the heuristic's TMA kernels: the hints on every K/V tile load, ptxas
    accepts them (assert_l2ef_hints); the untagged twin has none."""
    assert_l2ef_hints(f"decode_e4m3_gqa4_{part}_l2ef", f"decode_e4m3_gqa4_{part}")

