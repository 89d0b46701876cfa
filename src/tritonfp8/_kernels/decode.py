"""Triton kernels of FP8 KV-cache decode attention (private; the public op is :mod:`tritonfp8.decode`).

Paged cache layout: ``k_cache``/``v_cache`` (num_blocks, PAGE, Hkv, D), last dim contiguous; token ``n`` of
sequence ``b`` lives in page ``block_table[b, n // PAGE]`` at slot ``n % PAGE``. Scales are fp32 dequantization
factors, one per tensor or one per KV head (a pointer plus a head stride of 0 or 1, so nothing is read on the host).

Kernels:

- :func:`_write_kv_kernel`: one program per new token; quantizes its (Hkv, D) K and V rows with the static scales
  (IEEE division, saturation, RNE: bit-exact with torch) and scatters them to their cache slot.
- :func:`_decode_kernel`: one program per (query-row block, KV head, batch, split). The Hq/Hkv query heads of a KV
  head times the Sq new tokens form the rows of one ``tl.dot`` tile (padded to >= 16 rows), so each K/V page is
  read from memory once for all of them. BLOCK_N cache tokens per step, gathered page by page via the block table.
  With one split the program writes the normalized output; with several it writes a partial (o, lse) in fp32,
  and (INLINE_MERGE) the last split of its group to finish, found with an atomic ticket counter, merges them.
  KV_TMA (``DecodeConfig(kv_load="tma")``): ``k_cache_ptr``/``v_cache_ptr`` are host TMA descriptors of the caches
  viewed as [num_blocks * PAGE, Hkv * D] (row stride Hkv * D bytes); each page's [PAGE, D] tile of a KV head (or a
  [BLOCK_N, D] sub-box when BLOCK_N < PAGE) is one TMA box at (page * PAGE + slot, kvh * D), 1-8 boxes per step
  stacked in token order (:func:`_decode_step_tma`), in a loop the pipeliner runs num_stages deep. KV_TMA=3
  (``kv_load="tmab"``): the 2-8 page boxes of a step are not stacked; one score tile and one P.V product per box,
  one softmax update per step (:func:`_decode_step_tma_boxes`).
- :func:`_combine_kernel`: log-sum-exp merge of the splits' partials into the output as a second launch (the
  alternative to the inline merge).

Arithmetic: both products run on fp16 tensor-core inputs with fp32 accumulation.
E4M3 -> fp16 is exact (E4M3 spans 2^-9 .. 448 with 3 mantissa bits; fp16 spans 2^-24 .. 65504 with 10) and is one
packed ``cvt.rn.f16x2.e4m3x2`` per two values on sm_89+, while sm_90 has no direct E4M3 -> bf16 conversion.
A bf16 q is multiplied per query row by a power of two that puts its largest magnitude in [2^14, 2^15), then cast to
fp16: exact for every element within 2^-28 of the row's largest (smaller ones lose bits, a contribution below 2^-28
of the largest term), never overflowing; the factor is divided out of the scores exactly. P = exp2(s - m) in [0, 1]
is rounded to fp16 (RNE) for the P·V product; the row sum l is the fp32 sum of the unrounded P.
A 16-bit cache (the bf16 peer of the benchmark) uses its own dtype for both products instead.
"""

from __future__ import annotations

import dataclasses

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from tritonfp8._kernels import l2hint
from tritonfp8._kernels.fp8cast import cast_to_fp8, round_to_fp8_grid
from tritonfp8.codegen import CodegenSpec
from tritonfp8.naming import KernelName, named_jit


l2hint.install()  # DecodeConfig(l2_evict_first=True): the "l2ef" kernels' PTX pass


@triton.jit
def _to_out_dtype(x, OUT_DTYPE: tl.constexpr):
    """fp32 -> the output dtype, rounded to nearest even on the GPU and in the interpreter alike.

    The Triton 3.6 interpreter truncates fp32 -> bf16 casts (measured: -2.2955 became -2.2812, the GPU and torch give
    -2.2969). Rounding in fp32 first makes the cast exact: add 0x7FFF plus the lowest kept bit, clear the low 16 bits
    (ties to even; inf and NaN keep their class). fp16 casts round correctly in both and are left alone.
    """
    if OUT_DTYPE == tl.bfloat16:
        bits = x.to(tl.int32, bitcast=True)
        bits = (bits + (0x7FFF + ((bits >> 16) & 1))) & -65536
        x = bits.to(tl.float32, bitcast=True)
    return x.to(OUT_DTYPE)


@named_jit
def _write_kv_kernel(
    k_ptr,
    v_ptr,
    k_cache_ptr,
    v_cache_ptr,
    slot_ptr,
    k_scale_ptr,
    v_scale_ptr,
    num_slots,
    stride_kt,
    stride_kh,
    stride_vt,
    stride_vh,
    stride_kcb,
    stride_kcs,
    stride_kch,
    stride_vcb,
    stride_vcs,
    stride_vch,
    SCALE_STRIDE: tl.constexpr,  # 0: one scale per tensor; 1: one per KV head
    HEADS: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
    PAGE: tl.constexpr,
    CACHE_DTYPE: tl.constexpr,
    KERNEL_NAME: tl.constexpr,
):
    """Quantize one token's K, V (HEADS, HEAD_DIM) rows and store them at flat slot ``slot_mapping[t]``.

    q = fp8(RNE(clamp(x_fp32 / scale, -max, max))) with IEEE division (``div_rn``); slot < 0 (padding) and
    slot >= num_slots (out of range) are skipped, so no store lands outside the cache.
    """
    t = tl.program_id(0).to(tl.int64)
    h = tl.arange(0, BLOCK_H)
    d = tl.arange(0, BLOCK_D)
    mask = (h < HEADS)[:, None] & (d < HEAD_DIM)[None, :]
    # K, V and the slot are loaded side by side (no load waits on another); only the stores depend on the slot.
    slot = tl.load(slot_ptr + t).to(tl.int64)
    k = tl.load(k_ptr + t * stride_kt + h[:, None] * stride_kh + d[None, :], mask=mask, other=0.0)
    v = tl.load(v_ptr + t * stride_vt + h[:, None] * stride_vh + d[None, :], mask=mask, other=0.0)
    ks = tl.load(k_scale_ptr + h * SCALE_STRIDE, mask=h < HEADS, other=1.0)
    vs = tl.load(v_scale_ptr + h * SCALE_STRIDE, mask=h < HEADS, other=1.0)
    kq = cast_to_fp8(tl.math.div_rn(k.to(tl.float32), ks[:, None]), CACHE_DTYPE)
    vq = cast_to_fp8(tl.math.div_rn(v.to(tl.float32), vs[:, None]), CACHE_DTYPE)
    st_mask = mask & (slot >= 0) & (slot < num_slots)
    slot = tl.where((slot >= 0) & (slot < num_slots), slot, 0)
    page = slot // PAGE
    off = slot % PAGE
    tl.store(k_cache_ptr + page * stride_kcb + off * stride_kcs + h[:, None] * stride_kch + d[None, :], kq,
             mask=st_mask)
    tl.store(v_cache_ptr + page * stride_vcb + off * stride_vcs + h[:, None] * stride_vch + d[None, :], vq,
             mask=st_mask)


@triton.jit
def split_range(seq_lens_ptr, b, split, num_splits, max_blocks, PAGE: tl.constexpr, STEP: tl.constexpr):
    """(seq_len, start, end) of split ``split`` of sequence ``b``: its length clipped to the table's width, and the
    token range of the split's share of its STEP-token tiles, ``[split * c, (split + 1) * c)`` with ``c =
    cdiv(cdiv(seq_len, STEP), num_splits) * STEP``, cut at seq_len (empty when start >= seq_len). Shared with the
    Gluon kernel (_kernels/decode_gluon.py)."""
    seq_len = tl.load(seq_lens_ptr + b)
    seq_len = tl.minimum(tl.maximum(seq_len, 0), max_blocks * PAGE)
    tiles_per_split = tl.cdiv(tl.cdiv(seq_len, STEP), num_splits)
    start = split * tiles_per_split * STEP
    return seq_len, start, tl.minimum(start + tiles_per_split * STEP, seq_len)


@triton.jit
def _softmax_step(s, m_i, l_i, n, n_ok, score_scale, last_visible, MASKED: tl.constexpr):
    """Online-softmax update of a step's raw scores ``s`` [BLOCK_M, BLOCK_N] (query rows x cache tokens ``n``):
    scaled to log2 units, masked (tokens not ``n_ok``; with MASKED also the causal rule), new row max, P, the
    rescale factor alpha and the running row sum. Returns (p, alpha, m_new, l_i)."""
    s = _scaled_scores(s, n, n_ok, score_scale, last_visible, MASKED)
    m_new, m_use, alpha = _new_max(m_i, tl.max(s, axis=1))
    p = tl.exp2(s - m_use[:, None])
    l_i = l_i * alpha + tl.sum(p, axis=1)
    return p, alpha, m_new, l_i


@triton.jit
def _scaled_scores(s, n, n_ok, score_scale, last_visible, MASKED: tl.constexpr):
    """Raw scores ``s`` [BLOCK_M, tokens] scaled to log2 units, -inf where token ``n`` is not ``n_ok`` (with
    MASKED also where the causal rule hides it from a row)."""
    s = s * score_scale[:, None]
    if MASKED:
        visible = n_ok[None, :] & (n[None, :] <= last_visible[:, None])
    else:
        visible = n_ok[None, :]
    return tl.where(visible, s, float("-inf"))


@triton.jit
def _new_max(m_i, row_max):
    """(m_new, m_use, alpha): the running row max after a step whose scores peak at ``row_max``, the max used to
    shift the exponents (0 for rows with nothing visible yet) and the old sums' rescale factor."""
    m_new = tl.maximum(m_i, row_max)
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)  # rows with nothing visible yet stay at 0
    return m_new, m_use, tl.exp2(m_i - m_use)


@triton.jit
def _decode_step(q, acc, m_i, l_i, n, page, d, d_ok, k_base, v_base, end, num_blocks, score_scale, last_visible,
                 stride_kb, stride_ks, stride_vb, stride_vs, OFFS_I32: tl.constexpr, KV_SAME_STRIDES: tl.constexpr,
                 PAGE: tl.constexpr, DOT_DTYPE: tl.constexpr, MASKED: tl.constexpr, V_STAGE: tl.constexpr = 0):
    """One loop step of :func:`_decode_kernel` over cache tokens ``n`` (BLOCK_N of them) whose page ids are ``page``.

    MASKED=False: the caller guarantees every token is < end and visible to every row; only the page range check
    (page ids outside [0, num_blocks) are skipped) remains. MASKED=True: length, page and causal masks. Both give
    the same bits for the tokens they cover: a masked-out token contributes exp2(-inf - m) = 0 either way.
    """
    # One unsigned compare covers page < 0 and page >= num_blocks.
    page_ok = page.to(tl.uint32) < num_blocks.to(tl.uint32)
    if MASKED:
        n_ok = (n < end) & page_ok
    else:
        n_ok = page_ok
    slot = n % PAGE
    if not OFFS_I32:
        page = page.to(tl.int64)
    kv_mask = n_ok[:, None] & d_ok[None, :]
    k_off = (page * stride_kb + slot * stride_ks)[:, None] + d[None, :]
    k = tl.load(k_base + k_off, mask=kv_mask, other=0.0)
    p, alpha, m_new, l_i = _softmax_step(tl.dot(q, tl.trans(k.to(DOT_DTYPE))), m_i, l_i, n, n_ok, score_scale,
                                         last_visible, MASKED)
    if KV_SAME_STRIDES:
        v_off = k_off
    else:
        v_off = (page * stride_vb + slot * stride_vs)[:, None] + d[None, :]
    v = tl.load(v_base + v_off, mask=kv_mask, other=0.0)
    acc = acc * alpha[:, None] + tl.dot(p.to(DOT_DTYPE), _stage_v(v, DOT_DTYPE, V_STAGE))
    return acc, m_new, l_i


@triton.jit
def _kv_tile(base, n, page, d, d_ok, end, num_blocks, stride_b, stride_s, OFFS_I32: tl.constexpr,
             PAGE: tl.constexpr):
    """The [BLOCK_N, BLOCK_D] cache tile of tokens ``n`` (pages ``page``); tokens >= end or on a page outside
    [0, num_blocks) are not read (0)."""
    ok = (n < end) & (page.to(tl.uint32) < num_blocks.to(tl.uint32))
    if not OFFS_I32:
        page = page.to(tl.int64)
    off = (page * stride_b + (n % PAGE) * stride_s)[:, None] + d[None, :]
    return tl.load(base + off, mask=ok[:, None] & d_ok[None, :], other=0.0)


@triton.jit
def _decode_step_t(q8, acc_t, m_i, l_i, n, page, d, d_ok, k_base, v_base, end, num_blocks, score_scale,
                   last_visible, stride_kb, stride_ks, stride_vb, stride_vs, OFFS_I32: tl.constexpr, PAGE: tl.constexpr, EXACT_ROUND: tl.constexpr,
                   MASKED: tl.constexpr):
    """One step of the FP8 tensor-core form (``DecodeConfig(dot="fp8t")``): cache tokens as the MMA M dimension.

    S^T = K.q8^T ([BLOCK_N, BLOCK_M], E4M3 x E4M3 wgmma, K straight from shared memory, q8 the E4M3 q) and
    O^T += V^T.P8^T ([BLOCK_D, BLOCK_M], E4M3 wgmma): M is 64+ tokens / head-dim columns, N the 16 query rows, so
    no query row is padded to 64 and the softmax works on [tokens, rows] tiles. ``v`` is this step's V tile, loaded
    one step ahead by the caller. P = 2^8 exp2(s - m) in [0, 256] (the factor is an exponent shift and cancels in
    acc / l) is rounded to E4M3; l is the fp32 sum of the unrounded P.
    """
    page_ok = page.to(tl.uint32) < num_blocks.to(tl.uint32)
    if MASKED:
        n_ok = (n < end) & page_ok
    else:
        n_ok = page_ok
    # V first: its registers-to-shared transpose waits on this load, which then overlaps S and the softmax.
    v = _kv_tile(v_base, n, page, d, d_ok, end, num_blocks, stride_vb, stride_vs, OFFS_I32, PAGE)
    k = _kv_tile(k_base, n, page, d, d_ok, end, num_blocks, stride_kb, stride_ks, OFFS_I32, PAGE)
    s = tl.dot(k, tl.trans(q8)) * score_scale[None, :]  # [BLOCK_N, BLOCK_M]
    if MASKED:
        s = tl.where(n_ok[:, None] & (n[:, None] <= last_visible[None, :]), s, float("-inf"))
    else:
        s = tl.where(n_ok[:, None], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=0))
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2(m_i - m_use)
    p = tl.exp2(s - (m_use - 8.0)[None, :])
    l_i = l_i * alpha + tl.sum(p, axis=0)
    if EXACT_ROUND:  # the interpreter's fp32 -> fp8 cast truncates; the GPU's cvt.rn rounds to nearest even
        p = round_to_fp8_grid(p, -6, 3, 448.0)
    acc_t = tl.dot(tl.trans(v), p.to(tl.float8e4nv), acc_t * alpha[None, :])
    return acc_t, m_new, l_i


@triton.jit
def _tma_box(desc, bt_row, n0, j, end, stride_btn, num_blocks, col, PAGE: tl.constexpr, BOX: tl.constexpr):
    """The [BOX, D] cache tile of tokens ``n0 + j * PAGE + [0, BOX)`` (one page, or a sub-box of one page) as one
    TMA load at row ``page * PAGE + n0 % PAGE`` of the [num_blocks * PAGE, Hkv * D] view. A page outside
    [0, num_blocks), or one past ``end`` (its table entry is not read), is loaded from row num_blocks * PAGE, past
    the view's end: the copy engine fills the box with zeros and reads nothing."""
    row, ok = _tma_row(bt_row, n0 + j * PAGE, end, stride_btn, num_blocks, PAGE)
    return desc.load([row, col])


@triton.jit
def _tma_row(bt_row, nj, end, stride_btn, num_blocks, PAGE: tl.constexpr):
    """(row, ok) of the box that starts at token ``nj``: its row in the [num_blocks * PAGE, Hkv * D] view (row
    num_blocks * PAGE, past the end: zeros, for a page outside [0, num_blocks) or ``nj >= end``) and whether its
    page is in range."""
    page = tl.load(bt_row + (nj // PAGE) * stride_btn, mask=nj < end, other=-1)
    ok = page.to(tl.uint32) < num_blocks.to(tl.uint32)
    return tl.where(ok, page * PAGE + nj % PAGE, num_blocks * PAGE), ok


@triton.jit
def _stack_rows(a, b):
    """[R, D] tiles a then b as one [2R, D] tile (rows of a first)."""
    R: tl.constexpr = a.shape[0]
    D: tl.constexpr = a.shape[1]
    return tl.permute(tl.join(a, b), (2, 0, 1)).reshape([2 * R, D])


@triton.jit
def _perm_cols(x, G: tl.constexpr):
    """x [R, D] (or [W, R, D]: each slice alike) with its columns permuted: column (D // G) * g + j of x becomes
    column G * j + g. With G = 8, the mma.sync B operand's columns g + 8j (j = 0 .. D/8 - 1, the n-tiles of lane
    group g = lane // 4) are the D/8 adjacent columns (D/8) * g + j of x: one contiguous run of a row. A column
    permutation of V permutes the columns of P.V alike and changes no product or sum."""
    D: tl.constexpr = x.shape[-1]
    R: tl.constexpr = x.shape[-2]
    if len(x.shape) == 3:
        W: tl.constexpr = x.shape[0]
        x = tl.permute(x.reshape([W, R, G, D // G]), (0, 1, 3, 2)).reshape([W, R, D])
    else:
        x = tl.permute(x.reshape([R, G, D // G]), (0, 2, 1)).reshape([R, D])
    return x


@triton.jit
def _unperm_cols(x, G: tl.constexpr):
    """The inverse of :func:`_perm_cols`."""
    R: tl.constexpr = x.shape[0]
    D: tl.constexpr = x.shape[1]
    return tl.permute(x.reshape([R, D // G, G]), (0, 2, 1)).reshape([R, D])


@triton.jit
def _tma_tile(desc, bt_row, n0, end, stride_btn, num_blocks, col, PAGE: tl.constexpr, BLOCK_N: tl.constexpr):
    """The [BLOCK_N, D] cache tile of tokens ``n0 + [0, BLOCK_N)``: one TMA box per page (BLOCK_N <= PAGE: one
    sub-box of a page), stacked in token order; 1, 2, 4 or 8 pages per tile."""
    if BLOCK_N <= PAGE:
        t = _tma_box(desc, bt_row, n0, 0, end, stride_btn, num_blocks, col, PAGE, BLOCK_N)
    else:
        NP: tl.constexpr = BLOCK_N // PAGE
        t = _stack_rows(_tma_box(desc, bt_row, n0, 0, end, stride_btn, num_blocks, col, PAGE, PAGE),
                        _tma_box(desc, bt_row, n0, 1, end, stride_btn, num_blocks, col, PAGE, PAGE))
        if NP >= 4:
            t = _stack_rows(t, _stack_rows(
                _tma_box(desc, bt_row, n0, 2, end, stride_btn, num_blocks, col, PAGE, PAGE),
                _tma_box(desc, bt_row, n0, 3, end, stride_btn, num_blocks, col, PAGE, PAGE)))
        if NP == 8:
            t = _stack_rows(t, _stack_rows(
                _stack_rows(_tma_box(desc, bt_row, n0, 4, end, stride_btn, num_blocks, col, PAGE, PAGE),
                            _tma_box(desc, bt_row, n0, 5, end, stride_btn, num_blocks, col, PAGE, PAGE)),
                _stack_rows(_tma_box(desc, bt_row, n0, 6, end, stride_btn, num_blocks, col, PAGE, PAGE),
                            _tma_box(desc, bt_row, n0, 7, end, stride_btn, num_blocks, col, PAGE, PAGE))))
    return t


@triton.jit
def _e4m3_to_f16(x):
    """E4M3 -> fp16 (exact) as ``cvt.rn.f16x2.e4m3x2`` on four packed bytes: an inline asm, so Triton does not
    pair the bytes itself (its own cast of the :func:`_stage_v` tile builds each 16-bit pair with a PRMT, a shift
    and an OR per element)."""
    return tl.inline_asm_elementwise(
        "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, $2; cvt.rn.f16x2.e4m3x2 $0, lo; cvt.rn.f16x2.e4m3x2 $1, hi; }",
        "=r,=r,r", [x], dtype=tl.float16, is_pure=True, pack=4)


@triton.jit
def _stage_v(v, DOT_DTYPE: tl.constexpr, V_STAGE: tl.constexpr):
    """A V tile [tokens, D] as the P.V operand in DOT_DTYPE. V_STAGE 0: as is. 1 and 2
    (``DecodeConfig(v_stage=True)``): columns permuted by :func:`_perm_cols` (the accumulator's columns are then
    permuted the same way; the kernel undoes it after the loop), so that each thread's operand columns are D/8
    adjacent bytes of a cache row (16 at D = 128): wide shared-memory loads instead of one byte per element
    (offline sm_90, one warp, 64 tokens per step: 256 LDS.U8 -> 16 LDS.128). 2: E4M3 converted by
    :func:`_e4m3_to_f16` (the GPU); 1: by a cast (the interpreter, which has no inline asm; the same values)."""
    if V_STAGE == 0:
        return v.to(DOT_DTYPE)
    v = _perm_cols(v, 8)
    if V_STAGE == 2 and v.dtype == tl.float8e4nv and DOT_DTYPE == tl.float16:
        return _e4m3_to_f16(v)
    return v.to(DOT_DTYPE)


@triton.jit
def _decode_step_tma(q, acc, m_i, l_i, n0, offs_n, bt_row, stride_btn, k_desc, v_desc, col, end, num_blocks,
                     score_scale, last_visible, PAGE: tl.constexpr, BLOCK_N: tl.constexpr,
                     DOT_DTYPE: tl.constexpr, PV_T: tl.constexpr, MASKED: tl.constexpr,
                     BOXES: tl.constexpr = False, V_STAGE: tl.constexpr = 0):
    """:func:`_decode_step` with K and V read by TMA (``DecodeConfig(kv_load="tma")``): the same products,
    roundings and masks, only the loads differ. Tokens on a page outside [0, num_blocks) arrive as zeros and are
    masked out of the scores; in the masked (tail) steps the V rows past ``end`` (in-range page, unwritten slots:
    any bytes, NaN included) are zeroed before P.V. PV_T: the accumulator is O^T and P.V runs as O^T += V^T.P^T
    (the same products and fp32 accumulation; with a warpgroup Triton issues it as wgmma, V^T as M).
    BOXES (``kv_load="tmab"``, BLOCK_N >= PAGE): :func:`_decode_step_tma_boxes` (no stacked tiles)."""
    if BOXES:
        tl.static_assert(BLOCK_N >= PAGE, "the per-box step takes whole pages")
        return _decode_step_tma_boxes(q, acc, m_i, l_i, n0, bt_row, stride_btn, k_desc, v_desc, col, end, num_blocks,
                                      score_scale, last_visible, PAGE, BLOCK_N // PAGE, DOT_DTYPE, MASKED, V_STAGE)
    n = n0 + offs_n
    page = tl.load(bt_row + (n // PAGE) * stride_btn, mask=n < end, other=-1)
    n_ok = page.to(tl.uint32) < num_blocks.to(tl.uint32)
    k = _tma_tile(k_desc, bt_row, n0, end, stride_btn, num_blocks, col, PAGE, BLOCK_N)
    p, alpha, m_new, l_i = _softmax_step(tl.dot(q, tl.trans(k.to(DOT_DTYPE))), m_i, l_i, n, n_ok, score_scale,
                                         last_visible, MASKED)
    v = _tma_tile(v_desc, bt_row, n0, end, stride_btn, num_blocks, col, PAGE, BLOCK_N)
    v = _stage_v(v, DOT_DTYPE, V_STAGE)
    if MASKED:
        v = tl.where(n_ok[:, None], v, 0.0)
    if PV_T:  # acc is O^T [BLOCK_D, BLOCK_M]: V^T as the MMA's M (wgmma with 4 or 8 warps)
        acc = acc * alpha[None, :] + tl.dot(tl.trans(v), tl.trans(p.to(DOT_DTYPE)))
    else:
        acc = acc * alpha[:, None] + tl.dot(p.to(DOT_DTYPE), v)
    return acc, m_new, l_i


@triton.jit
def _decode_step_tma_boxes(q, acc, m_i, l_i, n0, bt_row, stride_btn, k_desc, v_desc, col, end, num_blocks,
                           score_scale, last_visible, PAGE: tl.constexpr, NP: tl.constexpr, DOT_DTYPE: tl.constexpr,
                           MASKED: tl.constexpr, V_STAGE: tl.constexpr = 0):
    """:func:`_decode_step_tma` over NP = BLOCK_N / PAGE pages without stacking their boxes into one tile
    (``DecodeConfig(kv_load="tmab")``): a [BLOCK_M, PAGE] score tile per K box, one online-softmax update over all
    NP tiles (one row max, one rescale), then acc = acc * alpha + sum_j P_j.V_j with each V box its own product
    (accumulated in place). The same products, masks and roundings as the stacked step; only the fp32 summation
    order of l and acc differs."""
    offs = tl.arange(0, PAGE)
    # Per box: its table row and range flag, the masked log2-unit scores, and the tokens it holds.
    rows = ()
    oks = ()
    ss = ()
    for j in tl.static_range(NP):
        row, ok = _tma_row(bt_row, n0 + j * PAGE, end, stride_btn, num_blocks, PAGE)
        n = n0 + j * PAGE + offs
        if MASKED:
            n_ok = (n < end) & ok
        else:
            n_ok = tl.broadcast_to(ok, [PAGE])
        k = k_desc.load([row, col]).to(DOT_DTYPE)
        s = _scaled_scores(tl.dot(q, tl.trans(k)), n, n_ok, score_scale, last_visible, MASKED)
        rows = rows + (row,)
        oks = oks + (n_ok,)
        ss = ss + (s,)
    row_max = tl.max(ss[0], axis=1)
    for j in tl.static_range(1, NP):
        row_max = tl.maximum(row_max, tl.max(ss[j], axis=1))
    m_new, m_use, alpha = _new_max(m_i, row_max)
    l_i = l_i * alpha
    acc = acc * alpha[:, None]
    for j in tl.static_range(NP):
        p = tl.exp2(ss[j] - m_use[:, None])
        l_i += tl.sum(p, axis=1)
        v = _stage_v(v_desc.load([rows[j], col]), DOT_DTYPE, V_STAGE)
        if MASKED:  # unwritten slots past end may hold any bytes (NaN included)
            v = tl.where(oks[j][:, None], v, 0.0)
        acc = tl.dot(p.to(DOT_DTYPE), v, acc)
    return acc, m_new, l_i


@triton.jit
def _decode_any_step(q, acc, m_i, l_i, offs, page, d, d_ok, k_base, v_base, end, num_blocks, score_scale,
                     last_visible, stride_kb, stride_ks, stride_vb, stride_vs, OFFS_I32: tl.constexpr,
                     KV_SAME_STRIDES: tl.constexpr, PAGE: tl.constexpr, DOT_DTYPE: tl.constexpr,
                     EXACT_ROUND: tl.constexpr, TOKENS_M: tl.constexpr, MASKED: tl.constexpr,
                     V_STAGE: tl.constexpr = 0):
    """One step of either orientation: tokens as the MMA's M dimension (``dot="fp8t"``, :func:`_decode_step_t`)
    or query rows as M (:func:`_decode_step`). Inlined: the loops' SASS is what the two direct calls gave."""
    if TOKENS_M:
        return _decode_step_t(q, acc, m_i, l_i, offs, page, d, d_ok, k_base, v_base, end, num_blocks, score_scale,
                              last_visible, stride_kb, stride_ks, stride_vb, stride_vs, OFFS_I32, PAGE, EXACT_ROUND,
                              MASKED)
    else:
        return _decode_step(q, acc, m_i, l_i, offs, page, d, d_ok, k_base, v_base, end, num_blocks, score_scale,
                            last_visible, stride_kb, stride_ks, stride_vb, stride_vs, OFFS_I32, KV_SAME_STRIDES,
                            PAGE, DOT_DTYPE, MASKED, V_STAGE)


@triton.jit
def _wsplit_pages(bt_row, n, end, stride_btn, PAGE: tl.constexpr):
    """Page ids of the warp-split step's tokens ``n`` ([W, BW]; a [W] vector of each slice's first token when a
    slice lies within one page), 0 past ``end`` (masked out by the step)."""
    return tl.load(bt_row + (n // PAGE) * stride_btn, mask=n < end, other=0)


@triton.jit
def _wsplit_step(q3, acc, m_i, l_i, n, page, d, d_ok, k_base, v_base, end, num_blocks, score_scale, last_visible,
                 stride_kb, stride_ks, stride_vb, stride_vs, OFFS_I32: tl.constexpr, KV_SAME_STRIDES: tl.constexpr,
                 PAGE: tl.constexpr, DOT_DTYPE: tl.constexpr, MASKED: tl.constexpr, V_STAGE: tl.constexpr):
    """One step of :func:`_wsplit_loop`: slice w of the [W, ...] tiles (one warp each) attends its tokens
    ``n[w]`` ([W, BW]) with its own running max ``m_i[w]``, sum ``l_i[w]`` and accumulator ``acc[w]``.
    ``page``: [W] (each slice within one page) or [W, BW] page ids. The products, roundings and masks of
    :func:`_decode_step` (MASKED=False: only the page range check)."""
    W: tl.constexpr = n.shape[0]
    BW: tl.constexpr = n.shape[1]
    page_ok = page.to(tl.uint32) < num_blocks.to(tl.uint32)
    if not OFFS_I32:
        page = page.to(tl.int64)
    if len(page.shape) == 1:  # one page per slice: broadcast over the slice's tokens
        page_ok = tl.broadcast_to(page_ok[:, None], [W, BW])
        page = page[:, None]
    slot = n % PAGE
    k_row = page * stride_kb + slot * stride_ks
    if MASKED:
        n_ok = (n < end) & page_ok
    else:
        n_ok = page_ok
    kv_mask = n_ok[:, :, None] & d_ok[None, None, :]
    k = tl.load(k_base + k_row[:, :, None] + d[None, None, :], mask=kv_mask, other=0.0)
    s = tl.dot(q3, tl.trans(k.to(DOT_DTYPE), (0, 2, 1))) * score_scale[None, :, None]
    if MASKED:
        visible = n_ok[:, None, :] & (n[:, None, :] <= last_visible[None, :, None])
    else:
        visible = n_ok[:, None, :]
    s = tl.where(visible, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=2))
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)  # slices with nothing visible yet stay at 0
    alpha = tl.exp2(m_i - m_use)
    p = tl.exp2(s - m_use[:, :, None])
    l_i = l_i * alpha + tl.sum(p, axis=2)
    if KV_SAME_STRIDES:
        v_row = k_row
    else:
        v_row = page * stride_vb + slot * stride_vs
    v = tl.load(v_base + v_row[:, :, None] + d[None, None, :], mask=kv_mask, other=0.0)
    acc = acc * alpha[:, :, None] + tl.dot(p.to(DOT_DTYPE), _stage_v(v, DOT_DTYPE, V_STAGE))
    return acc, m_new, l_i


@triton.jit
def _wsplit_loop(q, start, full_end, end, bt_row, stride_btn, d, d_ok, k_base, v_base, num_blocks, score_scale,
                 last_visible, stride_kb, stride_ks, stride_vb, stride_vs, OFFS_I32: tl.constexpr,
                 KV_SAME_STRIDES: tl.constexpr, PAGE: tl.constexpr, DOT_DTYPE: tl.constexpr, V_STAGE: tl.constexpr,
                 W: tl.constexpr, BLOCK_N: tl.constexpr):
    """The split of a program's token range over its W warps (``DecodeConfig(warp_split=True)``): each step of
    BLOCK_N tokens gives slice w (one warp: Triton places a batched product's batch dimension on the warps) the
    BW = BLOCK_N / W tokens ``n0 + w * BW + [0, BW)``, and each slice keeps its own online softmax, so no step
    reduces across warps. The W partial states are merged once after the loop (log-sum-exp: one shared-memory
    exchange). Full steps in [start, full_end) carry no length or causal mask, the rest of [start, end) all masks.
    Returns (acc, m, l) of the merged rows, like the single loop's state."""
    BW: tl.constexpr = BLOCK_N // W
    BLOCK_M: tl.constexpr = q.shape[0]
    BLOCK_D: tl.constexpr = q.shape[1]
    w_first = tl.arange(0, W) * BW
    if BW <= PAGE:  # a slice lies within one page (starts are multiples of BW): one page id per slice
        offs = w_first
    else:
        offs = w_first[:, None] + tl.arange(0, BW)[None, :]
    n_slice = w_first[:, None] + tl.arange(0, BW)[None, :]
    q3 = tl.broadcast_to(q[None, :, :], [W, BLOCK_M, BLOCK_D])
    m_i = tl.full([W, BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([W, BLOCK_M], tl.float32)
    acc = tl.zeros([W, BLOCK_M, BLOCK_D], tl.float32)
    # Page ids one step ahead, carried in registers (as the single loop): the pipeliner issues later copies early.
    page_next = _wsplit_pages(bt_row, start + offs, end, stride_btn, PAGE)
    for MASKED in tl.static_range(2):  # the full steps' loop, then the masked tail's
        if MASKED:
            lo = full_end
            hi = end
        else:
            lo = start
            hi = full_end
        for n0 in tl.range(lo, hi, BLOCK_N):
            page = page_next
            page_next = _wsplit_pages(bt_row, n0 + BLOCK_N + offs, end, stride_btn, PAGE)
            acc, m_i, l_i = _wsplit_step(q3, acc, m_i, l_i, n0 + n_slice, page, d, d_ok, k_base, v_base, end,
                                         num_blocks, score_scale, last_visible, stride_kb, stride_ks, stride_vb,
                                         stride_vs, OFFS_I32, KV_SAME_STRIDES, PAGE, DOT_DTYPE, MASKED, V_STAGE)
    m = tl.max(m_i, axis=0)
    a = tl.exp2(m_i - tl.where(m == float("-inf"), 0.0, m)[None, :])  # 0 for an empty slice
    return tl.sum(acc * a[:, :, None], axis=0), m, tl.sum(l_i * a, axis=0)


@named_jit(do_not_specialize=["num_blocks"])  # a one-page cache: num_blocks = 1 would become a constexpr (no .to)
def _decode_kernel(
    q_ptr,
    k_cache_ptr,
    v_cache_ptr,
    block_table_ptr,
    seq_lens_ptr,
    k_descale_ptr,
    v_descale_ptr,
    out_ptr,
    part_o_ptr,
    part_lse_ptr,
    counter_ptr,  # int32 per (batch, KV head, row block), zero between launches (INLINE_MERGE only)
    sm_scale_log2,  # softmax_scale * log2(e), fp32
    num_blocks,
    max_blocks,
    num_splits,
    stride_qb,
    stride_qt,
    stride_qh,
    stride_kb,
    stride_ks,
    stride_kh,
    stride_vb,
    stride_vs,
    stride_vh,
    stride_btb,
    stride_btn,
    K_DESCALE_STRIDE: tl.constexpr,  # 0: per-tensor k_descale; 1: one per KV head
    V_DESCALE_STRIDE: tl.constexpr,  # 0: per-tensor v_descale; 1: one per KV head
    OFFS_I32: tl.constexpr,  # every cache element offset fits in int32: page/slot address arithmetic in 32 bits
    KV_SAME_STRIDES: tl.constexpr,  # v_cache has k_cache's strides: one offset tensor addresses both
    SQ: tl.constexpr,
    GROUP: tl.constexpr,  # query heads per KV head
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr,  # query rows (GROUP x SQ, padded) per program
    BLOCK_N: tl.constexpr,  # cache tokens per step
    PAGE: tl.constexpr,
    DOT_DTYPE: tl.constexpr,  # tl.float16 (fp8 / fp16 caches) or tl.bfloat16 (bf16 cache)
    Q_POW2_SCALE: tl.constexpr,  # bf16 q into an fp16 dot: per-row power-of-two scaling (see module docstring)
    WRITE_PARTIAL: tl.constexpr,  # several splits: write fp32 partials (o, lse) instead of the output
    INLINE_MERGE: tl.constexpr,  # with WRITE_PARTIAL: the last split to finish merges (else _combine_kernel does)
    MERGE_ROWS: tl.constexpr,  # rows of the inline merge: the row block's real rows, a power of two <= BLOCK_M
    MERGE_CHUNK: tl.constexpr,  # splits merged per step of the inline merge (power of two)
    TAIL_MASK: tl.constexpr,  # unmasked full steps, then the masked tail (see the loop)
    TOKENS_M: tl.constexpr,  # FP8 tensor-core form, cache tokens as the MMA M dimension (_decode_step_t)
    # DecodeConfig(v_stage=True) (not with TOKENS_M or KV_TMA 2): the P.V operand with permuted columns
    # (_stage_v); 2 on the GPU (inline-asm E4M3 -> fp16), 1 in the interpreter (a cast); 0: off
    V_STAGE: tl.constexpr,
    KV_TMA: tl.constexpr,  # 1-3: k_cache_ptr / v_cache_ptr are TMA descriptors (_decode_step_tma); 2: O^T = V^T.P^T;
    # 3: several pages per step without stacking their boxes (_decode_step_tma_boxes)
    EXACT_ROUND: tl.constexpr,  # interpreter: round fp32 -> fp8 explicitly (its casts truncate)
    # DecodeConfig(warp_split=True): num_warps (0: off); the warps take slices of each step, one softmax each
    # (_wsplit_loop)
    WARP_SPLIT: tl.constexpr,
    # DecodeConfig(pdl=True), with the combine kernel launched as a programmatic dependent launch: signal it after
    # the loop (griddepcontrol.launch_dependents) so it is scheduled while the partials are written
    PDL: tl.constexpr,
    # DecodeConfig(l2_evict_first=True): l2hint.VERSION, else 0. Not read by the body: the PTX pass keyed on the
    # name's "l2ef" field adds the hints; the value puts the pass's version into Triton's cache key.
    L2_HINT: tl.constexpr,
    KERNEL_NAME: tl.constexpr,
):
    """Attention of SQ new tokens x GROUP query heads over the paged cache of one KV head and one split.

    Row r of the tile is token ``t = r // GROUP`` and query head ``kvh * GROUP + r % GROUP``; token t sees cache
    positions ``n <= seq_len - SQ + t``. The split's token range is ``[split * chunk, (split + 1) * chunk)`` with
    ``chunk = cdiv(cdiv(seq_len, BLOCK_N), num_splits) * BLOCK_N`` computed per sequence, so every split of a sequence
    gets an even share of its own length. Pages whose block-table entry lies outside [0, num_blocks) are masked out
    (never read), and seq_len is clipped to the table width (max_blocks * PAGE): no access outside the tensors.
    Partials: ``o`` normalized by its own row sum, ``lse`` in log2 units (-inf for an empty split).
    """
    pid_m = tl.program_id(0)
    kvh = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    split = pid_m % num_splits
    row_block = (pid_m // num_splits).to(tl.int64)

    seq_len, start, end = split_range(seq_lens_ptr, b, split, num_splits, max_blocks, PAGE, BLOCK_N)

    rows = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < SQ * GROUP
    tok = rows // GROUP
    head = kvh * GROUP + rows % GROUP
    d = tl.arange(0, BLOCK_D)
    if BLOCK_D == HEAD_DIM:  # no column mask: the compiler drops the all-true compare from every load and store
        d_ok = tl.full([BLOCK_D], 1, tl.int1)
    else:
        d_ok = d < HEAD_DIM
    q = tl.load(
        q_ptr + b * stride_qb + tok[:, None] * stride_qt + head[:, None] * stride_qh + d[None, :],
        mask=row_ok[:, None] & d_ok[None, :],
        other=0.0,
    )
    k_ds = tl.load(k_descale_ptr + kvh * K_DESCALE_STRIDE)
    v_ds = tl.load(v_descale_ptr + kvh * V_DESCALE_STRIDE)
    row_scale = tl.full([BLOCK_M], 1.0, tl.float32)
    if TOKENS_M:
        # E4M3 q: each row times the power of two that puts its largest magnitude in [2^7, 2^8), then rounded
        # to E4M3 (RNE); the factor is divided out of the scores exactly.
        qf = q.to(tl.float32)
        e = (tl.max(tl.abs(qf), axis=1).to(tl.int32, bitcast=True) >> 23) & 0xFF
        sb = tl.minimum(tl.maximum(261 - e, 1), 253)
        row_scale = ((254 - sb) << 23).to(tl.float32, bitcast=True)
        q = cast_to_fp8(qf * ((sb << 23).to(tl.float32, bitcast=True))[:, None], tl.float8e4nv)
    elif Q_POW2_SCALE:
        qf = q.to(tl.float32)
        amax = tl.max(tl.abs(qf), axis=1)
        e = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF  # biased exponent; 0 for a zero row
        # 2^(k) with k = 14 - (e - 127): biased exponent 268 - e, kept in [1, 253] so 1/2^k is normal as well.
        sb = tl.minimum(tl.maximum(268 - e, 1), 253)
        up = (sb << 23).to(tl.float32, bitcast=True)
        row_scale = ((254 - sb) << 23).to(tl.float32, bitcast=True)
        q = (qf * up[:, None]).to(DOT_DTYPE)
    else:
        q = q.to(DOT_DTYPE)
    # Scores in log2 units: s2 = (q . k) * softmax_scale * k_descale * log2(e), per row times 1/2^k.
    score_scale = row_scale * (sm_scale_log2 * k_ds)
    last_visible = seq_len - SQ + tok  # per row

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    if TOKENS_M:
        acc = tl.zeros([BLOCK_D, BLOCK_M], tl.float32)  # O^T
    else:
        acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    bt_row = block_table_ptr + b * stride_btb
    if TAIL_MASK:
        # Full steps first: every token of [start, full_end) is < end and visible to every row (n <= seq_len - SQ,
        # the first row's last visible position), so these steps carry no length or causal mask, only the page
        # range check. The remaining < BLOCK_N + SQ tokens run with every mask (at most 2 steps).
        full_end = start + tl.maximum(tl.minimum(end, seq_len - SQ + 1) - start, 0) // BLOCK_N * BLOCK_N
    else:
        full_end = start
    if WARP_SPLIT:
        acc, m_i, l_i = _wsplit_loop(q, start, full_end, end, bt_row, stride_btn, d, d_ok, k_cache_ptr + kvh * stride_kh,
                                     v_cache_ptr + kvh * stride_vh, num_blocks, score_scale, last_visible, stride_kb,
                                     stride_ks, stride_vb, stride_vs, OFFS_I32, KV_SAME_STRIDES, PAGE, DOT_DTYPE,
                                     V_STAGE, WARP_SPLIT, BLOCK_N)
    elif KV_TMA:
        # One TMA box per page and K/V; the pipeliner issues the block-table loads and the copies of later steps
        # ahead (num_stages). Always the split loop: unmasked full steps, then the masked tail.
        kv_col = (kvh * HEAD_DIM).to(tl.int32)
        if KV_TMA == 2:
            acc = tl.zeros([BLOCK_D, BLOCK_M], tl.float32)  # O^T
        for n0 in tl.range(start, full_end, BLOCK_N):
            acc, m_i, l_i = _decode_step_tma(q, acc, m_i, l_i, n0, offs_n, bt_row, stride_btn, k_cache_ptr,
                                             v_cache_ptr, kv_col, end, num_blocks, score_scale, last_visible, PAGE,
                                             BLOCK_N, DOT_DTYPE, KV_TMA == 2, False, KV_TMA == 3,
                                             V_STAGE)
        for n0 in tl.range(full_end, end, BLOCK_N, num_stages=1):  # <= 2 steps: not pipelined
            acc, m_i, l_i = _decode_step_tma(q, acc, m_i, l_i, n0, offs_n, bt_row, stride_btn, k_cache_ptr,
                                             v_cache_ptr, kv_col, end, num_blocks, score_scale, last_visible, PAGE,
                                             BLOCK_N, DOT_DTYPE, KV_TMA == 2, True, KV_TMA == 3,
                                             V_STAGE)
    else:
        k_base = k_cache_ptr + kvh * stride_kh
        v_base = v_cache_ptr + kvh * stride_vh
        # Page ids one tile ahead, carried in registers: the K/V addresses of a step never wait on a load of the
        # same step, so the pipeliner can issue the K/V copies of later steps early.
        n_next = start + offs_n
        page_next = tl.load(bt_row + (n_next // PAGE) * stride_btn, mask=n_next < end, other=0)
        for n0 in range(start, full_end, BLOCK_N):
            page = page_next
            n_next = n0 + BLOCK_N + offs_n
            page_next = tl.load(bt_row + (n_next // PAGE) * stride_btn, mask=n_next < end, other=0)
            acc, m_i, l_i = _decode_any_step(
                q, acc, m_i, l_i, n0 + offs_n, page, d, d_ok, k_base, v_base, end, num_blocks, score_scale,
                last_visible, stride_kb, stride_ks, stride_vb, stride_vs, OFFS_I32, KV_SAME_STRIDES, PAGE, DOT_DTYPE,
                EXACT_ROUND, TOKENS_M, False, V_STAGE,
            )
        for n0 in range(full_end, end, BLOCK_N):
            page = page_next
            n_next = n0 + BLOCK_N + offs_n
            page_next = tl.load(bt_row + (n_next // PAGE) * stride_btn, mask=n_next < end, other=0)
            acc, m_i, l_i = _decode_any_step(
                q, acc, m_i, l_i, n0 + offs_n, page, d, d_ok, k_base, v_base, end, num_blocks, score_scale,
                last_visible, stride_kb, stride_ks, stride_vb, stride_vs, OFFS_I32, KV_SAME_STRIDES, PAGE, DOT_DTYPE,
                EXACT_ROUND, TOKENS_M, True, V_STAGE,
            )

    if PDL:
        gdc_launch_dependents()
    if TOKENS_M or KV_TMA == 2:
        acc = tl.trans(acc)
    if V_STAGE and not TOKENS_M:  # the loop accumulated O with _perm_cols's column order
        acc = _unperm_cols(acc, 8)
    has = l_i > 0.0
    # A partial is O / l without v_descale (its magnitude at most the cache format's largest value, so fp16
    # partials cannot overflow); whatever merges the partials applies v_descale once.
    inv_l = tl.where(has, (1.0 if WRITE_PARTIAL else v_ds) / tl.where(has, l_i, 1.0), 0.0)
    o = acc * inv_l[:, None]
    o_mask = row_ok[:, None] & d_ok[None, :]
    # out: a fresh contiguous (B, SQ, Hq, D) tensor; Hq = GROUP x the grid's KV heads.
    hq = GROUP * tl.num_programs(1)
    o_row = (b * SQ + tok) * hq + head
    o_ptrs = out_ptr + o_row[:, None] * HEAD_DIM + d[None, :]
    if WRITE_PARTIAL:
        lse = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("-inf"))
        # Partials: contiguous lse (B, SQ, Hq, num_splits) and o (B, SQ, Hq, num_splits, HEAD_DIM).
        p_base = o_row * num_splits
        p_row = p_base + split
        tl.store(part_lse_ptr + p_row, lse, mask=row_ok)
        tl.store(part_o_ptr + p_row[:, None] * HEAD_DIM + d[None, :], o.to(part_o_ptr.dtype.element_ty), mask=o_mask)
        if INLINE_MERGE:
            # The last split of a (row block, KV head, batch) to finish merges all partials: no second launch.
            # Every thread's stores precede the barrier; the counter's acq_rel atomic (gpu scope) publishes them
            # to the program that draws the last ticket, which reads them through L2 (.cg). It then resets the
            # counter, so the workspace stays zero between launches on a stream.
            tl.debug_barrier()
            c_ptr = counter_ptr + (b * tl.num_programs(1) + kvh) * (tl.num_programs(0) // num_splits) + row_block
            ticket = tl.atomic_add(c_ptr, 1, sem="acq_rel")
            if ticket == num_splits - 1:
                tl.atomic_xchg(c_ptr, 0)
                # The merge runs on MERGE_ROWS rows, the row block's real rows rounded up to a power of two
                # (GQA 4, Sq 1: 4 of the 16 MMA rows), so a step's [rows, MERGE_CHUNK, D] tile covers more splits.
                # MERGE_CHUNK splits per step as one load: each step's latency covers MERGE_CHUNK partials of every
                # row (a loop over single splits waits once per split).
                mrows = row_block * BLOCK_M + tl.arange(0, MERGE_ROWS)
                mrow_ok = mrows < SQ * GROUP
                m_orow = (b * SQ + mrows // GROUP) * hq + kvh * GROUP + mrows % GROUP
                m_base = m_orow * num_splits
                m_all = tl.full([MERGE_ROWS], float("-inf"), tl.float32)
                den = tl.zeros([MERGE_ROWS], tl.float32)
                res = tl.zeros([MERGE_ROWS, BLOCK_D], tl.float32)
                sc = tl.arange(0, MERGE_CHUNK)
                for s0 in range(0, num_splits, MERGE_CHUNK):
                    s_idx = s0 + sc
                    ls_mask = mrow_ok[:, None] & (s_idx < num_splits)[None, :]
                    ls_off = m_base[:, None] + s_idx[None, :]  # [MERGE_ROWS, MERGE_CHUNK]
                    lse_c = tl.load(part_lse_ptr + ls_off, mask=ls_mask, other=float("-inf"), cache_modifier=".cg")
                    o_c = tl.load(part_o_ptr + ls_off[:, :, None] * HEAD_DIM + d[None, None, :],
                                  mask=ls_mask[:, :, None] & d_ok[None, None, :], other=0.0, cache_modifier=".cg")
                    m_new = tl.maximum(m_all, tl.max(lse_c, axis=1))
                    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
                    a = tl.exp2(m_all - m_use)
                    w = tl.exp2(lse_c - m_use[:, None])
                    den = den * a + tl.sum(w, axis=1)
                    res = res * a[:, None] + tl.sum(o_c * w[:, :, None], axis=1)
                    m_all = m_new
                res = res * (v_ds / tl.where(den > 0.0, den, 1.0))[:, None]
                tl.store(out_ptr + m_orow[:, None] * HEAD_DIM + d[None, :],
                         _to_out_dtype(res, out_ptr.dtype.element_ty), mask=mrow_ok[:, None] & d_ok[None, :])
    else:
        tl.store(o_ptrs, _to_out_dtype(o, out_ptr.dtype.element_ty), mask=o_mask)


@named_jit
def _combine_kernel(
    part_o_ptr,
    part_lse_ptr,
    out_ptr,
    v_descale_ptr,
    num_splits,
    group,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_S: tl.constexpr,
    V_DESCALE_STRIDE: tl.constexpr,  # 0: per-tensor v_descale; 1: one per KV head (query head h // group)
    PDL: tl.constexpr,  # launched as a programmatic dependent launch: wait for the split kernel's grid first
    KERNEL_NAME: tl.constexpr,
):
    """out[b, t, h] = v_descale sum_s 2^(lse_s - lse) o_s with lse = log2 sum_s 2^lse_s; 0 when every split was
    empty. The partials o_s are O / l without v_descale (fp32, or fp16 where
    :func:`tritonfp8.decode.partials_f16` allows).

    Layouts (all contiguous): lse (B, SQ, Hq, num_splits), o (B, SQ, Hq, num_splits, HEAD_DIM), out (B, SQ, Hq,
    HEAD_DIM); the grid is (Hq, SQ, B). With PDL the program may start before the split kernel has finished
    (launch_pdl): griddepcontrol.wait blocks until that grid has completed and its writes are visible.
    """
    h = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    s = tl.arange(0, BLOCK_S)
    s_ok = s < num_splits
    d = tl.arange(0, BLOCK_D)
    d_ok = d < HEAD_DIM
    o_row = (b * tl.num_programs(1) + t) * tl.num_programs(0) + h
    base = o_row * num_splits + s
    v_ds = tl.load(v_descale_ptr + (h // group) * V_DESCALE_STRIDE)  # not written by the split kernel
    if PDL:
        gdc_wait()
    lse = tl.load(part_lse_ptr + base, mask=s_ok, other=float("-inf"))
    m = tl.max(lse, axis=0)
    m_use = tl.where(m == float("-inf"), 0.0, m)
    w = tl.exp2(lse - m_use)  # 0 for empty splits
    o = tl.load(part_o_ptr + base[:, None] * HEAD_DIM + d[None, :], mask=s_ok[:, None] & d_ok[None, :], other=0.0)
    den = tl.sum(w, axis=0)
    res = tl.sum(o.to(tl.float32) * w[:, None], axis=0) * (v_ds / tl.where(den > 0.0, den, 1.0))
    o_ptrs = out_ptr + o_row * HEAD_DIM + d
    tl.store(o_ptrs, _to_out_dtype(res, out_ptr.dtype.element_ty), mask=d_ok)


# ----------------------------------------------------------------------------------------------------------------
# Kernel names and offline codegen specs.


def merge_rows(block_m: int, rows: int) -> int:
    """Rows of the inline merge: a row block's real query rows (GQA group x Sq), rounded up to a power of two, at
    most ``block_m`` (the MMA tile pads them to >= 16; GQA 4 with one new token merges 4 rows, not 16)."""
    return min(block_m, 1 << max(0, rows - 1).bit_length())


def merge_chunk(block_m: int, block_d: int, num_warps: int = 4) -> int:
    """Splits per step of the inline merge over ``block_m`` rows (:func:`merge_rows`): a [block_m, chunk, block_d]
    fp32 tile of at most 64 registers per thread (8192 elements at 4 warps, 2048 at one warp; more warps keep the
    4-warp size), at least 1. One-warp programs with the 4-warp chunk spilled (offline sm_90, 16 rows, D 128,
    64 tokens: 198 spill stores, 16 with this chunk, 8 without a merge).

    One warp merging at most 8 rows (GQA 4 / 8 with one new token): 128 registers (4096 elements), half the rounds
    of dependent loads. Offline sm_90 (session 13), pages-of-64 TMA and pages-of-16 per-box kernels at GQA 4
    (chunk 8) and GQA 8 (chunk 4): no spills (255 / 242 -> 255 registers); 16 rows at chunk 2 spill (51 stores), so
    they keep 2048. Graph-timed on the H200 (16 splits, B 8, pages of 64; decode-merge2-20261202-160033.json):
    ctx 4096 1.038x (GQA 4) / 1.073x (GQA 8), ctx 32768 1.007x / 1.016x, B 32 ctx 4096 (4 splits, GQA 8)
    1.006x; every round faster."""
    per_warp = 4096 if num_warps == 1 and block_m <= 8 else 2048
    return max(1, min(16, per_warp * min(num_warps, 4) // (block_m * block_d)))


def decode_kernel_name(
    arch: int, cache: str, q: str, out: str, block_m: int, block_n: int, head_dim: int, warps: int, stages: int,
    page: int, split: bool, per_head: bool, inline: bool = True, tail: bool = False, tokens_m: bool = False,
    kv_tma: int = 0, v_stage: bool = False, maxnreg: int | None = None, pdl: bool = False, warp_split: bool = False,
    l2ef: bool = False, part16: bool = False,
) -> KernelName:
    """Types: cache element, q element, accumulator, output. Tile: query rows x cache tokens x head dim.
    ``kv_tma``: 0 gathered K/V, 1 TMA page loads, 2 TMA page loads with O^T = V^T.P^T, 3 TMA page boxes not
    stacked (the kernel's KV_TMA). ``v_stage``: the P.V operand with permuted columns (the kernel's V_STAGE).
    ``maxnreg``: the register cap per thread, shown as ``r<N>``; ``pdl``: the combine kernel is a programmatic
    dependent launch (``pdl``); ``warp_split``: the warps take slices of each step (``wsplit``); ``l2ef``: the K/V
    TMA loads carry L2 evict-first hints (``l2ef``, added to the PTX by :mod:`tritonfp8._kernels.l2hint`);
    ``part16``: the partials are fp16 (``f16part``).
    Schedule: ``paged`` (one split), ``pagedsplitkv`` (partials merged in-kernel by the last split) or
    ``pagedsplitkvcombine`` (partials merged by :func:`_combine_kernel`)."""
    return KernelName(
        arch=arch,
        op="decode",
        types=(cache, q, "f32", out),
        tile=(block_m, block_n, head_dim),
        warps=warps,
        stages=stages,
        schedule="paged" + (("splitkv" if inline else "splitkvcombine") if split else ""),
        scaling="headwise" if per_head else "tensorwise",
        extras=(f"page{page}",) + (("tailmask",) if tail else ()) + (("fp8t",) if tokens_m else ())
        + ((("tmakv", "tmakvt", "tmakvb")[kv_tma - 1],) if kv_tma else ()) + (("vstage",) if v_stage else ())
        + ((f"r{maxnreg}",) if maxnreg else ()) + (("pdl",) if pdl else ()) + (("wsplit",) if warp_split else ())
        + (("f16part",) if part16 else ()) + ((l2hint.TAG,) if l2ef else ()),
    )


def write_kv_kernel_name(arch: int, src: str, cache: str, heads: int, head_dim: int, warps: int, per_head: bool):
    return KernelName(
        arch=arch,
        op="kvcachewrite",
        types=(src, cache),
        tile=(1, heads, head_dim),
        warps=warps,
        stages=1,
        schedule="scatter",
        scaling="headwise" if per_head else "tensorwise",
    )


def combine_kernel_name(arch: int, out: str, block_s: int, head_dim: int, pdl: bool = False, part: str = "f32"):
    """Types: the partials' element (``part``), the output."""
    return KernelName(
        arch=arch, op="decodecombine", types=(part, out), tile=(1, block_s, head_dim), warps=4, stages=1,
        schedule="lse", extras=("pdl",) if pdl else (),
    )


def _decode_spec(group: int, sq: int, block_n: int, warps: int, stages: int, page: int, split: bool,
                 q_sig: str = "bf16", cache_sig: str = "fp8e4nv", head_dim: int = 128,
                 inline: bool = True, offs_i32: bool = True, tail_mask: bool = False,
                 tokens_m: bool = False, kv_tma: int = 0, v_stage: bool = False,
                 warp_split: bool = False, l2ef: bool = False) -> CodegenSpec:
    block_m = max(16, min(64, triton.next_power_of_2(group * sq)))
    dot = "fp16" if cache_sig in ("fp8e4nv", "fp16") else "bf16"
    # kv_tma: the caches as TMA descriptors of the [num_blocks * page, Hkv * D] view, one box per page (or sub-box)
    kv = f"tensordesc<{cache_sig}[{min(block_n, page)}, {head_dim}]>" if kv_tma else f"*{cache_sig}"
    sig = {
        "q_ptr": f"*{q_sig}", "k_cache_ptr": kv, "v_cache_ptr": kv,
        "block_table_ptr": "*i32", "seq_lens_ptr": "*i32", "k_descale_ptr": "*fp32", "v_descale_ptr": "*fp32",
        "out_ptr": "*bf16", "part_o_ptr": "*fp32", "part_lse_ptr": "*fp32", "counter_ptr": "*i32",
        "sm_scale_log2": "fp32",
        "num_blocks": "i32", "max_blocks": "i32", "num_splits": "i32",
    }
    # Strides as the launcher sees them for contiguous tensors: Triton specializes ints divisible by 16
    # (the address analysis then proves 16-byte rows); the codegen spec marks them the same way.
    aligned_strides = ("stride_qb", "stride_qt", "stride_qh", "stride_kb", "stride_ks", "stride_kh", "stride_vb",
                       "stride_vs", "stride_vh")
    for s in (*aligned_strides, "stride_btb"):
        sig[s] = "i32"
    sig["stride_btn"] = "constexpr"
    for c in ("K_DESCALE_STRIDE", "V_DESCALE_STRIDE", "OFFS_I32", "KV_SAME_STRIDES", "SQ", "GROUP", "HEAD_DIM",
              "BLOCK_D", "BLOCK_M", "BLOCK_N", "PAGE", "DOT_DTYPE", "Q_POW2_SCALE", "WRITE_PARTIAL", "INLINE_MERGE",
              "MERGE_ROWS", "MERGE_CHUNK", "TAIL_MASK", "TOKENS_M", "KV_TMA", "EXACT_ROUND", "WARP_SPLIT", "V_STAGE",
              "PDL", "L2_HINT"):
        sig[c] = "constexpr"
    constexprs = {
        "stride_btn": 1, "K_DESCALE_STRIDE": 1, "V_DESCALE_STRIDE": 1, "OFFS_I32": offs_i32,
        "KV_SAME_STRIDES": True, "SQ": sq, "GROUP": group, "HEAD_DIM": head_dim, "BLOCK_D": head_dim,
        "BLOCK_M": block_m, "BLOCK_N": block_n, "PAGE": page,
        "DOT_DTYPE": tl.float16 if dot == "fp16" else tl.bfloat16,
        "Q_POW2_SCALE": q_sig == "bf16" and dot == "fp16", "WRITE_PARTIAL": split,
        "INLINE_MERGE": split and inline, "MERGE_ROWS": merge_rows(block_m, group * sq),
        "MERGE_CHUNK": merge_chunk(merge_rows(block_m, group * sq), head_dim, warps), "TAIL_MASK": tail_mask or warp_split,
        "TOKENS_M": tokens_m, "KV_TMA": kv_tma, "EXACT_ROUND": False, "WARP_SPLIT": warps if warp_split else 0,
        "V_STAGE": 2 if v_stage else 0,
        "PDL": False, "L2_HINT": l2hint.VERSION if l2ef else 0,
    }
    short = {"fp8e4nv": "e4m3", "bf16": "bf16", "fp16": "f16"}
    name = decode_kernel_name(90, short[cache_sig], short[q_sig], "bf16", block_m, block_n, head_dim, warps, stages,
                              page, split, True, inline, tail_mask or warp_split, tokens_m, kv_tma, v_stage,
                              warp_split=warp_split, l2ef=l2ef)
    return CodegenSpec(
        fn=_decode_kernel, signature=sig, constexprs=constexprs, name=name, num_warps=warps, num_stages=stages,
        description=f"paged decode, {cache_sig} cache, GQA {group}, Sq {sq}, page {page}, "
                    f"{'split-KV partials' if split else 'direct output'}" + (", TMA K/V pages" if kv_tma else ""),
        min_arch=80,
        divisible=tuple(n for n, t in sig.items() if t.startswith("*")) + aligned_strides,
    )


def codegen_specs() -> dict[str, CodegenSpec]:
    """Representative configs: the bench shapes' GQA 4 and 8 (Hq/Hkv 32/8, 64/8), D=128, pages of 16 and 64."""
    specs = {
        "decode_e4m3_gqa4_page16": _decode_spec(4, 1, 64, 4, 3, 16, False),
        "decode_e4m3_gqa8_page16": _decode_spec(8, 1, 64, 4, 3, 16, False),
        "decode_e4m3_gqa8_page16_bn128": _decode_spec(8, 1, 128, 4, 3, 16, False),
        "decode_e4m3_gqa8_page16_bn128_tail": _decode_spec(8, 1, 128, 4, 3, 16, False, tail_mask=True),
        "decode_e4m3_gqa8_page16_bn128s2_tail": _decode_spec(8, 1, 128, 4, 2, 16, False, tail_mask=True),
        "decode_e4m3_gqa8_page16_splitkv": _decode_spec(8, 1, 64, 4, 3, 16, True),
        "decode_e4m3_gqa8_page64_splitkv": _decode_spec(8, 1, 64, 4, 3, 64, True),
        "decode_e4m3_gqa8_page16_splitkvcombine": _decode_spec(8, 1, 64, 4, 3, 16, True, inline=False),
        "decode_e4m3_gqa8_page16_bn32s4": _decode_spec(8, 1, 32, 4, 4, 16, False),
        "decode_e4m3_gqa8_page16_bn128w8": _decode_spec(8, 1, 128, 8, 3, 16, False),
        "decode_e4m3_gqa8_page16_bn32w1s4": _decode_spec(8, 1, 32, 1, 4, 16, False),
        "decode_e4m3_gqa8_page16_bn32w1s4_tail": _decode_spec(8, 1, 32, 1, 4, 16, False, tail_mask=True),
        # DecodeConfig(dot="fp8t"): E4M3 wgmma with the cache tokens as M (GQA 4 and 8, pages 16 and 64)
        "decode_e4m3_gqa8_page16_fp8t": _decode_spec(8, 1, 128, 4, 3, 16, False, tail_mask=True, tokens_m=True),
        "decode_e4m3_gqa4_page16_fp8t": _decode_spec(4, 1, 128, 4, 3, 16, False, tail_mask=True, tokens_m=True),
        "decode_e4m3_gqa8_page64_fp8t_splitkv": _decode_spec(8, 1, 128, 4, 3, 64, True, tail_mask=True,
                                                             tokens_m=True),
        "decode_e4m3_gqa4_page64_fp8t": _decode_spec(4, 1, 128, 4, 3, 64, False, tail_mask=True, tokens_m=True),
        "decode_e4m3_gqa8_page16_fp8t_bn64": _decode_spec(8, 1, 64, 4, 3, 16, False, tail_mask=True, tokens_m=True),
        # DecodeConfig(kv_load="tma"): K/V pages by TMA (one box per page), fp16 products as the default
        # The heuristic's pick for the issue-6 shapes (Hq/Hkv 32/8, ctx 4096, B 32 and 128: one split), page 64
        "decode_e4m3_gqa4_page64_bn128": _decode_spec(4, 1, 128, 4, 3, 64, False),
        "decode_e4m3_gqa4_page64_tma_bn128": _decode_spec(4, 1, 128, 4, 3, 64, False, tail_mask=True, kv_tma=1),
        "decode_e4m3_gqa4_page64_tma": _decode_spec(4, 1, 64, 4, 3, 64, False, tail_mask=True, kv_tma=1),
        "decode_e4m3_gqa4_page64_tma_w2": _decode_spec(4, 1, 64, 2, 3, 64, False, tail_mask=True, kv_tma=1),
        "decode_e4m3_gqa4_page64_tma_bn32w1": _decode_spec(4, 1, 32, 1, 4, 64, False, tail_mask=True, kv_tma=1),
        "decode_e4m3_gqa8_page64_tma_splitkv": _decode_spec(8, 1, 64, 4, 3, 64, True, tail_mask=True, kv_tma=1),
        "decode_e4m3_gqa4_page16_tma_bn32w1": _decode_spec(4, 1, 32, 1, 4, 16, False, tail_mask=True, kv_tma=1),
        "decode_e4m3_gqa8_page16_tma_bn64": _decode_spec(8, 1, 64, 4, 3, 16, False, tail_mask=True, kv_tma=1),
        # DecodeConfig(kv_load="tmat"): the same with O^T = V^T.P^T (wgmma for P.V)
        "decode_e4m3_gqa4_page64_tmat_bn128": _decode_spec(4, 1, 128, 4, 3, 64, False, tail_mask=True, kv_tma=2),
        "decode_e4m3_gqa4_page64_tmat": _decode_spec(4, 1, 64, 4, 3, 64, False, tail_mask=True, kv_tma=2),
        "decode_e4m3_gqa8_page64_tmat_splitkv": _decode_spec(8, 1, 64, 4, 3, 64, True, tail_mask=True, kv_tma=2),
        "decode_e4m3_gqa8_page16_i64": _decode_spec(8, 1, 64, 4, 3, 16, False, offs_i32=False),
        "decode_e4m3_gqa8_sq4": _decode_spec(8, 4, 64, 8, 3, 16, False),
        "decode_e4m3_gqa8_sq16": _decode_spec(8, 16, 32, 8, 3, 16, True),
        "decode_f16q_e4m3_gqa8_page16": _decode_spec(8, 1, 64, 4, 3, 16, False, q_sig="fp16"),
        "decode_bf16cache_gqa8_page16": _decode_spec(8, 1, 64, 4, 3, 16, False, cache_sig="bf16"),
    }
    # One warp, split-KV, GQA 4, TMA (KV_TMA 1 "tma", 3 "tmab"): decode_config's picks and their neighbours.
    # name part -> (page, block_n, stages, KV_TMA)
    one_warp_split = {
        "page64_tma_bn64w1s4": (64, 64, 4, 1),  # decode_config's pick on pages of 64
        "page64_tma_bn64w1s3": (64, 64, 3, 1),
        "page64_tmab_bn64w1s4": (64, 64, 4, 3),  # the per-box step with one box: multi-buffered boxes
        "page16_tmab_bn32w1s4": (16, 32, 4, 3),  # decode_config's pick on pages of 16 (2 boxes per step)
        "page16_tmab_bn64w1s4": (16, 64, 4, 3),
        "page16_tma_bn32w1s4": (16, 32, 4, 1),  # the stacked twins, for comparison
        "page16_tma_bn64w1s4": (16, 64, 4, 1),
    }
    specs.update({
        f"decode_e4m3_gqa4_{part}_splitkv": _decode_spec(4, 1, bn, 1, st, page, True, tail_mask=True, kv_tma=kv)
        for part, (page, bn, st, kv) in one_warp_split.items()
    })
    # DecodeConfig(v_stage=True) on the two picks: V's operand from 16-byte rows instead of byte loads (offline
    # sm_90, main loop per step: pages of 64 1362 -> 1210 instructions, 13 -> 0 spill stores; pages of 16
    # 866 -> 786)
    specs.update({
        f"decode_e4m3_gqa4_{part}_splitkv_vstage": _decode_spec(4, 1, bn, 1, st, page, True, tail_mask=True,
                                                                kv_tma=kv, v_stage=True)
        for part, (page, bn, st, kv) in one_warp_split.items()
        if part in ("page64_tma_bn64w1s4", "page16_tmab_bn32w1s4")
    })
    # DecodeConfig(l2_evict_first=True) on the two picks: the K/V tile loads (UTMALDG) with an L2 evict-first
    # policy (l2hint's PTX pass; tests/test_codegen_decode.py checks the SASS)
    specs.update({
        f"decode_e4m3_gqa4_{part}_splitkv_vstage_l2ef": _decode_spec(4, 1, bn, 1, st, page, True, tail_mask=True,
                                                                     kv_tma=kv, v_stage=True, l2ef=True)
        for part, (page, bn, st, kv) in one_warp_split.items()
        if part in ("page64_tma_bn64w1s4", "page16_tmab_bn32w1s4")
    })
    # DecodeConfig(warp_split=True): a program's warps take slices of each step, one softmax each (GQA 4 and 8, pages
    # of 16 and 64, with and without split-KV partials). name part -> (group, page, block_n, warps, stages, split)
    warp_split = {
        "gqa4_page64_bn128w4s3": (4, 64, 128, 4, 3, False),
        "gqa4_page64_bn128w4s3_splitkv": (4, 64, 128, 4, 3, True),
        "gqa8_page64_bn128w4s3_splitkv": (8, 64, 128, 4, 3, True),
        "gqa4_page64_bn256w4s2": (4, 64, 256, 4, 2, False),
        "gqa4_page64_bn256w8s3_splitkv": (4, 64, 256, 8, 3, True),
        "gqa4_page16_bn128w4s3": (4, 16, 128, 4, 3, False),
        "gqa4_page16_bn64w4s4_splitkv": (4, 16, 64, 4, 4, True),
    }
    specs.update({
        f"decode_e4m3_{part}_wsplit_vstage": _decode_spec(g, 1, bn, w, st, page, split, v_stage=True,
                                                          warp_split=True)
        for part, (g, page, bn, w, st, split) in warp_split.items()
    })
    specs["kvcache_write_bf16_e4m3"] = CodegenSpec(
        fn=_write_kv_kernel,
        signature={
            "k_ptr": "*bf16", "v_ptr": "*bf16", "k_cache_ptr": "*fp8e4nv", "v_cache_ptr": "*fp8e4nv",
            "slot_ptr": "*i64", "k_scale_ptr": "*fp32", "v_scale_ptr": "*fp32", "num_slots": "i64",
            **{s: "i32" for s in ("stride_kt", "stride_kh", "stride_vt", "stride_vh", "stride_kcb", "stride_kcs",
                                  "stride_kch", "stride_vcb", "stride_vcs", "stride_vch")},
            **{c: "constexpr" for c in ("SCALE_STRIDE", "HEADS", "HEAD_DIM", "BLOCK_H", "BLOCK_D", "PAGE",
                                        "CACHE_DTYPE")},
        },
        constexprs={"SCALE_STRIDE": 1, "HEADS": 8, "HEAD_DIM": 128, "BLOCK_H": 8, "BLOCK_D": 128, "PAGE": 16,
                    "CACHE_DTYPE": tl.float8e4nv},
        name=write_kv_kernel_name(90, "bf16", "e4m3", 8, 128, 4, True),
        num_warps=4,
        num_stages=1,
        divisible=("k_ptr", "v_ptr", "k_cache_ptr", "v_cache_ptr", "slot_ptr", "k_scale_ptr", "v_scale_ptr",
                   "stride_kt", "stride_kh", "stride_vt", "stride_vh", "stride_kcb", "stride_kcs", "stride_kch",
                   "stride_vcb", "stride_vcs", "stride_vch"),
        description="quantize + scatter new K/V tokens into the paged E4M3 cache (Hkv 8, D 128)",
    )
    specs["decode_combine_bf16"] = CodegenSpec(
        fn=_combine_kernel,
        signature={
            "part_o_ptr": "*fp32", "part_lse_ptr": "*fp32", "out_ptr": "*bf16", "v_descale_ptr": "*fp32",
            "num_splits": "i32", "group": "i32", "HEAD_DIM": "constexpr", "BLOCK_D": "constexpr",
            "BLOCK_S": "constexpr", "V_DESCALE_STRIDE": "constexpr", "PDL": "constexpr",
        },
        constexprs={"HEAD_DIM": 128, "BLOCK_D": 128, "BLOCK_S": 32, "V_DESCALE_STRIDE": 1, "PDL": False},
        name=combine_kernel_name(90, "bf16", 32, 128),
        num_warps=4,
        num_stages=1,
        divisible=("part_o_ptr", "part_lse_ptr", "out_ptr"),
        description="log-sum-exp merge of split-KV partials (32 splits, D 128)",
    )
    pdl = specs["decode_combine_bf16"]
    specs["decode_combine_bf16_pdl"] = dataclasses.replace(
        pdl, constexprs={**pdl.constexprs, "PDL": True}, name=combine_kernel_name(90, "bf16", 32, 128, pdl=True),
        description="the combine kernel as a programmatic dependent launch (griddepcontrol.wait before its loads)",
        options={"launch_pdl": True},
    )
    specs["decode_combine_f16part_bf16"] = dataclasses.replace(
        pdl, signature={**pdl.signature, "part_o_ptr": "*fp16"}, name=combine_kernel_name(90, "bf16", 32, 128,
                                                                                           part="f16"),
        description="the combine kernel on fp16 partials (decode.partials_f16)",
    )
    return specs
