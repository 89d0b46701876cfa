"""FP8 attention forward on Hopper in Gluon, warp-specialized. ``tritonfp8.attention`` runs it on sm_90 at hd256
(``attention.GLWS_DEFAULTS``: 128 x 128 tiles, serial loop, session 18) and for dense non-causal hd128 problems
(``attention.GLWS_DENSE_DEFAULTS``: 128 x 256 tiles, serial loop, session 17); docs/attention.md has the
measurements, benchmarks/NOTES.md each run.

Why. The Triton forward kernel (``attention.py``) keeps both wgmmas of a key block (S = Q·Kᵀ, then P·V) and the
softmax between them in one instruction stream; Triton 3.6 cannot overlap the softmax of one block with the
tensor-core work of another inside a program, and the best schedule found (three 64-row CTAs per SM) runs at
0.87-0.90x cuDNN FP8 at hd128. FlashAttention-3's schedule on Hopper: two consumer warp groups, each overlapping
its softmax with its own P·V (intra-warpgroup) and ping-ponging the tensor core with the other group.

Partitions of one program (one per (128-query block, batch, query head); not persistent):

- loader (1 warp, 40 registers): Q's 128 x D tile once, then every key block's K (BLOCK_N x D) and Vᵀ
  (D x BLOCK_N, the relayout pass's sequence-contiguous layout) into a ring of STAGES slots;
- two consumers (one warp group each), query rows 0-63 and 64-127: per key block, S = Q·Kᵀ (async wgmma, both
  operands K-major in shared memory), the online softmax in the exp2 domain (P already times 2^LOG2_P_SCALE, as
  the Triton kernel), P cast to E4M3 and kept in registers as the A operand of P·V, Vᵀ's slot as B; the slot is
  released after P·V retires. The tail block (Sk not a multiple of BLOCK_N) masks keys >= Sk.

Forms (constexprs): serial (S_j, softmax, P_j·V_j); OVERLAP (S_j and P_{j-1}·V_{j-1} issued together, the softmax
of block j under the product; >= 3 stages); PINGPONG (an mbarrier per group orders the two groups' wgmma issue);
P_CARRY (how P crosses into the next step: 0 the E4M3 A operand, 1 fp32). Measured (H200, hd128 S 8192): serial
795-829 TFLOPS = the Triton kernel; OVERLAP with P_CARRY 0 664-667, with PINGPONG 653. Offline SASS then showed
why: an E4M3 operand carried across the loop's back edge is repacked byte by byte at the next P·V (136 PRMT +
64 LOP3 per block and thread: a 682-instruction loop body against the serial 476); carrying fp32 P (P_CARRY 1)
gives 517 with the same 66 MUFU.EX2 under P·V; measured in session 10: 743 vs the serial 823 (0.90x).
ROW_SUM_MMA (serial loops, no lse): the row sums by a wgmma of the E4M3 P with a block of ones (see :func:`_step`);
correct on the H200 with the ones loaded by TMA (session 17), wrong with ones stored from registers (sessions 10
and 17, cause not found); slower than the FADD sums at 256 keys. Serial PINGPONG (OVERLAP=0, :func:`_pp_step`):
correct, no faster.

Dense or varlen, descales per tensor or per (batch, KV head), bf16 / fp16 / E4M3 output stored by pointers
(rows >= Sq masked), CAUSAL (bottom-right; programs stop at their last visible block, rows with no visible key
give 0 and lse -inf), RETURN_LSE; every form is covered by tests/test_attention_gluon.py's GPU tests.
"""

from __future__ import annotations

import functools

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from tritonfp8._kernels import attention as _triton_attn
from tritonfp8.naming import _repr_from_constexpr

BLOCK_M = 128  # query rows per program: two consumer warp groups of 64
CONSUMER_REGS = 232
LOADER_REGS = 40

# The Triton kernel's key permutation within 32-key chunks (same source, compiled as Gluon): applied to P in
# registers and to Vᵀ in memory (vt_layout(permute_keys=True)) it leaves P·V unchanged and makes the accumulator ->
# A-operand conversion of P thread-local.
_permute_keys = gluon.jit(_triton_attn._permute_keys.fn)


@gluon.jit
def _loader(q_desc, k_desc, vt_desc, ones_desc, q_smem, k_ring, v_ring, ones_smem, q_bar, ready, empty, q_row, q_col,
            k_row0, k_col, v_row, v_col0, n_blocks, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
            ROW_SUM_MMA: gl.constexpr):
    """Producer (one warp): Q (and with ROW_SUM_MMA the block of ones) once, then K and Vᵀ of every key block into
    the ring."""
    if ROW_SUM_MMA:
        mbarrier.expect(q_bar, q_desc.block_type.nbytes + ones_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(ones_desc, [0, 0], q_bar, ones_smem)
    else:
        mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [q_row, q_col], q_bar, q_smem)
    nbytes: gl.constexpr = k_desc.block_type.nbytes + vt_desc.block_type.nbytes
    for j in range(n_blocks):
        s = j % STAGES
        # A fresh barrier counts as having completed the phase before phase 0: the first pass does not wait.
        mbarrier.wait(empty.index(s), ((j // STAGES) & 1) ^ 1)
        bar = ready.index(s)
        mbarrier.expect(bar, nbytes)
        tma.async_copy_global_to_shared(k_desc, [k_row0 + j * BLOCK_N, k_col], bar, k_ring.index(s))
        tma.async_copy_global_to_shared(vt_desc, [v_row, v_col0 + j * BLOCK_N], bar, v_ring.index(s))


@gluon.jit
def _softmax(sc, m_i, l_i, cols0, qk_scale, Sk, row0, off, s_layout: gl.constexpr, p_layout: gl.constexpr,
             BLOCK_N: gl.constexpr, LOG2_P_SCALE: gl.constexpr, MASK: gl.constexpr, PERMUTE_P: gl.constexpr,
             CAUSAL: gl.constexpr, SUM_P: gl.constexpr = True):
    """Online-softmax update of one key block's scores: (m_new, l_new, alpha, P in fp32 times P_SCALE).

    MASK (blocks past the last full one, and with CAUSAL those crossing the diagonal): keys >= Sk (the next
    sequence's rows, or TMA's zero fill) and, causal bottom-right, keys > row + off (off = Sk - Sq) are
    invisible. With CAUSAL a row may have no visible key yet (Sq > Sk): its max stays -inf, and the exponent uses
    0 instead, so P = 0 and alpha = 0 rather than NaN (such a row ends with l = 0: output 0, lse -inf)."""
    if MASK:
        cols = cols0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        ok = (cols < Sk)[None, :]
        if CAUSAL:
            rows = row0 + gl.arange(0, 64, layout=gl.SliceLayout(1, s_layout))
            ok = ok & (cols[None, :] <= (rows + off)[:, None])
        sc = gl.where(ok, sc, float("-inf"))
    # qk_scale > 0 (checked on the host): max(S) * scale is the max of the scaled row.
    m_new = gl.maximum(m_i, gl.max(sc, 1) * qk_scale)
    m_use = m_new
    if CAUSAL:
        m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
    p = gl.exp2(sc * qk_scale - (m_use - LOG2_P_SCALE)[:, None])  # P_SCALE * exp2(s - m), in [0, P_SCALE]
    alpha = gl.exp2(m_i - m_use)  # m_i = -inf on a row's first visible block: alpha = 0
    if SUM_P:  # (with ROW_SUM_MMA the caller sums the E4M3 P on the tensor core instead)
        l_i = l_i * alpha + gl.sum(p, 1)
    return m_new, l_i, alpha, p


@gluon.jit
def _p_operand(p, p_layout: gl.constexpr, BLOCK_N: gl.constexpr, PERMUTE_P: gl.constexpr):
    """P (fp32, accumulator layout) as the E4M3 A operand of P·V."""
    p8 = p.to(gl.float8e4nv)
    if PERMUTE_P:
        p8 = _permute_keys(p8, 64, BLOCK_N)
    return gl.convert_layout(p8, p_layout)


@gluon.jit
def _scores(j, q_half, k_ring, ready, s_layout: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """Issue S_j = Q·K_jᵀ (async wgmma; waits for the slot's data first)."""
    WG_M: gl.constexpr = 64
    s = j % STAGES
    mbarrier.wait(ready.index(s), (j // STAGES) & 1)
    return warpgroup_mma(q_half, k_ring.index(s).permute((1, 0)),
                         gl.zeros([WG_M, BLOCK_N], gl.float32, s_layout), use_acc=False, is_async=True)


@gluon.jit
def _step(j, q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc, qk_scale, Sk, row0, off,
          s_layout: gl.constexpr, p_layout: gl.constexpr, o_row_layout: gl.constexpr,
          BLOCK_N: gl.constexpr, STAGES: gl.constexpr, LOG2_P_SCALE: gl.constexpr, MASK: gl.constexpr,
          PERMUTE_P: gl.constexpr, CAUSAL: gl.constexpr, ROW_SUM_MMA: gl.constexpr):
    """One key block, serial: S_j, its softmax, then P_j·V_j (the other warp group's work is the only overlap).

    ROW_SUM_MMA: ``l_i`` is [64, 16] (every column the same row sum): this block's sums come from a wgmma of the
    E4M3 P with ``ones_smem`` (16 x BLOCK_N E4M3 ones) issued beside P·V, from a fresh accumulator, and are added
    to l in fp32 (the FP8 wgmma keeps ~14 bits of a running sum: summed across blocks on the tensor core the
    output error grew with the key length, session 15). Per thread and 64 x 256 block that replaces 128 FADD by
    8 FFMA; l is then the sum of exactly the rounded P that P·V weights (as the Triton kernel's row_sum_mma)."""
    s = j % STAGES
    sc = warpgroup_mma_wait(num_outstanding=0, deps=(_scores(j, q_half, k_ring, ready, s_layout, BLOCK_N, STAGES),))
    m_new, l_i, alpha, p = _softmax(sc, m_i, l_i, j * BLOCK_N, qk_scale, Sk, row0, off, s_layout, p_layout,
                                    BLOCK_N, LOG2_P_SCALE, MASK, PERMUTE_P, CAUSAL, not ROW_SUM_MMA)
    acc = acc * gl.convert_layout(alpha, o_row_layout)[:, None]
    p8 = _p_operand(p, p_layout, BLOCK_N, PERMUTE_P)
    acc = warpgroup_mma(p8, v_ring.index(s).permute((1, 0)), acc, is_async=True)
    if ROW_SUM_MMA:
        l_layout: gl.constexpr = l_i.type.layout
        rs = warpgroup_mma(p8, ones_smem.permute((1, 0)), gl.zeros([64, 16], gl.float32, l_layout), use_acc=False,
                           is_async=True)
        acc, rs = warpgroup_mma_wait(num_outstanding=0, deps=(acc, rs))
        l_i = l_i * gl.convert_layout(alpha, gl.SliceLayout(1, l_layout))[:, None] + rs
    else:
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    mbarrier.arrive(empty.index(s), count=1)
    return m_new, l_i, acc


@gluon.jit
def _pp_step(j, sc, q_half, k_ring, v_ring, ones_smem, ready, empty, turn, m_i, l_i, acc, qk_scale, Sk, row0, off,
             s_layout: gl.constexpr, p_layout: gl.constexpr, o_row_layout: gl.constexpr, BLOCK_N: gl.constexpr,
             STAGES: gl.constexpr, LOG2_P_SCALE: gl.constexpr, MASK: gl.constexpr, PERMUTE_P: gl.constexpr,
             CAUSAL: gl.constexpr, ROW_SUM_MMA: gl.constexpr, HALF: gl.constexpr, NEXT: gl.constexpr):
    """Serial ping-pong (OVERLAP=0, PINGPONG): key block j's softmax on its scores ``sc`` (already computed),
    then, inside the group's turn, P_j·V_j and (NEXT) S_{j+1} issued back to back; one wait for both.

    FlashAttention-3's inter-warpgroup schedule on the serial loop: a group's two products of a step run on the
    tensor core while the other group runs its softmax (group 1 issues only after group 0 has issued). Nothing
    in flight crosses the loop's back edge (``sc`` is a finished accumulator; the overlapped form's in-flight
    carry made ptxas serialize its wgmmas), and P is made and consumed inside the step (no byte repacking)."""
    s = j % STAGES
    m_new, l_i, alpha, p = _softmax(sc, m_i, l_i, j * BLOCK_N, qk_scale, Sk, row0, off, s_layout, p_layout,
                                    BLOCK_N, LOG2_P_SCALE, MASK, PERMUTE_P, CAUSAL, not ROW_SUM_MMA)
    acc = acc * gl.convert_layout(alpha, o_row_layout)[:, None]
    p8 = _p_operand(p, p_layout, BLOCK_N, PERMUTE_P)
    _take_turn(turn, j + 1, HALF, True)
    acc = warpgroup_mma(p8, v_ring.index(s).permute((1, 0)), acc, is_async=True)
    if ROW_SUM_MMA:
        l_layout: gl.constexpr = l_i.type.layout
        rs = warpgroup_mma(p8, ones_smem.permute((1, 0)), gl.zeros([64, 16], gl.float32, l_layout), use_acc=False,
                           is_async=True)
    if NEXT:
        sc = _scores(j + 1, q_half, k_ring, ready, s_layout, BLOCK_N, STAGES)
    _give_turn(turn, HALF, True)
    if ROW_SUM_MMA:
        if NEXT:
            acc, rs, sc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, rs, sc))
        else:
            acc, rs = warpgroup_mma_wait(num_outstanding=0, deps=(acc, rs))
        l_i = l_i * gl.convert_layout(alpha, gl.SliceLayout(1, l_layout))[:, None] + rs
    else:
        if NEXT:
            acc, sc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, sc))
        else:
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    mbarrier.arrive(empty.index(s), count=1)
    return sc, m_new, l_i, acc


@gluon.jit
def _serial_pp(q_half, k_ring, v_ring, ones_smem, ready, empty, turn, m_i, l_i, acc, qk_scale, Sk, row0, off, n_unm,
               n_blocks, s_layout: gl.constexpr, p_layout: gl.constexpr, o_row_layout: gl.constexpr,
               BLOCK_N: gl.constexpr, STAGES: gl.constexpr, LOG2_P_SCALE: gl.constexpr, PERMUTE_P: gl.constexpr,
               CAUSAL: gl.constexpr, ROW_SUM_MMA: gl.constexpr, HALF: gl.constexpr):
    """The serial ping-pong loop over a program's n_blocks >= 1 key blocks (see :func:`_pp_step`): S_0 in the
    first turn, blocks 0 .. n_unm-1 unmasked and the rest masked, each issuing the next block's scores, and the
    last block (masked: the tail, the diagonal, or a whole block masked at no harm) issuing P·V alone."""
    _take_turn(turn, 0, HALF, True)
    sc = _scores(0, q_half, k_ring, ready, s_layout, BLOCK_N, STAGES)
    _give_turn(turn, HALF, True)
    sc = warpgroup_mma_wait(num_outstanding=0, deps=(sc,))
    last = n_blocks - 1
    split = gl.minimum(n_unm, last)
    for j in range(0, split):
        sc, m_i, l_i, acc = _pp_step(j, sc, q_half, k_ring, v_ring, ones_smem, ready, empty, turn, m_i, l_i, acc,
                                     qk_scale, Sk, row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES,
                                     LOG2_P_SCALE, False, PERMUTE_P, CAUSAL, ROW_SUM_MMA, HALF, True)
    for j in range(split, last):
        sc, m_i, l_i, acc = _pp_step(j, sc, q_half, k_ring, v_ring, ones_smem, ready, empty, turn, m_i, l_i, acc,
                                     qk_scale, Sk, row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES,
                                     LOG2_P_SCALE, True, PERMUTE_P, CAUSAL, ROW_SUM_MMA, HALF, True)
    sc, m_i, l_i, acc = _pp_step(last, sc, q_half, k_ring, v_ring, ones_smem, ready, empty, turn, m_i, l_i, acc,
                                 qk_scale, Sk, row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES,
                                 LOG2_P_SCALE, True, PERMUTE_P, CAUSAL, ROW_SUM_MMA, HALF, False)
    return m_i, l_i, acc


@gluon.jit
def _to_carry(p, p_layout: gl.constexpr, BLOCK_N: gl.constexpr, PERMUTE_P: gl.constexpr, P_CARRY: gl.constexpr):
    """P of block j as carried into the next step (where P_j·V_j is issued): 0 the E4M3 A operand, 1 fp32 P
    (converted there: an E4M3 operand carried across the back edge is repacked byte by byte)."""
    if P_CARRY == 0:
        return _p_operand(p, p_layout, BLOCK_N, PERMUTE_P)
    else:
        return p


@gluon.jit
def _from_carry(pc, p_layout: gl.constexpr, BLOCK_N: gl.constexpr, PERMUTE_P: gl.constexpr, P_CARRY: gl.constexpr):
    """The E4M3 A operand of P·V from the carried form (:func:`_to_carry`)."""
    if P_CARRY == 0:
        return pc
    else:
        return _p_operand(pc, p_layout, BLOCK_N, PERMUTE_P)


@gluon.jit
def _take_turn(turn, t, HALF: gl.constexpr, PINGPONG: gl.constexpr):
    """Ping-pong between the consumer groups (FlashAttention-3's warp-scheduler barriers, here an mbarrier per
    group): group HALF's t-th wgmma issue waits until the other group has issued its (t - 1 + HALF)-th, so one
    group's softmax runs while the other's wgmmas hold the tensor core. Group 0's first turn passes (a fresh
    barrier counts as having completed the phase before phase 0)."""
    if PINGPONG:
        mbarrier.wait(turn.index(HALF), (t & 1) ^ (1 - HALF))


@gluon.jit
def _give_turn(turn, HALF: gl.constexpr, PINGPONG: gl.constexpr):
    if PINGPONG:
        mbarrier.arrive(turn.index(1 - HALF), count=1)


@gluon.jit
def _overlap_step(j, q_half, k_ring, v_ring, ready, empty, turn, m_i, l_i, acc, p8, qk_scale, Sk, row0,
                  off, n_blocks, s_layout: gl.constexpr, p_layout: gl.constexpr, o_row_layout: gl.constexpr,
                  BLOCK_N: gl.constexpr, STAGES: gl.constexpr, LOG2_P_SCALE: gl.constexpr, MASK: gl.constexpr,
                  PERMUTE_P: gl.constexpr, HALF: gl.constexpr, PINGPONG: gl.constexpr, P_CARRY: gl.constexpr,
                  CAUSAL: gl.constexpr):
    """Key block j, software-pipelined in the warp group (FlashAttention-3's intra-warpgroup overlap): issue S_j,
    then P_{j-1}·V_{j-1} (``p8`` = P_{j-1}); wait for S_j alone (wgmma groups retire in order), and run block j's
    softmax while the tensor core still computes P_{j-1}·V_{j-1}; then wait for it, release its slot and rescale
    O by alpha_j (O then holds blocks <= j-1 under m_j).

    Two things the SASS needed. (1) ptxas hoists a wgmma wait above independent ALU work: placed right after the
    softmax, the wait for P·V moved up to the first shuffle of the row max, and nothing overlapped. The wait for
    the next block's data (an mbarrier spin loop, a basic-block boundary) now sits between the two; it is needed
    next anyway. (2) A product in flight across the loop's back edge (waiting for it in the next iteration)
    made ptxas serialize every wgmma of the function (C7512, "insufficient register resources"); here each
    iteration retires its own."""
    prev = (j - 1) % STAGES
    _take_turn(turn, j, HALF, PINGPONG)
    sc = _scores(j, q_half, k_ring, ready, s_layout, BLOCK_N, STAGES)
    pa = _from_carry(p8, p_layout, BLOCK_N, PERMUTE_P, P_CARRY)
    acc = warpgroup_mma(pa, v_ring.index(prev).permute((1, 0)), acc, is_async=True)
    _give_turn(turn, HALF, PINGPONG)
    sc = warpgroup_mma_wait(num_outstanding=1, deps=(sc,))
    m_new, l_i, alpha, p = _softmax(sc, m_i, l_i, j * BLOCK_N, qk_scale, Sk, row0, off, s_layout, p_layout, BLOCK_N,
                                    LOG2_P_SCALE, MASK, PERMUTE_P, CAUSAL)
    p8 = _to_carry(p, p_layout, BLOCK_N, PERMUTE_P, P_CARRY)
    nxt = j + 1
    mbarrier.wait(ready.index(nxt % STAGES), (nxt // STAGES) & 1, pred=nxt < n_blocks)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    mbarrier.arrive(empty.index(prev), count=1)
    acc = acc * gl.convert_layout(alpha, o_row_layout)[:, None]
    return m_new, l_i, acc, p8


@gluon.jit
def _overlapped(q_half, k_ring, v_ring, ready, empty, turn, m_i, l_i, acc, qk_scale, Sk, row0, off, n_unm,
                n_blocks, s_layout: gl.constexpr, p_layout: gl.constexpr, o_row_layout: gl.constexpr,
                BLOCK_N: gl.constexpr, STAGES: gl.constexpr, LOG2_P_SCALE: gl.constexpr, PERMUTE_P: gl.constexpr,
                HALF: gl.constexpr, PINGPONG: gl.constexpr, P_CARRY: gl.constexpr, CAUSAL: gl.constexpr):
    """The overlapped loop over a program's n_blocks >= 1 key blocks (see :func:`_overlap_step`): block 0 alone
    (masked: it may be the tail or cross the diagonal), blocks 1 .. n_unm-1 unmasked, the rest masked, then the
    last P·V."""
    _take_turn(turn, 0, HALF, PINGPONG)
    sc = _scores(0, q_half, k_ring, ready, s_layout, BLOCK_N, STAGES)
    _give_turn(turn, HALF, PINGPONG)
    sc = warpgroup_mma_wait(num_outstanding=0, deps=(sc,))
    m_i, l_i, alpha, p = _softmax(sc, m_i, l_i, 0, qk_scale, Sk, row0, off, s_layout, p_layout, BLOCK_N,
                                  LOG2_P_SCALE, True, PERMUTE_P, CAUSAL)
    p8 = _to_carry(p, p_layout, BLOCK_N, PERMUTE_P, P_CARRY)
    for j in range(1, n_unm):
        m_i, l_i, acc, p8 = _overlap_step(j, q_half, k_ring, v_ring, ready, empty, turn, m_i, l_i, acc, p8,
                                          qk_scale, Sk, row0, off, n_blocks, s_layout, p_layout,
                                          o_row_layout, BLOCK_N, STAGES, LOG2_P_SCALE, False, PERMUTE_P,
                                          HALF, PINGPONG, P_CARRY, CAUSAL)
    if CAUSAL:  # the blocks crossing the diagonal (and the tail)
        for j in range(gl.maximum(n_unm, 1), n_blocks):
            m_i, l_i, acc, p8 = _overlap_step(j, q_half, k_ring, v_ring, ready, empty, turn, m_i, l_i, acc,
                                              p8, qk_scale, Sk, row0, off, n_blocks, s_layout, p_layout,
                                              o_row_layout, BLOCK_N, STAGES, LOG2_P_SCALE, True, PERMUTE_P,
                                              HALF, PINGPONG, P_CARRY, CAUSAL)
    elif (n_unm >= 1) & (n_blocks > n_unm):  # the tail alone
        m_i, l_i, acc, p8 = _overlap_step(n_unm, q_half, k_ring, v_ring, ready, empty, turn, m_i, l_i, acc,
                                          p8, qk_scale, Sk, row0, off, n_blocks, s_layout, p_layout,
                                          o_row_layout, BLOCK_N, STAGES, LOG2_P_SCALE, True, PERMUTE_P,
                                          HALF, PINGPONG, P_CARRY, CAUSAL)
    last = (n_blocks - 1) % STAGES
    _take_turn(turn, n_blocks, HALF, PINGPONG)
    pa = _from_carry(p8, p_layout, BLOCK_N, PERMUTE_P, P_CARRY)
    acc = warpgroup_mma(pa, v_ring.index(last).permute((1, 0)), acc, is_async=True)
    _give_turn(turn, HALF, PINGPONG)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    mbarrier.arrive(empty.index(last), count=1)
    return m_i, l_i, acc


@gluon.jit
def _consumer(HALF: gl.constexpr, q_smem, k_ring, v_ring, ones_smem, q_bar, ready, empty, turn, out, lse_ptr,
              qk_scale, o_scale,
              q_first, Sq, Sk, out_row0, out_col, stride_out, lse_row0, n_blocks, BLOCK_N: gl.constexpr,
              HEAD_DIM: gl.constexpr, STAGES: gl.constexpr, LOG2_P_SCALE: gl.constexpr, PERMUTE_P: gl.constexpr,
              OVERLAP: gl.constexpr, PINGPONG: gl.constexpr, P_CARRY: gl.constexpr, CAUSAL: gl.constexpr,
              RETURN_LSE: gl.constexpr, ROW_SUM_MMA: gl.constexpr):
    """Consumer (one warp group): query rows HALF*64 .. HALF*64+63 of the program's block. Both groups take the
    program's ``n_blocks`` key blocks (each slot is released by both); which of them need masks is per group:
    blocks below ``n_unm`` are whole (all keys < Sk and, causal, <= the group's first row + off)."""
    WG_M: gl.constexpr = 64
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 32])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, HEAD_DIM, 32])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=4)
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
    o_row_layout: gl.constexpr = gl.SliceLayout(1, o_layout)
    MAX_MASKED: gl.constexpr = 2 if BLOCK_N >= 128 else 3

    mbarrier.wait(q_bar, 0)
    q_half = q_smem.slice(HALF * WG_M, WG_M, dim=0)
    m_i = gl.full([WG_M], float("-inf"), gl.float32, row_layout)
    if ROW_SUM_MMA:  # the row sums as 16 equal columns of a wgmma accumulator (see _step)
        l_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                           instr_shape=[16, 16, 32])
        l_i = gl.zeros([WG_M, 16], gl.float32, l_layout)
    else:
        l_i = gl.zeros([WG_M], gl.float32, row_layout)
    acc = gl.zeros([WG_M, HEAD_DIM], gl.float32, o_layout)
    row0 = q_first + HALF * WG_M
    off = Sk - Sq
    n_unm = Sk // BLOCK_N
    if CAUSAL:
        n_unm = gl.minimum(n_unm, gl.maximum(row0 + off + 1, 0) // BLOCK_N)
    if PINGPONG and not OVERLAP:
        m_i, l_i, acc = _serial_pp(q_half, k_ring, v_ring, ones_smem, ready, empty, turn, m_i, l_i, acc, qk_scale,
                                   Sk, row0, off, n_unm, n_blocks, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES,
                                   LOG2_P_SCALE, PERMUTE_P, CAUSAL, ROW_SUM_MMA, HALF)
    elif OVERLAP:
        # n_blocks >= 1: a program with no key block to read returned before the partitions started
        m_i, l_i, acc = _overlapped(q_half, k_ring, v_ring, ready, empty, turn, m_i, l_i, acc, qk_scale, Sk,
                                    row0, off, n_unm, n_blocks, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES,
                                    LOG2_P_SCALE, PERMUTE_P, HALF, PINGPONG, P_CARRY, CAUSAL)
    else:
        for j in range(0, n_unm):
            m_i, l_i, acc = _step(j, q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc, qk_scale, Sk,
                                  row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES, LOG2_P_SCALE, False,
                                  PERMUTE_P, CAUSAL, ROW_SUM_MMA)
        if CAUSAL:
            # A group's masked blocks (those crossing its diagonal, and the tail of Sk) are straight-line guarded
            # steps, not a loop: MAX_MASKED bounds them (the group's diagonal spans at most 128 keys, which meet
            # at most two blocks of >= 128 keys, three of 64). In a loop the compiler kept the masked step's
            # per-element key indices live across iterations: at 256 keys 160 spill stores (offline sm_90, hd128).
            for t in gl.static_range(MAX_MASKED):
                if n_unm + t < n_blocks:
                    m_i, l_i, acc = _step(n_unm + t, q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc,
                                          qk_scale, Sk, row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES,
                                          LOG2_P_SCALE, True, PERMUTE_P, CAUSAL, ROW_SUM_MMA)
        elif n_blocks > n_unm:
            m_i, l_i, acc = _step(n_unm, q_half, k_ring, v_ring, ones_smem, ready, empty, m_i, l_i, acc, qk_scale,
                                  Sk, row0, off, s_layout, p_layout, o_row_layout, BLOCK_N, STAGES, LOG2_P_SCALE,
                                  True, PERMUTE_P, CAUSAL, ROW_SUM_MMA)

    # O = acc / l (P_SCALE cancels) * v_descale; a row that saw no key has l = 0 and writes 0.
    if ROW_SUM_MMA:
        l_i = gl.convert_layout(gl.max(l_i, 1), row_layout)
    l_o = gl.convert_layout(l_i, o_row_layout)
    inv = gl.where(l_o > 0, o_scale / l_o, 0.0)
    o = acc * inv[:, None]
    if out.dtype.element_ty == gl.float8e4nv:  # E4M3 output: o_scale holds 1 / out_scale too; saturate at 448
        o = gl.minimum(gl.maximum(o, -448.0), 448.0)
    o = o.to(out.dtype.element_ty)
    rows = row0 + gl.arange(0, WG_M, layout=o_row_layout)
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, o_layout))
    ptrs = out + (out_row0 + rows).to(gl.int64)[:, None] * stride_out + out_col + cols[None, :]
    gl.store(ptrs, o, mask=(rows < Sq)[:, None])
    if RETURN_LSE:
        # natural-log lse of the scaled scores: m (log2 units, with the descales) + log2(l) - LOG2_P_SCALE
        r = row0 + gl.arange(0, WG_M, layout=row_layout)
        lse = gl.where(l_i > 0, (m_i + gl.log2(l_i) - LOG2_P_SCALE) * 0.6931471805599453, float("-inf"))
        gl.store(lse_ptr + lse_row0 + r, lse, mask=r < Sq)


@gluon.jit
def _write_no_keys(out, lse_ptr, q_start, q_first, Sq, out_col, stride_out, lse_row0, HEAD_DIM: gl.constexpr,
                   RETURN_LSE: gl.constexpr):
    """A program whose 128 query rows see no key: zeros (and lse -inf), by the 4 default warps."""
    zl: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    rows = q_first + gl.arange(0, 128, layout=gl.SliceLayout(1, zl))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, zl))
    ptrs = out + (q_start + rows).to(gl.int64)[:, None] * stride_out + out_col + cols[None, :]
    gl.store(ptrs, gl.zeros([128, HEAD_DIM], gl.float32, zl).to(out.dtype.element_ty), mask=(rows < Sq)[:, None])
    if RETURN_LSE:
        rl: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        r = q_first + gl.arange(0, 128, layout=rl)
        gl.store(lse_ptr + lse_row0 + r, gl.full([128], float("-inf"), gl.float32, rl), mask=r < Sq)


@gluon.jit(repr=_repr_from_constexpr, do_not_specialize=["Sq", "Sk", "head_group"])
def attn_fwd_glws_kernel(
    q_desc, k_desc, vt_desc, ones_desc, out, lse, q_descale, k_descale, v_descale, out_scale, qk_scale,
    Sq, Sk, Hq, Hkv, stride_out, cu_q, cu_k, vt_cols, num_m_blocks, head_group,
    KERNEL_NAME: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, GROUP: gl.constexpr,
    STAGES: gl.constexpr, LOG2_P_SCALE: gl.constexpr, PERMUTE_P: gl.constexpr, OVERLAP: gl.constexpr,
    PINGPONG: gl.constexpr, P_CARRY: gl.constexpr, CAUSAL: gl.constexpr, RETURN_LSE: gl.constexpr,
    DESCALE_PER_HEAD: gl.constexpr, VARLEN: gl.constexpr, OUT_SCALE_PER_HEAD: gl.constexpr,
    CONSUMER_REGS: gl.constexpr,
    LOADER_REGS: gl.constexpr, num_warps: gl.constexpr, ROW_SUM_MMA: gl.constexpr = False,
):
    """O (B, Sq, Hq, D) bf16 = softmax(scale · Q Kᵀ [+ causal mask]) V for FP8 Q (B·Sq, Hq·D), K (B·Sk, Hkv·D)
    and Vᵀ (B·Hkv·D, round32(Sk)); descales (B, Hkv) fp32 (one element each without DESCALE_PER_HEAD);
    ``qk_scale`` = softmax_scale · log2(e) (> 0); with RETURN_LSE the fp32 log-sum-exp (B, Hq, Sq) into ``lse``.
    An E4M3 ``out`` takes ``out_scale`` (fp32, one element or (B, Hq) with OUT_SCALE_PER_HEAD), saturating.
    VARLEN: Q (total_q, Hq·D), K (total_k, Hkv·D), Vᵀ (Hkv·D, Σ round32(len_k)) with sequence b's columns from
    ``vt_cols[b]``, int32 ``cu_q`` / ``cu_k`` offsets (B + 1), out (total_q, Hq, D), lse (Hq, total_q); Sq / Sk
    unused. Grid (num_m_blocks = cdiv(max Sq, 128), B·Hq); causal programs take their (query block, head) in the
    order of ``attention.AttnConfig.head_group`` (``head_group`` heads per group, heaviest blocks first).
    Launch with num_warps=4 (the first consumer warp group)."""
    gl.static_assert(num_warps == 4, "the default partition is one consumer warp group")
    pid_m = gl.program_id(0)
    bh = gl.program_id(1)
    if CAUSAL:  # the query blocks with the most visible keys first over a group of heads: a short tail over the SMs
        pid_m, bh = _triton_attn._causal_order(pid_m, bh, num_m_blocks, gl.num_programs(1), head_group)
    b = bh // Hq
    h = bh % Hq
    hk = h // GROUP
    q_first = pid_m * 128
    if VARLEN:
        q_start = gl.load(cu_q + b)
        Sq = gl.load(cu_q + b + 1) - q_start
        k_start = gl.load(cu_k + b)
        Sk = gl.load(cu_k + b + 1) - k_start
        v_row = hk * HEAD_DIM
        v_col0 = gl.load(vt_cols + b)
        lse_row0 = h * gl.load(cu_q + gl.num_programs(1) // Hq) + q_start
    else:
        q_start = b * Sq
        k_start = b * Sk
        v_row = (b * Hkv + hk) * HEAD_DIM
        v_col0 = 0
        lse_row0 = bh * Sq
    if q_first >= Sq:  # varlen: a query block past this sequence's end
        return
    ds_idx = b * Hkv + hk if DESCALE_PER_HEAD else 0
    dsc = gl.load(q_descale + ds_idx) * gl.load(k_descale + ds_idx)
    o_scale = gl.load(v_descale + ds_idx)
    if out.dtype.element_ty == gl.float8e4nv:  # out ≈ out_fp8 * out_scale, () or (B, Hq)
        o_scale = o_scale / gl.load(out_scale + (bh if OUT_SCALE_PER_HEAD else 0))
    n_blocks = gl.cdiv(Sk, BLOCK_N)
    if CAUSAL:  # bottom-right: the block's last row q_first + 127 sees keys <= q_first + 127 + Sk - Sq
        n_blocks = gl.minimum(n_blocks, gl.cdiv(gl.maximum(q_first + 128 + Sk - Sq, 0), BLOCK_N))
    MAY_SEE_NO_KEY: gl.constexpr = CAUSAL or VARLEN  # dense non-causal programs always have Sk >= 1 keys
    if MAY_SEE_NO_KEY:
        if n_blocks == 0:
            # No key to see (causal with Sq - Sk >= 128 rows above the keys, an empty varlen key sequence): O = 0
            # and lse = -inf, written here so that the consumers' loops always have block 0 (a runtime guard
            # around the overlapped loop cost 28-52 spill stores).
            _write_no_keys(out, lse, q_start, q_first, Sq, h * HEAD_DIM, stride_out, lse_row0, HEAD_DIM,
                           RETURN_LSE)
            return

    q_smem = gl.allocate_shared_memory(q_desc.dtype, [128, HEAD_DIM], q_desc.layout)
    k_ring = gl.allocate_shared_memory(k_desc.dtype, [STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_ring = gl.allocate_shared_memory(vt_desc.dtype, [STAGES, HEAD_DIM, BLOCK_N], vt_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    gl.static_assert(not (ROW_SUM_MMA and (OVERLAP or RETURN_LSE)),
                     "row sums on the tensor core: serial loop only, and not with the lse output (it stays exact)")
    if ROW_SUM_MMA:
        # 16 x BLOCK_N E4M3 ones, the B operand of the row-sum wgmma (read by both consumer groups), loaded by TMA
        # with Q from a global tile as the Triton kernel does (stored from registers before the partitions
        # started, the sums came out wrong on the H200: s17 call 3, cause not found)
        ones_smem = gl.allocate_shared_memory(ones_desc.dtype, [16, BLOCK_N], ones_desc.layout)
    else:
        ones_smem = q_smem  # unused
    mbarrier.init(q_bar, count=1)
    mbarrier.init(turn.index(0), count=1)
    mbarrier.init(turn.index(1), count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)  # both consumer warp groups read every slot
    fence_async_shared()

    gl.warp_specialize([
        (_consumer, (0, q_smem, k_ring, v_ring, ones_smem, q_bar, ready, empty, turn, out, lse, qk_scale * dsc, o_scale,
                     q_first, Sq, Sk, q_start, h * HEAD_DIM, stride_out, lse_row0, n_blocks, BLOCK_N, HEAD_DIM, STAGES,
                     LOG2_P_SCALE, PERMUTE_P, OVERLAP, PINGPONG, P_CARRY, CAUSAL, RETURN_LSE, ROW_SUM_MMA)),
        (_consumer, (1, q_smem, k_ring, v_ring, ones_smem, q_bar, ready, empty, turn, out, lse, qk_scale * dsc, o_scale,
                     q_first, Sq, Sk, q_start, h * HEAD_DIM, stride_out, lse_row0, n_blocks, BLOCK_N, HEAD_DIM, STAGES,
                     LOG2_P_SCALE, PERMUTE_P, OVERLAP, PINGPONG, P_CARRY, CAUSAL, RETURN_LSE, ROW_SUM_MMA)),
        (_loader, (q_desc, k_desc, vt_desc, ones_desc, q_smem, k_ring, v_ring, ones_smem, q_bar, ready, empty,
                   q_start + q_first, h * HEAD_DIM, k_start, hk * HEAD_DIM, v_row, v_col0, n_blocks, BLOCK_N, STAGES,
                   ROW_SUM_MMA)),
    ], [4, 1], [CONSUMER_REGS, LOADER_REGS])


# ------------------------------------------------------------------------------------------------------------------
# Host side (prepared: used by tests/test_attention_gluon.py only)

_LOG2E = 1.4426950408889634


def vt_layout(v8, permute_keys: bool = False):
    """Vᵀ of an FP8 V (B, Sk, Hkv, D) in the kernel's layout: (B, Hkv, D, round32(Sk)), padding columns zero
    (the library's relayout pass, ``attention._quantize_heads(transpose=True)``, writes the same layout; with
    ``permute_keys`` key 16a + 8b + 2r + e of each 32-key chunk sits at 16a + 4r + 2b + e, as there)."""
    import torch

    b, sk, hkv, d = v8.shape
    cols = max(32, -(-sk // 32) * 32)
    vt = torch.zeros((b, hkv, d, cols), dtype=v8.dtype, device=v8.device)
    vt[..., :sk] = v8.permute(0, 2, 3, 1)
    if permute_keys:
        vt = vt.reshape(b, hkv, d, cols // 32, 2, 2, 4, 2).permute(0, 1, 2, 3, 4, 6, 5, 7).reshape(b, hkv, d, cols)
        vt = vt.contiguous()
    return vt


def launch(q8, k8, vt, out, q_descale, k_descale, v_descale, softmax_scale: float, *, block_n: int = 128,
           stages: int = 3, permute_p: bool = False, overlap: bool = False, pingpong: bool = False,
           p_carry: int = 0, causal: bool = False, lse=None, cu_q=None, cu_k=None,
           vt_cols=None, max_seqlen_q: int = 0, out_scale=None, warmup: bool = False, fast_launch: bool = False,
           row_sum_mma: bool = False, head_group: int = 1):
    """out (B, Sq, Hq, D) bf16 = attention of E4M3 q8 (B, Sq, Hq, D), k8 (B, Sk, Hkv, D) and ``vt`` from
    :func:`vt_layout` (``permute_keys=permute_p``); descales fp32, (B, Hkv) contiguous or one element each (per
    tensor); dense; causal bottom-right;
    ``lse`` an fp32 (B, Hq, Sq) tensor to receive the log-sum-exp, or None. Inputs are not validated here;
    Sk >= 1 (the overlapped form always reads block 0). Varlen: ``cu_q`` / ``cu_k`` int32 (B + 1), q8 (total_q, Hq,
    D), k8 (total_k, Hkv, D), ``vt`` (Hkv, D, cols) with sequence b's columns from ``vt_cols[b]`` (the relayout
    pass's layout), out (total_q, Hq, D), lse (Hq, total_q), ``max_seqlen_q`` for the grid. An E4M3 ``out``
    needs ``out_scale`` (fp32, one element or (B, Hq) contiguous). ``row_sum_mma``: the softmax row sums on the
    tensor core (serial loop, no lse: see :func:`_step`)."""
    import torch

    # The overlapped loop holds blocks j-1 and j and waits for j+1 before releasing j-1: 2 stages deadlock.
    assert stages >= 3 or not overlap, "launch: the overlapped form needs stages >= 3"
    grid, args = launch_args(q8, k8, vt, out, q_descale, k_descale, v_descale, softmax_scale, block_n=block_n,
                             lse=lse, cu_q=cu_q, cu_k=cu_k, vt_cols=vt_cols, max_seqlen_q=max_seqlen_q,
                             out_scale=out_scale, row_sum_mma=row_sum_mma, head_group=head_group)
    varlen = cu_q is not None
    D, Hq, Hkv = q8.shape[-1], q8.shape[-2], k8.shape[-2]
    assert not (row_sum_mma and (overlap or lse is not None)), "launch: row_sum_mma runs the serial loop, no lse"
    name = _name(D, block_n, stages, permute_p, overlap, pingpong, p_carry, causal, lse is not None, varlen,
                 {torch.bfloat16: "bf16", torch.float16: "f16", torch.float8_e4m3fn: "e4m3"}[out.dtype],
                 row_sum_mma).build()
    fp8_out = out.dtype == torch.float8_e4m3fn
    assert out_scale is not None or not fp8_out, "launch: an E4M3 output needs out_scale"
    kw = dict(KERNEL_NAME=name, BLOCK_N=block_n, HEAD_DIM=D, GROUP=Hq // Hkv, STAGES=stages, LOG2_P_SCALE=8,
              PERMUTE_P=permute_p, OVERLAP=overlap, PINGPONG=pingpong, P_CARRY=p_carry,
              CAUSAL=causal, RETURN_LSE=lse is not None, DESCALE_PER_HEAD=q_descale.numel() > 1,
              VARLEN=varlen, OUT_SCALE_PER_HEAD=fp8_out and out_scale.numel() > 1,
              CONSUMER_REGS=CONSUMER_REGS, LOADER_REGS=LOADER_REGS,
              num_warps=4, ROW_SUM_MMA=row_sum_mma)
    if warmup:
        return attn_fwd_glws_kernel.warmup(*args, grid=grid, **kw)
    if fast_launch:  # attention._FAST_FWD (on by default): Triton's dispatch skipped on repeat calls
        from tritonfp8 import _launch

        return _launch.launch(attn_fwd_glws_kernel, grid, *args, **kw)
    return attn_fwd_glws_kernel[grid](*args, **kw)


def launch_args(q8, k8, vt, out, q_descale, k_descale, v_descale, softmax_scale: float, *, block_n: int, lse=None,
                cu_q=None, cu_k=None, vt_cols=None, max_seqlen_q: int = 0, out_scale=None,
                row_sum_mma: bool = False, head_group: int = 1) -> tuple:
    """(grid, runtime arguments in order) of :func:`attn_fwd_glws_kernel` for :func:`launch`'s operands (shared by
    :func:`launch` and the public op's replay of a recorded launch). TMA descriptors are built without
    ``from_tensor``'s checks (the caller validated the operands; the shared layouts are cached)."""
    import torch

    from tritonfp8._kernels.gemm_gluon import _descriptor

    if cu_q is not None:
        B, (Hq, D), Hkv = cu_q.numel() - 1, q8.shape[1:], k8.shape[1]
        rows_q, rows_k, Sq, Sk, m_blocks = q8.shape[0], k8.shape[0], 0, 0, triton.cdiv(max_seqlen_q, BLOCK_M)
    else:
        B, Sq, Hq, D = q8.shape
        Sk, Hkv = k8.shape[1], k8.shape[2]
        assert Sk >= 1, "launch: Sk = 0 (the caller writes zeros)"
        rows_q, rows_k, m_blocks = B * Sq, B * Sk, triton.cdiv(Sq, BLOCK_M)
        cu_q = cu_k = vt_cols = q_descale  # unused pointers
    q_desc = _descriptor(q8.view(rows_q, Hq * D), [BLOCK_M, D])
    k_desc = _descriptor(k8.view(rows_k, Hkv * D), [block_n, D])
    vt_desc = _descriptor(vt.view(-1, vt.shape[-1]), [D, block_n])
    # the row sums' block of ones ([16, block_n] E4M3, one per device and width); unused: Vᵀ's descriptor again
    ones_desc = (_descriptor(_triton_attn.ones_tile(block_n, q8.device), [16, block_n]) if row_sum_mma
                 else vt_desc)
    fp8_out = out.dtype == torch.float8_e4m3fn
    args = (q_desc, k_desc, vt_desc, ones_desc, out, out if lse is None else lse, q_descale, k_descale, v_descale,
            out_scale if fp8_out else q_descale, softmax_scale * _LOG2E, Sq, Sk, Hq, Hkv, Hq * D, cu_q, cu_k,
            vt_cols, m_blocks, head_group)
    return (m_blocks, B * Hq), args


# ------------------------------------------------------------------------------------------------------------------
# Offline codegen specs

def _desc_sig(block: tuple[int, int]) -> str:
    swizzle = min(128, block[1])
    return (f"tensordesc<fp8e4nv[{block[0]}, {block[1]}],NVMMASharedLayout(swizzle_byte_width={swizzle}, "
            f"element_bitwidth=8, rank=2, transposed=False, fp4_padded=False, cga_layout=[])>")


@functools.lru_cache(maxsize=256)
def _name(head_dim, block_n, stages, permute_p, overlap, pingpong, p_carry, causal, lse, varlen, out_type,
          row_sum_mma=False):
    """The KernelName of one configuration (cached: :func:`launch` asks for it on every call; ``.build()`` then
    applies the naming mode in force)."""
    from tritonfp8.naming import KernelName

    return KernelName(arch=90, op="fmhafwd", types=("e4m3", "e4m3", "f32", out_type), tile=(BLOCK_M, block_n,
                      head_dim), warps=4, stages=stages, schedule="glws", scaling="headwise",
                      extras=(("permp",) if permute_p else ()) + (("ovl",) if overlap else ())
                      + (("pp",) if pingpong else ()) + ((f"pc{p_carry}",) if p_carry else ())
                      + (("causal",) if causal else ()) + (("lse",) if lse else ())
                      + (("varlen",) if varlen else ()) + (("rsmma",) if row_sum_mma else ()))


def codegen_spec(*, head_dim: int = 128, block_n: int = 128, stages: int = 3, permute_p: bool = False,
                 overlap: bool = False, pingpong: bool = False, p_carry: int = 0, causal: bool = False,
                 lse: bool = False, out_type: str = "bf16", varlen: bool = False,
                 description: str = "", row_sum_mma: bool = False):
    from tritonfp8.codegen import CodegenSpec

    name = _name(head_dim, block_n, stages, permute_p, overlap, pingpong, p_carry, causal, lse, varlen,
                 out_type, row_sum_mma)
    sig = {"q_desc": _desc_sig((BLOCK_M, head_dim)), "k_desc": _desc_sig((block_n, head_dim)),
           "vt_desc": _desc_sig((head_dim, block_n)),
           "ones_desc": _desc_sig((16, block_n) if row_sum_mma else (head_dim, block_n)),
           "out": "*" + {"bf16": "bf16", "f16": "fp16", "e4m3": "fp8e4nv"}[out_type],
           "lse": "*fp32", "q_descale": "*fp32", "out_scale": "*fp32",
           "k_descale": "*fp32", "v_descale": "*fp32", "qk_scale": "fp32", "Sq": "i32", "Sk": "i32", "Hq": "i32",
           "Hkv": "i32", "stride_out": "i32", "cu_q": "*i32", "cu_k": "*i32", "vt_cols": "*i32", "num_m_blocks": "i32",
           "head_group": "i32"}
    const = dict(BLOCK_N=block_n, HEAD_DIM=head_dim, GROUP=4, STAGES=stages, LOG2_P_SCALE=8, PERMUTE_P=permute_p,
                 OVERLAP=overlap, PINGPONG=pingpong, P_CARRY=p_carry, CAUSAL=causal, RETURN_LSE=lse,
                 DESCALE_PER_HEAD=True, VARLEN=varlen, OUT_SCALE_PER_HEAD=True,
                 CONSUMER_REGS=CONSUMER_REGS, LOADER_REGS=LOADER_REGS, num_warps=4, ROW_SUM_MMA=row_sum_mma)
    for k in const:
        sig[k] = "constexpr"
    return CodegenSpec(fn=attn_fwd_glws_kernel, signature=sig, constexprs=const, name=name, num_warps=4,
                       num_stages=stages, min_arch=90, description=description,
                       divisible=("out", "lse", "q_descale", "k_descale", "v_descale", "out_scale", "cu_q", "cu_k",
                                  "vt_cols"))


def codegen_specs() -> dict:
    return {
        "attn_glws_hd128": codegen_spec(description="Gluon FP8 attention forward (prepared, not run): loader warp "
                                                    "+ 2 consumer warp groups, hd128"),
        "attn_glws_hd64": codegen_spec(head_dim=64, description="Gluon FP8 attention forward (prepared), hd64"),
        "attn_glws_hd128_perm": codegen_spec(permute_p=True, description="Gluon FP8 attention forward (prepared), "
                                                                         "hd128, keys permuted in P and Vᵀ"),
        "attn_glws_hd128_ovl": codegen_spec(overlap=True, description="Gluon FP8 attention forward, hd128, "
                                                                      "intra-warpgroup overlap (S_j under P_{j-1}V)"),
        "attn_glws_hd64_ovl": codegen_spec(head_dim=64, overlap=True, description="Gluon FP8 attention forward, "
                                                                                  "hd64, intra-warpgroup overlap"),
        "attn_glws_hd128_ovlpp": codegen_spec(overlap=True, pingpong=True,
                                              description="Gluon FP8 attention forward, hd128, intra-warpgroup "
                                                          "overlap + ping-pong between the consumer groups"),
        "attn_glws_hd128_ovlpc1": codegen_spec(overlap=True, p_carry=1,
                                               description="Gluon FP8 attention forward, hd128, overlapped, fp32 P "
                                                           "carried into the next step (no byte repacking)"),
        "attn_glws_hd128_ovlpc1_causal_lse": codegen_spec(overlap=True, p_carry=1, causal=True, lse=True,
                                                          description="Gluon FP8 attention forward, hd128, "
                                                                      "overlapped, causal, lse output"),
        "attn_glws_hd128_ovlpc1_varlen_causal": codegen_spec(overlap=True, p_carry=1, varlen=True, causal=True,
                                                             lse=True, description="Gluon FP8 attention forward, "
                                                             "hd128, overlapped, varlen, causal, lse"),
        "attn_glws_hd128_ovlpc1_varlen": codegen_spec(overlap=True, p_carry=1, varlen=True,
                                                      description="Gluon FP8 attention forward, hd128, "
                                                                  "overlapped, varlen"),
        "attn_glws_hd128_ovlpc1_e4m3out": codegen_spec(overlap=True, p_carry=1, out_type="e4m3",
                                                       description="Gluon FP8 attention forward, hd128, "
                                                                   "overlapped, E4M3 output"),
        "attn_glws_hd128_causal": codegen_spec(causal=True, description="Gluon FP8 attention forward, hd128, "
                                                                        "serial, causal"),
        # session 17: the hd128 dense default on sm_90 (attention.GLWS_DENSE_DEFAULTS[128]) and the forms beside it
        "attn_glws_hd128_bn256": codegen_spec(block_n=256, stages=2,
                                              description="Gluon FP8 attention forward, hd128, 128 x 256 tiles, "
                                                          "serial, 2 stages (the dense non-causal default)"),
        "attn_glws_hd128_bn256_lse": codegen_spec(block_n=256, stages=2, lse=True,
                                                  description="the hd128 dense default returning the lse"),
        "attn_glws_hd128_bn256_rsmma": codegen_spec(block_n=256, stages=2, row_sum_mma=True,
                                                    description="128 x 256 tiles, row sums on the tensor core "
                                                                "(ones by TMA)"),
        "attn_glws_hd128_pp": codegen_spec(pingpong=True, description="Gluon FP8 attention forward, hd128, serial "
                                                                      "ping-pong loop"),
        # hd256 on 128 x 128 tiles (prepared in session 17, not run): 2 stages fill 164 KB; serial loop, 548
        # instructions per 64 x 128 block (8.6 per score) against the default's 409 per 64 x 64 (12.8)
        "attn_glws_hd256_bn128": codegen_spec(head_dim=256, block_n=128, stages=2,
                                              description="Gluon FP8 attention forward, hd256, 128 x 128 tiles, "
                                                          "serial, 2 stages (the hd256 default)"),
        "attn_glws_hd256_bn128_causal": codegen_spec(head_dim=256, block_n=128, stages=2, causal=True,
                                                     description="Gluon FP8 attention forward, hd256 causal, "
                                                                 "128 x 128 tiles, serial, 2 stages (default)"),
        "attn_glws_hd128_bn256_causal": codegen_spec(block_n=256, stages=2, causal=True,
                                                     description="Gluon FP8 attention forward, hd128 causal, "
                                                                 "128 x 256 tiles, serial, 2 stages"),
    }
