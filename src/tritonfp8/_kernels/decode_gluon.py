"""Paged FP8 decode attention in Gluon: one warp per (split, KV head, sequence), cache tokens as the MMA's M.

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
each with an mbarrier; after a step's products its slot is refilled with the step STAGES ahead (its block-table
entries loaded there, just before the copies are issued; the step's own entries are read again for the masks). Split-KV as the Triton kernel (the same partials layout, merged by its
combine kernel); one split writes the output directly.
"""

from __future__ import annotations

import functools

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from tritonfp8._kernels import decode as _triton_decode
from tritonfp8.naming import _repr_from_constexpr

HEAD_DIM = 128
ROWS = gl.constexpr(8)  # the MMA's N: query rows (heads of a KV head x new tokens) per program, padded

_MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[1, 1], instr_shape=[16, 8])
_DA: gl.constexpr = gl.DotOperandLayout(0, _MMA, 2)
_DB: gl.constexpr = gl.DotOperandLayout(1, _MMA, 2)
# K sub-tile [16 cache rows, 128 bytes] as loaded: lane 4g + c holds rows sigma(g) and sigma(g) + 2 (sigma(g) =
# 4 (g >> 1) + (g & 1)) and bytes [32c, 32c + 32) of each (registers: bytes, then the second row).
_LK: gl.constexpr = gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [2, 0]],
    lane_bases=[[0, 32], [0, 64], [1, 0], [4, 0], [8, 0]], warp_bases=[], block_bases=[], shape=[16, 128])
# V sub-tile [16 cache rows, 128 bytes] as loaded: lane 4g + c holds rows 4c .. 4c + 3, bytes [16g, 16g + 16)
_LV: gl.constexpr = gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [0, 4], [0, 8], [1, 0], [2, 0]],
    lane_bases=[[4, 0], [8, 0], [0, 16], [0, 32], [0, 64]], warp_bases=[], block_bases=[], shape=[16, 128])
# ... the same elements with the registers ordered (row bit 0, column bit 0, row bit 1, columns): after the fp16
# conversion each 32-bit register pairs two adjacent rows (tokens) of one column, as the A operand wants.
_LVM: gl.constexpr = gl.DistributedLinearLayout(
    reg_bases=[[1, 0], [0, 1], [2, 0], [0, 2], [0, 4], [0, 8]],
    lane_bases=[[4, 0], [8, 0], [0, 16], [0, 32], [0, 64]], warp_bases=[], block_bases=[], shape=[16, 128])
_QL: gl.constexpr = gl.BlockedLayout([1, 4], [2, 16], [1, 1], [1, 0])  # q [8, 128] as loaded from global memory


_split_range = gluon.jit(_triton_decode.split_range.fn)  # the Triton kernel's split bounds, compiled as Gluon


@gluon.jit
def _sigma(m):
    """Cache row (within a 16-token sub-tile) of MMA token index m: 4 ((m >> 1) & 3) + 2 (m >> 3) + (m & 1)."""
    return ((m >> 1) & 3) * 4 + ((m >> 3) & 1) * 2 + (m & 1)


@gluon.jit
def _k_operand(k_sub):
    """A operand [16 tokens, 128] fp16 of a K sub-tile in shared memory: A[m, k] = K[sigma(m), pi_k(k)] with
    pi_k(16 kk + 2c + j0 + 8 j1) = 32c + 4 kk + 2 j1 + j0 (q is permuted alike)."""
    k = k_sub.load(_LK).to(gl.float16)
    k = gl.reshape(k, [4, 2, 2, 4, 8, 2, 2])  # rows (c', h, b), bytes (c, kk, j1, j0)
    k = gl.permute(k, (1, 0, 2, 4, 5, 3, 6))  # tokens (h, c', b), k (kk, j1, c, j0)
    return gl.convert_layout(gl.reshape(k, [16, 128]), _DA)


@gluon.jit
def _v_operand(v_sub, row_ok, MASKED: gl.constexpr):
    """A operand [128, 16 tokens] fp16 of a V sub-tile: A[n, t] = V[sigma(t), pi_v(n)] with pi_v(n) = 16 (n % 8) +
    n // 8. MASKED: rows (cache rows, [16] bool) that are not ``row_ok`` read as 0 (slots past the sequence's end
    may hold any bytes, NaN included)."""
    v = gl.convert_layout(v_sub.load(_LV).to(gl.float16), _LVM)
    if MASKED:
        v = gl.where(gl.convert_layout(row_ok, gl.SliceLayout(1, _LVM))[:, None], v, 0.0)
    v = gl.reshape(v, [4, 2, 2, 8, 16])  # rows (c, h, b), columns (g, j)
    v = gl.permute(v, (4, 3, 1, 0, 2))  # n (j, g), tokens (h, c, b)
    return gl.convert_layout(gl.reshape(v, [128, 16]), _DA)


@gluon.jit
def _box_row(bt_row, stride_btn, nj, end, num_blocks, PAGE: gl.constexpr):
    """(row in the [num_blocks * PAGE, Hkv * D] view, in range) of the box starting at token nj: past the view's
    end (zeros) for a page outside [0, num_blocks) or nj >= end (its table entry is not read)."""
    page = gl.load(bt_row + (nj // PAGE) * stride_btn, mask=nj < end, other=-1)
    ok = (page >= 0) & (page < num_blocks)
    return gl.where(ok, page * PAGE + nj % PAGE, num_blocks * PAGE), ok


@gluon.jit
def _issue(k_desc, v_desc, k_buf, v_buf, bar, bt_row, stride_btn, n0, end, num_blocks, col, PAGE: gl.constexpr,
           BOX: gl.constexpr, STEP: gl.constexpr):
    """TMA copies of the step at token n0 (STEP // BOX boxes of K and of V) into one ring slot."""
    mbarrier.expect(bar, 2 * STEP * 128)
    for j in gl.static_range(STEP // BOX):
        row, ok = _box_row(bt_row, stride_btn, n0 + j * BOX, end, num_blocks, PAGE)
        tma.async_copy_global_to_shared(k_desc, [row, col], bar, k_buf.slice(j * BOX, BOX))
        tma.async_copy_global_to_shared(v_desc, [row, col], bar, v_buf.slice(j * BOX, BOX))


@gluon.jit
def _step(k_buf, v_buf, qt, acc, m_i, l_part, bt_row, stride_btn, n0, end, num_blocks, score_scale,
          PAGE: gl.constexpr, BOX: gl.constexpr, STEP: gl.constexpr, MASKED: gl.constexpr):
    """One step of STEP tokens from a ring slot: S^T per 16-token sub-tile, one online-softmax update (row max
    over the step, one rescale of acc), P^T.V per sub-tile. ``l_part`` [16, 8] keeps each lane's partial row sums
    (reduced across lanes once, after the loop)."""
    U: gl.constexpr = STEP // 16
    m_idx = gl.arange(0, 16, layout=gl.SliceLayout(1, _MMA))
    ss = ()
    oks = ()
    for u in gl.static_range(U):
        nb = n0 + (16 * u) // BOX * BOX  # the sub-tile's box (BOX >= 16: a sub-tile lies in one box)
        page = gl.load(bt_row + (nb // PAGE) * stride_btn, mask=nb < end, other=-1)
        page_ok = (page >= 0) & (page < num_blocks)
        st = mma_v2(_k_operand(k_buf.slice(16 * u, 16)), qt, gl.full([16, ROWS], 0.0, gl.float32, _MMA))
        st = st * score_scale[None, :]
        if MASKED:
            tok_ok = page_ok & (n0 + 16 * u + _sigma(m_idx) < end)
            st = gl.where(tok_ok[:, None], st, float("-inf"))
            rows = gl.arange(0, 16, layout=gl.SliceLayout(1, _LVM))
            oks = oks + (page_ok & (n0 + 16 * u + rows < end),)
        else:
            st = gl.where(page_ok, st, float("-inf"))
            oks = oks + (page_ok,)
        ss = ss + (st,)
    row_max = gl.max(ss[0], axis=0)
    for u in gl.static_range(1, U):
        row_max = gl.maximum(row_max, gl.max(ss[u], axis=0))
    m_new = gl.maximum(m_i, row_max)
    m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = gl.exp2(m_i - m_use)
    acc = acc * alpha[None, :]
    l_part = l_part * alpha[None, :]
    for u in gl.static_range(U):
        p = gl.exp2(ss[u] - m_use[None, :])
        l_part = l_part + p
        pb = gl.convert_layout(p.to(gl.float16), _DB)
        acc = mma_v2(_v_operand(v_buf.slice(16 * u, 16), oks[u], MASKED), pb, acc)
    return acc, m_new, l_part


@gluon.jit(repr=_repr_from_constexpr, do_not_specialize=["num_blocks"])
def decode_gluon_kernel(
    q_ptr, k_desc, v_desc, block_table_ptr, seq_lens_ptr, k_descale_ptr, v_descale_ptr, out_ptr, part_o_ptr,
    part_lse_ptr, sm_scale_log2, num_blocks, max_blocks, num_splits, stride_qb, stride_qh, stride_btb, stride_btn,
    GROUP: gl.constexpr, PAGE: gl.constexpr, BOX: gl.constexpr, STEP: gl.constexpr, STAGES: gl.constexpr,
    K_DESCALE_STRIDE: gl.constexpr, V_DESCALE_STRIDE: gl.constexpr, Q_POW2_SCALE: gl.constexpr,
    WRITE_PARTIAL: gl.constexpr, KERNEL_NAME: gl.constexpr,
):
    """Grid (num_splits, Hkv, B), one warp. q (B, 1, Hq, D) bf16 / fp16 (D = 128, head stride 128); caches as TMA
    descriptors of the [num_blocks * PAGE, Hkv * D] E4M3 views with [BOX, 128] boxes; out (B, 1, Hq, D)
    contiguous; partials (WRITE_PARTIAL): lse (B, 1, Hq, num_splits), o (B, 1, Hq, num_splits, D), o normalized
    by its own row sum and times v_descale, lse in log2 units (-inf for an empty split), as the Triton kernel."""
    split = gl.program_id(0)
    kvh = gl.program_id(1)
    b = gl.program_id(2).to(gl.int64)
    hq = GROUP * gl.num_programs(1)

    seq_len, start, end = _split_range(seq_lens_ptr, b, split, num_splits, max_blocks, PAGE, STEP)
    n_steps = gl.maximum(gl.cdiv(end - start, STEP), 0)
    n_full = gl.maximum(end - start, 0) // STEP
    bt_row = block_table_ptr + b * stride_btb
    col = kvh * 128

    SH: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    k_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, STEP, 128], SH)
    v_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, STEP, 128], SH)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
    fence_async_shared()
    for i in gl.static_range(STAGES):
        if i < n_steps:
            _issue(k_desc, v_desc, k_ring.index(i), v_ring.index(i), ready.index(i), bt_row, stride_btn,
                   start + i * STEP, end,
                   num_blocks, col, PAGE, BOX, STEP)

    # q^T [128, 8] as the B operand: row r = query head kvh * GROUP + r (rows >= GROUP are zero), the head
    # dimension permuted as K's (pi_k), bf16 brought into fp16 by a per-row power of two (as the Triton kernel).
    r_q = gl.arange(0, ROWS, layout=gl.SliceLayout(1, _QL))
    k_q = gl.arange(0, 128, layout=gl.SliceLayout(0, _QL))
    d_q = ((k_q >> 1) & 3) * 32 + (k_q >> 4) * 4 + ((k_q >> 3) & 1) * 2 + (k_q & 1)
    qf = gl.load(q_ptr + b * stride_qb + (kvh * GROUP + r_q)[:, None] * stride_qh + d_q[None, :],
                 mask=(r_q < GROUP)[:, None], other=0.0).to(gl.float32)
    if Q_POW2_SCALE:
        e = (gl.max(gl.abs(qf), axis=1).to(gl.int32, bitcast=True) >> 23) & 0xFF
        sb = gl.minimum(gl.maximum(268 - e, 1), 253)
        qf = qf * ((sb << 23).to(gl.float32, bitcast=True))[:, None]
        row_scale = ((254 - sb) << 23).to(gl.float32, bitcast=True)
    else:
        row_scale = gl.full([ROWS], 1.0, gl.float32, gl.SliceLayout(1, _QL))
    qt = gl.convert_layout(gl.permute(qf.to(gl.float16), (1, 0)), _DB)
    k_ds = gl.load(k_descale_ptr + kvh * K_DESCALE_STRIDE)
    v_ds = gl.load(v_descale_ptr + kvh * V_DESCALE_STRIDE)
    score_scale = gl.convert_layout(row_scale, gl.SliceLayout(0, _MMA)) * (sm_scale_log2 * k_ds)

    acc = gl.full([128, ROWS], 0.0, gl.float32, _MMA)  # O^T
    l_part = gl.full([16, ROWS], 0.0, gl.float32, _MMA)
    m_i = gl.full([ROWS], float("-inf"), gl.float32, gl.SliceLayout(0, _MMA))
    for i in range(0, n_full):
        s = i % STAGES
        mbarrier.wait(ready.index(s), (i // STAGES) & 1)
        acc, m_i, l_part = _step(k_ring.index(s), v_ring.index(s), qt, acc, m_i, l_part, bt_row,
                                 stride_btn, start + i * STEP, end, num_blocks, score_scale, PAGE, BOX, STEP, False)
        nxt = i + STAGES
        if nxt < n_steps:
            fence_async_shared()  # this slot's shared-memory reads before the copy engine overwrites it
            _issue(k_desc, v_desc, k_ring.index(s), v_ring.index(s), ready.index(s), bt_row, stride_btn,
                   start + nxt * STEP, end, num_blocks, col, PAGE, BOX, STEP)
    if n_full < n_steps:  # the last, partial step: token masks
        s = n_full % STAGES
        mbarrier.wait(ready.index(s), (n_full // STAGES) & 1)
        acc, m_i, l_part = _step(k_ring.index(s), v_ring.index(s), qt, acc, m_i, l_part, bt_row,
                                 stride_btn, start + n_full * STEP, end, num_blocks, score_scale, PAGE, BOX, STEP, True)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))

    l_i = gl.sum(l_part, axis=0)
    has = l_i > 0.0
    o = acc * gl.where(has, v_ds / gl.where(has, l_i, 1.0), 0.0)[None, :]
    r_o = gl.arange(0, ROWS, layout=gl.SliceLayout(0, _MMA))
    n_o = gl.arange(0, 128, layout=gl.SliceLayout(1, _MMA))
    d_o = (n_o % 8) * 16 + n_o // 8  # pi_v: V's (and so O's) permuted columns back to the head dimension
    row_ok = r_o < GROUP
    o_row = b * hq + kvh * GROUP + r_o  # (B, 1, Hq) flattened
    if WRITE_PARTIAL:
        lse = gl.where(has, m_i + gl.log2(gl.where(has, l_i, 1.0)), float("-inf"))
        p_row = o_row * num_splits + split
        gl.store(part_lse_ptr + p_row, lse, mask=row_ok)
        gl.store(part_o_ptr + p_row[None, :] * 128 + d_o[:, None], o, mask=row_ok[None, :])
    else:
        gl.store(out_ptr + o_row[None, :] * 128 + d_o[:, None], o.to(out_ptr.dtype.element_ty),
                 mask=row_ok[None, :])


# ------------------------------------------------------------------------------------------------------------------
# Host side


def box_tokens(page: int, step: int) -> int:
    """Tokens per TMA box: one page, or a STEP-token sub-box of a longer page."""
    return min(page, step)


@functools.lru_cache(maxsize=64)
def kernel_name(page: int, step: int, stages: int, group: int, q: str, out: str, split: bool, per_head: bool):
    """Types: cache element, q element, accumulator, output; tile: 8 query rows (as N) x STEP cache tokens x head
    dim. Schedule as the Triton kernel's (``pagedsplitkvcombine``: partials merged by its combine kernel); extras
    ``gluon`` and ``tokm`` (cache tokens as the MMA's M)."""
    from tritonfp8.naming import KernelName

    return KernelName(arch=90, op="decode", types=("e4m3", q, "f32", out), tile=(8, step, HEAD_DIM), warps=1,
                      stages=stages, schedule="paged" + ("splitkvcombine" if split else ""),
                      scaling="headwise" if per_head else "tensorwise",
                      extras=(f"page{page}", f"g{group}", "gluon", "tokm"))


def descriptor(cache, shape: tuple, strides: tuple, box: int):
    """Host TMA descriptor (Gluon's, with the kernel's shared layout) of an E4M3 cache viewed as [num_blocks * page,
    Hkv * D] rows (``shape``, ``strides`` as checked by ``decode._tma_geometry``), [box, 128] boxes, built without
    the dataclass's per-call checks."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    d = object.__new__(TensorDescriptor)
    d.base, d.shape, d.strides, d.block_shape = cache, shape, strides, [box, HEAD_DIM]
    d.layout, d.padding = _shared_layout(), "zero"
    return d


@functools.lru_cache(maxsize=1)
def _shared_layout():
    return gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)


def codegen_spec(page: int = 64, step: int = 64, stages: int = 3, group: int = 4, split: bool = True):
    """Offline compile spec (sm_90) of one configuration."""
    from tritonfp8.codegen import CodegenSpec

    box = box_tokens(page, step)
    desc = (f"tensordesc<fp8e4nv[{box}, 128],NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2, "
            f"transposed=False, fp4_padded=False, cga_layout=[])>")
    sig = {"q_ptr": "*bf16", "k_desc": desc, "v_desc": desc, "block_table_ptr": "*i32", "seq_lens_ptr": "*i32",
           "k_descale_ptr": "*fp32", "v_descale_ptr": "*fp32", "out_ptr": "*bf16", "part_o_ptr": "*fp32",
           "part_lse_ptr": "*fp32", "sm_scale_log2": "fp32", "num_blocks": "i32", "max_blocks": "i32",
           "num_splits": "i32", "stride_qb": "i32", "stride_qh": "i32", "stride_btb": "i32"}
    # stride_btn: 1 for a contiguous block table, which Triton's launcher specializes into a constant
    const = dict(stride_btn=1, GROUP=group, PAGE=page, BOX=box, STEP=step, STAGES=stages, K_DESCALE_STRIDE=1, V_DESCALE_STRIDE=1,
                 Q_POW2_SCALE=True, WRITE_PARTIAL=split)
    for k in const:
        sig[k] = "constexpr"
    return CodegenSpec(fn=decode_gluon_kernel, signature=sig, constexprs=const,
                       name=kernel_name(page, step, stages, group, "bf16", "bf16", split, True), num_warps=1,
                       num_stages=stages, min_arch=90,
                       description=f"Gluon paged decode, cache tokens as M, page {page}, {step}-token steps",
                       divisible=("q_ptr", "block_table_ptr", "seq_lens_ptr", "k_descale_ptr", "v_descale_ptr",
                                  "out_ptr", "part_o_ptr", "part_lse_ptr", "stride_qb", "stride_qh", "stride_btb"))


# (page, step, stages) of the offline specs: pages of 64 and 16 at the benchmark's shapes, a page longer than a step
# (sub-boxes), 32-token steps
SPEC_CONFIGS = ((64, 64, 2), (16, 64, 2), (16, 32, 3), (128, 64, 2), (32, 32, 4))


def codegen_specs() -> dict:
    return {f"decode_gluon_page{p}_step{s}s{st}": codegen_spec(p, s, st) for p, s, st in SPEC_CONFIGS}
