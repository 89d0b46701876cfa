"""Offline sm_90 code generation of the attention kernels (no GPU needed): FP8 wgmma present, no spills.

Each check runs ``python -m tritonfp8 codegen NAME --arch 90 --json`` in a subprocess whose environment has the
Triton interpreter off (``conftest.codegen_env``): ``triton.jit`` would otherwise build interpreter objects.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import codegen_env

pytestmark = pytest.mark.codegen


def _codegen(kernel: str, compare: bool = False) -> dict:
    cmd = [sys.executable, "-m", "tritonfp8", "codegen", kernel, "--arch", "90", "--json"]
    if not compare:
        cmd.append("--no-compare")
    res = subprocess.run(cmd, capture_output=True, text=True, env=codegen_env(), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def test_hd128_forward_uses_fp8_wgmma_without_spills():
    r = _codegen("attn_fwd_hd128_full", compare=True)
    # The default hd128 config (H200-measured): 64 x 128 tiles, one warpgroup, registers capped at 168 (3 CTAs/SM).
    assert r["name"].startswith("cutlass_sm90_fmhafwd_e4m3_e4m3_f32_bf16_64x128x128_w4s2"), r["name"]
    assert "_r168" in r["name"] and r["registers"] <= 168
    # Two key loops (unmasked, masked), each Q·Kᵀ and P·V: K = 128 in steps of 32 -> 4 QGMMA per product.
    assert r["qgmma"] >= 8
    assert r["hgmma"] == 0
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0
    assert 0 < r["registers"] <= 255
    # Measured on sm_90 with the ptxas bundled with triton 3.6: the "cutlass" name does not change the SASS.
    assert r["cutlass_name_changes_sass"] is False


@pytest.mark.parametrize("kernel", ["attn_fwd_hd128_causal", "attn_fwd_hd64_full", "attn_fwd_hd256_full",
                                    "attn_fwd_hd128_varlen_causal_lse"])
def test_other_forward_configs_have_no_spills(kernel):
    r = _codegen(kernel)
    assert r["qgmma"] > 0 and r["spill_stores"] == 0 and r["spill_loads"] == 0, r


def test_quantize_vt_pass_has_no_spills():
    r = _codegen("attn_quant_bf16_hd128_vt")
    assert r["name"] == "cutlass_sm90_attnquant_bf16_e4m3_64x128x1_w4s1_ptr_headwise_vt"
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0


def test_default_hd128_vs_uncapped_wgmma_serialization():
    """At the 168-register cap ptxas serializes the wgmmas of the hd128 kernel with FADD row sums (the default
    until session 15: every QGMMA carries its own wait); without the cap (205 registers, 2 CTAs/SM) each Q·Kᵀ /
    P·V chain of 4 waits once."""
    capped = _codegen("attn_fwd_hd128_full_fadd")
    free = _codegen("attn_fwd_hd128_full_nocap")
    assert "_r168" not in free["name"] and free["spill_stores"] == 0
    assert free["gmma_waited"] == free["qgmma"] // 4 < capped["gmma_waited"]


@pytest.mark.parametrize("kernel", ["attn_fwd_hd128_full_ov2bn64", "attn_fwd_hd128_causal_ov2bn64"])
def test_overlapped_hd128_loop_runs_exp2_under_the_next_qk_wgmma(kernel):
    """Bench variant ov2bn64 (AttnConfig(overlap=2, block_n=64)): under the 168-register cap (3 CTAs per SM),
    no spills, wgmma groups not serialized, and block j's 32 exp2 per thread (64 x 64 tile, 128 threads) issue
    while S_{j+1} = Q·K_{j+1}ᵀ is in flight on the tensor core."""
    r = _codegen(kernel)
    assert r["name"].startswith("cutlass_sm90_fmhafwd_e4m3_e4m3_f32_bf16_64x64x128_w4s2"), r["name"]
    assert r["name"].endswith("_r168_ov2") and r["registers"] <= 168 and r["shared_bytes"] <= 76 * 1024
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0
    assert r["gmma_waited"] < r["qgmma"] // 2, r
    assert r["mufu_in_flight"] >= 32, r


@pytest.mark.parametrize("kernel", ["attn_fwd_hd128_full_ov2nocap", "attn_fwd_hd128_full_ov2s1lazy"])
def test_overlapped_hd128_tile_without_register_cap(kernel):
    """Bench variants ov2nocap / ov2s1lazy (64 x 128, overlap=2, no register cap; 2 or 1 stages, lazy rescale):
    no spills, wgmmas not serialized, most of the 64 exp2 per thread of a 64 x 128 block under the next Q·Kᵀ."""
    r = _codegen(kernel)
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0
    assert r["gmma_waited"] < r["qgmma"] // 2 and r["mufu_in_flight"] >= 48, r


def test_polynomial_exp2_moves_a_quarter_of_the_loop_exp2_off_the_sfu():
    """Bench variant ov2bn64px4: 8 of the 32 exp2 per thread and 64 x 64 block by the FMA-pipe cubic; still under
    the 168-register cap, no spills, wgmmas not serialized."""
    base = _codegen("attn_fwd_hd128_full_ov2bn64")
    r = _codegen("attn_fwd_hd128_full_ov2bn64px4")
    assert r["name"].endswith("_r168_ov2_px4") and r["registers"] <= 168
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0
    assert r["mufu_ex2"] == base["mufu_ex2"] - 8, (r["mufu_ex2"], base["mufu_ex2"])
    assert r["gmma_waited"] < r["qgmma"] // 2, r


@pytest.mark.parametrize("kernel", ["attn_fwd_hd128_full", "attn_fwd_hd128_causal"])
def test_row_sums_on_the_tensor_core(kernel):
    """The hd128 default since session 15 (``row_sum_mma=True``) against the same tiles with FADD row sums
    (``attn_fwd_hd128_*_fadd``, the default before): the row sums become 4 m64n16k32 QGMMA per key
    block in each loop (24 vs 16); under the 168-register cap without spills; the ones tile is copied into shared
    memory once, before the loops (+2 KB: three CTAs of 76800 + 1024 reserved bytes fill the SM's 228 KB exactly),
    not in every step; and the wgmma chains are no longer serialized one wait per QGMMA as in the default. The
    unmasked loop per key block: 428 instructions against the default's 491 (offline, ptxas 12.8)."""
    base = _codegen(kernel + "_fadd")
    r = _codegen(kernel)
    assert r["name"].endswith("_r168_rsmma") and r["registers"] <= 168, r["name"]
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0
    assert r["qgmma"] == base["qgmma"] + 8
    assert r["shared_bytes"] == base["shared_bytes"] + 16 * 128
    assert 3 * (r["shared_bytes"] + 1024) <= 228 * 1024, "no longer three CTAs per SM"
    assert r["gmma_waited"] < r["qgmma"] // 2 < base["gmma_waited"], (r["gmma_waited"], base["gmma_waited"])
    res = subprocess.run([sys.executable, "-c", _LOOP_SCRIPT, kernel + "_fadd", kernel],
                         capture_output=True, text=True, env=codegen_env(), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    loops = json.loads(res.stdout)
    (n0, fadd0), (n1, fadd1) = (loops[k]["unmasked_loop"] for k in (kernel + "_fadd", kernel))
    assert fadd0 >= 64 and fadd1 <= 8, (fadd0, fadd1)  # the row sums' 64 FADD per thread and block are gone
    assert n1 <= n0 - 60, (n1, n0)


@pytest.mark.parametrize("kernel,max_regs", [("attn_fwd_hd64_full_ov2bn64", 128), ("attn_fwd_hd256_full_ov2", 255)])
def test_overlapped_loop_other_head_dims(kernel, max_regs):
    """Bench variants ov2bn64 at hd64 (r128: 4 CTAs/SM) and ov2 at hd256: no spills, wgmmas not serialized, exp2
    under the next Q·Kᵀ."""
    r = _codegen(kernel)
    assert r["registers"] <= max_regs and r["spill_stores"] == 0 and r["spill_loads"] == 0, r
    # hd64: chains of 2 QGMMA (K = 64 in steps of 32), one wait each; serialized would be one wait per QGMMA.
    assert r["gmma_waited"] < r["qgmma"] and r["mufu_in_flight"] >= 8, r


_LOOP_SCRIPT = r"""
import json, re, sys
from tritonfp8 import codegen

INSTR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);", re.M)
out = {}
for key in sys.argv[1:]:
    ck = codegen.compile_spec(codegen.registry()[key], 90, "cutlass")
    sass, res = codegen.disassemble(ck.asm["cubin"])
    ins = [(int(m.group(1), 16), m.group(2) or "", m.group(3), m.group(4)) for m in INSTR.finditer(sass)]
    target = lambda rest: int(re.search(r"0x([0-9a-f]+)", rest).group(1), 16)
    # The unmasked key loop: the first backward branch whose body holds a QGMMA.
    body = next(b for b in ([x for x in ins if target(r) <= x[0] <= a] for a, _, o, r in ins
                            if o == "BRA" and target(r) < a) if any(o.startswith("QGMMA") for _, _, o, _ in b))
    skipped = [[o for a2, _, o, _ in body if a < a2 < target(r)] for a, p, o, r in body
               if o == "BRA" and p and a < target(r) <= body[-1][0]]
    out[key] = dict(codegen.sass_facts(sass, res), skipped=skipped,
                    unmasked_loop=(len(body), sum(o.split(".")[0] == "FADD" for _, _, o, _ in body)))
print(json.dumps(out))
"""


def test_lazy_rescale_in_the_plain_loop_branches_over_the_acc_rescale():
    """Bench variants lazy / lazy256 (default tiles, ``lazy_rescale=True``, plain loop): same registers class as the
    default (168 cap at hd128), no spills, and inside the unmasked key loop one predicated forward branch that
    skips exactly the acc rescale: BLOCK_M·D / threads FMULs per thread (hd128 64 x 128 / 128 threads: 64;
    hd256 128 x 256 / 256 threads: 128), nothing else."""
    keys = {"attn_fwd_hd128_full_lazy": (64, 168), "attn_fwd_hd256_full_lazy": (128, 255)}
    res = subprocess.run([sys.executable, "-c", _LOOP_SCRIPT, *keys], capture_output=True, text=True,
                         env=codegen_env(), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    facts = json.loads(res.stdout)
    for key, (fmuls, max_regs) in keys.items():
        r = facts[key]
        assert r["registers"] <= max_regs and r["spill_stores"] == 0 and r["spill_loads"] == 0, (key, r)
        assert r["qgmma"] > 0, (key, r)
        assert r["skipped"] == [["FMUL"] * fmuls], (key, r["skipped"])


def test_gmma_overlap_facts_counts_groups():
    """MUFU.EX2 after ``DEPBAR.LE gsb0, 0x1`` still overlaps the newest group; after ``0x0`` nothing does; a
    serialized chain (every wgmma tagged gsb0) counts each wgmma as waited."""
    from tritonfp8.codegen import _gmma_overlap_facts

    def sass(*ops):
        return "\n".join(f"        /*{16 * i:04x}*/                   {op} ;" for i, op in enumerate(ops))

    s = sass("QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT, gsb0",
             "QGMMA.64x128x32.F32.E4M3.E4M3 R88, R152, gdesc[UR8], R88", "MUFU.EX2 R1, R2",
             "QGMMA.64x128x32.F32.E4M3.E4M3 R88, R156, gdesc[UR8], R88, gsb0",
             "WARPGROUP.DEPBAR.LE gsb0, 0x1", "MUFU.EX2 R3, R4", "MUFU.EX2 R5, R6",
             "WARPGROUP.DEPBAR.LE gsb0, 0x0", "MUFU.EX2 R7, R8")
    assert _gmma_overlap_facts(s) == (2, 3)


def test_loop_spills_counts_spills_inside_predicated_back_edges_only():
    """``codegen.loop_spills`` on hand-written SASS: a spill inside a predicated loop counts; a prologue store, an
    epilogue load and the span of an unpredicated backward ``BRA`` (an mbarrier wait's out-of-line retry path
    returning to the wait) do not."""
    from tritonfp8.codegen import loop_spills

    def sass(*ops):
        return "\n".join(f"        /*{16 * i:04x}*/                   {op} ;" for i, op in enumerate(ops)) + "\n"

    body = ["STL [R1], R8", "MOV R2, R3", "QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR4], R24, gsb0",
            "@P0 BRA 0x10", "LDL R2, [R1]", "EXIT", "SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R4], R5", "BRA 0x10"]
    assert loop_spills(sass(*body)) == 0
    body[1] = "LDL R9, [R1+0x4]"
    assert loop_spills(sass(*body)) == 1
