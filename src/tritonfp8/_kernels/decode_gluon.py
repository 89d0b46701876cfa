"""Paged FP8 decode attention in Gluon: one program of 1, 2 or 4 warps per (split, KV head, sequence), cache tokens
as the MMA's M.

``DecodeConfig(kernel="gluon")`` (sm_90, an E4M3 cache with TMA-addressable pages, head dim 128, one new token
and at most 8 query heads per KV head). The Triton kernel (``decode.py``) puts the query rows on the mma.sync M
dimension, padded to 16, and lets Triton lay out the operands; here both products take the cache tokens as M and
the (at most 8) query rows as N = 8, with every register layout chosen explicitly:

- S^T = K.q^T ([16 tokens, 8 rows] per 16-token sub-tile, m16n8k16): K is the A operand straight from shared
  memory. A lane holds two token rows and 32 adjacent bytes of each (two 16-byte loads per row); the head dimension
  is permuted (the same permutation in q, loaded once) so that each loaded 32-bit word is one A-fragment pair
  (bytes 0-1) and its +8 partner (bytes 2-3): one E4M3 -> fp16 conversion per 16-bit half, no byte moves.
- O^T += V^T.P^T ([128, 8], m16n8k16): V^T is the A operand, whose register pairs are pairs of *tokens*. The
  tokens of a sub-tile are permuted (sigma, in K's rows as well, so S^T and P^T index the same tokens) so that a
  lane's pairs are 4 adjacent cache rows: four 16-byte row loads, conversion of each row's bytes, one 16-bit swap
  (PRMT) per A register. The head dimension of V is permuted so those 16 bytes are the lane's columns of all 8
  m-tiles; the permutation is undone by the output stores.
- P^T (the S^T accumulator layout) becomes the B operand by an in-warp transpose (two shuffles per sub-tile).
- Half the mma.sync of the rows-as-M form (N = 8 instead of M = 16 padded rows) and half its accumulator (32
  registers per lane).

K/V pages arrive by TMA into a ring of STAGES buffers of STEP tokens (one box per page, or a sub-box of a page),
each with an mbarrier; after a step's products its slot is refilled with the step STAGES ahead, whose block-table
entries were loaded together at the top of the step (session 26: their latency behind the products, not one wait
per copy; the step's own entries are read again for the masks). Split-KV as the Triton kernel (the same partials
layout, merged by its combine kernel or, session 35, by the last split to finish: _merge_splits); one split writes
the output directly. With W > 1 warps each warp runs the loop on its own share of the program's tokens (its own
online softmax; a ring slot holds every warp's step) and the warps' results are merged on chip after the loop, so
the program writes one output or partial.
"""

from __future__ import annotations

import functools

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.runtime.jit import constexpr_function

from tritonfp8._kernels import decode as _triton_decode
from tritonfp8._kernels import l2hint
from tritonfp8.naming import _repr_from_constexpr

HEAD_DIM = 128
ROWS = gl.constexpr(8)  # the MMA's N: query rows (heads of a KV head x new tokens) per program, padded
# Session 33's epilogue forms, switched by these module flags (read when a plan is built; tests switch them):
# ROW_STORE, O / the partials converted to rows through shared memory and stored 16 bytes per lane (1 and 2 warps,
# see row_stores), on since session 34: at B 8 ctx 4096 Hq 64 (8 partial rows per program) it ran 1.10-1.11x the
# accumulator-layout stores, 1.01x at Hq 32 (H100, 8 alternated rounds, the median of each form's rounds within 1.1x
# of its fastest: decode-b8-20261207-025511.json); PDL_SIGNAL, the PDL signal to the combine kernel after the loop,
# stays off: 0.97-1.00x there.
ROW_STORE = True
PDL_SIGNAL = False
# registers per thread that keep three 4-warp programs per SM: the 64 Ki registers over 3 x 128 threads, in the
# allocation's steps of 8 (168)
ROW_STORE_W4_MAXNREG = 65536 // (3 * 128) // 8 * 8


# Every register tensor carries a leading warp dimension W (the program's warps, each on its own token range, one
# softmax each, merged on chip at the end); the layouts below put it on the warp bits.
@constexpr_function
def _warp_bases(w: int) -> list:
    return [[1 << i, 0, 0] for i in range(w.bit_length() - 1)]


@constexpr_function
def _mma(w):
    return gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[w, 1, 1], instr_shape=[1, 16, 8])


@constexpr_function
def _lk(w):
    """K sub-tile [W, 16 cache rows, 128 bytes] as loaded: lane 4g + c holds rows sigma(g) and sigma(g) + 2 (sigma(g)
    = 4 (g >> 1) + (g & 1)) and bytes [32c, 32c + 32) of each (registers: bytes, then the second row)."""
    return gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 0, 16], [0, 2, 0]],
        lane_bases=[[0, 0, 32], [0, 0, 64], [0, 1, 0], [0, 4, 0], [0, 8, 0]], warp_bases=_warp_bases(w),
        block_bases=[], shape=[w, 16, 128])


@constexpr_function
def _lv(w):
    """V sub-tile [W, 16 cache rows, 128 bytes] as loaded: lane 4g + c holds rows 4c .. 4c + 3, bytes [16g, 16g +
    16)."""
    return gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 1, 0], [0, 2, 0]],
        lane_bases=[[0, 4, 0], [0, 8, 0], [0, 0, 16], [0, 0, 32], [0, 0, 64]], warp_bases=_warp_bases(w),
        block_bases=[], shape=[w, 16, 128])


@constexpr_function
def _lvm(w):
    """... the same elements with the registers ordered (row bit 0, column bit 0, row bit 1, columns): after the
    fp16 conversion each 32-bit register pairs two adjacent rows (tokens) of one column, as the A operand wants."""
    return gl.DistributedLinearLayout(
        reg_bases=[[0, 1, 0], [0, 0, 1], [0, 2, 0], [0, 0, 2], [0, 0, 4], [0, 0, 8]],
        lane_bases=[[0, 4, 0], [0, 8, 0], [0, 0, 16], [0, 0, 32], [0, 0, 64]], warp_bases=_warp_bases(w),
        block_bases=[], shape=[w, 16, 128])


@constexpr_function
def _ql(w):
    """q [W, 8, 128] as loaded from global memory (each warp its own copy)."""
    return gl.BlockedLayout([1, 1, 4], [1, 2, 16], [w, 1, 1], [2, 1, 0])


@constexpr_function
def _wvec(layout):
    """Layout of a [W] vector broadcast along the last two dimensions of ``layout``."""
    return gl.SliceLayout(1, gl.SliceLayout(2, layout))


_split_range = gluon.jit(_triton_decode.split_range.fn)  # the Triton kernel's split bounds, compiled as Gluon


@gluon.jit
def _sigma(m):
    """Cache row (within a 16-token sub-tile) of MMA token index m: 4 ((m >> 1) & 3) + 2 (m >> 3) + (m & 1)."""
    return ((m >> 1) & 3) * 4 + ((m >> 3) & 1) * 2 + (m & 1)


@gluon.jit
def _launch_dependents():
    """griddepcontrol.launch_dependents (as triton.language.extra.cuda.gdc_launch_dependents): a dependent grid
    launched with PDL may start once every program of this grid has signalled or exited; its griddepcontrol.wait
    still waits for this grid's completion and memory."""
    gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // dummy $0", "=r", [], dtype=gl.int32,
                              is_pure=False, pack=1)


@gluon.jit
def _per_warp(vals, w_idx, W: gl.constexpr):
    """The [W] vector (layout of ``w_idx``) of the scalars ``vals`` (one per warp)."""
    v = gl.where(w_idx == 0, vals[0], 0)
    for w in gl.static_range(1, W):
        v = gl.where(w_idx == w, vals[w], v)
    return v


@gluon.jit
def _k_operand(k_sub, W: gl.constexpr):
    """A operand [W, 16 tokens, 128] fp16 of K sub-tiles in shared memory: A[w, m, k] = K_w[sigma(m), pi_k(k)] with
    pi_k(16 kk + 2c + j0 + 8 j1) = 32c + 4 kk + 2 j1 + j0 (q is permuted alike)."""
    k = k_sub.load(_lk(W)).to(gl.float16)
    k = gl.reshape(k, [W, 4, 2, 2, 4, 8, 2, 2])  # rows (c', h, b), bytes (c, kk, j1, j0)
    k = gl.permute(k, (0, 2, 1, 3, 5, 6, 4, 7))  # tokens (h, c', b), k (kk, j1, c, j0)
    return gl.convert_layout(gl.reshape(k, [W, 16, 128]), gl.DotOperandLayout(0, _mma(W), 2))


@gluon.jit
def _v_operand(v_sub, row_ok, W: gl.constexpr, MASKED: gl.constexpr):
    """A operand [W, 128, 16 tokens] fp16 of V sub-tiles: A[w, n, t] = V_w[sigma(t), pi_v(n)] with pi_v(n) = 16 (n %
    8) + n // 8. MASKED: rows ([W, 16] bool) that are not ``row_ok`` read as 0 (slots past the sequence's end may
    hold any bytes, NaN included)."""
    v = gl.convert_layout(v_sub.load(_lv(W)).to(gl.float16), _lvm(W))
    if MASKED:
        v = gl.where(gl.convert_layout(row_ok, gl.SliceLayout(2, _lvm(W)))[:, :, None], v, 0.0)
    v = gl.reshape(v, [W, 4, 2, 2, 8, 16])  # rows (c, h, b), columns (g, j)
    v = gl.permute(v, (0, 5, 4, 2, 1, 3))  # n (j, g), tokens (h, c, b)
    return gl.convert_layout(gl.reshape(v, [W, 128, 16]), gl.DotOperandLayout(0, _mma(W), 2))


@gluon.jit
def _step_pages(bt_row, stride_btn, i, starts, ends, PAGE: gl.constexpr, BOX: gl.constexpr, STEP: gl.constexpr,
                W: gl.constexpr):
    """The block-table entries of step ``i``'s boxes, every warp's (a tuple of W * STEP // BOX, warp-major; -1 past a
    warp's end, not read), loaded together before any copy is issued so that their latencies overlap (issued one
    before each copy, each load waited for in turn: W * STEP // BOX latencies per step, 4 at pages of 16 with 2
    warps)."""
    pages = ()
    for w in gl.static_range(W):
        n0 = starts[w] + i * STEP
        for j in gl.static_range(STEP // BOX):
            nj = n0 + j * BOX
            pages = pages + (gl.load(bt_row + (nj // PAGE) * stride_btn, mask=nj < ends[w], other=-1),)
    return pages


@gluon.jit
def _issue(k_desc, v_desc, k_ring, v_ring, slot, bar, pages, i, starts, num_blocks, col, PAGE: gl.constexpr,
           BOX: gl.constexpr, STEP: gl.constexpr, W: gl.constexpr, HEADS: gl.constexpr = False):
    """TMA copies of step ``i`` of every warp's range (STEP // BOX boxes of K and of V each, from ``pages`` of
    _step_pages) into ring slot ``slot`` (warp w's tokens at rows [w STEP, (w + 1) STEP)). A box of a page outside
    [0, num_blocks) or past the warp's end (page -1) reads past the view's end (zeros). HEADS (W warps on W KV heads
    of the same tokens, ``col`` the first of them): one 3-D box [W, BOX, 128] per page box into ring buffer
    ``slot * STEP // BOX + j`` (each head's BOX tokens contiguous, as a warp's tokens in the other form)."""
    mbarrier.expect(bar, W * 2 * STEP * 128)
    if HEADS:
        n0 = starts[0] + i * STEP
        for j in gl.static_range(STEP // BOX):
            page = pages[j]
            ok = (page >= 0) & (page < num_blocks)
            row = gl.where(ok, page * PAGE + (n0 + j * BOX) % PAGE, num_blocks * PAGE)
            buf = slot * (STEP // BOX) + j
            tma.async_copy_global_to_shared(k_desc, [col, row, 0], bar, k_ring.index(buf))
            tma.async_copy_global_to_shared(v_desc, [col, row, 0], bar, v_ring.index(buf))
    else:
        for w in gl.static_range(W):
            n0 = starts[w] + i * STEP
            for j in gl.static_range(STEP // BOX):
                page = pages[w * (STEP // BOX) + j]
                ok = (page >= 0) & (page < num_blocks)
                row = gl.where(ok, page * PAGE + (n0 + j * BOX) % PAGE, num_blocks * PAGE)
                tma.async_copy_global_to_shared(k_desc, [row, col], bar,
                                                k_ring.index(slot).slice(w * STEP + j * BOX, BOX))
                tma.async_copy_global_to_shared(v_desc, [row, col], bar,
                                                v_ring.index(slot).slice(w * STEP + j * BOX, BOX))


@gluon.jit
def _refill(k_desc, v_desc, k_ring, v_ring, ready, pages, i, n_steps, starts, num_blocks, col, PAGE: gl.constexpr,
            BOX: gl.constexpr, STEP: gl.constexpr, STAGES: gl.constexpr, W: gl.constexpr,
            HEADS: gl.constexpr = False):
    """After step ``i``: its ring slot refilled with step i + STAGES (if any), whose table entries ``pages`` were
    loaded at the top of step i (their latency hidden behind the step's products)."""
    nxt = i + STAGES
    if nxt < n_steps:
        if W > 1:
            gl.thread_barrier()  # every warp done with this slot
        fence_async_shared()  # this slot's shared-memory reads before the copy engine overwrites it
        s = i % STAGES
        _issue(k_desc, v_desc, k_ring, v_ring, s, ready.index(s), pages, nxt, starts, num_blocks, col, PAGE, BOX, STEP,
               W, HEADS)


@gluon.jit
def _sub_tile(ring, slot, u, STEP: gl.constexpr, BOX: gl.constexpr, W: gl.constexpr, HEADS: gl.constexpr):
    """Sub-tile ``u`` ([W, 16 tokens, 128]) of ring slot ``slot``: rows 16 u .. of each warp's [STEP, 128] share of
    the slot, or with HEADS of each head's part of the slot's (16 u // BOX)-th [W, BOX, 128] box (see _issue)."""
    if HEADS:
        t = ring.index(slot * (STEP // BOX) + 16 * u // BOX).slice(16 * u % BOX, 16, dim=1)
    else:
        t = ring.index(slot).reshape([W, STEP, 128]).slice(16 * u, 16, dim=1)
    return t


@gluon.jit
def _step(k_ring, v_ring, slot, qt, acc, m_i, l_part, bt_row, stride_btn, n0, end, num_blocks, score_scale,
          PAGE: gl.constexpr, BOX: gl.constexpr, STEP: gl.constexpr, W: gl.constexpr, MASKED: gl.constexpr,
          HEADS: gl.constexpr = False):
    """One step of STEP tokens per warp from ring slot ``slot`` (_sub_tile; ``n0``, ``end``: the warps' [W] first
    token and range end): S^T per 16-token sub-tile, one online-softmax update (row max over the step, one rescale of
    acc), P^T.V per sub-tile. ``l_part`` [W, 16, 8] keeps each lane's partial row sums (reduced across lanes once,
    after the loop)."""
    U: gl.constexpr = STEP // 16
    MMA: gl.constexpr = _mma(W)
    m_idx = gl.arange(0, 16, layout=gl.SliceLayout(0, gl.SliceLayout(2, MMA)))
    ss = ()
    oks = ()
    for u in gl.static_range(U):
        nb = n0 + (16 * u) // BOX * BOX  # the sub-tile's box (BOX >= 16: a sub-tile lies in one box)
        page = gl.load(bt_row + (nb // PAGE) * stride_btn, mask=nb < end, other=-1)
        page_ok = (page >= 0) & (page < num_blocks)  # [W]
        st = mma_v2(_k_operand(_sub_tile(k_ring, slot, u, STEP, BOX, W, HEADS), W), qt,
                    gl.full([W, 16, ROWS], 0.0, gl.float32, MMA))
        st = st * score_scale[:, None, :]
        if MASKED:
            tok_ok = page_ok[:, None] & (n0[:, None] + 16 * u + _sigma(m_idx)[None, :] < end[:, None])
            st = gl.where(tok_ok[:, :, None], st, float("-inf"))
            rows = gl.arange(0, 16, layout=gl.SliceLayout(0, gl.SliceLayout(2, MMA)))
            oks = oks + (page_ok[:, None] & (n0[:, None] + 16 * u + rows[None, :] < end[:, None]),)
        else:
            st = gl.where(page_ok[:, None, None], st, float("-inf"))
            oks = oks + (page_ok,)
        ss = ss + (st,)
    row_max = gl.max(ss[0], axis=1)
    for u in gl.static_range(1, U):
        row_max = gl.maximum(row_max, gl.max(ss[u], axis=1))
    m_new = gl.maximum(m_i, row_max)
    m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = gl.exp2(m_i - m_use)
    acc = acc * alpha[:, None, :]
    l_part = l_part * alpha[:, None, :]
    for u in gl.static_range(U):
        p = gl.exp2(ss[u] - m_use[:, None, :])
        l_part = l_part + p
        pb = gl.convert_layout(p.to(gl.float16), gl.DotOperandLayout(1, MMA, 2))
        acc = mma_v2(_v_operand(_sub_tile(v_ring, slot, u, STEP, BOX, W, HEADS), oks[u], W, MASKED), pb, acc)
    return acc, m_new, l_part


@gluon.jit
def _merge_splits(part_o_ptr, part_lse_ptr, out_ptr, row0, num_splits, v_ds, GROUP: gl.constexpr,
                  MR: gl.constexpr, CHUNK: gl.constexpr, ROUNDS: gl.constexpr, W: gl.constexpr):
    """The inline merge (the last split of a (KV head, sequence) to finish): out rows row0 .. row0 + GROUP - 1 =
    v_ds sum_s 2^(lse_s - lse) o_s over the partials of every split, as the combine kernel, CHUNK splits of MR rows (the
    group rounded up to a power of two, at least W) per round, ROUNDS = cdiv(num_splits, CHUNK) rounds unrolled so
    that a round's loads need not wait for the previous round's sums. The partials are read through L2 (.cg)."""
    ML: gl.constexpr = gl.BlockedLayout([1, 1, 4], [1, 1, 32], [W, 1, 1], [2, 1, 0])  # [MR, CHUNK, 128]
    LS: gl.constexpr = gl.SliceLayout(2, ML)  # [MR, CHUNK]
    OL: gl.constexpr = gl.SliceLayout(1, ML)  # [MR, 128]
    r = gl.arange(0, MR, layout=gl.SliceLayout(1, LS))
    c = gl.arange(0, CHUNK, layout=gl.SliceLayout(0, LS))
    d = gl.arange(0, 128, layout=gl.SliceLayout(0, OL))
    r_ok = r < GROUP
    base = (row0 + r) * num_splits
    m_all = gl.full([MR], float("-inf"), gl.float32, gl.SliceLayout(1, LS))
    den = gl.full([MR], 0.0, gl.float32, gl.SliceLayout(1, LS))
    res = gl.full([MR, 128], 0.0, gl.float32, OL)
    for k in gl.static_range(ROUNDS):
        s_idx = k * CHUNK + c
        msk = r_ok[:, None] & (s_idx < num_splits)[None, :]
        off = base[:, None] + s_idx[None, :]
        lse = gl.load(part_lse_ptr + off, mask=msk, other=float("-inf"), cache_modifier=".cg")
        o = gl.load(part_o_ptr + off[:, :, None] * 128 + d[None, None, :], mask=msk[:, :, None], other=0.0,
                    cache_modifier=".cg")
        m_new = gl.maximum(m_all, gl.max(lse, axis=1))
        m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
        a = gl.exp2(m_all - m_use)
        w = gl.exp2(lse - m_use[:, None])  # 0 for empty splits and masked slots
        den = den * a + gl.sum(w, axis=1)
        res = res * gl.convert_layout(a, gl.SliceLayout(1, OL))[:, None] + gl.sum(o * w[:, :, None], axis=1)
        m_all = m_new
    res = res * gl.convert_layout(v_ds / gl.where(den > 0.0, den, 1.0), gl.SliceLayout(1, OL))[:, None]
    r_o = gl.arange(0, MR, layout=gl.SliceLayout(1, OL))
    gl.store(out_ptr + (row0 + r_o)[:, None] * 128 + d[None, :], res.to(out_ptr.dtype.element_ty),
             mask=(r_o < GROUP)[:, None])


@gluon.jit
def _heads_epilogue(acc, m_i, l_part, v_descale_ptr, out_ptr, part_o_ptr, part_lse_ptr, row0, split, num_splits,
                    vd0, V_DESCALE_STRIDE: gl.constexpr, GROUP: gl.constexpr, WRITE_PARTIAL: gl.constexpr,
                    W: gl.constexpr):
    """The HEADS form's output or partial: warp w's rows are query heads row0 + w GROUP + r (r < GROUP) of the
    (B, 1, Hq) rows, each normalized by its own row sum and times its head's v_descale (``v_descale_ptr + vd0 + w
    V_DESCALE_STRIDE``), stored as rows (the row-store epilogue's conversion through shared memory, 16 bytes per
    lane), with the log2-sum-exp partials as the other form's."""
    MMA: gl.constexpr = _mma(W)
    SL: gl.constexpr = gl.BlockedLayout([1, 1, 4], [1, 1, 32], [W, 1, 1], [2, 1, 0])  # [W, rows, 128]
    RL: gl.constexpr = gl.SliceLayout(2, SL)  # [W, rows]
    w_v = gl.arange(0, W, layout=gl.SliceLayout(1, gl.SliceLayout(1, MMA)))
    v_ds = gl.load(v_descale_ptr + vd0 + w_v * V_DESCALE_STRIDE)
    l_i = gl.sum(l_part, axis=1)  # [W, 8]
    has = l_i > 0.0
    # a partial without v_descale (as the Triton kernel's: the merge applies it)
    o_scale = gl.where(has, (1.0 if WRITE_PARTIAL else v_ds[:, None]) / gl.where(has, l_i, 1.0), 0.0)
    # O^T [w, n, r] -> O [w, r, d] with d = pi_v(n) = 16 (n % 8) + n // 8 (register renaming), then rows
    o = gl.reshape(gl.permute(gl.reshape(acc, [W, 16, 8, ROWS]), (0, 3, 2, 1)), [W, ROWS, 128])
    o = gl.convert_layout(o, SL) * gl.convert_layout(o_scale, RL)[:, :, None]
    d_o = gl.arange(0, 128, layout=gl.SliceLayout(0, gl.SliceLayout(1, SL)))
    r_o = gl.arange(0, ROWS, layout=gl.SliceLayout(0, RL))
    w_o = gl.arange(0, W, layout=gl.SliceLayout(1, RL))
    o_row = row0 + w_o[:, None] * GROUP + r_o[None, :]  # [W, rows]
    row_ok = (r_o < GROUP)[None, :] & (w_o >= 0)[:, None]  # (the second term broadcasts it to [W, rows])
    if WRITE_PARTIAL:
        lse = gl.where(has, m_i + gl.log2(gl.where(has, l_i, 1.0)), float("-inf"))
        p_row = o_row * num_splits + split
        gl.store(part_lse_ptr + p_row, gl.convert_layout(lse, RL), mask=row_ok)
        gl.store(part_o_ptr + p_row[:, :, None] * 128 + d_o[None, None, :], o.to(part_o_ptr.dtype.element_ty),
                 mask=row_ok[:, :, None])
    else:
        gl.store(out_ptr + o_row[:, :, None] * 128 + d_o[None, None, :], o.to(out_ptr.dtype.element_ty),
                 mask=row_ok[:, :, None])


@gluon.jit(repr=_repr_from_constexpr, do_not_specialize=["num_blocks"])
def decode_gluon_kernel(
    q_ptr, k_desc, v_desc, block_table_ptr, seq_lens_ptr, k_descale_ptr, v_descale_ptr, out_ptr, part_o_ptr,
    part_lse_ptr, counter_ptr, sm_scale_log2, num_blocks, max_blocks, num_splits, stride_qb, stride_qh, stride_btb,
    stride_btn, GROUP: gl.constexpr, PAGE: gl.constexpr, BOX: gl.constexpr, STEP: gl.constexpr,
    STAGES: gl.constexpr, K_DESCALE_STRIDE: gl.constexpr, V_DESCALE_STRIDE: gl.constexpr, Q_POW2_SCALE: gl.constexpr,
    WRITE_PARTIAL: gl.constexpr, KERNEL_NAME: gl.constexpr, L2_HINT: gl.constexpr = 0,
    ROW_STORE: gl.constexpr = False, PDL: gl.constexpr = False, MERGE_ROWS: gl.constexpr = 0,
    MERGE_CHUNK: gl.constexpr = 1, MERGE_ROUNDS: gl.constexpr = 0, HEADS: gl.constexpr = False,
):
    """Grid (num_splits, Hkv, B), W = num_warps warps (1, 2 or 4): warp w takes split ``split * W + w`` of
    ``num_splits * W`` of the sequence's tokens with its own online softmax, and the warps' results are merged on
    chip before the program's output or partial. q (B, 1, Hq, D) bf16 / fp16 (D = 128, head stride 128); caches as
    TMA descriptors of the [num_blocks * PAGE, Hkv * D] E4M3 views with [BOX, 128] boxes; out (B, 1, Hq, D)
    contiguous; partials (WRITE_PARTIAL): lse (B, 1, Hq, num_splits), o (B, 1, Hq, num_splits, D), o normalized
    by its own row sum and times v_descale, lse in log2 units (-inf for an empty split), as the Triton kernel.
    MERGE_ROUNDS > 0 (with WRITE_PARTIAL; session 35): the last split of a (KV head, sequence) to finish, found by
    an acq_rel ticket on ``counter_ptr`` (int32 per (sequence, KV head), zero between launches: that program resets
    it), merges the partials into ``out`` (_merge_splits), as the Triton kernel's INLINE_MERGE: no combine launch.
    L2_HINT: not read by the body; l2hint.VERSION when KERNEL_NAME carries ``l2ef`` (the PTX pass then adds evict-first
    hints to the K/V TMA loads), so Triton's cache key holds the pass's version, as in the Triton kernel.
    HEADS (session 38; with ROW_STORE, without MERGE_ROUNDS): grid (num_splits, Hkv / W, B), warp w on KV head
    ``program_id(1) * W + w`` over the split's tokens (split ``split`` of ``num_splits``), each warp its own
    output rows; the caches as descriptors of the 3-D [Hkv, num_blocks * PAGE, D] views with [W, BOX, 128] boxes,
    so one copy moves a page box of all the program's heads (a 1 KB row per token at Hkv = W = 8)."""
    W: gl.constexpr = gl.num_warps()
    HW: gl.constexpr = W if HEADS else 1  # KV heads per program
    TW: gl.constexpr = 1 if HEADS else W  # token ranges per program
    MMA: gl.constexpr = _mma(W)
    split = gl.program_id(0)
    kvh = gl.program_id(1) * HW  # the program's (first) KV head
    b = gl.program_id(2).to(gl.int64)
    hq = GROUP * HW * gl.num_programs(1)
    gl.static_assert(not HEADS or (ROW_STORE and MERGE_ROUNDS == 0), "HEADS: row stores, no inline merge")

    starts = ()
    ends = ()
    n_steps = 0
    n_full = 1 << 30
    for w in gl.static_range(TW):
        seq_len, start_w, end_w = _split_range(seq_lens_ptr, b, split * TW + w, num_splits * TW, max_blocks, PAGE,
                                               STEP)
        starts = starts + (start_w,)
        ends = ends + (end_w,)
        n_steps = gl.maximum(n_steps, gl.cdiv(gl.maximum(end_w - start_w, 0), STEP))
        n_full = gl.minimum(n_full, gl.maximum(end_w - start_w, 0) // STEP)
    w_idx = gl.arange(0, W, layout=_wvec(MMA))
    if HEADS:
        start_v = starts[0] + 0 * w_idx
        end_v = ends[0] + 0 * w_idx
        col = kvh  # the 3-D box's head coordinate
        SH3: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=3)
        # STEP // BOX boxes a slot, each the W heads' BOX tokens
        k_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES * (STEP // BOX), W, BOX, 128], SH3)
        v_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES * (STEP // BOX), W, BOX, 128], SH3)
    else:
        start_v = _per_warp(starts, w_idx, W)
        end_v = _per_warp(ends, w_idx, W)
        col = kvh * 128
        SH: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
        k_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, W * STEP, 128], SH)  # slot: the warps' steps
        v_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, W * STEP, 128], SH)
    bt_row = block_table_ptr + b * stride_btb
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
    fence_async_shared()
    first = ()  # every prologue step's table entries loaded before the first copy (none past the warps' ends)
    for i in gl.static_range(STAGES):
        first = first + (_step_pages(bt_row, stride_btn, i, starts, ends, PAGE, BOX, STEP, TW),)
    for i in gl.static_range(STAGES):
        if i < n_steps:
            _issue(k_desc, v_desc, k_ring, v_ring, i, ready.index(i), first[i], i, starts, num_blocks, col, PAGE, BOX,
                   STEP, W, HEADS)

    # q^T [W, 128, 8] as the B operand (each warp its copy): row r = query head kvh * GROUP + r (rows >= GROUP are
    # zero), the head dimension permuted as K's (pi_k), bf16 brought into fp16 by a per-row power of two (as the
    # Triton kernel).
    QL: gl.constexpr = _ql(W)
    r_q = gl.arange(0, ROWS, layout=gl.SliceLayout(0, gl.SliceLayout(2, QL)))
    k_q = gl.arange(0, 128, layout=gl.SliceLayout(0, gl.SliceLayout(1, QL)))
    w_q = gl.arange(0, W, layout=_wvec(QL))
    d_q = ((k_q >> 1) & 3) * 32 + (k_q >> 4) * 4 + ((k_q >> 3) & 1) * 2 + (k_q & 1)
    # warp w's KV head: kvh + w with HEADS (HW // W = 1), else kvh for every warp (HW // W = 0, or w = 0 at W = 1)
    q_off = ((kvh + w_q * (HW // W))[:, None, None] * GROUP + r_q[None, :, None]) * stride_qh + d_q[None, None, :]
    qf = gl.load(q_ptr + b * stride_qb + q_off, mask=(r_q < GROUP)[None, :, None], other=0.0).to(gl.float32)
    if Q_POW2_SCALE:
        e = (gl.max(gl.abs(qf), axis=2).to(gl.int32, bitcast=True) >> 23) & 0xFF
        sb = gl.minimum(gl.maximum(268 - e, 1), 253)
        qf = qf * ((sb << 23).to(gl.float32, bitcast=True))[:, :, None]
        row_scale = ((254 - sb) << 23).to(gl.float32, bitcast=True)
    else:
        row_scale = gl.full([W, ROWS], 1.0, gl.float32, gl.SliceLayout(2, QL))
    qt = gl.convert_layout(gl.permute(qf.to(gl.float16), (0, 2, 1)), gl.DotOperandLayout(1, MMA, 2))
    if HEADS:  # each warp its head's descales ([W] vectors)
        w_s = gl.arange(0, W, layout=gl.SliceLayout(1, gl.SliceLayout(1, MMA)))
        k_ds = gl.load(k_descale_ptr + (kvh + w_s) * K_DESCALE_STRIDE)
        score_scale = gl.convert_layout(row_scale, gl.SliceLayout(1, MMA)) * (sm_scale_log2 * k_ds)[:, None]
    else:
        k_ds = gl.load(k_descale_ptr + kvh * K_DESCALE_STRIDE)
        v_ds = gl.load(v_descale_ptr + kvh * V_DESCALE_STRIDE)
        score_scale = gl.convert_layout(row_scale, gl.SliceLayout(1, MMA)) * (sm_scale_log2 * k_ds)

    acc = gl.full([W, 128, ROWS], 0.0, gl.float32, MMA)  # O^T per warp
    l_part = gl.full([W, 16, ROWS], 0.0, gl.float32, MMA)
    m_i = gl.full([W, ROWS], float("-inf"), gl.float32, gl.SliceLayout(1, MMA))
    for i in range(0, n_full):
        s = i % STAGES
        ahead = _step_pages(bt_row, stride_btn, i + STAGES, starts, ends, PAGE, BOX, STEP, TW)
        mbarrier.wait(ready.index(s), (i // STAGES) & 1)
        acc, m_i, l_part = _step(k_ring, v_ring, s, qt, acc, m_i, l_part, bt_row, stride_btn, start_v + i * STEP,
                                 end_v, num_blocks, score_scale, PAGE, BOX, STEP, W, False, HEADS)
        _refill(k_desc, v_desc, k_ring, v_ring, ready, ahead, i, n_steps, starts, num_blocks, col, PAGE, BOX, STEP,
                STAGES, W, HEADS)
    if TW == 1:  # one token range: at most one masked step (the last, partial one), nothing left to refill
        if n_full < n_steps:
            s = n_full % STAGES
            mbarrier.wait(ready.index(s), (n_full // STAGES) & 1)
            acc, m_i, l_part = _step(k_ring, v_ring, s, qt, acc, m_i, l_part, bt_row, stride_btn,
                                     start_v + n_full * STEP, end_v, num_blocks, score_scale, PAGE, BOX, STEP, W, True,
                                     HEADS)
    else:
        for i in range(n_full, n_steps):  # each warp's last, partial step and any past its share: token masks
            s = i % STAGES
            mbarrier.wait(ready.index(s), (i // STAGES) & 1)
            acc, m_i, l_part = _step(k_ring, v_ring, s, qt, acc, m_i, l_part, bt_row, stride_btn, start_v + i * STEP,
                                     end_v, num_blocks, score_scale, PAGE, BOX, STEP, W, True)
            # (the refill's entries loaded here, after the step: ahead of it they cost 5 registers in this loop,
            # which runs only for the warps' last, partial steps)
            ahead = _step_pages(bt_row, stride_btn, i + STAGES, starts, ends, PAGE, BOX, STEP, W)
            _refill(k_desc, v_desc, k_ring, v_ring, ready, ahead, i, n_steps, starts, num_blocks, col, PAGE, BOX, STEP,
                    STAGES, W)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))
    if PDL:  # the combine kernel, a programmatic dependent launch, may be scheduled now (it waits for this grid)
        _launch_dependents()

    if HEADS:  # every warp its own head: no merge across warps
        _heads_epilogue(acc, m_i, l_part, v_descale_ptr, out_ptr, part_o_ptr, part_lse_ptr, b * hq + kvh * GROUP,
                        split, num_splits, V_DESCALE_STRIDE * kvh, V_DESCALE_STRIDE, GROUP, WRITE_PARTIAL, W)
    else:
        # The warps' (m, l, O^T) merged: weights 2^(m_w - m) (0 for a warp without tokens).
        l_w = gl.sum(l_part, axis=1)  # [W, 8]
        m_all = gl.max(m_i, axis=0)
        m_use = gl.where(m_all == float("-inf"), 0.0, m_all)
        wgt = gl.exp2(m_i - m_use[None, :])
        l_i = gl.sum(l_w * wgt, axis=0)
        o = gl.sum(acc * wgt[:, None, :], axis=0)  # [128, 8]
        has = l_i > 0.0
        OL: gl.constexpr = gl.SliceLayout(0, MMA)
        o_scale = gl.where(has, (1.0 if WRITE_PARTIAL else v_ds) / gl.where(has, l_i, 1.0), 0.0)  # as above
        if ROW_STORE:
            # O^T [n, r] -> O [r, d]: pi_v (d = 16 (n % 8) + n // 8) is a permutation of the index bits, so the reshape
            # and permute only rename registers; the layout conversion (through shared memory) then gives each lane 4
            # adjacent columns of a row: one 16-byte store per lane and row instead of 4-byte stores scattered over a
            # 64-byte stride (session 33).
            SL: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [W, 1], [1, 0])
            o = gl.reshape(gl.permute(gl.reshape(o, [16, 8, ROWS]), (2, 1, 0)), [ROWS, 128])
            o = gl.convert_layout(o, SL) * gl.convert_layout(o_scale, gl.SliceLayout(1, SL))[:, None]
            d_o = gl.arange(0, 128, layout=gl.SliceLayout(0, SL))
        else:  # the form before session 33: O^T's accumulator layout (seen as [r, n]), 4-byte stores
            o = gl.permute(o * gl.convert_layout(o_scale, gl.SliceLayout(0, OL))[None, :], (1, 0))
            n_o = gl.arange(0, 128, layout=gl.SliceLayout(0, o.type.layout))
            d_o = (n_o % 8) * 16 + n_o // 8  # pi_v: V's (and so O's) permuted columns back to the head dimension
        RL: gl.constexpr = gl.SliceLayout(1, o.type.layout)
        r_o = gl.arange(0, ROWS, layout=RL)
        row_ok = r_o < GROUP
        o_row = b * hq + kvh * GROUP + r_o  # (B, 1, Hq) flattened
        if WRITE_PARTIAL:
            lse = gl.where(has, m_all + gl.log2(gl.where(has, l_i, 1.0)), float("-inf"))
            p_row = o_row * num_splits + split
            gl.store(part_lse_ptr + p_row, gl.convert_layout(lse, RL), mask=row_ok)
            gl.store(part_o_ptr + p_row[:, None] * 128 + d_o[None, :], o.to(part_o_ptr.dtype.element_ty),
                     mask=row_ok[:, None])
            if MERGE_ROUNDS > 0:
                # Every warp's stores precede the barrier; the ticket's acq_rel atomic (gpu scope) publishes them to the
                # program that draws the last ticket, which reads them through L2 and resets the counter.
                gl.thread_barrier()
                c_ptr = counter_ptr + b * gl.num_programs(1) + kvh
                ticket = gl.atomic_add(c_ptr, 1, sem="acq_rel", scope="gpu")
                if ticket == num_splits - 1:
                    gl.atomic_xchg(c_ptr, 0)
                    _merge_splits(part_o_ptr, part_lse_ptr, out_ptr, b * hq + kvh * GROUP, num_splits, v_ds, GROUP,
                                  MERGE_ROWS, MERGE_CHUNK, MERGE_ROUNDS, W)
        else:
            gl.store(out_ptr + o_row[:, None] * 128 + d_o[None, :], o.to(out_ptr.dtype.element_ty),
                     mask=row_ok[:, None])


# ------------------------------------------------------------------------------------------------------------------
# Host side


def box_tokens(page: int, step: int) -> int:
    """Tokens per TMA box: one page, or a STEP-token sub-box of a longer page."""
    return min(page, step)


@functools.lru_cache(maxsize=64)
def kernel_name(page: int, step: int, stages: int, group: int, q: str, out: str, split: bool, per_head: bool,
                warps: int = 1, l2ef: bool = False, pdl: bool = False, rows: bool = False, inline: bool = False,
                maxnreg: int | None = None, heads: bool = False, part16: bool = False):
    """Types: cache element, q element, accumulator, output; tile: 8 query rows (as N) x STEP cache tokens x head
    dim. Schedule as the Triton kernel's (``pagedsplitkvcombine``: partials merged by its combine kernel,
    ``pagedsplitkv`` with ``inline``: by the last split, :func:`merge_consts`); extras
    ``gluon`` and ``tokm`` (cache tokens as the MMA's M), ``rowst`` with the row-store epilogue, ``pdl`` when it
    signals its combine kernel (a programmatic dependent launch) after the loop, ``r<N>`` under a register cap
    (``maxnreg``), ``heads`` with ``heads`` (the warps on KV heads of the same tokens, HEADS), ``f16part`` when it
    writes fp16 partials (``part16``) and ``l2ef`` when the K/V TMA loads carry L2 evict-first hints (the field
    :mod:`tritonfp8._kernels.l2hint`'s PTX pass keys on)."""
    from tritonfp8.naming import KernelName

    return KernelName(arch=90, op="decode", types=("e4m3", q, "f32", out), tile=(8, step, HEAD_DIM), warps=warps,
                      stages=stages, schedule="paged" + (("splitkv" if inline else "splitkvcombine") if split else ""),
                      scaling="headwise" if per_head else "tensorwise",
                      extras=(f"page{page}", f"g{group}", "gluon", "tokm") + (("rowst",) if rows else ())
                      + (("pdl",) if pdl else ()) + ((f"r{maxnreg}",) if maxnreg else ())
                      + (("heads",) if heads else ()) + (("f16part",) if part16 else ())
                      + ((l2hint.TAG,) if l2ef else ()))


def merge_consts(group: int, warps: int, splits: int) -> dict:
    """The inline merge's constants (the kernel's MERGE_*): rows = the group rounded up to a power of two and at
    least ``warps`` (the merge tile puts the warps on rows), splits per round as the Triton kernel's one-warp merge
    (:func:`tritonfp8._kernels.decode.merge_chunk`: at most 128 fp32 registers per thread for the [rows, chunk,
    128] partials at one warp, 64 from 2 warps), and the rounds (0 for ``splits`` 0: no inline merge)."""
    if splits == 0:
        return dict(MERGE_ROWS=0, MERGE_CHUNK=1, MERGE_ROUNDS=0)
    rows = max(warps, _triton_decode.merge_rows(ROWS.value, group))
    chunk = min(_triton_decode.merge_chunk(rows, HEAD_DIM, warps), triton.next_power_of_2(splits))
    return dict(MERGE_ROWS=rows, MERGE_CHUNK=chunk, MERGE_ROUNDS=-(-splits // chunk))


def row_stores(warps: int, on: bool | None = None, maxnreg: int | None = None) -> bool:
    """Whether the kernel takes the row-store epilogue (the kernel's ``ROW_STORE``; ``on``: the module's
    :data:`ROW_STORE` unless given): with 1 and 2 warps; at 4 it costs 4 registers over the 168 that keep three
    programs per SM (offline sm_90: 172), so those keep the stores in the accumulator's layout unless a register
    cap ``maxnreg`` <= :data:`ROW_STORE_W4_MAXNREG` holds them there (offline sm_90, session 35: no spills at pages of
    64, 4 spill stores at pages of 16)."""
    return (ROW_STORE if on is None else on) and (
        warps <= 2 or maxnreg is not None and maxnreg <= ROW_STORE_W4_MAXNREG)


def descriptor(cache, shape: tuple, strides: tuple, box: int, heads: int = 0):
    """Host TMA descriptor (Gluon's, with the kernel's shared layout) of an E4M3 cache viewed as [num_blocks * page,
    Hkv * D] rows (``shape``, ``strides`` as checked by ``decode._tma_geometry``), [box, 128] boxes, built without
    the dataclass's per-call checks. ``heads`` > 0 (the HEADS form): the 3-D view [Hkv, num_blocks * page, D]
    (head stride D, the same row stride) with [heads, box, 128] boxes."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    d = object.__new__(TensorDescriptor)
    if heads:
        (rows, cols), (row_stride, _) = shape, strides
        d.base, d.shape, d.strides = cache, [cols // HEAD_DIM, rows, HEAD_DIM], [HEAD_DIM, row_stride, 1]
        d.block_shape = [heads, box, HEAD_DIM]
    else:
        d.base, d.shape, d.strides, d.block_shape = cache, shape, strides, [box, HEAD_DIM]
    d.layout, d.padding = _shared_layout(3 if heads else 2), "zero"
    return d


@functools.lru_cache(maxsize=2)
def _shared_layout(rank: int = 2):
    return gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=rank)


def codegen_spec(page: int = 64, step: int = 64, stages: int = 3, group: int = 4, split: bool = True, warps: int = 1,
                 l2ef: bool = False, row_store: bool | None = None, pdl: bool = False, inline: int = 0,
                 maxnreg: int | None = None, heads: bool = False, part16: bool = False):
    """Offline compile spec (sm_90) of one configuration (``l2ef``: the evict-first hinted form, whose hints the PTX
    pass adds when :func:`tritonfp8._kernels.l2hint.install` has run, as the decode kernels' import does; ``inline``:
    that many splits merged in-kernel, :func:`merge_consts`; ``maxnreg``: the register cap; ``heads``: the warps on
    ``warps`` KV heads of the same tokens, 3-D boxes, row stores; ``part16``: fp16 partials)."""
    from tritonfp8.codegen import CodegenSpec

    box = box_tokens(page, step)
    rows = heads or row_stores(warps, row_store, maxnreg)
    block = f"{warps}, {box}, 128" if heads else f"{box}, 128"
    desc = (f"tensordesc<fp8e4nv[{block}],NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, "
            f"rank={3 if heads else 2}, transposed=False, fp4_padded=False, cga_layout=[])>")
    sig = {"q_ptr": "*bf16", "k_desc": desc, "v_desc": desc, "block_table_ptr": "*i32", "seq_lens_ptr": "*i32",
           "k_descale_ptr": "*fp32", "v_descale_ptr": "*fp32", "out_ptr": "*bf16",
           "part_o_ptr": "*fp16" if part16 else "*fp32", "part_lse_ptr": "*fp32", "counter_ptr": "*i32",
           "sm_scale_log2": "fp32", "num_blocks": "i32", "max_blocks": "i32", "num_splits": "i32", "stride_qb": "i32",
           "stride_qh": "i32", "stride_btb": "i32"}
    # stride_btn: 1 for a contiguous block table, which Triton's launcher specializes into a constant
    const = dict(stride_btn=1, GROUP=group, PAGE=page, BOX=box, STEP=step, STAGES=stages, K_DESCALE_STRIDE=1,
                 V_DESCALE_STRIDE=1, Q_POW2_SCALE=True, WRITE_PARTIAL=split, L2_HINT=l2hint.VERSION if l2ef else 0,
                 ROW_STORE=rows, PDL=pdl, HEADS=heads, **merge_consts(group, warps, inline))
    for k in const:
        sig[k] = "constexpr"
    return CodegenSpec(fn=decode_gluon_kernel, signature=sig, constexprs=const,
                       name=kernel_name(page, step, stages, group, "bf16", "bf16", split, True, warps, l2ef, pdl,
                                        rows, bool(inline), maxnreg, heads, part16),
                       num_warps=warps, options={"maxnreg": maxnreg} if maxnreg else {},
                       num_stages=stages, min_arch=90,
                       description=f"Gluon paged decode, cache tokens as M, page {page}, {step}-token steps",
                       divisible=("q_ptr", "block_table_ptr", "seq_lens_ptr", "k_descale_ptr", "v_descale_ptr",
                                  "out_ptr", "part_o_ptr", "part_lse_ptr", "counter_ptr", "stride_qb", "stride_qh",
                                  "stride_btb"))


# (page, step, stages, warps) of the offline specs: pages of 64 and 16 at the benchmark's shapes, a page longer than
# a step (sub-boxes), 32-token steps; 2 and 4 warps (each on its own token range, merged on chip)
SPEC_CONFIGS = ((64, 64, 2, 1), (16, 64, 2, 1), (16, 32, 3, 1), (128, 64, 2, 1), (32, 32, 4, 1), (64, 32, 3, 2),
                (16, 32, 3, 4))


def codegen_specs() -> dict:
    specs = {f"decode_gluon_page{p}_step{s}s{st}" + (f"w{w}" if w > 1 else ""): codegen_spec(p, s, st, warps=w)
             for p, s, st, w in SPEC_CONFIGS}
    # the evict-first form (session 32) at B 8 ctx 4096's split shape: pages of 64, 32-token steps, 3 slots
    specs["decode_gluon_page64_step32s3_l2ef"] = codegen_spec(64, 32, 3, l2ef=True)
    # ... and with the accumulator-layout stores of the kernel before session 33's row stores (ROW_STORE off)
    specs["decode_gluon_page64_step32s3_l2ef_accst"] = codegen_spec(64, 32, 3, l2ef=True, row_store=False)
    # session 33's forms (ROW_STORE, on by default from session 34; PDL_SIGNAL, off): that form with the row stores
    # and the PDL signal; 2 warps with row stores, split and (decode_config's B 32 ctx 4096 form) unsplit, writing
    # the bf16 output; 4 warps, which keep the accumulator-layout stores
    specs["decode_gluon_page64_step32s3_l2ef_s33"] = codegen_spec(64, 32, 3, l2ef=True, row_store=True, pdl=True)
    specs["decode_gluon_page64_step32s3w2_rowst"] = codegen_spec(64, 32, 3, warps=2, row_store=True)
    specs["decode_gluon_page64_step32s2w2_out_rowst"] = codegen_spec(64, 32, 2, split=False, warps=2, row_store=True)
    specs["decode_gluon_page16_step32s3w4_rowst"] = codegen_spec(16, 32, 3, warps=4, row_store=True)
    # session 35: the inline merge (8 splits, B 8 ctx 4096's hinted form; GQA 8 and 4), and 2 warps x 4 splits
    specs["decode_gluon_page64_step32s3_l2ef_inline"] = codegen_spec(64, 32, 3, group=8, l2ef=True, inline=8)
    specs["decode_gluon_page64_step32s3_l2ef_inline_g4"] = codegen_spec(64, 32, 3, group=4, l2ef=True, inline=8)
    specs["decode_gluon_page64_step32s3w2_inline"] = codegen_spec(64, 32, 3, warps=2, inline=4)
    # session 36: 4 warps (B 8 ctx 4096's 4 warps x 2 splits, hinted) with the row stores under a 168-register cap
    specs["decode_gluon_page64_step32s3w4_l2ef_rowst_r168"] = codegen_spec(64, 32, 3, warps=4, l2ef=True,
                                                                           maxnreg=168)
    # session 38: the warps on the 8 KV heads of the same tokens (3-D boxes), B 8 ctx 4096's pages of 64 and 16
    specs["decode_gluon_page64_step32s2w8_heads_l2ef"] = codegen_spec(64, 32, 2, warps=8, l2ef=True, heads=True)
    specs["decode_gluon_page16_step32s2w8_heads_l2ef"] = codegen_spec(16, 32, 2, warps=8, l2ef=True, heads=True)
    # ... and decode_config's heads rule (4 warps, 2 slots; hinted up to L2EF_MAX_BYTES, unhinted past it)
    specs["decode_gluon_page64_step32s2w4_heads_l2ef"] = codegen_spec(64, 32, 2, warps=4, l2ef=True, heads=True)
    specs["decode_gluon_page16_step32s2w4_heads"] = codegen_spec(16, 32, 2, warps=4, heads=True)
    # session 41: the heads rule's kernel writing fp16 partials (DecodeConfig(partials="fp16"), decode.partials_f16)
    specs["decode_gluon_page64_step32s2w4_heads_l2ef_f16part"] = codegen_spec(64, 32, 2, warps=4, l2ef=True,
                                                                              heads=True, part16=True)
    return specs
