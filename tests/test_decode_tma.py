"""K/V pages read by TMA (``DecodeConfig(kv_load="tma")``, issue 6).

The variant loads each page's [page, D] K and V tile (or a [block_n, D] sub-box of a page) as one TMA box of the
cache viewed as [num_blocks * page, Hkv * D]; products, roundings and masks are the gather path's, so in the
interpreter it must give the gather path's split loop (``loop="tail"``, same block_n) bit for bit, and it meets
tests/test_decode.py's tolerance rule against the reference (stated there once). Cases: shuffled pages, seq lens
1, 17, 339 (and 4096 on the GPU), GQA 1/4/8, Sq > 1, splits (ranges starting mid-page with sub-boxes), 1, 2 and 4
pages per step, bad page ids in full steps, NaN bytes in the unwritten slots of a last page, and the layouts that
fall back to the gather path. The GPU test compares with the default path at the benchmark's sizes.
"""

from __future__ import annotations

import pytest
import torch

from conftest import requires_gpu
from test_decode import Case, _make, assert_decode_close
from tritonfp8 import decode as dec

# (case, block_n, splits): page 16 / 32 / 64 with sub-boxes (block_n < page), one page and several pages per step
TMA_CASES = [
    (Case((1, 17, 339), 2, 2, page=64), 32, None),  # GQA 1, sub-boxes of half a page
    (Case((1, 17, 339), 8, 2, page=16), 32, None),  # GQA 4, two pages per step
    (Case((339, 17), 8, 1, page=16, sq=3), 64, 3),  # GQA 8, four pages per step, causal tail, splits
    (Case((339, 1, 130), 4, 1, page=64, sq=2), 16, 5),  # splits starting mid-page (16-token sub-boxes)
    (Case((129, 64), 4, 2, page=32), 32, 2),  # one page per step, a split boundary on a page boundary
]


@pytest.fixture(autouse=True)
def _fresh_plans(monkeypatch):
    """Every decode call plans anew (an empty plan cache), so the newest plan is the one the call used."""
    monkeypatch.setattr(dec, "_PLAN_CACHE_SIZE", 1)
    dec._PLANS.clear()


def _tma_plan_used() -> bool:
    """Whether the last decode call ran the TMA kernel (with _fresh_plans: its plan is the only one cached)."""
    assert len(dec._PLANS) == 1
    return next(iter(dec._PLANS.values())).tma is not None


def _assert_same(a, b, device):
    """Bit for bit in the interpreter (the same arithmetic in the same order); on the GPU two compiled kernels
    may contract or order fp32 work differently: within 2^-9 (a few fp32 ulps of P rounded to fp16)."""
    if device == "cpu":
        assert torch.equal(a, b)
    else:
        torch.testing.assert_close(a, b, rtol=2.0**-9, atol=2.0**-9)


def _both(q, kc, vc, bt, sl, ks, vs, cfg, load="tma", **kw):
    outs = []
    for kv_load in ("gather", load):
        c = dec.DecodeConfig(**{**cfg, "loop": "tail", "kv_load": kv_load})
        outs.append(dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=c, **kw))
        assert _tma_plan_used() == (kv_load != "gather")
    return outs


@pytest.mark.parametrize("load", ["tma", "tmat"])
@pytest.mark.parametrize("case,block_n,splits", TMA_CASES, ids=lambda x: str(x))
def test_tma_matches_gather_and_reference(case, block_n, splits, load, device):
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=21)
    gather, tma = _both(q, kc, vc, bt, sl, ks, vs, {"block_n": block_n, "num_splits": splits or 1}, load,
                        out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(tma, ref, pt, max(case.lens), torch.float32)
    _assert_same(gather, tma, device)


def test_tma_bad_pages_and_nan_garbage_are_not_read(device):
    """Page ids outside [0, num_blocks) inside full steps are skipped; the unwritten slots of each sequence's last
    page hold NaN bytes (E4M3 0x7F), which neither K nor V may let through (V rows past the length are zeroed).
    The NaN half bites on the GPU only: the Triton 3.6 interpreter casts E4M3 0x7F to fp16 480 (finite; measured),
    and finite garbage times P = 0 is 0."""
    case = Case((100, 70), 4, 1, page=32)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=22)
    kc, vc, bt = kc.clone(), vc.clone(), bt.clone()
    for b, n in enumerate(case.lens):
        last = int(bt[b, (n - 1) // case.page])
        assert n % case.page, "the last page must be partly filled"
        for c in (kc, vc):
            c.view(torch.uint8)[last, n % case.page:] = 0x7F
    bt[0, 1] = kc.shape[0] + 5
    bt[1, 0] = -3
    gather, tma = _both(q, kc, vc, bt, sl, ks, vs, {"block_n": 32}, out_dtype=torch.float32)
    assert not torch.isnan(tma).any()
    _assert_same(gather, tma, device)


def test_tma_falls_back_to_gather_where_tma_cannot_address(device):
    """Padded head strides (K and V alike, so one view would do, but rows are not D apart), distinct K/V strides,
    a 16-bit cache and more than 8 pages per step run the gather path, with the same result."""
    case = Case((70, 33), 4, 2, page=16)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=23)
    cfg = dec.DecodeConfig(block_n=32, kv_load="tma")
    f32 = {"k_descale": ks, "v_descale": vs, "config": cfg, "out_dtype": torch.float32}
    base = dec.decode_attention(q, kc, vc, bt, sl, **f32)
    assert _tma_plan_used()
    wide = torch.zeros(2, *kc.shape[:2], 2 * kc.shape[2], kc.shape[3], dtype=kc.dtype, device=kc.device)
    wide[0, :, :, ::2], wide[1, :, :, ::2] = kc, vc
    strided = dec.decode_attention(q, wide[0, :, :, ::2], wide[1, :, :, ::2], bt, sl, **f32)
    assert not _tma_plan_used()
    _assert_same(strided, base, device)
    vw = torch.zeros_like(wide[1])
    vw[:, :, ::2] = vc
    mixed = dec.decode_attention(q, kc, vw[:, :, ::2], bt, sl, **f32)
    assert not _tma_plan_used()
    _assert_same(mixed, base, device)
    many = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs,
                                config=dec.DecodeConfig(block_n=256, kv_load="tma"))
    assert not _tma_plan_used()
    assert not torch.isnan(many).any()
    kh = (kc.float() * ks.reshape(1, 1, -1, 1)).half()
    vh = (vc.float() * vs.reshape(1, 1, -1, 1)).half()
    assert torch.isfinite(dec.decode_attention(q.half(), kh, vh, bt, sl, config=cfg)).all()
    assert not _tma_plan_used()


def test_kv_load_option_is_validated():
    with pytest.raises(ValueError, match="kv_load"):
        dec.DecodeConfig(kv_load="bulk")
    for load in ("tma", "tmat"):
        with pytest.raises(ValueError, match=f"kv_load='{load}'"):
            dec.DecodeConfig(kv_load=load, dot="fp8t", block_n=128)


@requires_gpu
@pytest.mark.parametrize("load", ["tma", "tmat"])
@pytest.mark.parametrize("hq,hkv", [(8, 8), (32, 8), (64, 8)])
@pytest.mark.parametrize("page,block_n,warps", [(64, 128, 4), (64, 64, 4), (64, 64, 2), (64, 32, 1), (16, 32, 4)])
def test_tma_gpu_matches_default(hq, hkv, page, block_n, warps, load):
    """H200: random (shuffled) block tables, seq lens 1, 17, 339, 4096, GQA 1/4/8; the variant against the default
    path (same tolerance as the two against the reference) and against the reference."""
    lens = [1, 17, 339, 4096]
    g = torch.Generator().manual_seed(24)
    kc, vc, bt, sl, ks, vs = dec.random_paged_cache(lens, hkv, 128, page, device="cuda", generator=g)
    q = torch.randn(len(lens), 1, hq, 128, generator=g).to(device="cuda", dtype=torch.bfloat16)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    default = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    for splits in (1, 4):
        cfg = dec.DecodeConfig(block_n=block_n, num_warps=warps, kv_load=load, num_splits=splits)
        out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32)
        assert _tma_plan_used()
        assert_decode_close(out, ref, pt, max(lens), torch.float32)
        assert_decode_close(out, ref, default, max(lens), torch.float32)


@requires_gpu
def test_heuristic_long_context_takes_tma_on_gpu():
    """H200: the heuristic's long-context rule (B x Hkv >= 256, ctx >= 16384, pages of 64) runs the TMA kernel;
    against the reference and against the gather heuristic forced by an explicit config. Shuffled pages, ragged
    lengths up to 16384, some of them short."""
    b, hkv, hq = 32, 8, 32
    g = torch.Generator().manual_seed(25)
    lens = [16384, 1, 17, 339, 16383] + torch.randint(1, 16385, (b - 5,), generator=g).tolist()
    kc, vc, bt, sl, ks, vs = dec.random_paged_cache(lens, hkv, 128, 64, device="cuda", generator=g)
    q = torch.randn(b, 1, hq, 128, generator=g).to(device="cuda", dtype=torch.bfloat16)
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    assert _tma_plan_used()
    gather_cfg = dec.decode_config(b, hkv, hq // hkv, bt.shape[1] * 64)
    gather = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=gather_cfg,
                                  out_dtype=torch.float32)
    assert not _tma_plan_used()
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(out, ref, pt, max(lens), torch.float32)
    assert_decode_close(out, ref, gather, max(lens), torch.float32)


def test_tma_variant_sass_sm90():
    """Offline sm_90 (no GPU): the variants' page tiles are TMA loads (UTMALDG; the gather path has none), the
    heuristic's page-64 shape (16 rows, 2 pages x 64 tokens, 4 warps) and the one-page split-KV kernel compile
    without spills, and the full-step loop issues fewer warp-instructions per cache token than the default's loop
    (4 warps x 128 gathered tokens), "tmat" fewer than "tma"."""
    from test_decode_loop import _loop_reports

    base, tma, tmat, split = _loop_reports("decode_e4m3_gqa4_page64_bn128", "decode_e4m3_gqa4_page64_tma_bn128",
                                           "decode_e4m3_gqa4_page64_tmat_bn128", "decode_e4m3_gqa8_page64_tmat_splitkv")
    assert base["utmaldg"] == 0
    for r in (tma, tmat, split):
        assert r["utmaldg"] > 0, r
        assert r["spill_stores"] == r["spill_loads"] == 0, r
        assert len(r["loops"]) == 2, r["loops"]  # full steps, then the masked tail
    per_token = [r["loops"][0]["per_token"] for r in (base, tma, tmat)]
    assert per_token[2] < per_token[1] < per_token[0], per_token  # measured 35.6, 29.9, 26.9
    assert tmat["loops"][0]["ops"].get("HGMMA", 0) > 0  # O^T = V^T.P^T as wgmma


def test_bench_tma_variants_run(monkeypatch, device):
    """The `bench decode --variants` entries build valid configs; one is swept next to the heuristic on a page-64
    shape (bookkeeping only here: the interpreter and a stand-in timer), and its rows record kv_load."""
    import argparse

    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import decode as suite

    tma = {k: v for k, v in suite.VARIANTS.items() if v.get("kv_load") in ("tma", "tmat")}
    assert len(tma) >= 6
    for over in tma.values():
        dec.DecodeConfig(**{k: v for k, v in over.items() if k not in ("names", "splits_factor")})
    monkeypatch.setattr(H, "time_once", lambda fn, *a, **k: (fn(), 1.0)[1])
    monkeypatch.setattr(suite, "_DEVICE", device)
    args = argparse.Namespace(variant_names="tmabn64", variant_cases="1:200:8:64", repeats=1)
    rows = suite._run_variants(args, H, H.make_console())
    assert {r["variant"]: r["kv_load"] for r in rows} == {"heuristic": "gather", "tmabn64": "tma"}
