"""The Gluon decode kernel (``DecodeConfig(kernel="gluon")``, ``_kernels/decode_gluon.py``; issue 6).

Gluon kernels do not run in the interpreter: CPU tests check the config and the plan's refusals, codegen tests
compile for sm_90 offline and check the SASS facts the design rests on, GPU tests compare with the reference under
tests/test_decode.py's tolerance rule (stated there once) and with the Triton kernel (the same products and
roundings, another fp32 summation order: within 2^-9 as the GPU tests of the TMA kernels).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from conftest import HAS_CUDA, requires_gpu
from test_decode import Case, _make, _plan_of, assert_decode_close
from test_decode_gpu import assert_graph_replay_equals_eager
from tritonfp8 import decode as dec

GLUON = dict(kernel="gluon", merge="kernel", num_warps=1)


def test_gluon_config_is_validated():
    dec.DecodeConfig(**GLUON, block_n=32, num_stages=4)
    dec.DecodeConfig(**{**GLUON, "num_warps": 2})
    dec.DecodeConfig(**{**GLUON, "num_warps": 4})
    for bad in (dict(block_n=128), dict(block_n=16), dict(num_stages=0), dict(num_stages=9), dict(num_warps=3),
                dict(num_warps=8)):
        with pytest.raises(ValueError, match="kernel='gluon'"):
            dec.DecodeConfig(**{**GLUON, **bad})
    dec.DecodeConfig(**{**GLUON, "merge": "inline"})  # session 35: the last split merges (no combine launch)
    with pytest.raises(ValueError, match="merge: expected 'inline' or 'kernel'"):
        dec.DecodeConfig(**{**GLUON, "merge": "combine"})
    with pytest.raises(ValueError, match="pdl=True: only with merge='kernel'"):
        dec.DecodeConfig(**{**GLUON, "merge": "inline"}, pdl=True)
    with pytest.raises(ValueError, match="kernel: expected 'triton' or 'gluon'"):
        dec.DecodeConfig(kernel="cuda")
    # heads=True (session 38): 2, 4 or 8 warps (one per KV head), the Gluon kernel and the combine launch only
    dec.DecodeConfig(**{**GLUON, "num_warps": 8}, heads=True)
    for bad in (dict(num_warps=1), dict(kernel="triton", num_warps=4), dict(num_warps=4, merge="inline")):
        with pytest.raises(ValueError, match="heads=True: expected kernel='gluon', num_warps 2, 4 or 8"):
            dec.DecodeConfig(**{**GLUON, **bad}, heads=True)
    with pytest.raises(TypeError, match="heads: expected a bool"):
        dec.DecodeConfig(**GLUON, heads=1)


@pytest.mark.skipif(HAS_CUDA, reason="the interpreter's refusal (a CUDA host has no interpreter in this process)")
def test_gluon_refused_off_gpu():
    """On the CPU (the interpreter) the plan says what the kernel needs instead of running something else."""
    q, kc, vc, bt, sl, ks, vs = _make(Case((17,), 4, 1, d=128, page=16), "cpu")
    with pytest.raises(ValueError, match="sm_90"):
        dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=dec.DecodeConfig(**GLUON))


# --- offline sm_90 --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def loop_reports() -> dict:
    """scripts/decode_loop_sass.py --json over the offline specs, in a subprocess with the interpreter off."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import codegen_env
    from tritonfp8._kernels import decode_gluon as kg

    names = list(kg.codegen_specs())
    script = Path(__file__).resolve().parents[1] / "scripts" / "decode_loop_sass.py"
    proc = subprocess.run([sys.executable, str(script), "--json", *names], capture_output=True, text=True,
                          env=codegen_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r["name"]: r for r in json.loads(proc.stdout)}


@pytest.mark.parametrize("page,step,stages", [(64, 64, 2), (16, 64, 2), (16, 32, 3), (128, 64, 2), (32, 32, 4)],
                         ids=lambda x: str(x))
def test_gluon_sass_sm90(page, step, stages, loop_reports):
    """The loop's instruction mix the layouts were chosen for: per 16 tokens 16 mma.sync (8 for S^T, 8 for O^T;
    the rows-as-M form needs 32) and 8 16-byte shared-memory loads (4 of K, 4 of V), no narrower ones; no spills;
    at most 2.25 PRMT per token (one per V operand register, plus the P^T transpose); under 16 warp-instructions
    per token (offline 12.4-15.3; the Triton kernel: 18.9 at pages of 64, 24.4 at pages of 16); 168 registers or
    fewer; TMA loads."""
    r = loop_reports[f"decode_gluon_page{page}_step{step}s{stages}"]
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0, r
    assert r["registers"] <= 168, r
    assert r["utmaldg"] >= 2, r
    assert len(r["loops"]) == 1, "one loop with the products (the masked last step is outside it)"
    lp = r["loops"][0]
    ops = lp["ops"]
    assert ops.get("HMMA", 0) == step, ops  # 16 per 16 tokens
    assert ops.get("LDS", 0) == lp["lds128"] == step // 2, (ops, lp["lds128"])  # all of them 16-byte loads
    assert ops.get("PRMT", 0) <= 2.25 * step, ops
    assert lp["per_token"] < 16, lp


@pytest.mark.parametrize("page,step,stages,warps", [(64, 32, 3, 2), (16, 32, 3, 4)], ids=lambda x: str(x))
def test_gluon_warps_sass_sm90(page, step, stages, warps, loop_reports):
    """Several warps per program (each on its own tokens): each warp's loop keeps the one-warp form's products and
    loads (16 mma.sync and 8 16-byte shared loads per 16 of its tokens), no spills, <= 168 registers; a block-wide
    barrier per step (the slot's reads before its refill)."""
    r = loop_reports[f"decode_gluon_page{page}_step{step}s{stages}w{warps}"]
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0, r
    assert r["registers"] <= 168, r
    lp = r["loops"][0]
    ops = lp["ops"]
    assert ops.get("HMMA", 0) == step, ops
    assert ops.get("LDS", 0) == lp["lds128"] == step // 2, (ops, lp["lds128"])
    assert ops.get("BAR", 0) >= 1, ops


@pytest.mark.parametrize("page,boxes,warps,hint", [(64, 1, 8, True), (16, 2, 8, True), (64, 1, 4, True),
                                                   (16, 2, 4, False)])
def test_gluon_heads_sass_sm90(page, boxes, warps, hint, loop_reports):
    """heads=True (session 38; 8 or 4 warps on as many KV heads, 32-token steps, 2 slots; 4 warps: decode_config's
    rule): one TMA copy of K and one of V per page box for all the heads (2 x boxes per step: at the 2 prologue steps
    and the refill), so 1 / W of the per-head form's copies; each warp's loop keeps the one-warp form's products and
    16-byte shared loads (16 mma.sync and 8 LDS.128 per 16 tokens); no spills; registers within 255 (one 8-warp
    program per SM; 4 warps: 168, so that three fit); the row stores (4 rows of GQA 4 per warp: 4 16-byte stores of
    the fp32 partial, 4 lse stores)."""
    from tritonfp8._kernels import decode_gluon as kg

    name = f"decode_gluon_page{page}_step32s2w{warps}_heads" + ("_l2ef" if hint else "")
    r = loop_reports[name]
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["registers"] <= (255 if warps == 8 else 168), r
    assert r["utmaldg"] == 2 * boxes * 3, r
    lp = r["loops"][0]
    assert lp["ops"].get("HMMA", 0) == 32 and lp["ops"].get("LDS", 0) == lp["lds128"] == 16, lp["ops"]
    assert lp["ops"].get("UTMALDG", 0) == 2 * boxes, lp["ops"]
    assert r["stores"] == {"STG.E.128": 4, "STG.E": 4}, r["stores"]
    assert kg.codegen_specs()[name].kernel_name(90, "cutlass").endswith("_heads" + ("_l2ef" if hint else ""))


@pytest.mark.parametrize("name,warps,width,row_stores", [
    ("decode_gluon_page64_step32s3_l2ef_s33", 1, 128, True), ("decode_gluon_page64_step32s3w2_rowst", 2, 128, True),
    ("decode_gluon_page64_step32s2w2_out_rowst", 2, 64, True), ("decode_gluon_page16_step32s3w4_rowst", 4, 32, False),
    ("decode_gluon_page64_step32s3_l2ef", 1, 128, True), ("decode_gluon_page64_step32s3_l2ef_accst", 1, 32, False),
    ("decode_gluon_page64_step32s3w4_l2ef_rowst_r168", 4, 128, True)])
def test_gluon_row_store_epilogue(name, warps, width, row_stores, loop_reports):
    """Session 33's epilogue (``ROW_STORE``, 1 and 2 warps; on in the library since session 34): O (or the fp32
    partials) leaves in rows, one 16-byte store per lane and row (8 bytes for the bf16 output), after a layout
    conversion through shared memory; the 4 real rows of these specs (GQA 4) take 4 / W such stores per warp, and
    nothing else is stored but the partials' 4 lse values. With 4 warps (kg.row_stores: 172 registers against the
    168 of three programs per SM) unless capped at 168 registers (session 36, the ``r168`` spec: no spills at pages of
    64), and with ROW_STORE off, the accumulator's layout keeps 4-byte stores (32 or more per lane)."""
    from tritonfp8._kernels import decode_gluon as kg

    capped = kg.codegen_specs()[name].options.get("maxnreg")
    on = kg.row_stores(warps, maxnreg=capped)
    assert kg.ROW_STORE and on is kg.row_stores(warps, True, capped) is (warps <= 2 or capped == 168)
    assert kg.row_stores(warps) is (warps <= 2) and not kg.row_stores(warps, False, capped)
    assert kg.row_stores(4, maxnreg=168) and not kg.row_stores(4, maxnreg=176)
    st = dict(loop_reports[name]["stores"])  # a copy: the module fixture is shared
    assert loop_reports[name]["spill_stores"] == 0 and loop_reports[name]["registers"] <= 168, loop_reports[name]
    if row_stores:
        wide = "STG.E.128" if width == 128 else "STG.E.64"
        assert st.pop(wide) == 4 // warps, st
        assert sum(st.values()) <= 4 and set(st) <= {"STG.E"}, st  # the lse's, with partials
    else:
        assert st.get("STG.E", 0) >= 32 and not any(k.startswith(("STG.E.64", "STG.E.128")) for k in st), st


@pytest.mark.parametrize("name,warps,group", [("decode_gluon_page64_step32s3_l2ef_inline", 1, 8),
                                              ("decode_gluon_page64_step32s3_l2ef_inline_g4", 1, 4),
                                              ("decode_gluon_page64_step32s3w2_inline", 2, 4)])
def test_gluon_inline_merge_sass(name, warps, group, loop_reports):
    """The in-kernel merge (session 35): one ticket (a gpu-scope atomic add) and one counter reset (exchange) per
    program; per real row and warp one 16-byte row store of the fp32 partial, one lse store and one 8-byte store of
    the merged bf16 row (4 values per lane); the loop as without the merge (the same products), no spills, <= 168
    registers; the schedule name ``pagedsplitkv`` (the Triton kernel's for its inline merge), not ``...combine``."""
    from tritonfp8 import naming
    from tritonfp8._kernels import decode_gluon as kg

    r = loop_reports[name]
    assert r["atomics"] == {"ATOMG.E.ADD.STRONG.GPU": 1, "ATOMG.E.EXCH.STRONG.GPU": 1}, r["atomics"]
    assert r["spill_stores"] == 0 and r["registers"] <= 168, r
    assert r["loops"][0]["ops"].get("HMMA", 0) == 32, r["loops"][0]
    n = group // warps
    assert r["stores"] == {"STG.E.128": n, "STG.E": n, "STG.E.64": n}, r["stores"]
    rest = naming.parse_kernel_name(kg.codegen_specs()[name].kernel_name(90, "cutlass"))["rest"]
    assert rest[0] == "pagedsplitkv", rest
    assert loop_reports["decode_gluon_page64_step32s3_l2ef"]["atomics"] == {}


def test_gluon_pdl_signals_the_combine_kernel(loop_reports):
    """With several splits and the signal on (``PDL``, session 33; off in the library: 0.97-1.00x on the H100 in
    session 34) the Gluon kernel signals its PDL combine kernel once, after the loop (griddepcontrol.launch_dependents),
    as the Triton kernel does, and its name says ``pdl``; without, no signal. Both specs have the row stores
    (``rowst``)."""
    from tritonfp8 import naming
    from tritonfp8._kernels import decode_gluon as kg

    specs = kg.codegen_specs()
    for name, signals in (("decode_gluon_page64_step32s3_l2ef_s33", 1), ("decode_gluon_page64_step32s3_l2ef", 0)):
        assert loop_reports[name]["launch_dependents"] == signals, loop_reports[name]
        rest = naming.parse_kernel_name(specs[name].kernel_name(90, "cutlass"))["rest"]
        assert ("pdl" in rest) == bool(signals) and "rowst" in rest, rest


def test_gluon_l2_evict_first_hints_reach_the_tma_loads():
    """DecodeConfig(kernel="gluon", l2_evict_first=True) (session 32): the name's ``l2ef`` field makes l2hint's PTX
    pass hint every K/V TMA load of the Gluon kernel, as the Triton kernel's; an untagged Gluon spec has none."""
    from test_codegen_decode import assert_l2ef_hints

    assert_l2ef_hints("decode_gluon_page64_step32s3_l2ef", "decode_gluon_page64_step64s2")


# --- GPU ------------------------------------------------------------------------------------------------------------

# (case, block_n (step), stages, splits): pages 16 / 32 / 64 / 128 (a page longer than a step: sub-boxes), GQA
# 1 / 4 / 8, lengths 1, 17, 339 and page / step boundaries, one and several splits (a split starting mid-page).
GPU_CASES = [
    (Case((1, 17, 339, 64), 8, 2, d=128, page=16), 64, 2, 1),
    (Case((1, 17, 339, 64), 8, 2, d=128, page=16), 32, 3, 3),
    (Case((339, 1, 48, 17), 16, 2, d=128, page=64), 64, 2, 2),
    (Case((4096, 100, 65), 32, 4, d=128, page=64), 64, 3, 16),
    (Case((4096, 2000), 64, 8, d=128, page=16), 64, 2, 7),
    (Case((300, 129), 4, 4, d=128, page=128), 64, 2, 2),
    (Case((333, 32), 8, 1, d=128, page=32, per_head=False), 32, 4, 1),
    (Case((333, 32), 16, 2, d=128, page=32, q_dtype=torch.float16), 32, 2, 4),
]
# Several warps per program (session 24): each warp on its own share of the program's tokens (ragged shares: a
# warp with fewer steps or none, splits starting mid-page), merged on chip before the partial / output.
GPU_WARP_CASES = [
    (Case((1, 17, 339, 64), 8, 2, d=128, page=16), 32, 3, 1, 2),
    (Case((4096, 100, 65), 32, 4, d=128, page=64), 32, 3, 2, 2),
    (Case((4096, 2000), 64, 8, d=128, page=16), 32, 2, 3, 4),
    (Case((339, 1, 48, 17), 16, 2, d=128, page=64), 64, 2, 1, 4),
    (Case((300, 129), 4, 4, d=128, page=128), 64, 2, 2, 2),
    # decode_config's 2-warp form (32-token steps, 2 slots, one split) on pages of 32 and 128 (sub-boxes)
    (Case((4096, 2000, 33), 32, 4, d=128, page=32), 32, 2, 1, 2),
    (Case((4096, 129, 1000), 64, 8, d=128, page=128), 32, 2, 1, 2),
]

# The warps on KV heads of the same tokens (heads=True, session 38; (case, step, stages, splits, warps)): pages of
# 16 under 32- and 64-token steps (2 and 4 boxes a step), of 64, 128 (sub-boxes) and 32, GQA 1 to 8, per-tensor
# scales, fp16 q, ragged lengths and splits starting mid-page, one split (the output) and several (the partials).
GPU_HEADS_CASES = [
    (Case((1, 17, 339, 64), 8, 2, d=128, page=16), 32, 2, 1, 2),
    (Case((1, 17, 339, 64), 8, 2, d=128, page=16), 64, 3, 3, 2),
    (Case((4096, 100, 65), 32, 4, d=128, page=64), 32, 3, 5, 4),
    (Case((4096, 2000), 64, 8, d=128, page=16), 32, 2, 3, 8),
    (Case((4096, 2000), 32, 8, d=128, page=64), 32, 2, 16, 8),
    (Case((339, 1, 48, 17), 16, 2, d=128, page=64), 64, 2, 2, 2),
    (Case((300, 129), 8, 8, d=128, page=128, per_head=False), 32, 2, 2, 8),
    (Case((333, 32), 16, 4, d=128, page=32, q_dtype=torch.float16), 32, 2, 4, 4),
]


def _gluon_vs(case, step, stages, splits, out_dtype=torch.float32, seed=31, mutate=None, warps=1, **extra):
    q, kc, vc, bt, sl, ks, vs = _make(case, "cuda", seed=seed)
    if mutate is not None:
        mutate(kc, vc, bt, sl)
    # several splits as decode_config runs them: the combine kernel a programmatic dependent launch (the Gluon
    # kernel's signal to it after its loop is kg.PDL_SIGNAL; the l2ef same-bits test below runs 8 splits without PDL)
    cfg = dec.DecodeConfig(**{**GLUON, "num_warps": warps, **extra}, block_n=step, num_stages=stages,
                           num_splits=splits, pdl=splits > 1 and extra.get("merge") != "inline")
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=out_dtype)
    tri = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, num_splits=splits, out_dtype=out_dtype)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    return out, tri, ref, pt


@requires_gpu
@pytest.mark.parametrize("case,step,stages,splits,warps", [c + (1,) for c in GPU_CASES] + GPU_WARP_CASES,
                         ids=lambda x: str(x))
def test_gluon_matches_reference_and_triton(case, step, stages, splits, warps):
    out, tri, ref, pt = _gluon_vs(case, step, stages, splits, warps=warps)
    assert_decode_close(out, ref, pt, max(case.lens), torch.float32)
    torch.testing.assert_close(out, tri, rtol=2.0**-9, atol=2.0**-9)


@requires_gpu
@pytest.mark.parametrize("case,step,stages,splits,warps", GPU_HEADS_CASES, ids=lambda x: str(x))
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16], ids=str)
def test_gluon_heads_matches_reference_and_triton(case, step, stages, splits, warps, out_dtype):
    """heads=True: the same attention as the reference and (within 2^-9, fp32 out) the Triton kernel; each warp's
    rows are its own head's (a head mix-up or a wrong box height would fail both)."""
    out, tri, ref, pt = _gluon_vs(case, step, stages, splits, out_dtype, warps=warps, heads=True)
    assert_decode_close(out, ref, pt, max(case.lens), out_dtype)
    if out_dtype == torch.float32:
        torch.testing.assert_close(out, tri, rtol=2.0**-9, atol=2.0**-9)


@requires_gpu
@pytest.mark.parametrize("heads", [False, True], ids=["one-warp", "heads"])
def test_gluon_fp16_partials(heads):
    """Session 41: the Gluon kernel's fp16 partials (partials="fp16", bf16 output, combine kernel; dec.partials_f16)
    hold O / l without v_descale: against the reference under the bf16 rule as the fp32 ones (the default), the
    plan's partials fp16; and with every V at 448 times a v_descale of 1000 (an output of 448000, beyond fp16)
    nothing overflows."""
    case, step, stages, splits, warps = GPU_HEADS_CASES[2] if heads else GPU_CASES[3] + (1,)
    q, kc, vc, bt, sl, ks, vs = _make(case, "cuda", seed=23)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    cfg = dec.DecodeConfig(**{**GLUON, "num_warps": warps}, block_n=step, num_stages=stages, num_splits=splits,
                           heads=heads, partials="fp16")
    for c, part in ((cfg, torch.float16), (dataclasses.replace(cfg, partials="fp32"), torch.float32)):
        out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=c)
        assert_decode_close(out, ref, pt, max(case.lens), torch.bfloat16)
        plan = _plan_of(c)
        assert plan.part_dtype == part and plan.combine is not None
    vc.fill_(448.0)
    big = torch.tensor(1000.0, device="cuda")
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=big, config=cfg)
    assert torch.equal(out, torch.full_like(out, 448000.0))


@requires_gpu
@pytest.mark.parametrize("case,step,stages,splits,warps", [GPU_CASES[1] + (1,), GPU_CASES[3] + (1,)]
                         + GPU_WARP_CASES[:2] + [(GPU_CASES[3][0], 32, 3, 1, 2)], ids=lambda x: str(x))
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16], ids=str)
def test_gluon_session33_forms_match_reference_and_triton(case, step, stages, splits, warps, out_dtype, monkeypatch):
    """Session 33's row-store epilogue with the PDL signal (kg.ROW_STORE, on in the library since session 34;
    kg.PDL_SIGNAL, off): both switched on, the Gluon kernel meets the reference and the Triton kernel as the default
    form does (one and several splits, 1 and 2 warps, fp32 and bf16 output)."""
    from tritonfp8._kernels import decode_gluon as kg

    monkeypatch.setattr(kg, "ROW_STORE", True)
    monkeypatch.setattr(kg, "PDL_SIGNAL", True)
    monkeypatch.setattr(dec, "_PLANS", {})
    monkeypatch.setattr(dec, "_REPLAYS", {})
    out, tri, ref, pt = _gluon_vs(case, step, stages, splits, out_dtype=out_dtype, warps=warps)
    assert out.dtype == out_dtype
    assert_decode_close(out, ref, pt, max(case.lens), out_dtype)
    if out_dtype == torch.float32:  # the module docstring's rule against the Triton kernel
        torch.testing.assert_close(out, tri, rtol=2.0**-9, atol=2.0**-9)


@requires_gpu
@pytest.mark.parametrize("case,step,stages,splits", [
    (Case((4096, 100, 65), 32, 4, d=128, page=64), 32, 3, 2), (Case((4096, 2000), 64, 8, d=128, page=16), 32, 3, 3),
    (Case((339, 1, 48, 17), 16, 2, d=128, page=64), 32, 3, 1)], ids=lambda x: str(x))
@pytest.mark.parametrize("out_dtype,merge", [(torch.float32, "kernel"), (torch.bfloat16, "kernel"),
                                             (torch.float32, "inline")], ids=str)
def test_gluon_four_warps_capped_row_stores(case, step, stages, splits, out_dtype, merge):
    """4 warps under a 168-register cap (session 36: ``maxnreg=168`` takes the row-store epilogue there, the kernel
    name says ``rowst`` and ``r168``) meet the reference and the Triton kernel as the uncapped form does: one and
    several splits (ragged, empty), the combine kernel and the inline merge, fp32 and bf16 output."""
    out, tri, ref, pt = _gluon_vs(case, step, stages, splits, out_dtype=out_dtype, warps=4, maxnreg=168, merge=merge)
    assert out.dtype == out_dtype
    assert_decode_close(out, ref, pt, max(case.lens), out_dtype)
    if out_dtype == torch.float32:
        torch.testing.assert_close(out, tri, rtol=2.0**-9, atol=2.0**-9)
    name = next(p for k, p in reversed(dec._PLANS.items()) if k[18] is not None and k[18].maxnreg == 168
                and k[18].merge == merge and k[3] == out_dtype).consts["KERNEL_NAME"]
    assert "rowst" in name and "r168" in name, name


@requires_gpu
@pytest.mark.parametrize("case,step,stages,splits,warps", [
    GPU_CASES[1] + (1,), GPU_CASES[3] + (1,), GPU_CASES[4] + (1,), GPU_CASES[5] + (1,), GPU_CASES[7] + (1,),
    GPU_WARP_CASES[1],
    GPU_WARP_CASES[2], (Case((4096, 17, 339, 64), 32, 4, d=128, page=64), 32, 3, 8, 1),
], ids=lambda x: str(x))
def test_gluon_inline_merge_matches_the_combine_kernel(case, step, stages, splits, warps):
    """merge="inline" (session 35): the last split of each (KV head, sequence), found by the acq_rel ticket, merges
    the partials in the Gluon kernel. Against the reference, and against the combine kernel's merge of the same
    partials up to fp32 rounding (the same terms summed in another order: within 2^-16); over repeated calls (the
    full launch, then the replay) the bits stay the same, so each launch left every ticket counter at zero. GQA 1 /
    4 / 8, ragged splits, splits with no tokens, 1 / 2 / 4 warps, bf16 and fp16 queries."""
    q, kc, vc, bt, sl, ks, vs = _make(case, "cuda", seed=17)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    cfg = dec.DecodeConfig(**{**GLUON, "num_warps": warps}, block_n=step, num_stages=stages, num_splits=splits)
    inline = dataclasses.replace(cfg, merge="inline")
    comb = dec.decode_attention(q, kc, vc, bt, sl, config=cfg, **kw)
    outs = [dec.decode_attention(q, kc, vc, bt, sl, config=inline, **kw) for _ in range(3)]
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(outs[0], ref, pt, max(case.lens), torch.float32)
    torch.testing.assert_close(outs[0], comb, rtol=2.0**-16, atol=2.0**-16)
    for o in outs[1:]:
        assert torch.equal(o, outs[0])
    plan = dec._REPLAYS[dec._replay_key(q, kc, vc, bt, sl, ks, vs, None, None, torch.float32, None, inline)][0]
    assert plan.inline == (splits > 1) and plan.combine is None and plan.fast is not None
    assert "splitkvcombine" not in plan.consts["KERNEL_NAME"]


@requires_gpu
@pytest.mark.parametrize("splits,warps", [(8, 1), (1, 2)])
def test_gluon_l2_evict_first_gives_the_same_bits(splits, warps):
    """The evict-first hints change only where the K/V lines sit in L2: the hinted Gluon kernel gives the unhinted
    one's bits (the split form with its combine, and the 2-warp one-split form), and its compiled PTX carries them."""
    case = Case((4096, 17, 339, 64), 32, 4, d=128, page=64)
    q, kc, vc, bt, sl, ks, vs = _make(case, "cuda", seed=5)
    cfg = dec.DecodeConfig(**{**GLUON, "num_warps": warps}, block_n=32, num_stages=3, num_splits=splits)
    hinted_cfg = dataclasses.replace(cfg, l2_evict_first=True)
    kw = dict(k_descale=ks, v_descale=vs)
    base = dec.decode_attention(q, kc, vc, bt, sl, config=cfg, **kw)
    for _ in range(2):  # the full path, then the replay
        assert torch.equal(dec.decode_attention(q, kc, vc, bt, sl, config=hinted_cfg, **kw), base)
    rkey = dec._replay_key(q, kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, None, hinted_cfg)
    kernel = dec._REPLAYS[rkey][0].fast[0][0]
    assert kernel.metadata.name.endswith("_l2ef") and "L2::cache_hint" in kernel.asm["ptx"]


@requires_gpu
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
def test_gluon_output_dtypes(out_dtype):
    case = Case((1, 17, 339), 8, 2, d=128, page=16)
    out, tri, ref, pt = _gluon_vs(case, 32, 3, 1, out_dtype=out_dtype)
    assert out.dtype == out_dtype
    assert_decode_close(out, ref, pt, 339, out_dtype)


@requires_gpu
def test_gluon_bad_pages_and_nan_garbage_are_not_read():
    """Table entries outside [0, num_blocks) in full and partial steps read as masked (zero boxes, -inf scores);
    NaN bytes in the unwritten slots of a sequence's last page (past seq_len) do not reach the output."""
    case = Case((200, 150), 8, 2, d=128, page=16)

    def mutate(kc, vc, bt, sl):
        nb = kc.shape[0]
        bt[0, 3] = nb + 5  # a full step's page
        bt[1, 9] = -2  # the partial last step's page (tokens 144..149)
        last = bt[0, 199 // 16].item()
        kc[last, 200 % 16:] = float("nan")
        vc[last, 200 % 16:] = float("nan")

    q, kc, vc, bt, sl, ks, vs = _make(case, "cuda", seed=7)
    mutate(kc, vc, bt, sl)
    for step, stages, splits, warps, heads in ((64, 2, 1, 1, False), (32, 3, 3, 1, False), (32, 3, 1, 2, False),
                                               (32, 2, 2, 4, False), (32, 2, 3, 2, True), (64, 2, 1, 2, True)):
        cfg = dec.DecodeConfig(**{**GLUON, "num_warps": warps}, block_n=step, num_stages=stages, num_splits=splits,
                               heads=heads)
        out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32)
        tri = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, num_splits=splits,
                                   out_dtype=torch.float32, config=dataclasses.replace(
                                       dec.DecodeConfig(), kv_load="tma", loop="tail", num_splits=splits))
        assert not torch.isnan(out).any()
        torch.testing.assert_close(out, tri, rtol=2.0**-9, atol=2.0**-9)


@requires_gpu
def test_gluon_empty_sequences_and_splits():
    """seq_len 0 (every split empty) and more splits than steps (empty splits among full ones) give zeros / merge
    to nothing; prepared in session 23 after its last device call."""
    case = Case((0, 40, 5), 8, 2, d=128, page=16)
    for splits, warps, heads in ((1, 1, False), (6, 1, False), (1, 4, False), (3, 2, False), (1, 2, True),
                                 (6, 2, True)):
        out, tri, ref, pt = _gluon_vs(case, 32, 3, splits, seed=11, warps=warps, heads=heads)
        assert torch.equal(out[0], torch.zeros_like(out[0]))
        assert_decode_close(out, ref, pt, 40, torch.float32)
        torch.testing.assert_close(out, tri, rtol=2.0**-9, atol=2.0**-9)


@requires_gpu
def test_gluon_strided_block_table():
    """A block table whose rows are not contiguous (every other column of a wider one) reads the same pages
    (prepared in session 23 after its last device call)."""
    case = Case((339, 17, 64), 8, 2, d=128, page=16)
    q, kc, vc, bt, sl, ks, vs = _make(case, "cuda", seed=9)
    wide = torch.full((bt.shape[0], 2 * bt.shape[1]), -7, dtype=torch.int32, device="cuda")
    wide[:, ::2] = bt
    strided = wide[:, ::2]
    assert strided.stride(1) == 2
    cfg = dec.DecodeConfig(**GLUON, block_n=32, num_stages=3, num_splits=2)
    out = dec.decode_attention(q, kc, vc, strided, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32)
    ref = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32)
    assert torch.equal(out, ref)


@requires_gpu
def test_gluon_refuses_what_it_cannot_run():
    for case, match in ((Case((17,), 16, 1, d=128, page=16), "<= 8"), (Case((17,), 4, 1, d=64, page=16), "D = 128"),
                        (Case((17,), 2, 1, d=128, page=16, sq=2), "Sq = 1")):
        q, kc, vc, bt, sl, ks, vs = _make(case, "cuda")
        with pytest.raises(ValueError, match=match):
            dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=dec.DecodeConfig(**GLUON))


def test_heuristic_gluon_rule():
    """decode_config(gluon=True) takes the Gluon kernel for long contexts (>= GLUON_MIN_CONTEXT) at >= 8 pairs and
    <= 8 rows, with about GLUON_PROGRAMS programs, and so from GLUON_L2EF_MIN_CONTEXT with
    the evict-first hints up to GLUON_L2EF_MAX_PAIRS pairs whose K and V fit L2EF_MAX_BYTES; with 2 warps and one
    split for 256-512 pairs from GLUON_WARPS_MIN_CONTEXT; never without gluon=True, a TMA page, or for short
    contexts."""
    def cfg(b, ctx, rows=4, page=16, gluon=True, **kw):
        kw.setdefault("kv_bytes", 2 * b * ctx * 8 * 128)
        return dec.decode_config(b, 8, rows, ctx, 132, tma_page=page, gluon=gluon, **kw)

    for b, splits in ((32, 2), (64, 1), (128, 1)):
        for page in (16, 64):
            c = cfg(b, 32768, page=page)
            assert (c.kernel, c.num_splits, c.block_n, c.num_stages, c.merge, c.pdl, c.heads) == (
                "gluon", splits, 32, 3, "kernel", splits > 1, False)
    # session 38: up to GLUON_HEADS_MAX_PAIRS (128) pairs with Hkv a multiple of 4, the heads form (4 warps on 4 KV
    # heads, 2 slots) at about GLUON_HEADS_PROGRAMS (256) programs: 16 splits at 64 pairs, 8 at 128; hinted as the
    # rule it replaces (unhinted here: K and V over L2EF_MAX_BYTES)
    assert (dec.GLUON_HEADS_MAX_PAIRS, dec.GLUON_HEADS_WARPS, dec.GLUON_HEADS_PROGRAMS) == (128, 4, 256)
    for b, splits in ((8, 16), (16, 8)):
        for page in (16, 64):
            c = cfg(b, 32768, page=page)
            assert (c.kernel, c.heads, c.num_warps, c.num_splits, c.block_n, c.num_stages, c.merge, c.pdl,
                    c.l2_evict_first) == ("gluon", True, 4, splits, 32, 2, "kernel", True, False), (b, c)
    assert not dec.decode_config(8, 6, 4, 32768, 132, tma_page=16, gluon=True).heads  # Hkv 6: one-warp form
    h4 = dec.decode_config(16, 4, 4, 32768, 132, tma_page=16, gluon=True)  # Hkv 4: one program per (split, seq)
    assert (h4.heads, h4.num_warps, h4.num_splits) == (True, 4, 16)
    assert cfg(8, 32768, num_splits=5).num_splits == 5 and cfg(8, 32768, num_splits=5).heads
    assert cfg(8, dec.GLUON_MIN_CONTEXT).kernel == "gluon" and not cfg(8, dec.GLUON_MIN_CONTEXT).l2_evict_first
    # the hinted rule (session 34, widened in session 35): 64 .. GLUON_L2EF_MAX_PAIRS (128) pairs,
    # ctx >= GLUON_L2EF_MIN_CONTEXT, K and V within L2EF_MAX_BYTES (which at D = 128 ends
    # it at ctx 4096 for 128 pairs and ctx 8192 for 64); the same config with the hints
    assert dec.GLUON_L2EF_MAX_PAIRS == 128
    top = dec.GLUON_L2EF_MAX_PAIRS // 8
    for b, ctx in ((8, dec.GLUON_L2EF_MIN_CONTEXT), (8, 8192), (top, 4096)):
        for page in (16, 64):
            for rows in (4, 8):
                c = cfg(b, ctx, rows=rows, page=page)
                assert (c.kernel, c.heads, c.num_warps, c.num_splits, c.block_n, c.num_stages, c.pdl,
                        c.l2_evict_first) == ("gluon", True, 4, 1024 // (8 * b), 32, 2, True, True), (b, ctx, c)
                # the same pairs with Hkv 2 (not a multiple of 4): the one-warp kernel at GLUON_PROGRAMS programs
                one = dec.decode_config(4 * b, 2, rows, ctx, 132, tma_page=page, gluon=True, kv_bytes=1 << 20)
                assert (one.kernel, one.heads, one.num_warps, one.num_splits) == (
                    "gluon", False, 1, dec.GLUON_PROGRAMS // (8 * b))
    assert cfg(8, dec.GLUON_L2EF_MIN_CONTEXT - 1).kernel == "triton"
    assert cfg(8, 8193).kernel == "triton" and cfg(top, 4097).kernel == "triton"  # over the byte bound
    small = dict(kv_bytes=1 << 20)  # bytes within the bound: the pairs and context bounds themselves
    assert cfg(top + 1, 4096, **small).kernel == "triton"  # 136 pairs
    assert cfg(8, dec.GLUON_MIN_CONTEXT - 1, **small).l2_evict_first
    long = cfg(8, dec.GLUON_MIN_CONTEXT, **small)  # the long-context rule from there: hinted as the bytes say
    assert (long.kernel, long.num_splits, long.l2_evict_first) == ("gluon", 16, True)
    assert cfg(top + 1, dec.GLUON_MIN_CONTEXT, **small).kernel == "gluon"  # ... at any pairs from 64
    assert cfg(8, dec.GLUON_L2EF_MIN_CONTEXT, rows=16).kernel == "triton"
    big = dict(kv_bytes=dec.L2EF_MAX_BYTES + 1)  # K and V over the hints' bound: the Triton kernel, unhinted
    assert dec.decode_config(8, 8, 4, 4096, 132, tma_page=64, gluon=True, **big).kernel == "triton"
    assert dec.decode_config(8, 8, 4, 4096, 132, tma_page=64, gluon=True).kernel == "triton"  # bytes unknown
    assert cfg(8, 4096, page=None).kernel == "triton" and cfg(8, 4096, gluon=False).kernel == "triton"
    # 256-512 pairs, GLUON_WARPS_MIN_CONTEXT <= ctx < GLUON_WARPS_MAX_CONTEXT, any TMA page: 2 warps, one split
    for b, ctx in ((32, 4096), (64, 4096), (32, dec.GLUON_WARPS_MAX_CONTEXT - 1)):
        for page in (16, 32, 64, 128):
            for rows in (4, 8):
                c = cfg(b, ctx, rows=rows, page=page)
                assert (c.kernel, c.num_warps, c.num_splits, c.block_n, c.num_stages, c.merge, c.pdl) == (
                    "gluon", 2, 1, 32, 2, "kernel", False)
    assert cfg(32, 4096, page=64, num_splits=1).num_warps == 2
    assert cfg(32, 4096, page=64, num_splits=2).kernel == "triton"  # a caller's splits other than one
    assert cfg(32, 4096, page=16, num_splits=4).kernel == "triton"
    assert cfg(32, dec.GLUON_WARPS_MIN_CONTEXT - 1, page=64).kernel == "triton"
    assert cfg(32, dec.GLUON_WARPS_MAX_CONTEXT, page=64).kernel == "triton"
    assert cfg(128, 4096, page=64).kernel == "triton"  # 1024 pairs
    assert cfg(16, 4096, page=64).heads  # 128 pairs: the hinted rule (heads form, 8 splits)
    assert cfg(32, 4096, rows=16, page=64).kernel == "triton"
    assert cfg(32, 4096, page=64, gluon=False).kernel == "triton"
    assert cfg(32, dec.GLUON_MIN_CONTEXT).num_warps == 1  # the long-context rule (256 pairs: one warp)
    # session 41: from GLUON_LONG_MIN_PAIRS (8) pairs at ctx >= GLUON_MIN_CONTEXT, from GLUON_MIN_PAIRS (32) under it
    # (the hinted rule); the heads form at about 1024 triples (at most MAX_SPLITS splits), the one-warp form where Hkv
    # is not a multiple of 4
    assert (dec.GLUON_MIN_PAIRS, dec.GLUON_LONG_MIN_PAIRS, dec.MAX_SPLITS) == (32, 8, 64)
    for b, ctx, splits in ((1, 32768, 64), (2, dec.GLUON_MIN_CONTEXT, 64), (4, 4096, 32), (4, 8192, 32)):
        c = cfg(b, ctx)
        assert (c.kernel, c.heads, c.num_warps, c.num_splits, c.l2_evict_first) == (
            "gluon", True, 4, splits, 2 * b * ctx * 8 * 128 <= dec.L2EF_MAX_BYTES), (b, ctx, c)
    one = dec.decode_config(16, 2, 4, 4096, 132, tma_page=64, gluon=True, kv_bytes=1 << 20)  # 32 pairs, Hkv 2
    assert (one.kernel, one.heads, one.num_warps, one.num_splits) == ("gluon", False, 1, 16)
    one = dec.decode_config(4, 2, 4, 32768, 132, tma_page=16, gluon=True)  # 8 pairs, Hkv 2
    assert (one.kernel, one.heads, one.num_splits) == ("gluon", False, 64)
    assert cfg(1, dec.GLUON_MIN_CONTEXT - 1).kernel == "triton"  # 8 pairs under GLUON_MIN_CONTEXT
    assert cfg(3, 4096).kernel == "triton"  # 24 pairs under GLUON_MIN_CONTEXT
    assert dec.decode_config(1, 4, 4, 32768, 132, tma_page=16, gluon=True).kernel == "triton"  # 4 pairs
    assert cfg(8, 32768, rows=16).kernel == "triton"  # GQA 8 x Sq 2
    assert cfg(8, 32768, gluon=False).kernel == "triton"
    assert cfg(8, 32768, page=None).kernel == "triton"
    assert cfg(8, 32768, num_splits=5).num_splits == 5  # a caller's splits are kept


@requires_gpu
def test_gluon_heuristic_under_cuda_graph_capture():
    """The heuristic's Gluon plan (B 8, 16384 tokens: 8 splits and the combine kernel) replays, captures into a CUDA
    graph (its per-call partials allocate from the graph's pool), and the graph's replay with new q equals an eager
    call."""
    case = Case((16384,) * 8, 32, 8, d=128, page=16)
    q, kc, vc, bt, sl, ks, vs = _make(case, "cuda", seed=5)
    kw = dict(k_descale=ks, v_descale=vs)
    dec._PLANS.clear()
    dec._REPLAYS.clear()
    dec.decode_attention(q, kc, vc, bt, sl, **kw)
    assert [p.gluon for p in dec._PLANS.values()] == [True]
    assert_graph_replay_equals_eager(q, kc, vc, bt, sl, kw)


def test_gluon_plan_fields(monkeypatch):
    """The plan the Gluon config builds (no launch: the device checks are stubbed): grid (splits, Hkv, B), the
    kernel's constexprs, the [box, 128] descriptors' geometry, the combine launch as a PDL, the kernel name."""
    from tritonfp8 import _backend
    from tritonfp8._kernels import decode_gluon as kg

    monkeypatch.setattr(dec, "gluon_available", lambda device: True)
    monkeypatch.setattr(_backend, "arch_of", lambda device: 90)
    nb, page, hkv, d, bsz, hq = 40, 16, 2, 128, 3, 8
    kstr = (page * hkv * d, hkv * d, d, 1)
    cfg = dec.DecodeConfig(**GLUON, block_n=64, num_stages=2, num_splits=5, pdl=True)
    key = (torch.device("cpu"), torch.bfloat16, torch.float8_e4m3fn, torch.bfloat16, bsz, 1, hq, hkv, d, page, 20, nb,
           kstr, kstr, True, False, 320, None, cfg, "cutlass", True)
    p = dec._plan(key)
    assert p.gluon and p.grid == (5, hkv, bsz) and p.splits == 5 and not p.inline
    assert {k: p.consts[k] for k in ("GROUP", "PAGE", "BOX", "STEP", "STAGES", "K_DESCALE_STRIDE",
                                     "V_DESCALE_STRIDE", "Q_POW2_SCALE", "WRITE_PARTIAL", "num_warps")} == dict(
        GROUP=4, PAGE=16, BOX=16, STEP=64, STAGES=2, K_DESCALE_STRIDE=1, V_DESCALE_STRIDE=0, Q_POW2_SCALE=True,
        WRITE_PARTIAL=True, num_warps=1)
    assert p.tma == ((nb * page, hkv * d), (hkv * d, 1), [16, d], 0)
    assert p.combine_grid == (hq, 1, bsz) and p.combine_consts["PDL"] and p.combine_consts["launch_pdl"]
    assert p.consts["KERNEL_NAME"].startswith("cutlass_sm90_decode_e4m3_bf16_f32_bf16_8x64x128_w1s2_pagedsplitkvcombine")
    one = dec._plan(key[:17] + (1, dataclasses.replace(cfg, num_splits=1)) + key[19:])
    assert one.combine is None and not one.consts["WRITE_PARTIAL"]
    # fp32 partials by default; fp16 with partials="fp16" (session 41: a bf16 output merged by the combine kernel,
    # which applies the per-tensor v_descale of this key to the query heads' GQA group of 4)
    assert p.part_dtype == torch.float32 and p.consts["KERNEL_NAME"].endswith("_rowst") and p.group == 4
    assert "_decodecombine_f32_bf16_" in p.combine_consts["KERNEL_NAME"] and p.combine_consts["V_DESCALE_STRIDE"] == 0
    f16 = dec._plan(key[:18] + (dataclasses.replace(cfg, partials="fp16"),) + key[19:])
    assert f16.part_dtype == torch.float16 and "_decodecombine_f16_bf16_" in f16.combine_consts["KERNEL_NAME"]
    assert f16.consts["KERNEL_NAME"] == p.consts["KERNEL_NAME"] + "_f16part"
    two = dec._plan(key[:18] + (dataclasses.replace(cfg, num_warps=2),) + key[19:])
    assert two.consts["num_warps"] == 2 and two.grid == (5, hkv, bsz)
    # session 33's forms (kg.ROW_STORE, on by default since session 34; kg.PDL_SIGNAL, off): the plan passes them and
    # names them
    assert p.consts["ROW_STORE"] and two.consts["ROW_STORE"] and not p.consts["PDL"]  # 1 and 2 warps: row stores
    assert "_rowst" in p.consts["KERNEL_NAME"] and "_pdl" not in p.consts["KERNEL_NAME"]
    with monkeypatch.context() as m:
        m.setattr(kg, "ROW_STORE", False)
        off = dec._plan(key)
        assert not off.consts["ROW_STORE"] and "rowst" not in off.consts["KERNEL_NAME"]
        m.setattr(kg, "ROW_STORE", True)
        m.setattr(kg, "PDL_SIGNAL", True)
        s33 = dec._plan(key)
        assert s33.consts["ROW_STORE"] and s33.consts["PDL"] and "_rowst_pdl" in s33.consts["KERNEL_NAME"]
        assert not dec._plan(key[:17] + (1, dataclasses.replace(cfg, num_splits=1)) + key[19:]).consts["PDL"]
        assert not dec._plan(key[:18] + (dataclasses.replace(cfg, num_warps=4),) + key[19:]).consts["ROW_STORE"]
    assert "_8x64x128_w2s2_" in two.consts["KERNEL_NAME"]
    assert p.consts["L2_HINT"] == 0 and "l2ef" not in p.consts["KERNEL_NAME"].split("_")
    hinted = dec._plan(key[:18] + (dataclasses.replace(cfg, l2_evict_first=True),) + key[19:])
    from tritonfp8._kernels import l2hint

    assert hinted.consts["KERNEL_NAME"] == p.consts["KERNEL_NAME"] + "_l2ef"
    assert hinted.consts["L2_HINT"] == l2hint.VERSION and l2hint.tagged(hinted.consts["KERNEL_NAME"])
    # merge="inline" (session 35): no combine launch (and no PDL, which only the combine launch takes), one ticket
    # counter per (sequence, KV head), the merge's constants (GQA 4 at one warp: 4 rows, the 5 splits in one round
    # of 8), the Triton kernel's inline schedule name; the plain form passes MERGE_ROUNDS = 0 (no merge code)
    assert p.consts["MERGE_ROUNDS"] == 0 and p.counters_n == 0
    inl = dec._plan(key[:18] + (dataclasses.replace(cfg, merge="inline", pdl=False),) + key[19:])
    assert inl.inline and inl.combine is None and inl.counters_n == bsz * hkv
    assert {k: inl.consts[k] for k in ("MERGE_ROWS", "MERGE_CHUNK", "MERGE_ROUNDS")} == dict(
        MERGE_ROWS=4, MERGE_CHUNK=8, MERGE_ROUNDS=1)
    assert inl.consts["KERNEL_NAME"] == p.consts["KERNEL_NAME"].replace("pagedsplitkvcombine", "pagedsplitkv")
    one_inl = dec._plan(key[:17] + (1, dataclasses.replace(cfg, num_splits=1, merge="inline", pdl=False)) + key[19:])
    assert not one_inl.inline and one_inl.consts["MERGE_ROUNDS"] == 0 and one_inl.counters_n == 0
    # heads=True (session 38): one program per (split, pair of KV heads, sequence), the 3-D descriptors' box
    # height (the plan's fourth tma entry), the row stores, the name's ``heads`` field; Hkv not a multiple of the
    # warps is refused
    hd = dec._plan(key[:18] + (dataclasses.replace(cfg, num_warps=2, heads=True),) + key[19:])
    assert hd.grid == (5, 1, bsz) and hd.tma[3] == 2 and hd.consts["HEADS"] and hd.consts["ROW_STORE"]
    assert hd.consts["KERNEL_NAME"] == two.consts["KERNEL_NAME"] + "_heads" and not two.consts["HEADS"]
    assert hd.combine_grid == (hq, 1, bsz)
    with pytest.raises(ValueError, match="heads=True needs Hkv a multiple of num_warps, got Hkv = 2, num_warps = 4"):
        dec._plan(key[:18] + (dataclasses.replace(cfg, num_warps=4, heads=True),) + key[19:])


def test_gluon_merge_consts():
    """The inline merge's tile: the group's rows rounded up to a power of two and at least the warps (the merge
    tile's warps sit on rows); splits per round as the Triton kernel's merge_chunk (<= 128 fp32 registers per
    thread at one warp, 64 from 2), never more than the splits' power of two; the rounds cover every split."""
    from tritonfp8._kernels import decode_gluon as kg

    assert kg.merge_consts(8, 1, 8) == dict(MERGE_ROWS=8, MERGE_CHUNK=4, MERGE_ROUNDS=2)
    assert kg.merge_consts(4, 1, 8) == dict(MERGE_ROWS=4, MERGE_CHUNK=8, MERGE_ROUNDS=1)
    assert kg.merge_consts(3, 1, 16) == dict(MERGE_ROWS=4, MERGE_CHUNK=8, MERGE_ROUNDS=2)
    assert kg.merge_consts(1, 4, 3) == dict(MERGE_ROWS=4, MERGE_CHUNK=4, MERGE_ROUNDS=1)
    assert kg.merge_consts(8, 2, 7) == dict(MERGE_ROWS=8, MERGE_CHUNK=4, MERGE_ROUNDS=2)
    assert kg.merge_consts(4, 1, 0) == dict(MERGE_ROWS=0, MERGE_CHUNK=1, MERGE_ROUNDS=0)
    for group in range(1, 9):
        for warps in (1, 2, 4):
            for splits in range(1, 40):
                c = kg.merge_consts(group, warps, splits)
                assert c["MERGE_ROWS"] >= max(group, warps) and c["MERGE_CHUNK"] * c["MERGE_ROUNDS"] >= splits
                assert c["MERGE_CHUNK"] * (c["MERGE_ROUNDS"] - 1) < splits  # no round of masked splits only
                regs = c["MERGE_ROWS"] // warps * c["MERGE_CHUNK"] * 4  # fp32 partials per thread and round
                assert regs <= (128 if warps == 1 else 64), (group, warps, splits, c)


def test_gluon_heuristic_needs_one_new_token(monkeypatch):
    """GQA 4 x Sq 2 is 8 rows, within the rule's bound, but the Gluon kernel takes one new token (no causal masks):
    the planned default stays on the Triton kernel, and a pinned Gluon config is refused by name."""
    from tritonfp8 import _backend

    monkeypatch.setattr(dec, "gluon_available", lambda device: True)
    monkeypatch.setattr(_backend, "arch_of", lambda device: 90)
    page, hkv, d, nb = 16, 8, 128, 8 * 2048
    kstr = (page * hkv * d, hkv * d, d, 1)
    for sq, want in ((1, True), (2, False)):
        key = (torch.device("cpu"), torch.bfloat16, torch.float8_e4m3fn, torch.bfloat16, 8, sq, 32, hkv, d, page,
               2048, nb, kstr, kstr, True, True, 32768, None, None, "cutlass", True)
        assert dec._plan(key).gluon is want
    key = key[:18] + (dec.DecodeConfig(**GLUON),) + key[19:]
    with pytest.raises(ValueError, match="Sq = 1"):
        dec._plan(key)
