"""Triton kernels of FP8 attention prefill: the flash-attention forward and the per-head quantize (+Vᵀ) pass.

Forward kernel (:func:`attn_fwd_kernel`), one program per (query block of BLOCK_M rows, batch, query head):

- Q, K and V are read by TMA (host-side tensor descriptors over 2-D views, see ``tritonfp8.attention``):
  Q (rows_q, Hq·D) blocks [BLOCK_M, D]; K (rows_k, Hkv·D) blocks [BLOCK_N, D];
  V either Vᵀ (V_TRANSPOSED: (B·Hkv·D, round32(Sk)) dense / (Hkv·D, Σ round32(len_b)) varlen, blocks
  [D, BLOCK_N], sequence contiguous, written by :func:`head_quantize_kernel`; with PERMUTE_P the keys of each
  32-key chunk are permuted, see :func:`_permute_keys`) or V as given ((rows_k, Hkv·D), blocks [BLOCK_N, D],
  transposed on chip).
  FP8 wgmma reads both operands K-major from shared memory; for P·V the reduction axis is the key sequence, so Vᵀ
  is the layout the tensor core wants, and V as given costs the compiler a transpose through registers.
- S = Q·Kᵀ in fp32; the online softmax runs in the exp2 domain with ``softmax_scale · log2(e) · q_descale ·
  k_descale`` folded into one scalar. P is produced already multiplied by P_SCALE = 2^LOG2_P_SCALE (the exponent
  is shifted instead of multiplying, so it costs nothing), cast to E4M3 and fed to the FP8 P·V wgmma; the row sum
  l uses the same scaled P in fp32, so the factor cancels in ``acc / l``.
- Key blocks are visited in two loops: blocks that need no mask, then the masked ones (the causal diagonal and the
  ragged tail of the key sequence). Causal blocks entirely above the diagonal are never loaded.
  Causal mask is bottom-right aligned: query i sees key j iff j <= i + Sk - Sq.
- Rows that see no key (causal with Sq > Sk, or Sk = 0) keep m = -inf and l = 0: the masked loop substitutes 0
  for an all -inf row maximum so no ``-inf - (-inf)`` NaN appears, and the epilogue writes 0 and lse = -inf.
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

from tritonfp8._kernels.fp8cast import cast_to_fp8, round_to_fp8_grid
from tritonfp8.naming import named_jit

LN2 = tl.constexpr(0.6931471805599453)
# Lazy rescaling threshold (log2 units): the reference row max moves only when a row max grew by more than this.
# With P_SCALE = 2^8, P <= 2^(8 + 0.75) = 430.5 < 448 (E4M3 max), so P never saturates.
LAZY_TAU = tl.constexpr(0.75)


@triton.jit
def _permute_keys(x, ROWS: tl.constexpr, COLS: tl.constexpr):
    """Permute the key axis (last, COLS a multiple of 32) within each chunk of 32 keys: key 16a + 8b + 2r + e
    moves to 16a + 4r + 2b + e (a, b, e in {0, 1}, r in 0..3).

    Why: in the m64nNk32 wgmma accumulator a thread holds S columns 8j + 2r + {0, 1} (r = lane % 4), while the
    E4M3 A operand of the next wgmma wants k = 4r + {0..3} and 16 + 4r + {0..3}. Applied to P (in registers) and to
    Vᵀ (in memory, by the relayout pass) the product P·V is unchanged, and the compiler's accumulator -> operand
    conversion needs no cross-lane shuffles (measured sm_90 SASS, hd128 loop: 549 -> 500 instructions,
    SHFL 24 -> 8 (the row reductions), SEL 16 -> 0, PRMT 32 -> 16).
    """
    return x.reshape([ROWS, COLS // 32, 2, 2, 4, 2]).permute(0, 1, 2, 4, 3, 5).reshape([ROWS, COLS])


@triton.jit
def _softmax_exponents(qk, m_i, qk_scale, keep, MASKED: tl.constexpr, LOG2_P_SCALE: tl.constexpr):
    """First half of a key block's online-softmax update: the new row max and the exp2 arguments (the last use
    of the scores ``qk``). ``keep`` (MASKED only) marks the visible (query, key) pairs; the others get -inf."""
    if MASKED:
        qk = tl.where(keep, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        # A row with no visible key so far has m_new = -inf: use 0 so exp2 sees -inf - 0, not NaN.
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    else:
        # qk_scale > 0 (validated on the host), so max(qk) * scale is the max of the scaled row.
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        m_use = m_new
    # P_SCALE folded into the exponent: p = P_SCALE * exp2(s - m), in (0, P_SCALE].
    return qk * qk_scale - (m_use - LOG2_P_SCALE)[:, None], m_new, m_use


@triton.jit
def _softmax_exponents_lazy(qk, m_i, qk_scale, LOG2_P_SCALE: tl.constexpr):
    """Unmasked first half with lazy rescaling: the reference max m moves (for every row) only when some row's
    max grew by more than LAZY_TAU; otherwise m, l and acc stay as they are (alpha = 1, the caller skips the
    acc rescale). Exact: acc and l are always relative to the same m. P = P_SCALE·exp2(s - m) <= 2^(8 + LAZY_TAU)
    = 430.5 stays inside E4M3 (448). Returns (exp2 arguments, new m, whether m moved)."""
    tl.static_assert(LOG2_P_SCALE == 8, "LAZY_TAU is sized for P_SCALE = 2^8")
    m_cand = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    grow = tl.max(m_cand - m_i, 0) > LAZY_TAU  # one decision per program (a cross-warp reduction)
    m_new = tl.where(grow, m_cand, m_i)
    return qk * qk_scale - (m_new - LOG2_P_SCALE)[:, None], m_new, grow


@triton.jit
def _exp2_poly(x):
    """2^x on the FMA/ALU pipes instead of the SFU (MUFU.EX2): x = n + f with n = round(x) (the 1.5·2^23 trick,
    no F2I), 2^f by a cubic on [-1/2, 1/2] (relative error < 7.5e-5, far below E4M3's 2^-4 step), and n added to
    the exponent field. x is clamped at -125 (2^-125 is 0 after the E4M3 cast of P·2^8 and negligible in l)."""
    x = tl.maximum(x, -125.0)
    t = x + 12582912.0  # 1.5·2^23: round(x) lands in the low mantissa bits
    f = x - (t - 12582912.0)
    p = ((0.05517165 * f + 0.24261115) * f + 0.69326097) * f + 0.99992806
    return (p.to(tl.int32, bitcast=True) + (t.to(tl.int32, bitcast=True) << 23)).to(tl.float32, bitcast=True)


@triton.jit
def _exp2_mixed(x, ROWS: tl.constexpr, COLS: tl.constexpr, POLY_EXP2: tl.constexpr):
    """exp2 of a [ROWS, COLS] wgmma-accumulator tile with 1/POLY_EXP2 of the columns (2: half, 4: a quarter,
    8: an eighth) on :func:`_exp2_poly` and the rest on MUFU.EX2. The split is on columns a thread owns itself
    (bits 3, 4 and 5 of the column: the accumulator register index), so the parts need no data movement between
    lanes."""
    y = x.reshape([ROWS, COLS // 16, 2, 8]).permute(0, 1, 3, 2)
    a, b = tl.split(y)  # [ROWS, COLS // 16, 8] each: column bit 3 = 0 / 1
    a = tl.math.exp2(a)
    if POLY_EXP2 == 2:
        b = _exp2_poly(b)
    else:
        tl.static_assert(POLY_EXP2 == 4 or POLY_EXP2 == 8, "POLY_EXP2 must be 0, 2, 4 or 8")
        z = b.reshape([ROWS, COLS // 32, 2, 8]).permute(0, 1, 3, 2)
        b0, b1 = tl.split(z)  # column bit 4 = 0 / 1
        if POLY_EXP2 == 4:
            b1 = _exp2_poly(b1)
        else:
            w = b1.reshape([ROWS, COLS // 64, 2, 8]).permute(0, 1, 3, 2)
            c0, c1 = tl.split(w)  # column bit 5 = 0 / 1
            b1 = tl.join(tl.math.exp2(c0), _exp2_poly(c1)).permute(0, 1, 3, 2).reshape([ROWS, COLS // 32, 8])
        b = tl.join(tl.math.exp2(b0), b1).permute(0, 1, 3, 2).reshape([ROWS, COLS // 16, 8])
    return tl.join(a, b).permute(0, 1, 3, 2).reshape([ROWS, COLS])


@triton.jit
def _softmax_sum(x, m_i, m_use, l_i, BLOCK_N: tl.constexpr, POLY_EXP2: tl.constexpr, ROW_SUM_MMA: tl.constexpr):
    """P = exp2(x) in fp32, the factor alpha for acc, the new l. POLY_EXP2 (2 or 4): that fraction of the exp2s on
    the FMA pipe (:func:`_exp2_mixed`). ROW_SUM_MMA: l is left alone here (:func:`_row_sum_mma` adds P's row sums
    on the tensor core once P is in E4M3)."""
    if POLY_EXP2:
        p = _exp2_mixed(x, x.shape[0], BLOCK_N, POLY_EXP2)
    else:
        p = tl.math.exp2(x)
    alpha = tl.math.exp2(m_i - m_use)
    if not ROW_SUM_MMA:
        l_i = l_i * alpha + tl.sum(p, 1)
    return p, alpha, l_i


@triton.jit
def _row_sum_mma(l_acc, p8, alpha, ones, one):
    """l·alpha + the row sums of the E4M3 P, as a wgmma of P with ``ones`` ([16, BLOCK_N] E4M3 ones).

    ``l_acc`` is [BLOCK_M, 16] fp32 (every column holds the same sum; 8 registers per thread at 64 rows). Instead
    of 64 FADD per thread and 64 x 128 block (hd128) the tensor core does it in BLOCK_N / 32 m64n16k32 steps, and
    l sums exactly the rounded P that the P·V product uses (the output is then a weighted mean of V rows whose
    weights sum to 1). The ones are invariant under the key permutation of PERMUTE_P. 16 is tl.dot's smallest N.
    Not with the lse output: its exact fp32 sum carried beside this one spilled (39-43 spill stores at the
    168-register cap, offline), and the sum of the rounded P would make the lse inexact; the launcher runs
    calls that return the lse with FADD row sums."""
    # Each key block's sum starts from a fresh accumulator and is added to l in fp32 (``one`` is a runtime 1.0:
    # it keeps Triton's combine pass from folding ``x + dot(a, b, 0)`` back into ``dot(a, b, x)``; the
    # ``max_num_imprecise_acc`` route to the same sum made ptxas serialize every wgmma of the kernel again). The
    # FP8 wgmma keeps about 14 bits of its running sum and truncates what it adds, and l,
    # a sum of positive terms, grows to thousands of times each term. Accumulated on the tensor core across the
    # whole sequence (H200, N(0,1) data) the output error grew with the key length: 3.2% at 2048 keys, 15% at
    # 8192, 32% at 16384 (vs 2.4-2.7% with fp32 row sums; attention-nvidia-h200-20261203-081210.json).
    return l_acc * alpha[:, None] + tl.dot(p8, ones.T) * one


@triton.jit
def _p_operand(p, EXACT_P_ROUND: tl.constexpr, PERMUTE_P: tl.constexpr, BLOCK_N: tl.constexpr):
    """P as the E4M3 A operand of the P·V wgmma (key-permuted with PERMUTE_P)."""
    if EXACT_P_ROUND:
        # Interpreter: its fp32 -> fp8 cast truncates; round to nearest even first (the GPU's cvt.rn does it).
        p = round_to_fp8_grid(p, -6, 3, 448.0)
    p8 = p.to(tl.float8e4nv)
    if PERMUTE_P:
        # Relabel P's key axis so that its wgmma-accumulator registers already sit where the FP8 A operand
        # wants them (Vᵀ was written with the same key permutation): no shuffles, only byte repacking.
        p8 = _permute_keys(p8, p8.shape[0], BLOCK_N)
    return p8


@triton.jit
def _pv(acc, p8, v_desc, k_row0, kv_col, vt_row0, vt_col0, start_n, V_TRANSPOSED: tl.constexpr):
    """acc + P·V for the key block starting at ``start_n`` (FP8 wgmma, fp32 accumulator)."""
    if V_TRANSPOSED:
        vt = v_desc.load([vt_row0, vt_col0 + start_n])  # [D, BLOCK_N], key sequence contiguous
        acc = tl.dot(p8, vt.T, acc)
    else:
        v = v_desc.load([k_row0 + start_n, kv_col])  # [BLOCK_N, D], D contiguous
        acc = tl.dot(p8, v, acc)
    return acc


@triton.jit
def _kv_loop(
    acc, l_i, m_i, q,
    k_desc, v_desc, ones,
    k_row0, kv_col, vt_row0, vt_col0,
    lo, hi,
    offs_m, seqlen_q, seqlen_k, qk_scale,
    BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
    MASKED: tl.constexpr, CAUSAL: tl.constexpr, V_TRANSPOSED: tl.constexpr,
    LOG2_P_SCALE: tl.constexpr, EXACT_P_ROUND: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
    PERMUTE_P: tl.constexpr, LAZY_RESCALE: tl.constexpr, ROW_SUM_MMA: tl.constexpr, POLY_EXP2: tl.constexpr,
):
    """Key blocks [lo, hi) (multiples of BLOCK_N) folded into (acc, l_i, m_i); masks applied iff MASKED.
    ROW_SUM_MMA: l_i is a [BLOCK_M, 16] tile summed on the tensor core (:func:`_row_sum_mma`). POLY_EXP2
    (unmasked blocks): part of the exp2s on the FMA pipe (:func:`_exp2_mixed`).
    LAZY_RESCALE (unmasked blocks only): :func:`_softmax_exponents_lazy`'s rule, the acc rescale skipped by a
    program-uniform branch in the blocks where no row max grew by more than LAZY_TAU."""
    tl.static_assert(not ((LAZY_RESCALE or POLY_EXP2) and MASKED), "lazy rescaling and poly_exp2 are for the "
                     "unmasked blocks")
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = k_desc.load([k_row0 + start_n, kv_col])  # [BLOCK_N, D] e4m3, D contiguous (K-major for Q·Kᵀ)
        qk = tl.dot(q, k.T)  # fp32 [BLOCK_M, BLOCK_N]
        keep = None
        if MASKED:
            cols = start_n + offs_n
            keep = cols[None, :] < seqlen_k
            if CAUSAL:
                keep = keep & (cols[None, :] <= offs_m[:, None] + (seqlen_k - seqlen_q))
        if LAZY_RESCALE:
            x, m_new, grow = _softmax_exponents_lazy(qk, m_i, qk_scale, LOG2_P_SCALE)
            m_use = m_new
        else:
            x, m_new, m_use = _softmax_exponents(qk, m_i, qk_scale, keep, MASKED, LOG2_P_SCALE)
            grow = True  # a constant: the rescale below is unconditional
        p, alpha, l_i = _softmax_sum(x, m_i, m_use, l_i, BLOCK_N, POLY_EXP2, ROW_SUM_MMA)
        if grow:  # with LAZY_RESCALE program-uniform: the 64 (hd128) FMULs per thread are branched over
            acc = acc * alpha[:, None]
        p8 = _p_operand(p, EXACT_P_ROUND, PERMUTE_P, BLOCK_N)
        acc = _pv(acc, p8, v_desc, k_row0, kv_col, vt_row0, vt_col0, start_n, V_TRANSPOSED)
        if ROW_SUM_MMA:
            l_i = _row_sum_mma(l_i, p8, alpha, ones, (seqlen_k >= 0).to(tl.float32))
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _kv_loop_overlap(
    q, k_desc, v_desc,
    k_row0, kv_col, vt_row0, vt_col0,
    hi, qk_scale,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, V_TRANSPOSED: tl.constexpr,
    LOG2_P_SCALE: tl.constexpr, EXACT_P_ROUND: tl.constexpr, PERMUTE_P: tl.constexpr, LOOKAHEAD: tl.constexpr,
    LAZY_RESCALE: tl.constexpr, POLY_EXP2: tl.constexpr,
):
    """The unmasked key blocks [0, hi) from the initial state, with the P·V product one block behind.

    Iteration j: acc += P_{j-1}·V_{j-1} (P from the previous iteration, through shared memory; waited for, since
    acc is rescaled below; P_{-1} = 0), then block j's softmax and the rescale of acc. Epilogue: the last P·V.
    LOOKAHEAD (FlashAttention-3's intra-warpgroup overlap, in the form Triton 3.6's wgmma pass keeps async): S_j
    comes from the previous iteration, and S_{j+1} = Q·K_{j+1}ᵀ is issued right after block j's row max and
    exp2 arguments, i.e. after the last use of S_j: the result is only carried to the next iteration, so the wgmma
    stays in flight during block j's exp2/row sum/E4M3 convert/rescale (the wait after the next P·V covers it), and
    S_{j+1} can take S_j's registers (a copy of a wgmma accumulator still being written makes ptxas serialize
    every wgmma of the kernel). The last iteration's S (a block at or past hi) is computed and dropped.
    Without LAZY_RESCALE the arithmetic is the plain loop's (same P, same rescales in the same order).
    """
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    p8 = tl.zeros([BLOCK_M, BLOCK_N], tl.float8e4nv)
    if LOOKAHEAD:
        k = k_desc.load([k_row0, kv_col])
        qk = tl.dot(q, k.T)  # S_0 (unused when hi = 0)
    for start_n in tl.range(0, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        acc = _pv(acc, p8, v_desc, k_row0, kv_col, vt_row0, vt_col0, tl.maximum(start_n - BLOCK_N, 0),
                  V_TRANSPOSED)
        if LOOKAHEAD:
            s_j = qk
            k = k_desc.load([k_row0 + start_n + BLOCK_N, kv_col])
        else:
            k = k_desc.load([k_row0 + start_n, kv_col])
            s_j = tl.dot(q, k.T)
        # Every row sees every key of these blocks, so m_new is finite from block 0 on (alpha = exp2(-inf) = 0).
        if LAZY_RESCALE:
            x, m_new, grow = _softmax_exponents_lazy(s_j, m_i, qk_scale, LOG2_P_SCALE)
        else:
            x, m_new, m_use = _softmax_exponents(s_j, m_i, qk_scale, None, False, LOG2_P_SCALE)
        if LOOKAHEAD:
            qk = tl.dot(q, k.T)  # S_{j+1}, issued after the last use of S_j
        p, alpha, l_i = _softmax_sum(x, m_i, m_new, l_i, BLOCK_N, POLY_EXP2, False)
        m_i = m_new
        if LAZY_RESCALE:
            if grow:
                acc = acc * alpha[:, None]
        else:
            acc = acc * alpha[:, None]
        p8 = _p_operand(p, EXACT_P_ROUND, PERMUTE_P, BLOCK_N)
    # The last block's P·V (P = 0 when hi = 0).
    acc = _pv(acc, p8, v_desc, k_row0, kv_col, vt_row0, vt_col0, tl.maximum(hi - BLOCK_N, 0), V_TRANSPOSED)
    return acc, l_i, m_i


@functools.lru_cache(maxsize=None)
def ones_tile(block_n: int, device):
    """The (16, block_n) E4M3 block of ones that the row sums on the tensor core multiply P with (both forward
    kernels' ``ROW_SUM_MMA``; loaded by TMA), one per device and key tile, kept for the process (2-4 KB)."""
    import torch

    return torch.ones(16, block_n, device=device).to(torch.float8_e4m3fn)


@triton.jit
def _causal_order(pid_m, pid_bh, num_m_blocks, num_bh, head_group):
    """(query block, batch·head) of the program at launch position (pid_m, pid_bh) of a causal grid
    (num_m_blocks, num_bh): programs start in launch order (pid_m fastest), and this order runs the heads in groups
    of ``head_group`` (the last group may be smaller), each group's query blocks heaviest first with the group's
    heads side by side. head_group = 1 gives each head's blocks heaviest first, head after head."""
    lin = pid_bh * num_m_blocks + pid_m
    per_group = num_m_blocks * head_group
    g = lin // per_group
    r = lin - g * per_group
    heads_here = tl.minimum(head_group, num_bh - g * head_group)
    m_rev = r // heads_here
    return num_m_blocks - 1 - m_rev, g * head_group + (r - m_rev * heads_here)


@named_jit(do_not_specialize=["head_group"])  # one compile whatever group size a causal problem picks
def attn_fwd_kernel(
    q_desc, k_desc, v_desc, ones_desc,
    out_ptr, lse_ptr,
    q_descale_ptr, k_descale_ptr, v_descale_ptr, out_scale_ptr,
    cu_seqlens_q_ptr, cu_seqlens_k_ptr, cu_cols_vt_ptr,
    sm_scale_log2,
    seqlen_q_dense, seqlen_k_dense,
    num_heads_q, num_heads_kv, num_m_blocks, head_group,
    KERNEL_NAME: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, GROUP: tl.constexpr,
    CAUSAL: tl.constexpr, VARLEN: tl.constexpr, V_TRANSPOSED: tl.constexpr,
    DESCALE_PER_HEAD: tl.constexpr, OUT_FP8: tl.constexpr, OUT_SCALE_PER_HEAD: tl.constexpr,
    WRITE_LSE: tl.constexpr, LOG2_P_SCALE: tl.constexpr, EXACT_P_ROUND: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr, PERMUTE_P: tl.constexpr, OVERLAP: tl.constexpr, LAZY_RESCALE: tl.constexpr,
    POLY_EXP2: tl.constexpr, ROW_SUM_MMA: tl.constexpr,
):
    """Flash-attention forward, E4M3 Q/K/V, fp32 descales, bf16/f16/e4m3 output, optional fp32 lse.

    ``ones_desc``: with ROW_SUM_MMA a TMA descriptor of a [16, BLOCK_N] E4M3 tensor of ones, else None.
    Grid (num_m_blocks, B·Hq); causal programs take their work in :func:`_causal_order` (``head_group`` heads per
    group; unused otherwise). Varlen Vᵀ: sequence b's columns start at ``cu_cols_vt[b]`` (a multiple of 32 so
    TMA boxes start aligned and the 32-key permutation chunks line up; the padding columns hold zeros).
    ``out`` is (rows_q, Hq, D) contiguous; ``lse`` is (B, Hq, Sq) dense or (Hq, total_q) varlen. Descales: one fp32 each (DESCALE_PER_HEAD=False) or (B, Hkv) contiguous; out_scale
    (E4M3 output only): one fp32 or (B, Hq): ``out ≈ out_fp8.float() * out_scale``.
    """
    pid_m = tl.program_id(0).to(tl.int64)
    pid_bh = tl.program_id(1).to(tl.int64)
    if CAUSAL:
        # Heaviest query blocks (most visible keys) first across a group of heads: a short tail over the SMs.
        start_m, pid_bh = _causal_order(pid_m, pid_bh, num_m_blocks, tl.num_programs(1), head_group)
    else:
        start_m = pid_m
    b = pid_bh // num_heads_q
    hq = pid_bh % num_heads_q
    hkv = hq // GROUP

    if VARLEN:
        q_start = tl.load(cu_seqlens_q_ptr + b).to(tl.int64)
        seqlen_q = tl.load(cu_seqlens_q_ptr + b + 1) - q_start.to(tl.int32)
        k_start = tl.load(cu_seqlens_k_ptr + b).to(tl.int64)
        seqlen_k = tl.load(cu_seqlens_k_ptr + b + 1) - k_start.to(tl.int32)
        vt_row0 = hkv * HEAD_DIM  # Vᵀ (Hkv·D, Σ round16(len_k)): each sequence starts at a multiple of 16
        vt_col0 = tl.load(cu_cols_vt_ptr + b).to(tl.int64)
    else:
        seqlen_q = seqlen_q_dense
        seqlen_k = seqlen_k_dense
        q_start = b * seqlen_q
        k_start = b * seqlen_k
        vt_row0 = (b * num_heads_kv + hkv) * HEAD_DIM  # Vᵀ (B·Hkv·D, Sk)
        vt_col0 = b * 0
    m0 = (start_m * BLOCK_M).to(tl.int32)
    if m0 >= seqlen_q:
        return

    if DESCALE_PER_HEAD:
        ds_idx = b * num_heads_kv + hkv
    else:
        ds_idx = 0
    q_ds = tl.load(q_descale_ptr + ds_idx)
    k_ds = tl.load(k_descale_ptr + ds_idx)
    v_ds = tl.load(v_descale_ptr + ds_idx)
    qk_scale = sm_scale_log2 * q_ds * k_ds

    offs_m = m0 + tl.arange(0, BLOCK_M)  # int32: rows within the sequence
    offs_d = tl.arange(0, HEAD_DIM)
    q = q_desc.load([(q_start + m0).to(tl.int32), (hq * HEAD_DIM).to(tl.int32)])

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    if ROW_SUM_MMA:
        tl.static_assert(not OVERLAP, "ROW_SUM_MMA is implemented in the plain key loop")
        l_i = tl.zeros([BLOCK_M, 16], tl.float32)
    else:
        l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    ones = None
    if ROW_SUM_MMA:
        # Loaded once, before the loops: the compiler then copies the tile into shared memory once. A constant
        # tile (tl.full) is rematerialized inside the loop and stored to shared memory in every step (16 STS, a
        # fence and a CTA barrier per key block), and a load inside the loop is a third TMA per stage (sm_90 SASS:
        # 489 instructions per key block against 421 this way and 491 without ROW_SUM_MMA; 428 with the fresh
        # per-block sums of _row_sum_mma).
        ones = ones_desc.load([0, 0])

    # Key blocks: [0, n_full) need no mask; [n_full, n_end) are the causal diagonal and/or the ragged tail.
    if CAUSAL:
        # Last key any row of this block sees: (m0 + BLOCK_M - 1) + Sk - Sq; every row sees keys <= m0 + Sk - Sq.
        n_end = tl.minimum(seqlen_k, tl.maximum(m0 + BLOCK_M + seqlen_k - seqlen_q, 0))
        n_full = tl.minimum(seqlen_k, tl.maximum(m0 + 1 + seqlen_k - seqlen_q, 0))
    else:
        n_end = seqlen_k
        n_full = seqlen_k
    n_full = (n_full // BLOCK_N) * BLOCK_N
    k_row0 = k_start.to(tl.int32)
    kv_col = (hkv * HEAD_DIM).to(tl.int32)
    vt_row0 = vt_row0.to(tl.int32)
    vt_col0 = vt_col0.to(tl.int32)

    if OVERLAP:
        acc, l_i, m_i = _kv_loop_overlap(
            q, k_desc, v_desc, k_row0, kv_col, vt_row0, vt_col0, n_full, qk_scale,
            BLOCK_M, BLOCK_N, HEAD_DIM, V_TRANSPOSED, LOG2_P_SCALE, EXACT_P_ROUND, PERMUTE_P, OVERLAP == 2,
            LAZY_RESCALE, POLY_EXP2,
        )
    else:
        acc, l_i, m_i = _kv_loop(
            acc, l_i, m_i, q, k_desc, v_desc, ones, k_row0, kv_col, vt_row0, vt_col0, 0, n_full,
            offs_m, seqlen_q, seqlen_k, qk_scale,
            BLOCK_N, HEAD_DIM, False, CAUSAL, V_TRANSPOSED, LOG2_P_SCALE, EXACT_P_ROUND, WARP_SPECIALIZE, PERMUTE_P,
            LAZY_RESCALE, ROW_SUM_MMA, POLY_EXP2,
        )
    acc, l_i, m_i = _kv_loop(
        acc, l_i, m_i, q, k_desc, v_desc, ones, k_row0, kv_col, vt_row0, vt_col0, n_full, n_end,
        offs_m, seqlen_q, seqlen_k, qk_scale,
        BLOCK_N, HEAD_DIM, True, CAUSAL, V_TRANSPOSED, LOG2_P_SCALE, EXACT_P_ROUND, False, PERMUTE_P, False,
        ROW_SUM_MMA, 0,
    )
    if ROW_SUM_MMA:
        l_i = tl.max(l_i, 1)  # the 16 columns are equal: max is exact where a sum of them would round

    # Epilogue. l = 0 exactly for rows that saw no key (every p was exp2(-inf) = 0): output 0, lse -inf.
    empty = l_i == 0.0
    l_safe = tl.where(empty, 1.0, l_i)
    row_scale = v_ds / l_safe
    if OUT_FP8:
        if OUT_SCALE_PER_HEAD:
            o_s = tl.load(out_scale_ptr + b * num_heads_q + hq)
        else:
            o_s = tl.load(out_scale_ptr)
        row_scale = row_scale / o_s
    o = acc * row_scale[:, None]
    o = tl.where(empty[:, None], 0.0, o)
    row_ok = offs_m < seqlen_q
    # (row * Hq + head) * D: the constexpr factor last lets the compiler prove 16-byte alignment of each row's
    # segment and emit vector stores (measured: 64 scalar STG.U16 per thread for D=128 without it).
    out_offs = ((q_start + offs_m).to(tl.int64) * num_heads_q + hq)[:, None] * HEAD_DIM + offs_d[None, :]
    if OUT_FP8:
        if EXACT_P_ROUND:
            o_out = cast_to_fp8(o, tl.float8e4nv)
        else:
            o_out = tl.clamp(o, -448.0, 448.0).to(tl.float8e4nv)
    else:
        o_out = o.to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + out_offs, o_out, mask=row_ok[:, None])
    if WRITE_LSE:
        tl.static_assert(not ROW_SUM_MMA, "the lse needs the fp32 row sums: the launcher turns ROW_SUM_MMA off")
        lse = tl.where(empty, float("-inf"), (m_i + tl.math.log2(l_safe) - LOG2_P_SCALE) * LN2)
        if VARLEN:
            total_q = tl.load(cu_seqlens_q_ptr + tl.num_programs(1) // num_heads_q)
            lse_offs = hq * total_q + q_start + offs_m
        else:
            lse_offs = (b * num_heads_q + hq) * seqlen_q + offs_m
        tl.store(lse_ptr + lse_offs, lse, mask=row_ok)


# ---------------------------------------------------------------------------------------------------------------
# Per-head quantization of bf16/f16/f32 inputs (and the V -> Vᵀ relayout, also for FP8 V).


@triton.jit
def _head_block(cu_seqlens_ptr, seqlen_dense, num_heads, BLOCK_S: tl.constexpr, VARLEN: tl.constexpr):
    """(batch, head, first row, sequence length, first position) of this program of the per-head passes.

    Grid (cdiv(max_seqlen, BLOCK_S), B·H); dense rows start at b·seqlen, varlen rows at cu_seqlens[b].
    """
    pid_s = tl.program_id(0).to(tl.int64)
    pid_bh = tl.program_id(1).to(tl.int64)
    b = pid_bh // num_heads
    h = pid_bh % num_heads
    if VARLEN:
        start = tl.load(cu_seqlens_ptr + b).to(tl.int64)
        seqlen = tl.load(cu_seqlens_ptr + b + 1) - start.to(tl.int32)
    else:
        seqlen = seqlen_dense
        start = b * seqlen
    return b, h, start, seqlen, pid_s * BLOCK_S


@named_jit
def head_amax_kernel(
    x_ptr, amax_ptr, cu_seqlens_ptr,
    seqlen_dense, num_heads, num_heads_kv, stride_row,
    KERNEL_NAME: tl.constexpr, BLOCK_S: tl.constexpr, HEAD_DIM: tl.constexpr, GROUP: tl.constexpr, VARLEN: tl.constexpr,
):
    """amax[b, h // GROUP] = max |x| over sequence b, head h (atomic max; amax zero-initialised, fp32).

    x: (rows, H, D) with row stride ``stride_row`` and (H, D) contiguous. Grid (cdiv(max_seqlen, BLOCK_S), B·H).
    """
    b, h, start, seqlen, s0 = _head_block(cu_seqlens_ptr, seqlen_dense, num_heads, BLOCK_S, VARLEN)
    if s0 >= seqlen:
        return
    offs_s = s0 + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    mask = (offs_s < seqlen)[:, None]
    ptrs = x_ptr + (start + offs_s)[:, None] * stride_row + h * HEAD_DIM + offs_d[None, :]
    x = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    tl.atomic_max(amax_ptr + b * num_heads_kv + h // GROUP, tl.max(tl.abs(x)))


@named_jit
def head_quantize_kernel(
    x_ptr, y_ptr, amax_ptr, descale_ptr, cu_seqlens_ptr, cu_cols_ptr,
    seqlen_dense, num_heads, num_heads_kv, stride_row, stride_y_outer,
    KERNEL_NAME: tl.constexpr, BLOCK_S: tl.constexpr, HEAD_DIM: tl.constexpr, GROUP: tl.constexpr, VARLEN: tl.constexpr,
    QUANTIZE: tl.constexpr, TRANSPOSE: tl.constexpr, EXACT_ROUND: tl.constexpr, PERMUTE_KEYS: tl.constexpr,
):
    """y = E4M3(x / descale) per (batch, KV-head group), descale = amax / 448 (1 where amax = 0); or a copy.

    x: (rows, H, D), row stride ``stride_row``. QUANTIZE: x is bf16/f16/f32 and amax (B, Hkv) fp32 was filled by
    :func:`head_amax_kernel`; the descale is written to ``descale_ptr`` (B, Hkv). Otherwise x is already E4M3 and is
    copied. Division is IEEE (div_rn) and rounding RNE with saturation, bit-exact with
    ``torch.clamp(x.float() / descale, -448, 448).to(float8_e4m3fn)``.
    y: TRANSPOSE=False: (rows, H, D) contiguous. TRANSPOSE=True: Vᵀ with the sequence contiguous, row
    ``(b·H + h)·D + d`` dense / ``h·D + d`` varlen, column ``s`` dense / ``cu_cols[b] + s`` varlen; row stride
    ``stride_y_outer`` (a multiple of 16 for TMA).
    Grid (cdiv(max_seqlen, BLOCK_S), B·H).
    """
    b, h, start, seqlen, s0 = _head_block(cu_seqlens_ptr, seqlen_dense, num_heads, BLOCK_S, VARLEN)
    if s0 >= seqlen:
        return
    offs_s = s0 + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    mask = (offs_s < seqlen)[:, None]
    x = tl.load(x_ptr + (start + offs_s)[:, None] * stride_row + h * HEAD_DIM + offs_d[None, :], mask=mask, other=0.0)
    if QUANTIZE:
        ds_idx = b * num_heads_kv + h // GROUP
        amax = tl.load(amax_ptr + ds_idx)
        descale = tl.where(amax > 0.0, tl.math.div_rn(amax, 448.0), 1.0)
        if s0 == 0:  # the first sequence block of the group's first head writes the descale
            if h % GROUP == 0:
                tl.store(descale_ptr + ds_idx, descale)
        xs = tl.math.div_rn(x.to(tl.float32), descale)
        if EXACT_ROUND:
            y = cast_to_fp8(xs, tl.float8e4nv)  # interpreter: its own cast truncates
        else:
            y = tl.clamp(xs, -448.0, 448.0).to(tl.float8e4nv)  # GPU: cvt.rn.satfinite (RNE), measured in the PTX
    else:
        y = x
    if TRANSPOSE:
        if VARLEN:
            row0 = h * HEAD_DIM
            col0 = tl.multiple_of(tl.load(cu_cols_ptr + b), 16).to(tl.int64)  # multiples of 16 by construction
        else:
            row0 = (b * num_heads + h) * HEAD_DIM
            col0 = b * 0
        # Transposed in registers/shared memory so each row of Vᵀ gets BLOCK_S contiguous bytes (vector stores).
        yt = tl.trans(y)  # [HEAD_DIM, BLOCK_S]
        if PERMUTE_KEYS:
            yt = _permute_keys(yt, HEAD_DIM, BLOCK_S)
        yt_ptrs = y_ptr + (row0 + offs_d)[:, None] * stride_y_outer + (col0 + offs_s)[None, :]
        # Rows >= seqlen were loaded as 0, so writing up to round32(seqlen) fills the padding columns with zeros
        # (the forward kernel reads whole 32-key chunks), and a mask constant over 32 columns keeps 16-byte stores.
        lim = (seqlen + 31) // 32 * 32
        tl.store(yt_ptrs, yt, mask=(offs_s < lim)[None, :])
    else:
        tl.store(y_ptr + (start + offs_s)[:, None] * (num_heads * HEAD_DIM) + h * HEAD_DIM + offs_d[None, :], y,
                 mask=mask)


# ---------------------------------------------------------------------------------------------------------------


def codegen_specs() -> dict:
    """Representative forward configs for offline sm_90 compilation (``python -m tritonfp8 codegen NAME``)."""
    from tritonfp8.attention import kernel_name_of
    from tritonfp8.codegen import CodegenSpec

    specs = {}

    def add(key, d, causal, cfg, varlen=False, out="bf16", lse=False, desc=""):
        vblock = [d, cfg.block_n] if cfg.v_transposed else [cfg.block_n, d]
        sig = {
            "q_desc": f"tensordesc<fp8e4nv[{cfg.block_m}, {d}]>",
            "k_desc": f"tensordesc<fp8e4nv[{cfg.block_n}, {d}]>",
            "v_desc": f"tensordesc<fp8e4nv[{vblock[0]}, {vblock[1]}]>",
            "ones_desc": f"tensordesc<fp8e4nv[16, {cfg.block_n}]>" if cfg.row_sum_mma else "constexpr",
            "out_ptr": "*fp8e4nv" if out == "e4m3" else f"*{out}",
            "lse_ptr": "*fp32",
            "q_descale_ptr": "*fp32",
            "k_descale_ptr": "*fp32",
            "v_descale_ptr": "*fp32",
            "out_scale_ptr": "*fp32",
            "cu_seqlens_q_ptr": "*i32",
            "cu_seqlens_k_ptr": "*i32",
            "cu_cols_vt_ptr": "*i32",
            "sm_scale_log2": "fp32",
            "seqlen_q_dense": "i32",
            "seqlen_k_dense": "i32",
            "num_heads_q": "i32",
            "num_heads_kv": "i32",
            "num_m_blocks": "i32",
            "head_group": "i32",
        }
        const = dict(
            BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, HEAD_DIM=d, GROUP=1, CAUSAL=causal, VARLEN=varlen,
            V_TRANSPOSED=cfg.v_transposed, DESCALE_PER_HEAD=False, OUT_FP8=out == "e4m3", OUT_SCALE_PER_HEAD=False,
            WRITE_LSE=lse, LOG2_P_SCALE=8, EXACT_P_ROUND=False, WARP_SPECIALIZE=cfg.warp_specialize,
            PERMUTE_P=cfg.v_transposed and cfg.permute_p, OVERLAP=cfg.overlap,
            LAZY_RESCALE=cfg.lazy_rescale, POLY_EXP2=cfg.poly_exp2, ROW_SUM_MMA=cfg.row_sum_mma,
        )
        if not cfg.row_sum_mma:
            const["ones_desc"] = None
        for k in const:
            sig[k] = "constexpr"
        out_dtype = {"bf16": "bf16", "fp16": "f16", "e4m3": "e4m3"}[out]
        name = kernel_name_of(90, d, causal, cfg, varlen=varlen, out_short=out_dtype, per_head=False, lse=lse)
        specs[key] = CodegenSpec(
            fn=attn_fwd_kernel, signature=sig, constexprs=const, name=name, num_warps=cfg.num_warps,
            num_stages=cfg.num_stages, description=desc, min_arch=90,
            options={"maxnreg": cfg.maxnreg} if cfg.maxnreg else {},
            # the launcher allocates out and lse (16-byte aligned) and passes 16-aligned descale/cu buffers
            divisible=("out_ptr", "lse_ptr"),
        )

    from tritonfp8.attention import default_config

    for d in (64, 128, 256):
        for causal in (False, True):
            cfg = default_config(d)
            tag = "causal" if causal else "full"
            add(f"attn_fwd_hd{d}_{tag}", d, causal, cfg,
                desc=f"FP8 flash forward, D={d}, {tag}, Vᵀ via TMA, bf16 out (the default config)")
    cfg = default_config(128)
    # The session-14 hd128 default (row sums by FADD): the base of the loop-variant specs measured against it.
    fadd = cfg.evolve(row_sum_mma=False)
    add("attn_fwd_hd128_full_fadd", 128, False, fadd,
        desc="D=128 non-causal, default tiles, row sums by FADD (the default until session 15; bench variant fadd)")
    add("attn_fwd_hd128_causal_fadd", 128, True, fadd, desc="D=128 causal, row sums by FADD (bench variant fadd)")
    add("attn_fwd_hd128_full_vonchip", 128, False, cfg.evolve(v_transposed=False),
        desc="D=128 non-causal, V as given (B,S,H,D), transposed on chip")
    ov = fadd.evolve(overlap=2, block_n=64)
    add("attn_fwd_hd128_full_ov2bn64", 128, False, ov,
        desc="D=128 non-causal, 64x64 tiles, Q·K_{j+1}ᵀ in flight during block j's softmax (bench variant ov2bn64)")
    add("attn_fwd_hd128_causal_ov2bn64", 128, True, ov, desc="D=128 causal, bench variant ov2bn64")
    add("attn_fwd_hd128_full_ov2bn64px4", 128, False, ov.evolve(poly_exp2=4),
        desc="bench variant ov2bn64 with a quarter of the loop's exp2 on the FMA pipe (bench variant ov2bn64px4)")
    add("attn_fwd_hd128_full_ov2nocap", 128, False, fadd.evolve(overlap=2, maxnreg=None),
        desc="D=128 non-causal, 64x128 tiles, overlapped loop, no register cap (bench variant ov2nocap)")
    add("attn_fwd_hd128_full_ov2s1lazy", 128, False,
        fadd.evolve(overlap=2, num_stages=1, maxnreg=None, lazy_rescale=True),
        desc="D=128 non-causal, 64x128, overlapped loop, 1 stage, lazy rescaling of acc (bench variant ov2s1lazy)")
    # Lazy rescaling in the plain loop (bench variants lazy, lazy64, lazy256): the acc rescale is branched over.
    add("attn_fwd_hd128_full_lazy", 128, False, fadd.evolve(lazy_rescale=True),
        desc="D=128 non-causal, default tiles, plain loop with lazy rescaling of acc (bench variant lazy)")
    add("attn_fwd_hd128_causal_lazy", 128, True, fadd.evolve(lazy_rescale=True),
        desc="D=128 causal, default tiles, plain loop with lazy rescaling of acc (bench variant lazy)")
    add("attn_fwd_hd64_full_lazy", 64, False, default_config(64).evolve(lazy_rescale=True),
        desc="D=64 non-causal, default tiles (r128), lazy rescaling (bench variant lazy64)")
    add("attn_fwd_hd256_full_lazy", 256, False, default_config(256).evolve(lazy_rescale=True),
        desc="D=256 non-causal, default 128x64 tiles, lazy rescaling (bench variant lazy256)")
    add("attn_fwd_hd128_full_nocap", 128, False, fadd.evolve(maxnreg=None),
        desc="D=128 non-causal, FADD row sums, default tiles without the 168-register cap")
    add("attn_fwd_hd64_full_ov2bn64", 64, False, default_config(64).evolve(overlap=2, block_n=64),
        desc="D=64 non-causal, 64x64 tiles, overlapped loop, r128 (bench variant ov2bn64)")
    add("attn_fwd_hd256_full_ov2", 256, False, default_config(256).evolve(overlap=2),
        desc="D=256 non-causal, default 128x64 tiles, overlapped loop (bench variant ov2)")
    # hd256 with one-warpgroup 64-row tiles (bench variants bm64w4*): two or more CTAs per SM instead of one
    # 8-warp CTA, the occupancy that made the hd128 default.
    for key, over in (("bm64w4", {}), ("bm64w4s2", dict(num_stages=2)), ("bm64w4bn32", dict(block_n=32)),
                     ("bm64w4bn32r168", dict(block_n=32, maxnreg=168))):
        add(f"attn_fwd_hd256_full_{key}", 256, False, default_config(256).evolve(block_m=64, num_warps=4, **over),
            desc=f"D=256 non-causal, bench variant {key}")
    # Row sums on the tensor core (the hd128 default since session 15; bench variants rsmma*): P times a block of
    # E4M3 ones beside P·V.
    add("attn_fwd_hd128_full_rsmmapx4", 128, False, cfg.evolve(row_sum_mma=True, poly_exp2=4),
        desc="D=128 non-causal, row sums by wgmma, a quarter of the unmasked loop's exp2 by polynomial "
             "(bench variant rsmmapx4)")
    add("attn_fwd_hd128_full_rsmmapx8", 128, False, cfg.evolve(row_sum_mma=True, poly_exp2=8),
        desc="D=128 non-causal, row sums by wgmma, an eighth of the unmasked loop's exp2 by polynomial "
             "(bench variant rsmmapx8)")
    add("attn_fwd_hd256_full_rsmma", 256, False, default_config(256).evolve(row_sum_mma=True),
        desc="D=256 non-causal, the Triton kernel's default tiles (128x64), row sums by wgmma (bench variant rsmma256)")
    add("attn_fwd_hd64_full_rsmma", 64, False, default_config(64).evolve(row_sum_mma=True),
        desc="D=64 non-causal, default tiles, softmax row sums by wgmma (bench variant rsmma64)")
    add("attn_fwd_hd128_varlen_causal_lse", 128, True, fadd, varlen=True, lse=True,
        desc="D=128 varlen causal, lse written")
    add("attn_fwd_hd128_full_e4m3out", 128, False, cfg, out="e4m3", desc="D=128 non-causal, E4M3 output")
    from tritonfp8.attention import quant_kernel_name

    for transpose in (False, True):
        d = 128
        sig = {
            "x_ptr": "*bf16", "y_ptr": "*fp8e4nv", "amax_ptr": "*fp32", "descale_ptr": "*fp32",
            "cu_seqlens_ptr": "*i32", "cu_cols_ptr": "*i32", "seqlen_dense": "i32", "num_heads": "i32",
            "num_heads_kv": "i32", "stride_row": "i32", "stride_y_outer": "i32",
        }
        const = dict(BLOCK_S=64, HEAD_DIM=d, GROUP=1, VARLEN=False, QUANTIZE=True, TRANSPOSE=transpose,
                     EXACT_ROUND=False, PERMUTE_KEYS=transpose)
        for k in const:
            sig[k] = "constexpr"
        tag = "vt" if transpose else "rows"
        specs[f"attn_quant_bf16_hd128_{tag}"] = CodegenSpec(
            fn=head_quantize_kernel, signature=sig, constexprs=const,
            name=quant_kernel_name(90, "bf16", 64, d, quantize=True, transpose=transpose),
            num_warps=4, num_stages=1, min_arch=90, divisible=("x_ptr", "y_ptr", "stride_row", "stride_y_outer"),
            description=f"per-head bf16 -> e4m3 quantize pass, {'writes Vᵀ' if transpose else 'same layout'}",
        )
    sig = {"x_ptr": "*bf16", "amax_ptr": "*fp32", "cu_seqlens_ptr": "*i32", "seqlen_dense": "i32",
           "num_heads": "i32", "num_heads_kv": "i32", "stride_row": "i32"}
    const = dict(BLOCK_S=64, HEAD_DIM=128, GROUP=1, VARLEN=False)
    for k in const:
        sig[k] = "constexpr"
    specs["attn_amax_bf16_hd128"] = CodegenSpec(
        fn=head_amax_kernel, signature=sig, constexprs=const,
        name=quant_kernel_name(90, "bf16", 64, 128, quantize=False, transpose=False, amax=True),
        num_warps=4, num_stages=1, min_arch=90, divisible=("x_ptr", "stride_row"),
        description="per-head amax pass (atomic max per (batch, KV head))",
    )
    return specs
