"""Paged FP8 KV-cache decode: write_kv_cache bit-exact, decode_attention against attention_torch, bad input.

On CPU the kernels run in the Triton interpreter (tests/conftest.py), on small shapes; the GPU file
(test_decode_gpu.py) covers the benchmark sizes.

Tolerance rule (the prefill issue's), stated once, used by every decode comparison here:

    max|out - ref| <= 2 * max|out_pt - ref| + eps,   eps = (u(out_dtype) + n_keys * u(fp32)) * max|ref|

- ref: :func:`tritonfp8.attention.attention_torch` on the dequantized cache (fp32), through
  ``decode_attention_torch``.
- out_pt: the same math with the kernel's own rounding: P = exp(s - m) rounded to fp16 before P·V
  (``decode_attention_torch(p_dtype=torch.float16)``). The cache values (E4M3 -> fp16) and q (fp16, or bf16 scaled
  by a power of two into fp16) enter the products exactly, so P is the kernel's only rounding besides fp32 work.
- eps: the output's rounding (unit roundoff u of out_dtype) plus fp32 summation-order differences over the
  n_keys accumulated terms (u(fp32) = 2^-24 each).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
import torch

from conftest import HAS_CUDA
from tritonfp8 import decode as dec
from tritonfp8._kernels import decode as dec_kern
from tritonfp8.attention import attention_torch

E4M3 = torch.float8_e4m3fn
UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}


def test_unit_roundoff_table_is_the_formats():
    for dt, u in UNIT_ROUNDOFF.items():
        assert u == torch.finfo(dt).eps / 2


def assert_decode_close(out, ref, out_pt, n_keys: int, out_dtype):
    assert not torch.isnan(out).any(), "NaN in the output"
    err = (out.float() - ref).abs().max().item()
    pt = (out_pt - ref).abs().max().item()
    scale = ref.abs().max().item()
    eps = (UNIT_ROUNDOFF[out_dtype] + n_keys * UNIT_ROUNDOFF[torch.float32]) * scale
    bound = 2 * pt + eps
    assert err <= bound, f"max|out-ref|={err:.3e} > 2*max|out_pt-ref| ({pt:.3e}) + eps ({eps:.3e})"


@dataclass(frozen=True)
class Case:
    lens: tuple[int, ...]
    hq: int
    hkv: int
    sq: int = 1
    d: int = 64
    page: int = 16
    splits: int | None = None
    q_dtype: torch.dtype = torch.bfloat16
    per_head: bool = True

    def __str__(self):
        return (f"lens{list(self.lens)}-H{self.hq}/{self.hkv}-sq{self.sq}-d{self.d}-p{self.page}-s{self.splits}-"
                f"{str(self.q_dtype)[6:]}-{'head' if self.per_head else 'tensor'}")


CASES = [
    # seq_lens 1, 17, 339 in one batch; GQA ratios 1, 4, 8; Sq 1 and 3
    Case((1, 17, 339), 2, 2),
    Case((1, 17, 339), 8, 2),
    Case((1, 17, 339), 8, 1, sq=3),
    Case((17, 339), 4, 1, sq=3, q_dtype=torch.float16),
    Case((339,), 8, 1, splits=5),
    Case((339, 1), 4, 4, sq=3, splits=3, per_head=False),
    # page and BLOCK_N (64) boundaries: multiples of 16, one before and after 64 and 128
    Case((16, 32, 48, 64), 4, 2),
    Case((15, 63, 65, 128, 129), 4, 1, splits=2),
    # more splits than tiles: empty splits must merge to nothing
    Case((5, 70), 4, 1, sq=3, splits=7),
    # D=128: the inline merge takes 4 splits per step, so 10 splits need 3 steps (the last one partial)
    Case((600, 150), 4, 1, d=128, splits=10),
    # other page sizes; D not a power of two; D = 128
    Case((31, 100), 4, 1, page=32),
    Case((70, 200), 4, 2, page=64, splits=2),
    Case((130,), 2, 1, page=128, sq=3),
    Case((40, 77), 4, 2, d=80),
    Case((50,), 4, 1, d=128, sq=3),
    # many query rows: GQA 8 x Sq 16 = 128 rows, two programs of 64 rows per KV head
    Case((40, 21), 8, 1, sq=16),
]


def _make(case: Case, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    ks = vs = None
    if not case.per_head:
        ks, vs = torch.tensor(0.02), torch.tensor(0.015)
    kc, vc, bt, sl, ks, vs = dec.random_paged_cache(list(case.lens), case.hkv, case.d, case.page, device=device,
                                                     generator=g, k_scale=ks, v_scale=vs)
    q = torch.randn(len(case.lens), case.sq, case.hq, case.d, generator=g).to(device=device, dtype=case.q_dtype)
    return q, kc, vc, bt, sl, ks, vs


@pytest.mark.parametrize("case", CASES, ids=str)
def test_decode_matches_reference(case, device):
    q, kc, vc, bt, sl, ks, vs = _make(case, device)
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, num_splits=case.splits,
                               out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert out.shape == q.shape and out.dtype == torch.float32
    assert_decode_close(out, ref, pt, max(case.lens), torch.float32)


def test_decode_one_page_cache(device):
    """A cache of exactly one page (num_blocks = 1, which Triton would specialize into a constexpr: the kernel's
    page-range check then failed to compile on the GPU; found by the model bench's decode test)."""
    case = Case((20,), 2, 1, page=64)
    q, kc, vc, bt, sl, ks, vs = _make(case, device)
    kc, vc = kc[:1].contiguous(), vc[:1].contiguous()
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(out, ref, pt, 20, torch.float32)


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
def test_decode_output_dtypes(out_dtype, device):
    case = Case((1, 17, 80), 4, 2, sq=3)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=1)
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, out_dtype=out_dtype)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert out.dtype == out_dtype
    assert_decode_close(out, ref, pt, 80, out_dtype)


@pytest.mark.parametrize("merge", ["inline", "kernel"])
def test_split_and_unsplit_agree(merge, device):
    case = Case((339, 100, 3), 4, 2, sq=3)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=2)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    one = dec.decode_attention(q, kc, vc, bt, sl, num_splits=1, **kw)
    four = dec.decode_attention(q, kc, vc, bt, sl, config=dec.DecodeConfig(num_splits=4, merge=merge), **kw)
    if merge == "inline":  # the last split of each program group reset its counter: the workspace is zero again
        assert not dec._merge_counters(q.device, 1).any()
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(one, ref, pt, 339, torch.float32)
    assert_decode_close(four, ref, pt, 339, torch.float32)
    # Each path rounds P against its own running maximum: they agree within the bound of each side, summed.
    pt_err = (pt - ref).abs().max().item()
    eps = (UNIT_ROUNDOFF[torch.float32] + 339 * UNIT_ROUNDOFF[torch.float32]) * ref.abs().max().item()
    assert (one - four).abs().max().item() <= 2 * (2 * pt_err + eps)
    assert not torch.equal(one, four)  # the split path really ran (partials + merge round differently)


def _plan_of(cfg: dec.DecodeConfig) -> dec._Plan:
    """The cached launch plan of the last call made with ``cfg`` (the plan key's config field)."""
    return [p for k, p in dec._PLANS.items() if k[18] == cfg][-1]


def test_fp16_partials(device):
    """Session 41: DecodeConfig(partials="fp16") with the combine kernel (merge="kernel"), an 8-bit cache and a bf16
    output: the split partials are fp16 (dec.partials_f16), O / l without v_descale, which the combine kernel applies
    per KV head. Against the reference under the bf16 rule, as the fp32 partials (the default); the plan really
    writes fp16 partials (its kernels' names say so)."""
    f16 = "fp16"
    assert dec.partials_f16(E4M3, torch.bfloat16, True, f16)
    assert dec.partials_f16(torch.float8_e5m2, torch.bfloat16, True, f16)
    assert not dec.partials_f16(E4M3, torch.bfloat16, True, "fp32") and dec.DecodeConfig().partials == "fp32"
    assert not any(dec.partials_f16(E4M3, o, True, f16) for o in (torch.float16, torch.float32))
    assert not dec.partials_f16(E4M3, torch.bfloat16, False, f16)  # the inline merge's workspace stays fp32
    assert not dec.partials_f16(torch.bfloat16, torch.bfloat16, True, f16)  # a 16-bit cache's O / l can exceed fp16
    with pytest.raises(ValueError, match="partials: expected 'fp32' or 'fp16', got 'auto'"):
        dec.DecodeConfig(partials="auto")
    case = Case((339, 100, 3), 8, 2, sq=3)  # per-head scales, GQA 4: the combine's v_descale index is h // 4
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=4)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    full_cfg = dec.DecodeConfig(num_splits=4, merge="kernel")
    half_cfg = dataclasses.replace(full_cfg, partials="fp16")
    for cfg, part in ((half_cfg, torch.float16), (full_cfg, torch.float32)):
        out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg)
        assert out.dtype == torch.bfloat16
        assert_decode_close(out, ref, pt, 339, torch.bfloat16)
        plan = _plan_of(cfg)
        assert plan.part_dtype == part
        assert ("f16part" in plan.consts["KERNEL_NAME"]) == (part == torch.float16)
        assert ("_f16_bf16" in plan.combine_consts["KERNEL_NAME"]) == (part == torch.float16)


def test_fp16_partials_do_not_overflow(device):
    """Every V at E4M3's largest value (448) times a v_descale of 1000: the output is 448000 (beyond fp16's 65504),
    which fp16 partials holding the descaled O would have turned into inf; they hold O / l (448) instead."""
    case = Case((100, 37), 4, 1)
    q, kc, vc, bt, sl, ks, _ = _make(case, device, seed=6)
    vc = torch.full_like(vc, 448.0)
    vs = torch.tensor(1000.0, device=vc.device)
    cfg = dec.DecodeConfig(num_splits=3, merge="kernel", partials="fp16")
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg)
    assert _plan_of(cfg).part_dtype == torch.float16
    assert torch.equal(out, torch.full_like(out, 448000.0))


def test_l2_evict_first_changes_no_bits(device):
    """DecodeConfig(l2_evict_first=True) adds cache hints to the compiled copies only (a PTX pass; nothing in the
    interpreter): the same bits as without, split or not."""
    case = Case((339, 100, 3), 4, 2, sq=3)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=2)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    for splits in (1, 4):
        plain = dec.decode_attention(q, kc, vc, bt, sl, config=dec.DecodeConfig(num_splits=splits), **kw)
        hinted = dec.decode_attention(q, kc, vc, bt, sl, **kw,
                                      config=dec.DecodeConfig(num_splits=splits, l2_evict_first=True))
        assert torch.equal(plain, hinted)


def test_pdl_combine_equals_combine(device):
    """DecodeConfig(merge="kernel", pdl=True): the combine kernel as a programmatic dependent launch on sm_90+
    (elsewhere, and in the interpreter, a plain launch): the same partials and merge, so the same bits."""
    case = Case((339, 100, 3), 4, 2, sq=3)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=2)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    outs = [dec.decode_attention(q, kc, vc, bt, sl, config=dec.DecodeConfig(num_splits=4, merge="kernel", pdl=p),
                                 **kw) for p in (False, True)]
    assert torch.equal(outs[0], outs[1])


def test_inline_merge_chunk(device):
    """The inline merge reads 1 or several splits' partials per step (DecodeConfig.merge_chunk; automatic: 64
    registers per thread, so 1 at one warp where the 4-warp chunk of 4 spilled): the same result within fp32
    summation order, with 6 splits (a last chunk only partly filled)."""
    assert [dec_kern.merge_chunk(16, 128, w) for w in (1, 2, 4, 8)] == [1, 2, 4, 4]
    case = Case((339, 100, 3), 4, 2, sq=3)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=2)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    outs = [dec.decode_attention(q, kc, vc, bt, sl, config=dec.DecodeConfig(num_splits=6, merge_chunk=c), **kw)
            for c in (1, 4, 16)]
    for o in outs[1:]:
        torch.testing.assert_close(o, outs[0], rtol=1e-6, atol=1e-6 * outs[0].abs().max().item())


@pytest.mark.parametrize("group,sq", [(4, 1), (1, 1), (2, 3), (8, 3)])
def test_inline_merge_rows(device, group, sq):
    """The inline merge runs on the row block's real rows rounded up to a power of two (kern.merge_rows: GQA 4 with
    one new token merges 4 rows, not the MMA tile's 16), with a chunk sized for those rows: the same result as the
    merge over the full tile (DecodeConfig(merge_rows=16)) within fp32 summation order, the rows past the real ones
    untouched, and with more rows than one block (GQA 8 x Sq 3 = 24 rows in blocks of 16)."""
    assert [dec_kern.merge_rows(16, r) for r in (1, 3, 4, 5, 16, 24)] == [1, 4, 4, 8, 16, 16]
    assert dec_kern.merge_chunk(dec_kern.merge_rows(16, 4), 128, 1) == 8  # one warp, <= 8 rows: 128 registers
    case = Case((339, 100, 3), group * 2, 2, sq=sq)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=5)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    cfgs = [dec.DecodeConfig(num_splits=6, num_warps=1, block_m=16, merge_rows=r) for r in (0, 16, 1)]
    compact, full, narrow = (dec.decode_attention(q, kc, vc, bt, sl, config=c, **kw) for c in cfgs)
    assert torch.equal(narrow, compact)  # merge_rows below the real rows is widened to them, no row left out
    ref = dec.decode_attention(q, kc, vc, bt, sl, config=dec.DecodeConfig(num_splits=6, merge="kernel"), **kw)
    assert torch.isfinite(compact).all()
    torch.testing.assert_close(compact, full, rtol=1e-6, atol=1e-6 * full.abs().max().item())
    torch.testing.assert_close(compact, ref, rtol=1e-6, atol=1e-6 * ref.abs().max().item())


def test_maxnreg_option_same_result_and_named(device):
    """DecodeConfig(maxnreg=N) caps the registers of the launch (a ptxas option: the same code, so the same bits)
    and shows as r<N> in the kernel name."""
    case = Case((339, 100), 8, 2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=6)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    base = dec.DecodeConfig(num_splits=3, num_warps=1, block_n=32)
    a = dec.decode_attention(q, kc, vc, bt, sl, config=base, **kw)
    b = dec.decode_attention(q, kc, vc, bt, sl, config=dataclasses.replace(base, maxnreg=168), **kw)
    assert torch.equal(a, b)
    name = dec_kern.decode_kernel_name(90, "e4m3", "bf16", "bf16", 16, 32, 128, 1, 4, 16, True, True, maxnreg=168)
    assert name.build("cutlass").endswith("_r168")


def test_reference_rounded_p_path_matches_attention_torch():
    """decode_attention_torch's own dense math (p_dtype) equals attention_torch when P is kept in fp32."""
    case = Case((1, 17, 40), 4, 2, sq=3)
    q, kc, vc, bt, sl, ks, vs = _make(case, "cpu", seed=3)
    a = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    b = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float32)
    torch.testing.assert_close(a, b, rtol=0, atol=8 * 2.0**-24 * a.abs().max().item())


def test_decode_masks_new_tokens_causally(device):
    """Token t of Sq sees positions <= seq_len - Sq + t: changing the last cached token moves only the last row."""
    case = Case((20,), 2, 1, sq=3)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=4)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    a = dec.decode_attention(q, kc, vc, bt, sl, **kw)
    last = bt[0, 19 // 16].long()
    vc2 = vc.clone()
    vc2[last, 19 % 16] = (vc2[last, 19 % 16].float() + 100).to(E4M3)
    b = dec.decode_attention(q, kc, vc2, bt, sl, **kw)
    assert torch.equal(a[:, :2], b[:, :2])
    assert (a[:, 2] - b[:, 2]).abs().max() > 0.01


def test_bf16_q_beyond_fp16_range(device):
    """A bf16 q far outside fp16's range (2^±20 times N(0,1)) with the softmax scale compensating gives the same
    output bits: the per-row power-of-two scaling before the fp16 products is exact and cannot overflow."""
    case = Case((17, 90), 4, 2, sq=2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=11)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    base = dec.decode_attention(q, kc, vc, bt, sl, softmax_scale=0.125, **kw)
    for f in (2.0**20, 2.0**-20):
        out = dec.decode_attention((q.float() * f).bfloat16(), kc, vc, bt, sl, softmax_scale=0.125 / f, **kw)
        assert torch.equal(out, base), f


def test_decode_empty_and_short_sequences(device):
    """seq_len 0 gives zeros; seq_len < Sq leaves the early new tokens with nothing to see (zeros)."""
    case = Case((0, 2, 9), 4, 2, sq=3)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=5)
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert torch.equal(out[0], torch.zeros_like(out[0]))
    assert torch.equal(out[1, 0], torch.zeros_like(out[1, 0]))
    assert out[1, 1].abs().max() > 0
    assert_decode_close(out, ref, pt, 9, torch.float32)


def test_decode_zero_size(device):
    kc = torch.zeros(2, 16, 2, 64, dtype=E4M3, device=device)
    s = torch.tensor(1.0, device=device)
    for b, sq, hq in ((0, 1, 4), (2, 0, 4)):
        q = torch.zeros(b, sq, hq, 64, dtype=torch.bfloat16, device=device)
        bt = torch.zeros(b, 1, dtype=torch.int32, device=device)
        sl = torch.zeros(b, dtype=torch.int32, device=device)
        out = dec.decode_attention(q, kc, kc, bt, sl, k_descale=s, v_descale=s)
        assert out.shape == (b, sq, hq, 64) and out.dtype == torch.bfloat16


def test_decode_noncontiguous_q(device):
    case = Case((30, 45), 4, 2, sq=2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=6)
    big = torch.randn(2, 2, 4, 3, 64).to(device=device, dtype=q.dtype)
    big[:, :, :, 1] = q
    qv = big[:, :, :, 1]  # strides (1536, 768, 192, 1)
    assert not qv.is_contiguous()
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    assert torch.equal(dec.decode_attention(qv, kc, vc, bt, sl, **kw), dec.decode_attention(q, kc, vc, bt, sl, **kw))


def test_decode_fp16_cache_peer(device):
    """A 16-bit cache of q's dtype (the benchmark's peer) runs the same kernel; fp16 here (see the bf16 skip)."""
    case = Case((17, 60), 4, 2, sq=2, q_dtype=torch.float16)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=7)
    k16 = (kc.float() * ks[None, None, :, None]).half()
    v16 = (vc.float() * vs[None, None, :, None]).half()
    out = dec.decode_attention(q, k16, v16, bt, sl, out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, k16, v16, bt, sl)
    pt = dec.decode_attention_torch(q, k16, v16, bt, sl, p_dtype=torch.float16)
    assert_decode_close(out, ref, pt, 60, torch.float32)


@pytest.mark.skipif(not HAS_CUDA, reason="the Triton 3.6 interpreter multiplies bf16 tl.dot operands as raw uint16 "
                                         "bits (measured); the bf16-cache path is checked on the GPU")
def test_decode_bf16_cache_peer(device):
    case = Case((17, 60), 4, 2, sq=2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=7)
    k16 = (kc.float() * ks[None, None, :, None]).bfloat16()
    v16 = (vc.float() * vs[None, None, :, None]).bfloat16()
    out = dec.decode_attention(q, k16, v16, bt, sl, out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, k16, v16, bt, sl)
    pt = dec.decode_attention_torch(q, k16, v16, bt, sl, p_dtype=torch.bfloat16)
    assert_decode_close(out, ref, pt, 60, torch.float32)


def test_pinned_config(device):
    case = Case((100, 7), 8, 2, sq=3)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=8)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    for cfg in (dec.DecodeConfig(block_n=32, block_m=16, num_splits=3), dec.DecodeConfig(block_n=128, num_stages=2)):
        out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32)
        assert_decode_close(out, ref, pt, 100, torch.float32)


def test_fewer_warps_and_plan_cache(device):
    """1- and 2-warp configs (--variants candidates) give the reference's result; a second call with the same
    shapes reuses the cached launch plan, and a call with other shapes gets its own."""
    case = Case((100, 7), 8, 2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=8)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    for cfg in (dec.DecodeConfig(num_warps=2, num_splits=2), dec.DecodeConfig(block_n=32, num_warps=1, num_stages=4)):
        out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, out_dtype=torch.float32)
        assert_decode_close(out, ref, pt, 100, torch.float32)
    dec._PLANS.clear()
    dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, num_splits=2, out_dtype=torch.float32)
    assert len(dec._PLANS) == 1
    plan = next(iter(dec._PLANS.values()))
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, num_splits=2, out_dtype=torch.float32)
    assert len(dec._PLANS) == 1 and next(iter(dec._PLANS.values())) is plan
    assert plan.splits == 2 and plan.ws is not None  # inline merge: workspaces kept in the plan
    assert_decode_close(out, ref, pt, 100, torch.float32)
    dec.decode_attention(q[:1], kc, vc, bt[:1], sl[:1], k_descale=ks, v_descale=vs, num_splits=2)
    assert len(dec._PLANS) == 2


@pytest.mark.parametrize("cfg", [None, dec.DecodeConfig(block_n=64, num_warps=4, warp_split=True, v_stage=True)],
                         ids=["default", "warp_split"])
def test_int64_offsets_and_distinct_kv_strides(device, cfg):
    """The 64-bit page arithmetic (caches of 2 GiB or more) and separate V strides, forced on a small cache: V is
    a strided view (every other head of a cache with twice the heads), K a dense copy, so their strides differ.
    Also through the warp-split loop (its own address arithmetic)."""
    case = Case((70, 33), 4, 2, page=16)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=12)
    wide = torch.zeros(vc.shape[0], vc.shape[1], 2 * vc.shape[2], vc.shape[3], dtype=vc.dtype, device=device)
    wide[:, :, ::2] = vc
    v_strided = wide[:, :, ::2]
    assert v_strided.stride() != kc.stride()
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    dec._REPLAYS.clear()  # on the GPU a replayed call would not plan
    out = dec.decode_attention(q, kc, v_strided, bt, sl, k_descale=ks, v_descale=vs, out_dtype=torch.float32,
                               config=cfg)
    assert_decode_close(out, ref, pt, 70, torch.float32)
    plan = next(p for k, p in dec._PLANS.items() if k[13] == v_strided.stride())
    assert plan.consts["WARP_SPLIT"] == (4 if cfg else 0)
    assert plan.consts["KV_SAME_STRIDES"] is False and plan.consts["OFFS_I32"] is True
    old = dec._max_offset
    try:  # pretend the cache is huge: the plan must pick 64-bit offsets, and the result must not change
        dec._max_offset = lambda shape, strides: 2**31
        dec._PLANS.clear()
        dec._REPLAYS.clear()
        out64 = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, out_dtype=torch.float32,
                                     config=cfg)
        assert next(iter(dec._PLANS.values())).consts["OFFS_I32"] is False
    finally:
        dec._max_offset = old
        dec._PLANS.clear()
    assert_decode_close(out64, ref, pt, 70, torch.float32)


# ------------------------------------------------------------------------------------------------------------------
# Out-of-range safety


def assert_close_over_kept_tokens(out, q, kc, vc, bt, sl, ks, vs, keep):
    """``out`` (fp32, one new token per sequence) is attention over sequence b's tokens ``keep[b]`` only (the
    tolerance rule against the reference on those tokens): what skipped pages must give."""
    for b, kept in enumerate(keep):
        kb = dec.gather_kv_torch(kc, bt, b, int(sl[b]), ks)[kept]
        vb = dec.gather_kv_torch(vc, bt, b, int(sl[b]), vs)[kept]
        ref = attention_torch(q[b : b + 1].float(), kb[None], vb[None])[0]
        pt = dec._attention_rounded_p(q[b].float(), kb, vb, q.shape[-1] ** -0.5, torch.float16)
        assert_decode_close(out[b], ref, pt, int(sl[b]), torch.float32)


def test_bad_block_table_entry_is_skipped_or_raises(device):
    case = Case((40, 20), 4, 2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=9)
    bad = bt.clone()
    bad[0, 1] = 10**6  # tokens 16..31 of sequence 0 point far outside the cache
    bad[1, 0] = -7
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    out = dec.decode_attention(q, kc, vc, bad, sl, **kw)  # default: those pages are skipped, nothing read
    assert_close_over_kept_tokens(out, q, kc, vc, bt, sl, ks, vs,
                                  [torch.cat([torch.arange(0, 16), torch.arange(32, 40)]), torch.arange(16, 20)])
    with pytest.raises(ValueError, match=r"block_table\[0, 1\] = 1000000"):
        dec.decode_attention(q, kc, vc, bad, sl, check=True, **kw)


def test_seq_len_beyond_table_is_clipped_or_raises(device):
    case = Case((40,), 4, 2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=10)
    kw = dict(k_descale=ks, v_descale=vs, out_dtype=torch.float32)
    long = torch.full_like(sl, 10_000)  # table holds 3 pages of 16 = 48 tokens
    out = dec.decode_attention(q, kc, vc, bt, long, **kw)
    assert torch.isfinite(out).all()
    with pytest.raises(ValueError, match=r"seq_lens\[0\] = 10000 is outside \[0, 48\]"):
        dec.decode_attention(q, kc, vc, bt, long, check=True, **kw)
    with pytest.raises(ValueError, match="seq_lens"):
        dec.decode_attention(q, kc, vc, bt, -sl, check=True, **kw)
    ok = dec.decode_attention(q, kc, vc, bt, sl, check=True, **kw)
    assert torch.equal(ok, dec.decode_attention(q, kc, vc, bt, sl, **kw))


# ------------------------------------------------------------------------------------------------------------------
# Bad input


def _good(device):
    kc = torch.zeros(4, 16, 2, 64, dtype=E4M3, device=device)
    q = torch.zeros(2, 1, 4, 64, dtype=torch.bfloat16, device=device)
    bt = torch.zeros(2, 2, dtype=torch.int32, device=device)
    sl = torch.ones(2, dtype=torch.int32, device=device)
    s = torch.tensor(1.0, device=device)
    return dict(q=q, k_cache=kc, v_cache=kc, block_table=bt, seq_lens=sl, k_descale=s, v_descale=s)


BAD_DECODE = [
    ("q", lambda a: a["q"].float(), TypeError, "q: expected torch.bfloat16 or torch.float16"),
    ("q", lambda a: a["q"][0], ValueError, r"q: expected 4 dims"),
    ("q", lambda a: a["q"].expand(2, 17, 4, 64), ValueError, "Sq .* at most 16"),
    ("q", lambda a: torch.zeros(2, 1, 3, 64, dtype=torch.bfloat16, device=a["q"].device), ValueError,
     "Hq=3 must be a multiple"),
    ("k_cache", lambda a: a["k_cache"].half(), TypeError, "k_cache: a 16-bit cache must have q's dtype"),
    ("k_cache", lambda a: a["k_cache"].to(torch.float8_e5m2), TypeError, "k_cache: expected torch.float8_e4m3fn"),
    ("v_cache", lambda a: a["v_cache"][:, :8], ValueError, "block_size .* one of"),
    ("v_cache", lambda a: a["v_cache"][:2], ValueError, "v_cache: shape"),
    ("k_cache", lambda a: torch.zeros(4, 16, 2, 72, dtype=E4M3, device=a["q"].device), ValueError, "head dim"),
    ("block_table", lambda a: a["block_table"].long(), TypeError, "block_table: expected an int32"),
    ("block_table", lambda a: a["block_table"][:1], ValueError, r"block_table: expected shape \(B, max_blocks\)"),
    ("seq_lens", lambda a: a["seq_lens"].long(), TypeError, "seq_lens: expected an int32"),
    ("seq_lens", lambda a: a["seq_lens"][:1], ValueError, r"seq_lens: expected shape \(B,\)"),
    ("k_descale", lambda a: a["k_descale"].half(), TypeError, "k_descale: expected torch.float32"),
    ("v_descale", lambda a: torch.ones(3, device=a["q"].device), ValueError, r"v_descale: expected shape \(\)"),
    ("k_descale", lambda a: None, ValueError, "k_descale: required for an E4M3 cache"),
]


@pytest.mark.parametrize("arg,make,exc,match", BAD_DECODE, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_DECODE)])
def test_decode_bad_input(arg, make, exc, match, device):
    a = _good(device)
    a[arg] = make(a)
    if arg == "k_cache":
        a["v_cache"] = a["k_cache"]
    q, kc, vc, bt, sl = (a.pop(k) for k in ("q", "k_cache", "v_cache", "block_table", "seq_lens"))
    with pytest.raises(exc, match=match):
        dec.decode_attention(q, kc, vc, bt, sl, **a)


def test_decode_bad_options(device):
    a = _good(device)
    args = [a.pop(k) for k in ("q", "k_cache", "v_cache", "block_table", "seq_lens")]
    with pytest.raises(TypeError, match="out_dtype"):
        dec.decode_attention(*args, out_dtype=torch.int8, **a)
    with pytest.raises(ValueError, match="num_splits"):
        dec.decode_attention(*args, num_splits=0, **a)
    with pytest.raises(TypeError, match="config"):
        dec.decode_attention(*args, config=(64, 16), **a)
    with pytest.raises(ValueError, match="max_seqlen"):
        dec.decode_attention(*args, max_seqlen=-1, **a)
    with pytest.raises(ValueError, match="merge"):
        dec.DecodeConfig(merge="atomic")
    with pytest.raises(ValueError, match="merge_chunk"):
        dec.DecodeConfig(merge_chunk=3)
    with pytest.raises(ValueError, match="merge_rows"):
        dec.DecodeConfig(merge_rows=12)
    with pytest.raises(ValueError, match="maxnreg"):
        dec.DecodeConfig(maxnreg=300)
    with pytest.raises(ValueError, match="block_n"):
        dec.DecodeConfig(block_n=48)
    with pytest.raises(ValueError, match="pdl=True: only with merge='kernel'"):
        dec.DecodeConfig(num_splits=4, pdl=True)
    with pytest.raises(TypeError, match="pdl"):
        dec.DecodeConfig(merge="kernel", pdl=1)


# ------------------------------------------------------------------------------------------------------------------
# Heuristic


def test_heuristic_splits():
    # few programs, long context: split until one wave of 2 programs on each of 132 SMs, each split >= 256 tokens
    c = dec.decode_config(1, 8, 4, 32768)
    assert c.num_splits == 33 and 32768 / c.num_splits >= 256
    # rounded down: 8 x 8 x 4 = 256 programs fit in 264 slots; 5 splits (320) would need a second wave
    assert dec.decode_config(8, 8, 4, 4096).num_splits == 4
    assert dec.decode_config(20, 8, 4, 4096).num_splits == 1
    # many programs: no split
    assert dec.decode_config(128, 8, 4, 4096).num_splits == 1
    # short context limits the split count
    assert dec.decode_config(1, 8, 4, 1024).num_splits == 4
    assert dec.decode_config(1, 1, 4, 10**7).num_splits == dec.MAX_SPLITS
    assert dec.decode_config(1, 8, 4, 32768, num_splits=2).num_splits == 2
    assert dec.decode_config(1, 8, 128, 100).block_m == 64
    assert dec.decode_config(1, 8, 3, 100).block_m == 16


def test_heuristic_l2_evict_first_rule():
    """The TMA configs take the L2 evict-first hints when the step's K and V bytes (kv_bytes) are at most
    L2EF_MAX_BYTES (128 MiB: measured faster at 67 and 134 MB, slower from 268 MB); the gather configs never do."""
    assert dec.L2EF_MAX_BYTES == 1 << 27
    kv = lambda b, ctx: 2 * b * 8 * ctx * 128  # noqa: E731  (E4M3, Hkv 8, D 128)
    for (b, ctx, page), want in [((8, 4096, 64), True), ((8, 4096, 16), True), ((16, 4096, 64), True),
                                 ((8, 8192, 64), True), ((32, 4096, 64), False), ((32, 4096, 16), False),
                                 ((128, 4096, 16), False), ((8, 32768, 64), False)]:
        cfg = dec.decode_config(b, 8, 4, ctx, tma_page=page, kv_bytes=kv(b, ctx))
        assert cfg.kv_load != "gather" and cfg.l2_evict_first is want, (b, ctx, page, cfg)
        assert not dec.decode_config(b, 8, 4, ctx, tma_page=page).l2_evict_first  # bytes unknown
        assert dataclasses.replace(cfg, l2_evict_first=False) == dec.decode_config(b, 8, 4, ctx, tma_page=page)
    gather = dec.decode_config(8, 8, 4, 1024, tma_page=64, kv_bytes=kv(8, 1024))
    assert gather.kv_load == "gather" and not gather.l2_evict_first


def test_heuristic_tma_rules():
    """16 query rows, pages TMA can load. Pages of 64: the one-warp TMA kernel with the fewest splits giving >= 1024
    programs (B x Hkv x splits), each split >= 2048 tokens. Pages of 16: kv_load="tmab" (32-token steps, one warp,
    4 splits) at B x Hkv >= 512 with >= 4096 tokens per split, else from 64 pairs in one wave (3 stages). Anything else keeps the gather config (what
    decode_config gives without a TMA page); a caller's num_splits is kept and judged by the same bounds."""
    tma = dec.decode_config(32, 8, 4, 8192, tma_page=64)
    assert (tma.kv_load, tma.num_warps, tma.block_n, tma.num_stages, tma.num_splits, tma.v_stage) == (
        "tma", 1, 64, 4, 4, True)
    assert dec.decode_config(32, 8, 4, 8192).kv_load == "gather"
    assert dec.decode_config(128, 8, 4, 4096, tma_page=64) == dataclasses.replace(tma, num_splits=1)
    assert dec.decode_config(128, 8, 4, 2048, tma_page=64) == dataclasses.replace(tma, num_splits=1)
    assert dec.decode_config(64, 8, 4, 4096, tma_page=64) == dataclasses.replace(tma, num_splits=2)
    assert dec.decode_config(8, 8, 4, 32768, tma_page=64) == dataclasses.replace(tma, num_splits=16)
    assert dec.decode_config(32, 8, 4, 16384, num_splits=3, tma_page=64).num_splits == 3
    assert dec.decode_config(32, 8, 4, 16384, num_splits=3, tma_page=64).kv_load == "gather"  # 768 programs
    assert dec.decode_config(32, 8, 4, 16384, num_splits=8, tma_page=64) == dataclasses.replace(tma, num_splits=8)
    tmab = dec.decode_config(64, 8, 4, 32768, tma_page=16)
    assert (tmab.kv_load, tmab.num_warps, tmab.block_n, tmab.num_stages, tmab.num_splits, tmab.v_stage) == (
        "tmab", 1, 32, 4, 4, True)
    assert dec.decode_config(128, 8, 4, 16384, tma_page=16) == tmab
    assert (dec.TMA_MIN_SPLIT_LEN, dec.TMA_MIN_PROGRAMS) == (256, 1024)
    assert dec.decode_config(32, 8, 4, 4096, tma_page=64) == dataclasses.replace(tma, num_splits=4)  # 1024 tokens
    assert dec.decode_config(8, 8, 4, 4096, tma_page=64) == dataclasses.replace(tma, num_splits=16)  # 256 tokens
    assert dec.decode_config(128, 8, 4, 1024, tma_page=64) == dataclasses.replace(tma, num_splits=1)
    for page in (16, 64):  # degenerate sizes plan like the gather config (no division by zero)
        for args in ((0, 8, 4, 4096), (4, 0, 4, 4096)):
            assert dec.decode_config(*args, tma_page=page) == dec.decode_config(*args)
    assert (dec.TMAB_MIN_PAIRS, dec.TMAB_SPLITS, dec.TMAB_MIN_SPLIT_LEN) == (512, 4, 4096)
    # Pages of 16 below 512 pairs: the per-box kernel in one wave (3 stages, ~1024 programs, >= 512 tokens a split).
    wave = dataclasses.replace(tmab, num_stages=3)
    assert dec.decode_config(32, 8, 4, 32768, tma_page=16) == dataclasses.replace(wave, num_splits=4)
    assert dec.decode_config(32, 8, 4, 4096, tma_page=16) == dataclasses.replace(wave, num_splits=4)
    assert dec.decode_config(8, 8, 4, 32768, tma_page=16) == dataclasses.replace(wave, num_splits=16)
    assert dec.decode_config(8, 8, 4, 16384, tma_page=16) == dataclasses.replace(wave, num_splits=16)
    assert dec.decode_config(16, 8, 4, 8192, tma_page=16) == dataclasses.replace(wave, num_splits=8)
    assert dec.decode_config(32, 8, 4, 32768, num_splits=8, tma_page=16) == dataclasses.replace(wave, num_splits=8)
    # From 512 pairs where the 4-split rule's 4096 tokens per split are not there (contexts under 16384).
    assert dec.decode_config(128, 8, 4, 4096, tma_page=16) == dataclasses.replace(wave, num_splits=1)
    assert dec.decode_config(128, 8, 4, 8192, tma_page=16) == dataclasses.replace(wave, num_splits=1)
    assert dec.decode_config(64, 8, 4, 8192, tma_page=16) == dataclasses.replace(wave, num_splits=2)
    # 2^18 cached tokens over all pairs at least (2^20 until session 22), >= 512 tokens a split
    assert dec.TMAB_WAVE_MIN_TOKENS == 1 << 18
    assert dec.decode_config(8, 8, 4, 4096, tma_page=16) == dataclasses.replace(wave, num_splits=8)
    assert dec.decode_config(4, 16, 4, 4096, tma_page=16) == dataclasses.replace(wave, num_splits=8)
    assert dec.decode_config(8, 8, 4, 2048, tma_page=16) == dec.decode_config(8, 8, 4, 2048)  # under ctx 4096
    assert dec.decode_config(4, 8, 4, 4096, tma_page=16) == dec.decode_config(4, 8, 4, 4096)  # 32 pairs
    assert dec.decode_config(32, 8, 4, 8192, num_splits=32, tma_page=16) == dec.decode_config(32, 8, 4, 8192,
                                                                                              num_splits=32)
    for args, page in [((8, 8, 4, 1024), 64),  # 16 splits of 64 tokens
                       ((8, 8, 4, 4095), 64),  # 16 splits of 255
                       ((128, 8, 4, 255), 64),
                       ((1, 8, 4, 32768), 64),  # 128 splits needed: over MAX_SPLITS
                       ((32, 8, 4, 32768), 32),
                       ((128, 8, 4, 2048), 16),  # >= 512 pairs, under the one-wave rule's ctx 4096
                       ((4, 8, 4, 32768), 16),  # 32 pairs: below the one-wave rule
                       ((32, 8, 4, 2048), 16),  # the one-wave rule starts at ctx 4096
                       ((32, 8, 32, 32768), 64), ((128, 8, 32, 32768), 16), ((32, 8, 4, 32768), None)]:
        assert dec.decode_config(*args, tma_page=page) == dec.decode_config(*args), (args, page)


def test_heuristic_tma_only_where_tma_can_load(monkeypatch):
    """The plan asks for the TMA rule only when the cache is TMA-addressable: an unaligned base or a 16-bit cache
    gets the gather config from the heuristic."""
    seen = []
    real = dec.decode_config
    monkeypatch.setattr(dec, "decode_config",
                        lambda *a, **k: seen.append(a[6] if len(a) > 6 else k.get("tma_page")) or real(*a, **k))
    shape, strides = (16, 64, 8, 128), (64 * 8 * 128, 8 * 128, 128, 1)
    assert dec._tma_geometry(shape, strides, strides, 1, 64, True) is not None
    assert dec._tma_geometry(shape, strides, strides, 1, 64, False) is None  # base not 16-byte aligned
    assert dec._tma_geometry(shape, strides, strides, 2, 64, True) is None  # bf16 cache
    key = (torch.device("cpu"), torch.bfloat16, torch.float8_e4m3fn, torch.bfloat16, 32, 1, 32, 8, 128, 64, 256, 16, strides,
           strides, False, False, 16384, None, None, "cutlass", False)
    dec._plan(key)
    assert seen[-1] is None  # not aligned: no tma_page
    dec._plan(key[:-1] + (True,))
    assert seen[-1] == 64  # aligned dense E4M3 pages of 64


# ------------------------------------------------------------------------------------------------------------------
# write_kv_cache


def _random_bytes_cache(nb, page, hkv, d, device, seed):
    g = torch.Generator().manual_seed(seed)
    raw = torch.randint(0, 256, (nb, page, hkv, d), dtype=torch.uint8, generator=g)
    raw[(raw & 0x7F) == 0x7F] = 0
    return raw.view(E4M3).to(device)


@pytest.mark.parametrize(
    "t,hkv,d,page,src_dtype,slot_dtype,per_head",
    [
        (37, 2, 64, 16, torch.bfloat16, torch.int64, True),
        (37, 3, 48, 16, torch.float16, torch.int32, False),
        (20, 1, 128, 64, torch.float32, torch.int64, True),
        (9, 8, 16, 32, torch.bfloat16, torch.int32, True),
        (5, 2, 64, 128, torch.bfloat16, torch.int64, False),
    ],
)
def test_write_kv_cache_bit_exact(t, hkv, d, page, src_dtype, slot_dtype, per_head, device):
    g = torch.Generator().manual_seed(t + d)
    nb = 6
    ks = (torch.rand(hkv, generator=g) * 0.02 + 0.005) if per_head else torch.tensor(0.01)
    vs = (torch.rand(hkv, generator=g) * 0.02 + 0.005) if per_head else torch.tensor(0.03)
    ks, vs = ks.to(device), vs.to(device)
    # N(0, 20): with scales ~0.01 many values exceed 448 * scale and must saturate; add the limits explicitly
    k = (torch.randn(t, hkv, d, generator=g) * 20).to(src_dtype)
    v = (torch.randn(t, hkv, d, generator=g) * 20).to(src_dtype)
    k[0, 0, :4] = torch.tensor([float("inf"), -float("inf"), 1e4, -0.0]).to(src_dtype)
    k, v = k.to(device), v.to(device)
    slots = torch.randperm(nb * page, generator=g)[:t].to(slot_dtype)
    slots[t // 2] = -1  # padding token: skipped
    slots = slots.to(device)
    kc = _random_bytes_cache(nb, page, hkv, d, device, seed=1)
    vc = _random_bytes_cache(nb, page, hkv, d, device, seed=2)
    kc_ref, vc_ref = kc.clone(), vc.clone()
    dec.write_kv_cache(k, v, kc, vc, slots, ks, vs)
    dec.write_kv_cache_torch(k, v, kc_ref, vc_ref, slots, ks, vs)
    # whole caches bit for bit: written slots equal the reference quantization, all other bytes untouched
    assert torch.equal(kc.view(torch.uint8), kc_ref.view(torch.uint8))
    assert torch.equal(vc.view(torch.uint8), vc_ref.view(torch.uint8))
    # round trip: the written slots read back equal quantize_kv_torch
    keep = slots >= 0
    s = slots[keep].long()
    assert torch.equal(kc[s // page, s % page].view(torch.uint8), dec.quantize_kv_torch(k, ks)[keep].view(torch.uint8))
    assert (kc[s // page, s % page].float().abs() == 448).any()  # saturation was exercised


def test_write_kv_cache_noncontiguous_input_and_slot_minus_one(device):
    hkv, d, page = 2, 32, 16
    big = torch.randn(10, hkv, 2 * d).to(device=device, dtype=torch.bfloat16)
    k = big[..., :d]  # row stride 2*d: not contiguous
    v = big[..., d:]
    assert not k.is_contiguous()
    ks = torch.tensor([0.01, 0.02], device=device)
    kc = _random_bytes_cache(2, page, hkv, d, device, seed=3)
    vc = _random_bytes_cache(2, page, hkv, d, device, seed=4)
    before_k, before_v = kc.clone(), vc.clone()
    dec.write_kv_cache(k, v, kc, vc, torch.full((10,), -1, device=device), ks, ks)
    assert torch.equal(kc.view(torch.uint8), before_k.view(torch.uint8))
    assert torch.equal(vc.view(torch.uint8), before_v.view(torch.uint8))
    slots = torch.arange(10, device=device) + 7
    dec.write_kv_cache(k, v, kc, vc, slots, ks, ks)
    dec.write_kv_cache_torch(k, v, before_k, before_v, slots, ks, ks)
    assert torch.equal(kc.view(torch.uint8), before_k.view(torch.uint8))
    assert torch.equal(vc.view(torch.uint8), before_v.view(torch.uint8))


def test_write_kv_cache_nan_stays_nan(device):
    """NaN input stays NaN (torch keeps NaN's sign bit, the kernel's cast writes 0x7F: both are E4M3 NaN)."""
    k = torch.full((1, 1, 16), float("nan"), dtype=torch.bfloat16, device=device)
    kc = torch.zeros(1, 16, 1, 16, dtype=E4M3, device=device)
    vc = torch.zeros_like(kc)
    dec.write_kv_cache(k, k, kc, vc, torch.zeros(1, dtype=torch.int64, device=device),
                       torch.tensor(1.0, device=device), torch.tensor(1.0, device=device))
    assert torch.isnan(kc[0, 0].float()).all() and torch.isnan(vc[0, 0].float()).all()


def test_write_kv_cache_out_of_range_slot_skipped_or_raises(device):
    k = torch.randn(3, 1, 16, device=device).bfloat16()
    kc = _random_bytes_cache(2, 16, 1, 16, device, seed=5)
    before = kc.clone()
    s = torch.tensor(1.0, device=device)
    slots = torch.tensor([0, 32, 10**9], device=device)  # 32 = num_blocks * block_size: one past the end
    dec.write_kv_cache(k, k, kc, kc.clone(), slots, s, s)
    assert torch.equal(kc[1:].view(torch.uint8), before[1:].view(torch.uint8))
    assert torch.equal(kc[0, 1:].view(torch.uint8), before[0, 1:].view(torch.uint8))
    assert torch.equal(kc[0, 0].view(torch.uint8), dec.quantize_kv_torch(k[:1], s)[0].view(torch.uint8))
    with pytest.raises(ValueError, match=r"slot_mapping: entries must be -1 \(skip\) or in \[0, 32\)"):
        dec.write_kv_cache(k, k, kc, kc.clone(), slots, s, s, check=True)


def test_write_kv_cache_zero_tokens(device):
    kc = torch.zeros(1, 16, 1, 16, dtype=E4M3, device=device)
    k = torch.zeros(0, 1, 16, dtype=torch.bfloat16, device=device)
    s = torch.tensor(1.0, device=device)
    dec.write_kv_cache(k, k, kc, kc, torch.zeros(0, dtype=torch.int64, device=device), s, s)
    assert not kc.view(torch.uint8).any()


def test_write_kv_cache_launch_consts_follow_geometry_and_naming_mode(monkeypatch, device):
    """The per-geometry constexprs (cached since session 30) are those of this call's geometry, and the kernel name
    follows the naming mode at call time: the cache is keyed on both."""
    from tritonfp8 import _launch, naming

    seen = []
    monkeypatch.setattr(_launch, "launch", lambda fn, grid, *args, **kw: seen.append((grid, kw)))
    s = torch.tensor(1.0, device=device)
    for hkv, d, page, mode in ((3, 96, 16, "cutlass"), (3, 96, 16, "plain"), (2, 64, 64, "cutlass")):
        kc = torch.zeros(2, page, hkv, d, dtype=E4M3, device=device)
        k = torch.zeros(5, hkv, d, dtype=torch.float16, device=device)
        with naming.kernel_names(mode):
            dec.write_kv_cache(k, k, kc, kc.clone(), torch.arange(5, device=device), s, s)
        grid, kw = seen[-1]
        assert grid == (5,)
        assert (kw["HEADS"], kw["HEAD_DIM"], kw["BLOCK_H"], kw["BLOCK_D"], kw["PAGE"]) == (
            hkv, d, 4 if hkv == 3 else 2, 128 if d == 96 else 64, page)
        assert kw["KERNEL_NAME"].startswith("cutlass" if mode == "cutlass" else "tfp8"), kw["KERNEL_NAME"]
        assert kw["KERNEL_NAME"] == dec_kern.write_kv_kernel_name(
            dec._backend.arch_of(kc.device), "f16", "e4m3", hkv, d, 4, False).build(mode)


BAD_WRITE = [
    ("k", lambda a: a["k"].to(torch.int32), TypeError, "k: expected bf16, fp16 or fp32"),
    ("v", lambda a: a["v"][:2], ValueError, "v: shape"),
    ("k", lambda a: a["k"][0], ValueError, r"k: expected \(T, Hkv, D\)"),
    ("k_cache", lambda a: a["k_cache"].half(), TypeError, "k_cache: expected torch.float8_e4m3fn"),
    ("v_cache", lambda a: torch.zeros(4, 16, 2, 32, dtype=E4M3, device=a["k"].device), ValueError, "v_cache: shape"),
    ("slot_mapping", lambda a: a["slot_mapping"].float(), TypeError, "slot_mapping: expected an int32 or int64"),
    ("slot_mapping", lambda a: a["slot_mapping"][:1], ValueError, r"slot_mapping: expected shape \(T,\)"),
    ("k_scale", lambda a: torch.ones(2, 1, device=a["k"].device), ValueError, "k_scale: expected shape"),
    ("v_scale", lambda a: 0.5, TypeError, "v_scale: expected an fp32 tensor"),
]


@pytest.mark.parametrize("arg,make,exc,match", BAD_WRITE, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_WRITE)])
def test_write_kv_cache_bad_input(arg, make, exc, match, device):
    a = dict(
        k=torch.zeros(3, 2, 64, dtype=torch.bfloat16, device=device),
        v=torch.zeros(3, 2, 64, dtype=torch.bfloat16, device=device),
        k_cache=torch.zeros(4, 16, 2, 64, dtype=E4M3, device=device),
        v_cache=torch.zeros(4, 16, 2, 64, dtype=E4M3, device=device),
        slot_mapping=torch.zeros(3, dtype=torch.int64, device=device),
        k_scale=torch.tensor(1.0, device=device),
        v_scale=torch.tensor(1.0, device=device),
    )
    a[arg] = make(a)
    with pytest.raises(exc, match=match):
        dec.write_kv_cache(**a)


def test_demo_cases_pass(device):
    for c in dec.demo_cases(device):
        out, ref = c.run()
        if c.tol == 0:
            for o, r in zip(out, ref):
                assert torch.equal(o.view(torch.uint8), r.view(torch.uint8)), c.case
        else:
            rel = ((out.double() - ref.double()).norm() / ref.double().norm()).item()
            assert rel <= c.tol, (c.case, rel)


# ------------------------------------------------------------------------------------------------------------------
# Benchmark suite bookkeeping (CPU: kernels in the interpreter, a stand-in timer; the real timing is on the H200)


def test_bench_suite_runs_and_writes_results(tmp_path, monkeypatch, device):
    import argparse
    import json

    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import decode as suite

    calls = []
    monkeypatch.setattr(H, "time_once", lambda fn, *a, **k: (calls.append(fn()), 1.0)[1])
    monkeypatch.setattr(suite, "_DEVICE", device)
    monkeypatch.setattr(suite, "WRITE_TOKENS_QUICK", (24,))
    monkeypatch.setattr(suite, "VARIANT_CASES", ((1, 40, 8, 16),))
    monkeypatch.setattr(suite, "VARIANTS", {"heuristic": {}, "bn32": {"block_n": 32},
                                            "mergekernel": {"merge": "kernel"}, "splitsx2": {"splits_factor": 2.0},
                                            "plainname": {"names": "plain"}})
    p = argparse.ArgumentParser()
    suite.add_arguments(p)
    args = p.parse_args(["--batch", "2", "--context", "40", "--hq", "8", "--page", "16", "--variants"])
    args.quick, args.repeats, args.out, args.no_save, args.profile = True, 1, str(tmp_path), False, False
    assert suite.run(args) == 0
    files = sorted(tmp_path.glob("decode-*.json"))
    assert len(files) == 1 and files[0].with_suffix(".png").exists()
    data = json.loads(files[0].read_text())
    kinds = [r["kind"] for r in data["rows"]]
    assert kinds.count("decode") == 1 and kinds.count("write") == 1 and kinds.count("variant") >= 4
    assert any(r.get("names") == "plain" for r in data["rows"])
    row = data["rows"][0]
    assert row["check_ok"] and row["bytes"] == 2 * 2 * 40 * 8 * 128 + 2 * 2 * 8 * 128 * 2
    assert data["rows"][1]["exact"]


def test_bench_suite_kv_heads(tmp_path, monkeypatch, device):
    """``--hkv``: one matrix row per KV head count, the cache, the bytes and the check at that count; an Hq that is
    not a multiple of every --hkv is refused before anything runs."""
    import argparse
    import json

    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import decode as suite

    monkeypatch.setattr(H, "time_once", lambda fn, *a, **k: (fn(), 1.0)[1])
    monkeypatch.setattr(suite, "_DEVICE", device)
    monkeypatch.setattr(suite, "WRITE_TOKENS_QUICK", (24,))
    p = argparse.ArgumentParser()
    suite.add_arguments(p)

    def parse(*extra):
        args = p.parse_args(["--batch", "1", "--context", "40", "--hq", "8", "--page", "16", "--no-peers", *extra])
        args.quick, args.repeats, args.out, args.no_save, args.profile = True, 1, str(tmp_path), False, False
        return args

    assert suite.run(parse("--hkv", "2", "--hkv", "8")) == 0
    data = json.loads(next(tmp_path.glob("decode-*.json")).read_text())
    rows = [r for r in data["rows"] if r["kind"] == "decode"]
    assert [(r["Hkv"], r["case"]) for r in rows] == [(2, "B1 ctx40 8/2 p16"), (8, "B1 ctx40 8/8 p16")]
    assert all(r["check_ok"] for r in rows)
    assert [r["bytes"] for r in rows] == [2 * 40 * h * 128 + 2 * 8 * 128 * 2 for h in (2, 8)]
    assert data["config"]["Hkv"] == [2, 8]
    with pytest.raises(ValueError, match=r"--hq \[8\]: expected multiples of --hkv 3"):
        suite.run(parse("--hkv", "3"))
    with pytest.raises(ValueError, match="--hkv: expected a positive"):
        suite.run(parse("--hkv", "0"))


def test_bench_write_under_graph_mode_times_only_the_torch_reference_eager(monkeypatch, device):
    """Under ``bench --graph`` the write's torch reference (host syncs: not capturable) is timed eager, ours and the
    copy by the graph timer."""
    import argparse

    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import decode as suite

    timed = []
    monkeypatch.setattr(H, "timer_mode", lambda: "graph")
    monkeypatch.setattr(H, "time_once", lambda fn, *a, **k: (timed.append("graph"), fn(), 1.0)[2])
    monkeypatch.setattr(H, "time_events", lambda fn, *a, **k: (timed.append("events"), fn(), 1.0)[2])
    monkeypatch.setattr(suite, "_DEVICE", device)
    monkeypatch.setattr(suite, "WRITE_TOKENS_QUICK", (24,))
    args = argparse.Namespace(quick=True, repeats=2)
    rows = suite._run_write(args, H, H.make_console())
    assert len(rows) == 1 and rows[0]["exact"]
    assert sorted(timed) == ["events"] * 2 + ["graph"] * 4  # per round: torch eager; ours and the copy graphed


# ------------------------------------------------------------------------------------------------------------------
# Replays of the public op (decode._REPLAYS): the key and the hit path (CPU), the real launches on the GPU
# (tests/test_decode_gpu.py::test_replay_*).


def test_replay_key_covers_the_metadata(device):
    case = Case((100, 33), 4, 2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device)
    key = dec._replay_key
    base = key(q, kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, None, None)
    assert base is not None and base == key(q.clone(), kc, vc, bt.clone(), sl.clone(), ks, vs, None, None,
                                            torch.bfloat16, None, None)
    variants = [
        key(q[:1], kc, vc, bt[:1], sl[:1], ks, vs, None, None, torch.bfloat16, None, None),  # shapes
        key(q.transpose(1, 2).contiguous().transpose(1, 2), kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16,
            None, None) if q.shape[1] > 1 else None,  # strides (Sq > 1 only)
        key(q.half(), kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, None, None),  # dtype
        key(q, kc, vc, bt, sl, ks[:1], vs, None, None, torch.bfloat16, None, None),  # descale shape
        key(q, kc, vc, bt, sl, ks, vs, 0.1, None, torch.bfloat16, None, None),  # softmax scale
        key(q, kc, vc, bt, sl, ks, vs, None, 2, torch.bfloat16, None, None),  # num_splits
        key(q, kc, vc, bt, sl, ks, vs, None, None, torch.float32, None, None),  # out dtype
        key(q, kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, 1, None),  # max_seqlen
        key(q, kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, True, None),  # a bool is not the int 1
        key(q, kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, None, dec.DecodeConfig()),  # config
    ]
    assert all(v != base for v in variants if v is not None)
    assert variants[7] != variants[8]
    # Never replayed: a softmax scale that is not a Python number, missing descales, non-tensors.
    assert key(q, kc, vc, bt, sl, ks, vs, torch.tensor(0.1), None, torch.bfloat16, None, None) is None
    assert key(q, kc, vc, bt, sl, None, vs, None, None, torch.bfloat16, None, None) is None
    assert key(q, kc, vc, [[0]], sl, ks, vs, None, None, torch.bfloat16, None, None) is None


def test_replay_hit_path_launches_the_plan(device, monkeypatch):
    """A stored replay is taken for a call with the same metadata and aligned tensors (the plan launched with this
    call's tensors into a fresh output), skipped with check=True, misaligned tensors or the switch off."""
    case = Case((100, 33), 4, 2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device)
    calls = []

    class FakePlan:
        def launch(self, *args, replay=False):
            assert replay
            calls.append(args)
            args[7].fill_(7.0)

    monkeypatch.setattr(dec, "_REPLAYS", {})
    rkey = dec._replay_key(q, kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, None, None)
    dec._REPLAYS[rkey] = (FakePlan(), 0.25)
    out = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    assert len(calls) == 1 and calls[0][0] is q and calls[0][1] is kc and calls[0][8] == 0.25
    assert out.shape == q.shape and out.dtype == torch.bfloat16 and bool((out == 7.0).all())
    ref = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, check=True)  # the full path
    assert len(calls) == 1 and not bool((ref == 7.0).all())
    prev = dec._FAST.set(False)
    try:
        dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    finally:
        dec._FAST.set(prev)
    assert len(calls) == 1
    # A q whose data starts 2 bytes into a buffer: same metadata, not 16-byte aligned -> the full path.
    buf = torch.empty(q.numel() + 1, dtype=q.dtype, device=q.device)
    q_off = buf[1:].view(q.shape).copy_(q)
    assert dec._replay_key(q_off, kc, vc, bt, sl, ks, vs, None, None, torch.bfloat16, None, None) == rkey
    out2 = dec.decode_attention(q_off, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    assert len(calls) == 1 and torch.equal(out2, ref)
