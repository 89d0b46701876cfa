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

import dataclasses

import pytest
import torch

from conftest import HAS_CUDA, requires_gpu
from test_decode import Case, _make, assert_decode_close
from test_direct import fake_cuda  # noqa: F401 (the fixture)
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
    """Every decode call plans anew (an empty plan cache), so the newest plan is the one the call used. The replay
    cache is cleared too: on the GPU a call whose metadata equals an earlier test's replays that plan without
    planning (seen under pytest -n 4, where another order of the tests left such an entry)."""
    monkeypatch.setattr(dec, "_PLAN_CACHE_SIZE", 1)
    dec._PLANS.clear()
    dec._REPLAYS.clear()


def _tma_plan_used() -> bool:
    """Whether the last decode call ran the TMA kernel (with _fresh_plans: its plan is the only one cached)."""
    assert len(dec._PLANS) == 1
    return next(iter(dec._PLANS.values())).tma is not None


def _assert_same(a, b, device):
    """The same products and roundings. In the interpreter within 2^-20: numpy's matmul (the interpreter's
    tl.dot) may sum one product's terms in another order when its operands are laid out differently (O^T =
    V^T.P^T, permuted V columns): 1-ulp differences in a few elements on an AMD EPYC host's OpenBLAS, none on the
    hosts before; any kernel error is orders larger. On the GPU two compiled kernels may contract or order fp32
    work differently: within 2^-9 (a few fp32 ulps of P rounded to fp16)."""
    tol = 2.0**-20 if device == "cpu" else 2.0**-9
    torch.testing.assert_close(a, b, rtol=tol, atol=tol)


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


# kv_load="tmab" (pages kept as separate boxes, one softmax update per step): (case, block_n, splits), pages of 16
# and 32 with 2 and 4 boxes per step; lengths 1, 17, 339, page and step boundaries (32, 48, 64, 65, 128).
TMAB_CASES = [
    (Case((1, 17, 339, 64), 8, 2, page=16), 32, None),  # GQA 4, two boxes per step
    (Case((339, 1, 48, 17), 8, 1, page=16, sq=3), 64, 3),  # GQA 8, four boxes, causal tail, splits
    (Case((17, 339, 128), 16, 2, page=16), 64, None),  # GQA 8, four boxes, one split
    (Case((339, 1, 65, 32), 8, 2, page=16, sq=3), 32, 4),  # GQA 4, Sq 3, splits
    (Case((1, 339, 64, 17), 4, 1, page=32), 64, 2),  # GQA 4, pages of 32: two boxes of 32
]


def _assert_near(a, b, device):
    """tmab against the stacked or gathered form: the same products and roundings, only the order of the fp32
    sums (row sums, P.V over the boxes) differs: within 2^-16 in the interpreter (2^-9 on the GPU as above)."""
    tol = 2.0**-16 if device == "cpu" else 2.0**-9
    torch.testing.assert_close(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("case,block_n,splits", TMAB_CASES, ids=lambda x: str(x))
def test_tmab_matches_gather_and_reference(case, block_n, splits, device):
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=26)
    gather, tmab = _both(q, kc, vc, bt, sl, ks, vs, {"block_n": block_n, "num_splits": splits or 1}, "tmab",
                         out_dtype=torch.float32)
    assert next(iter(dec._PLANS.values())).consts["KV_TMA"] == 3
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(tmab, ref, pt, max(case.lens), torch.float32)
    _assert_near(tmab, gather, device)


def test_tmab_one_box_per_step(device):
    """block_n == page: "tmab" runs the per-box step with one box (KV_TMA 3; the pipeliner then multi-buffers the
    boxes: offline 53 KB of shared memory at 4 stages against the tma kernel's 21 KB); block_n < page (sub-boxes of a
    page) runs kv_load="tma"'s kernel (KV_TMA 1), bit for bit. Both against "tma" and the reference."""
    case = Case((17, 70), 4, 1, page=32)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=27)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    for block_n, kv_tma in ((32, 3), (16, 1)):
        outs = []
        for load in ("tma", "tmab"):
            cfg = dec.DecodeConfig(block_n=block_n, kv_load=load, num_splits=2)
            outs.append(dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg,
                                             out_dtype=torch.float32))
            assert next(iter(dec._PLANS.values())).consts["KV_TMA"] == (kv_tma if load == "tmab" else 1)
        if kv_tma == 1:
            assert torch.equal(outs[0], outs[1])
        else:  # the same products; acc * alpha is summed into the product instead of added after it
            _assert_same(outs[0], outs[1], "cuda")
        assert_decode_close(outs[1], ref, pt, max(case.lens), torch.float32)


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
    case16 = dataclasses.replace(case, page=16)  # "tmab": two 16-token boxes per step, one of them a bad page
    q, kc, vc, bt, sl, ks, vs = _make(case16, device, seed=22)
    kc, vc, bt = kc.clone(), vc.clone(), bt.clone()
    for b, n in enumerate(case16.lens):
        last = int(bt[b, (n - 1) // case16.page])
        for c in (kc, vc):
            c.view(torch.uint8)[last, n % case16.page:] = 0x7F
    bt[0, 2] = kc.shape[0] + 5
    bt[1, 1] = -3
    gather, tmab = _both(q, kc, vc, bt, sl, ks, vs, {"block_n": 32}, "tmab", out_dtype=torch.float32)
    assert not torch.isnan(tmab).any()
    _assert_near(tmab, gather, device)


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


def test_tma_repeat_calls_and_a_new_cache_allocation(device):
    """The serving case: repeat calls on the same caches (new q, seq_lens, block table contents) reuse the plan and
    give the same bits; caches newly allocated with the same shape run the same plan and read the new memory (the
    reference and the gather path on them; then the first caches again). On the GPU the repeat calls take the
    direct launcher and encode no descriptor."""
    from tritonfp8 import _direct

    case = Case((17, 40), 4, 2, page=16)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=26)
    cfg = dec.DecodeConfig(block_n=32, kv_load="tma", loop="tail")

    def run(q, kc, vc, bt, sl, ks, vs, config=cfg):
        return dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=config,
                                    out_dtype=torch.float32)

    first = run(q, kc, vc, bt, sl, ks, vs)
    plan = next(iter(dec._PLANS.values()))
    assert plan.tma is not None
    encoded = _direct.stats["encoded"]
    again = run(q, kc, vc, bt, sl, ks, vs)
    assert torch.equal(first, again) and next(iter(dec._PLANS.values())) is plan
    if device == "cuda" and _direct.enabled():  # the second call encoded (Triton's dispatch ran the first)
        encoded, reused = _direct.stats["encoded"], _direct.stats["reused"]
        run(q, kc, vc, bt, sl, ks, vs)
        assert (_direct.stats["encoded"], _direct.stats["reused"]) == (encoded, reused + 2)
    # Other q, lengths and block table contents on the same caches: the pages of sequence 0 and 1 swapped.
    q2 = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(q)
    swapped = dec.decode_attention_torch(q2, kc, vc, bt.flip(0), sl.flip(0), k_descale=ks, v_descale=vs)
    out = run(q2, kc, vc, bt.flip(0).contiguous(), sl.flip(0).contiguous(), ks, vs)
    pt = dec.decode_attention_torch(q2, kc, vc, bt.flip(0), sl.flip(0), k_descale=ks, v_descale=vs,
                                    p_dtype=torch.float16)
    assert_decode_close(out, swapped, pt, max(case.lens), torch.float32)
    # New caches of the same shape (other contents, other addresses; the first ones stay alive).
    _, kc2, vc2, bt2, sl2, ks2, vs2 = _make(case, device, seed=27)
    assert kc2.shape == kc.shape and kc2.data_ptr() != kc.data_ptr()
    out2 = run(q, kc2, vc2, bt2, sl2, ks2, vs2)
    assert next(iter(dec._PLANS.values())) is plan
    ref = dec.decode_attention_torch(q, kc2, vc2, bt2, sl2, k_descale=ks2, v_descale=vs2)
    pt = dec.decode_attention_torch(q, kc2, vc2, bt2, sl2, k_descale=ks2, v_descale=vs2, p_dtype=torch.float16)
    assert_decode_close(out2, ref, pt, max(case.lens), torch.float32)
    assert torch.equal(run(q, kc, vc, bt, sl, ks, vs), first)
    gather = run(q, kc2, vc2, bt2, sl2, ks2, vs2, config=dataclasses.replace(cfg, kv_load="gather"))
    _assert_same(gather, out2, device)


def _decode_params() -> dict:
    """The decode kernel's parameters (name -> inspect.Parameter), from its Python function (a JITFunction on the
    GPU, an InterpretedFunction here: both keep it as ``fn``)."""
    import inspect

    from tritonfp8._kernels import decode as kern

    return dict(inspect.signature(kern._decode_kernel.fn).parameters)


def _decode_signature(box: int, d: int) -> tuple[dict, list]:
    """A compiled decode kernel's signature and TMA metadata as Triton 3.6 gives them to its launcher: K and V
    (parameters 1 and 2) as [box, d] E4M3 descriptors, the rest plain values (their kinds do not matter here)."""
    sig = {n: f"tensordesc<fp8e4nv[{box}, {d}]>" if i in (1, 2) else "i32" for i, n in enumerate(_decode_params())}
    meta = dict(swizzle=3, elem_size=1, elem_type=11, block_size=[box, d], fp4_padded=False)
    return sig, [meta, dict(meta)]


@pytest.mark.skipif(HAS_CUDA, reason="runs decode on CPU tensors through the interpreter's plan; on a GPU "
                    "test_tma_repeat_calls_and_a_new_cache_allocation counts the real encodings")
def test_tma_descriptors_encoded_once_per_cache_address_and_geometry(fake_cuda, monkeypatch):
    """CPU: decode's launches handed, as repeat launches are, to a compiled kernel whose launcher is Triton 3.6's
    wrapper around a recording C entry point (test_direct's fake_cuda; no kernel runs). The first call encodes K's
    and V's CUtensorMaps, repeat calls on the same caches encode none; a new allocation of the same shape gets its
    own; the same address with another geometry (fewer blocks) another; what reaches the C launcher is what
    Triton's own wrapper passes (the stock launch of the same call)."""
    from tritonfp8 import _direct as D
    from tritonfp8 import _launch as L
    from tritonfp8._kernels import decode as kern

    case = Case((17, 40), 4, 2, page=16)
    q, kc, vc, bt, sl, ks, vs = _make(case, "cpu", seed=28)
    kernels = {}

    def launch(fn, grid, *args, **kwargs):  # what _launch.launch does once a specialization was compiled
        assert fn is kern._decode_kernel  # one split: no combine launch
        k = kernels.get(fn) or kernels.setdefault(fn, fake_cuda.make(*_decode_signature(16, case.d)))
        tail = tuple(kwargs[n] if n in kwargs else p.default for n, p in list(_decode_params().items())[len(args):])
        L.run_compiled(k, tuple(grid), args + tail)

    monkeypatch.setattr(dec._launch, "launch", launch)
    cfg = dec.DecodeConfig(block_n=32, kv_load="tma")

    def run(q, kc, vc, bt, sl):
        dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg)
        return fake_cuda.calls[-1]

    def maps(args):  # the expansions of K and V: (CUtensorMap, rows, cols, row stride, 1) each, after q
        return args[14:19], args[19:24]

    rows, cols = kc.shape[0] * case.page, case.hkv * case.d
    k1, v1 = maps(run(q, kc, vc, bt, sl))
    assert fake_cuda.fill.calls == 2
    assert k1 == (fake_cuda.fill(kc.data_ptr(), 3, 1, 11, [16, case.d], (rows, cols), (cols, 1), 0), rows, cols,
                  cols, 1)
    assert v1[0][1] == vc.data_ptr() and v1[1:] == k1[1:]
    fake_cuda.fill.calls -= 1  # (the expected map above)
    k2, v2 = maps(run(torch.randn_like(q, dtype=torch.float32).to(q.dtype), kc, vc, bt.flip(0).contiguous(),
                      sl.flip(0).contiguous()))
    assert fake_cuda.fill.calls == 2 and (k2, v2) == (k1, v1)  # same caches, other q / table / lengths
    kc_new = kc.clone()  # a new allocation of the same shape: K re-encoded at its address, V's map reused
    k3, v3 = maps(run(q, kc_new, vc, bt, sl))
    assert fake_cuda.fill.calls == 3 and k3[0][1] == kc_new.data_ptr() and k3[1:] == k1[1:] and v3 == v1
    fewer = kc.shape[0] - 1  # the same addresses, another geometry: both re-encoded with it
    k4, v4 = maps(run(q, kc[:fewer], vc[:fewer], bt, sl))
    assert fake_cuda.fill.calls == 5 and k4[0][1] == kc.data_ptr() and k4[1] == fewer * case.page
    assert k4[0][6] == (fewer * case.page, cols) and v4[0][6] == k4[0][6]
    direct = fake_cuda.calls[-1]
    prev = D.set_enabled(False)
    try:
        stock = run(q, kc[:fewer], vc[:fewer], bt, sl)
    finally:
        D.set_enabled(prev)
    plain = lambda args: tuple(a for a in args if not isinstance(a, torch.Tensor))  # noqa: E731 (out is new)
    assert direct[10:13] == (None, None, None) and direct[:10] == stock[:10]
    assert plain(direct[13:]) == plain(stock[13:]) and maps(direct) == maps(stock)
    assert fake_cuda.fill.calls == 7  # the stock wrapper encodes on every call


def test_kv_load_option_is_validated():
    with pytest.raises(ValueError, match="kv_load"):
        dec.DecodeConfig(kv_load="bulk")
    for load in ("tma", "tmat", "tmab"):
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
@pytest.mark.parametrize("b,page,load,seed,max_len", [(32, 64, "tma", 25, 16384), (64, 16, "tmab", 26, 16384),
                                                       (8, 64, "tma", 27, 4096), (32, 16, "tmab", 28, 4096),
                                                       (8, 16, "tmab", 29, 16384)])
def test_heuristic_tma_rules_on_gpu(b, page, load, seed, max_len):
    """H200: the heuristic's TMA rules run their kernels: pages of 64 at B x Hkv = 256 (4 splits of >= 256
    tokens: kv_load="tma") and at B x Hkv = 64 with lengths up to 4096 (16 splits of 256 tokens, merged inline),
    pages of 16 at B x Hkv = 512 (kv_load="tmab", 4 splits) and below in one wave (B x Hkv 256 and 64: 3 stages,
    4 and 16 splits); each against the reference and against the gather
    heuristic forced by an explicit config. Shuffled pages, ragged lengths up to max_len, some of them short."""
    hkv, hq = 8, 32
    g = torch.Generator().manual_seed(seed)
    lens = [max_len, 1, 17, 339, max_len - 1] + torch.randint(1, max_len + 1, (b - 5,), generator=g).tolist()
    kc, vc, bt, sl, ks, vs = dec.random_paged_cache(lens, hkv, 128, page, device="cuda", generator=g)
    q = torch.randn(b, 1, hq, 128, generator=g).to(device="cuda", dtype=torch.bfloat16)
    assert dec.decode_config(b, hkv, hq // hkv, bt.shape[1] * page, tma_page=page).kv_load == load
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    assert _tma_plan_used()
    gather_cfg = dec.decode_config(b, hkv, hq // hkv, bt.shape[1] * page)
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


def test_tmab_sass_sm90_no_stacking_fewer_instructions():
    """Offline sm_90, pages of 16, one warp, 4 boxes per step, split: "tmab" keeps the boxes apart (its full-step
    loop stores nothing to shared memory: no stacking) and issues fewer warp-instructions per cache token than the
    stacked boxes of "tma" (measured 26.4 vs 38.5), with fewer spill instructions in that loop."""
    from test_decode_loop import _loop_reports

    boxes, stacked = _loop_reports("decode_e4m3_gqa4_page16_tmab_bn64w1s4_splitkv",
                                   "decode_e4m3_gqa4_page16_tma_bn64w1s4_splitkv")
    main, main_st = boxes["loops"][0], stacked["loops"][0]
    assert len(boxes["loops"]) == 2 and main["ops"].get("UTMALDG", 0) == 8, boxes["loops"]
    assert main["ops"].get("HMMA", 0) == main_st["ops"].get("HMMA", 0) > 0
    assert main["ops"].get("STS", 0) == 0 < main_st["ops"].get("STS", 0)
    assert main["per_token"] < 0.8 * main_st["per_token"], (main["per_token"], main_st["per_token"])
    spills = [r["ops"].get("STL", 0) + r["ops"].get("LDL", 0) for r in (main, main_st)]
    assert spills[0] <= spills[1], spills


def test_bench_tma_variants_run(monkeypatch, device):
    """The `bench decode --variants` entries build valid configs; one is swept next to the heuristic on a page-64
    shape (bookkeeping only here: the interpreter and a stand-in timer), and its rows record kv_load."""
    import argparse

    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import decode as suite

    tma = {k: v for k, v in suite.VARIANTS.items() if v.get("kv_load") in ("tma", "tmat", "tmab")}
    assert len(tma) >= 6 and "tmabw1bn64s4splitsx4" in tma
    for over in tma.values():
        dec.DecodeConfig(**{k: v for k, v in over.items() if k not in suite.SWEEP_KEYS})
    monkeypatch.setattr(H, "time_once", lambda fn, *a, **k: (fn(), 1.0)[1])
    monkeypatch.setattr(suite, "_DEVICE", device)
    args = argparse.Namespace(variant_names="tmabn64", variant_cases="1:200:8:64", repeats=1)
    rows = suite._run_variants(args, H, H.make_console())
    assert {r["variant"]: r["kv_load"] for r in rows} == {"heuristic": "gather", "tmabn64": "tma"}


# DecodeConfig(v_stage=True): (case, kv_load, block_n, splits); sub-boxes, one page and two boxes per step, causal
# tails, splits, GQA 1 / 4 / 8
V_STAGE_CASES = [
    (Case((1, 17, 339), 8, 2, page=64), "tma", 64, 2),  # GQA 4, one page per step, splits
    (Case((339, 17), 8, 1, page=64, sq=3), "tma", 32, None),  # GQA 8, half-page sub-boxes, causal tail
    (Case((1, 339, 65), 8, 2, page=16), "tmab", 32, 3),  # GQA 4, two boxes per step, splits
    (Case((17, 130), 2, 2, page=16), "tma", 32, None),  # GQA 1, two stacked pages per step
    (Case((1, 17, 339), 8, 2, page=16), "gather", 64, 3),  # the gather kernel, splits
]


@pytest.mark.parametrize("case,load,block_n,splits", V_STAGE_CASES, ids=lambda x: str(x))
def test_v_stage_matches_default(case, load, block_n, splits, device):
    """v_stage permutes V's columns and the accumulator's alike (undone after the loop): every product and every
    fp32 sum is the one of v_stage=False, so the outputs agree to the last bits in the interpreter (see
    _assert_same; within 2^-9 on the GPU, where the two kernels are compiled apart and V is converted by the
    inline asm)."""
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=28)
    outs = []
    for v_stage in (False, True):
        cfg = dec.DecodeConfig(block_n=block_n, num_warps=1, num_stages=4, kv_load=load,
                               num_splits=splits or 1, v_stage=v_stage)
        outs.append(dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg,
                                         out_dtype=torch.float32))
        plan = next(iter(dec._PLANS.values()))
        assert (plan.tma is not None) == (load != "gather")
        assert plan.consts["V_STAGE"] == (0 if not v_stage else 1 if device == "cpu" else 2)
        assert ("vstage" in plan.consts["KERNEL_NAME"]) == v_stage
    _assert_same(outs[0], outs[1], device)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(outs[1], ref, pt, max(case.lens), torch.float32)


def test_v_stage_option_is_validated():
    with pytest.raises(ValueError, match="v_stage"):
        dec.DecodeConfig(kv_load="tmat", v_stage=True)
    with pytest.raises(ValueError, match="v_stage"):
        dec.DecodeConfig(dot="fp8t", block_n=128, v_stage=True)
    assert dec.DecodeConfig(kv_load="gather", v_stage=True).v_stage
    with pytest.raises(TypeError, match="v_stage"):
        dec.DecodeConfig(kv_load="tma", v_stage=1)
    assert dec.DecodeConfig().v_stage is False


def test_v_stage_sass_sm90_wide_v_loads_fewer_instructions():
    """Offline sm_90, one warp, split, the two TMA picks (pages of 64, 64-token steps; pages of 16, "tmab" with
    32-token steps): with v_stage the full-step loop reads V by 16-byte loads instead of one LDS.U8 per element
    (LDS of any width per step, measured 291 -> 48 and 160 -> 40) and issues fewer instructions (1362 -> 1210 and
    866 -> 786), and the kernels keep no more spills (page 64: 13 -> 0)."""
    from test_decode_loop import _loop_reports

    names = ["decode_e4m3_gqa4_page64_tma_bn64w1s4_splitkv", "decode_e4m3_gqa4_page16_tmab_bn32w1s4_splitkv"]
    reps = _loop_reports(*names, *(n + "_vstage" for n in names))
    for base, vst in zip(reps[:2], reps[2:]):
        main, main_vs = base["loops"][0], vst["loops"][0]
        assert main["ops"].get("HMMA", 0) == main_vs["ops"].get("HMMA", 0) > 0
        assert 3 * main_vs["ops"].get("LDS", 0) < main["ops"].get("LDS", 0), (main["ops"], main_vs["ops"])
        assert main_vs["instructions"] < 0.93 * main["instructions"], (main_vs["instructions"], main["instructions"])
        assert vst["spill_stores"] <= base["spill_stores"], (vst, base)


@pytest.mark.skipif(HAS_CUDA, reason="CPU stand-in for compiled launches; on a GPU test_decode_gpu's replay tests "
                    "run the real kernels")
def test_replay_records_then_replays_the_compiled_launch(fake_cuda, monkeypatch):
    """decode._REPLAYS end to end on CPU: the launches are handed to a compiled stand-in (test_direct's fake_cuda)
    and recorded as _launch.launch records them; the first call records the plan's launch, a repeat call with the
    same metadata skips _launch.launch and calls the recorded kernel with its own tensors (the C entry point gets
    the same non-tensor arguments), and a call with a q off 16-byte alignment takes _launch.launch again."""
    from tritonfp8 import _launch as L
    from tritonfp8._kernels import decode as kern

    case = Case((17, 40), 4, 2, page=16)
    q, kc, vc, bt, sl, ks, vs = _make(case, "cpu", seed=28)
    kernel = fake_cuda.make(*_decode_signature(16, case.d))
    dispatched = []

    def launch(fn, grid, *args, **kwargs):  # _launch.launch for a compiled specialization, records included
        assert fn is kern._decode_kernel
        dispatched.append(args[0])
        tail = tuple(kwargs[n] if n in kwargs else p.default for n, p in list(_decode_params().items())[len(args):])
        if L._RECORDS is not None:
            L._RECORDS.append((kernel, (tuple(grid) + (1, 1))[:3], tail))
        L.run_compiled(kernel, tuple(grid), args + tail)

    monkeypatch.setattr(dec._launch, "launch", launch)
    monkeypatch.setattr(dec, "_REPLAYS", {})
    monkeypatch.setattr(dec, "_PLANS", {})  # plans that hold the stand-in's kernel stay out of the real cache
    cfg = dec.DecodeConfig(block_n=32, kv_load="tma")
    kw = dict(k_descale=ks, v_descale=vs, config=cfg)
    dec.decode_attention(q, kc, vc, bt, sl, **kw)
    assert len(dispatched) == 1 and len(dec._REPLAYS) == 1 and len(fake_cuda.calls) == 1
    q2 = torch.randn_like(q, dtype=torch.float32).to(q.dtype)
    dec.decode_attention(q2, kc, vc, bt, sl, **kw)
    assert len(dispatched) == 1 and len(fake_cuda.calls) == 2  # replayed: no _launch.launch
    plain = lambda args: tuple(a for a in args if not isinstance(a, torch.Tensor))  # noqa: E731 (out is new)
    first, second = fake_cuda.calls
    assert plain(first) == plain(second)
    assert any(a is q2 for a in second) and any(a is q for a in first)  # this call's q, not the recorded one
    buf = torch.empty(q.numel() + 1, dtype=q.dtype)
    q_off = buf[1:].view(q.shape).copy_(q)
    dec.decode_attention(q_off, kc, vc, bt, sl, **kw)
    assert len(dispatched) == 2 and dispatched[-1] is q_off and len(fake_cuda.calls) == 3
