"""Precise and block-scaled FP8 GEMM for Hopper in Gluon: each warp group's fp32 promotion under the other's wgmma.

Why a second kernel. The Triton kernel (``gemm.py``) promotes every 128-wide K block into fp32 (precise mode and
block scales), but Triton 3.6 places ``warp_group_dot_wait {pendings = 0}`` right after each fresh ``tl.dot``, so
the tensor cores idle while the 64 promotion FADD/FFMA per thread run: 0.77x cuBLAS exact, 0.68x cuBLAS blockwise
on the H200 (benchmarks/NOTES.md, sessions 2-5), and Triton 3.6's automatic warp specialization hangs on those
configs. Gluon, Triton's lower-level dialect (``triton.experimental.gluon``, shipped with Triton 3.6), exposes
``warpgroup_mma(is_async=True)``, ``warpgroup_mma_wait``, mbarriers, TMA and explicit ``warp_specialize``, so the
schedule of CUTLASS's warp-specialized FP8 kernels can be written down.

Partitions of one program (one per SM, persistent over 128 x BLOCK_N output tiles in grouped order):

- loader (1 warp, 40 registers): for every (tile, 128-wide K block) waits the ring slot's ``empty`` barrier, then
  TMA-loads a (128 x 128), b (BLOCK_N x 128) and, with 1x128 x 128x128 block scales, a's scale column for the
  tile's rows (see :func:`launch`) into it, completing on the slot's ``ready`` barrier;
- two consumers (one warp group each, 232 registers), rows 0-63 and 64-127 of the tile: per K block wait
  ``ready``, one async ``warpgroup_mma`` into a fresh accumulator, ``warpgroup_mma_wait(0)``, arrive on ``empty``
  (count 2: both groups), then ``acc += t`` (precise) or ``acc += t * sa[rows] * sb`` (block scales).

The two groups meet only through the ring, so their wgmmas alternate on the tensor cores and each group's
promotion runs during the other's MMA. (Inside one group it cannot: an accumulator kept in flight across the loop's
back edge makes ptxas serialize every wgmma, warning C7514, measured offline.) Fast accumulation (FAST) chains
one accumulator over K with one wgmma group in flight and allows BLOCK_N = 256. Epilogue per group: scales, bias,
activation, one rounding, TMA store of its 64-row half in one or two column pieces.

Scales are fp32 dequantization factors. SCALE_A: 0 per tensor (scalar at scale_a[0]), 1 per row of a (M,),
2 block (M, ceil(K/128)) for 1x128 groups. SCALE_B: 0 per tensor, 1 per row of b (N,), 2 block (N, ceil(K/128))
for 1x128 groups, 3 block (ceil(N/128), ceil(K/128)) for 128x128 blocks. Block modes multiply each K block's
fresh product by ``sa[rows, kb][:, None] * sb[cols, kb][None, :]`` before adding it (both operands in block
modes); the other modes apply their scales once in the epilogue.

No interpreter: Gluon kernels do not run under ``TRITON_INTERPRET``; CPU tests cover the host logic and the
offline sm_90 compile (QGMMA present, no spills, register split, wgmma chains waited once), GPU tests the numbers
(``tests/test_gemm_gluon.py``). Measured results: docs/gemm.md.
"""

from __future__ import annotations

import functools

import torch
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

from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from tritonfp8 import _launch as _fast
from tritonfp8._kernels import gemm as _triton_gemm
from tritonfp8._kernels.gemm_configs import effective_split
from tritonfp8.naming import _repr_from_constexpr

SCALE_TENSOR, SCALE_ROW, SCALE_BLOCK_1X128, SCALE_BLOCK_128X128 = 0, 1, 2, 3


def named_gluon_jit(fn=None, **kwargs):
    """``gluon.jit`` whose compiled symbol is the ``KERNEL_NAME`` constexpr (as :func:`tritonfp8.naming.named_jit`)."""
    if fn is None:
        return lambda f: named_gluon_jit(f, **kwargs)
    return gluon.jit(fn, repr=_repr_from_constexpr, **kwargs)


# Shared with the Triton kernel (same source, compiled as Gluon): the grouped tile order and the activations.
_tile_coords = gluon.jit(_triton_gemm._tile_coords.fn)
_apply_activation = gluon.jit(_triton_gemm._apply_activation.fn)


@gluon.jit
def _block_scale_b(scale_b, kb, K_BLOCKS, off_n, N, stride_sb_n, stride_sb_k):
    """b's 128x128 block scale of the N block at column off_n, K block kb (0 past K or N)."""
    return gl.load(scale_b + (off_n // 128).to(gl.int64) * stride_sb_n + kb * stride_sb_k,
                   mask=(kb < K_BLOCKS) & (off_n < N), other=0.0)


@gluon.jit
def _block_scales(scale_a, scale_b, kb, K_BLOCKS, offs_m, offs_n, off_n, M, N, stride_sa_m, stride_sa_k,
                  stride_sb_n, stride_sb_k, SCALE_A: gl.constexpr, SCALE_B: gl.constexpr,
                  SA_TMA: gl.constexpr = False):
    """(sa, sb) of K block kb: sa (BLOCK_M,) rows of a; sb a scalar (128x128 blocks) or (BLOCK_N,) columns.
    Block kb >= K_BLOCKS (the prefetch past the last block) gets 0. Unused (1.0, 1.0) for the non-block modes."""
    if SCALE_A == 2:
        kvalid = kb < K_BLOCKS
        if SA_TMA:
            sa = 1.0  # comes through shared memory with the tiles
        else:
            sa = gl.load(scale_a + offs_m.to(gl.int64) * stride_sa_m + kb * stride_sa_k,
                         mask=(offs_m < M) & kvalid, other=0.0)
        if SCALE_B == 3:
            sb = _block_scale_b(scale_b, kb, K_BLOCKS, off_n, N, stride_sb_n, stride_sb_k)
        else:
            sb = gl.load(scale_b + offs_n.to(gl.int64) * stride_sb_n + kb * stride_sb_k, mask=(offs_n < N) & kvalid,
                         other=0.0)
        return sa, sb
    else:
        return 1.0, 1.0


@gluon.jit
def _promote(acc, t, sa, sb, SCALE_A: gl.constexpr, SCALE_B: gl.constexpr):
    """acc + t (precise) or acc + t * sa[:, None] * sb (block scales), in fp32."""
    if SCALE_A == 2:
        if SCALE_B == 3:
            return acc + t * (sa * sb)[:, None]
        else:
            return acc + t * (sa[:, None] * sb[None, :])
    else:
        return acc + t


@gluon.jit
def _work_unit(unit, num_tiles, k_blocks, SPLIT_K: gl.constexpr):
    """(tile, split, first K block, end K block) of work unit ``unit``: units ``split * num_tiles + tile``, each
    split a run of ceil(k_blocks / SPLIT_K) K blocks (the launcher picks SPLIT_K so that none is empty)."""
    if SPLIT_K == 1:
        return unit, 0, 0, k_blocks
    else:
        k_per = gl.cdiv(k_blocks, SPLIT_K)
        split = unit // num_tiles
        kb_lo = split * k_per
        return unit % num_tiles, split, kb_lo, gl.minimum(k_blocks, kb_lo + k_per)


@gluon.jit
def _add(x, y):
    return x + y


@gluon.jit
def _schedule(group_rows, num_groups, group_cap, M, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
              GROUPED: gl.constexpr, G_PAD: gl.constexpr, WARPS: gl.constexpr):
    """The tile schedule of this launch: (num_tiles, num_pid_m, num_pid_n, g_idx, g_lo, g_hi, g_tiles, g_cum).

    Dense (GROUPED 0): cdiv(M, BLOCK_M) x cdiv(N, BLOCK_N) tiles; the group vectors are unused zeros.
    Grouped (as the Triton kernel's grouped mode, read on the device, no host sync): per group g < num_groups its
    row window [g_lo, g_hi) of a and C (GROUPED 1: int32 offsets (G+1,); 3: sizes (G,), prefix-summed here;
    2: masked, window g * group_cap + [0, count)), clamped to [0, M] so malformed sizes cannot address outside
    C; its tile count (row tiles of the window x column tiles) and their inclusive prefix sum. Each partition
    computes the same table (``WARPS``: the partition's warps, for the vectors' layout)."""
    num_pid_n = gl.cdiv(N, BLOCK_N)
    num_pid_m = gl.cdiv(M, BLOCK_M)
    if GROUPED == 0:
        num_tiles = num_pid_m * num_pid_n
        g_idx = 0
        g_lo = 0
        g_hi = 0
        g_tiles = 0
        g_cum = 0
    else:
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [WARPS], [0])
        g_idx = gl.arange(0, G_PAD, layout=layout)
        valid = g_idx < num_groups
        if GROUPED == 1:
            g_lo = gl.load(group_rows + g_idx, mask=valid, other=0)
            g_hi = gl.load(group_rows + g_idx + 1, mask=valid, other=0)
        elif GROUPED == 3:
            size = gl.load(group_rows + g_idx, mask=valid, other=0)
            g_hi = gl.associative_scan(size, 0, _add)
            g_lo = g_hi - size
        else:
            g_lo = g_idx * group_cap
            g_hi = g_lo + gl.load(group_rows + g_idx, mask=valid, other=0)
        g_lo = gl.minimum(gl.maximum(g_lo, 0), M)
        g_hi = gl.minimum(gl.maximum(g_hi, g_lo), M)
        g_tiles = gl.cdiv(g_hi - g_lo, BLOCK_M) * num_pid_n
        g_cum = gl.associative_scan(g_tiles, 0, _add)
        num_tiles = gl.sum(g_tiles, 0)
    return num_tiles, num_pid_m, num_pid_n, g_idx, g_lo, g_hi, g_tiles, g_cum


@gluon.jit
def _tile_at(tile_id, M, num_pid_m, num_pid_n, g_idx, g_lo, g_hi, g_tiles, g_cum, BLOCK_M: gl.constexpr,
             GROUP_M: gl.constexpr, GROUPED: gl.constexpr):
    """(group, first row of the tile in a and C, end of the rows it may store, column tile) of tile ``tile_id``.
    Grouped: the group is the number of groups whose inclusive tile prefix sum is <= tile_id (empty groups have
    no tiles; padding lanes hold the total, which no tile reaches); tiles walk their group in grouped order."""
    if GROUPED == 0:
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        g = 0
        row0 = pid_m * BLOCK_M
        row_end = M
    else:
        g = gl.sum((g_cum <= tile_id).to(gl.int32), 0)
        sel = g_idx == g
        first = gl.sum(gl.where(sel, g_cum - g_tiles, 0), 0)
        row_lo = gl.sum(gl.where(sel, g_lo, 0), 0)
        row_end = gl.sum(gl.where(sel, g_hi, 0), 0)
        pid_m, pid_n = _tile_coords(tile_id - first, gl.cdiv(row_end - row_lo, BLOCK_M), num_pid_n, GROUP_M)
        row0 = row_lo + pid_m * BLOCK_M
    return g, row0, row_end, pid_n


@gluon.jit
def _loader(a_desc, b_desc, sa_desc, a_ring, b_ring, sa_ring, ready, empty, M, N, K, sa_col,
            group_rows, num_groups, group_cap,
            BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
            STAGES: gl.constexpr, SA_TMA: gl.constexpr, SPLIT_K: gl.constexpr, GROUPED: gl.constexpr,
            G_PAD: gl.constexpr):
    """Producer partition (one warp): TMA loads of every (tile, K block) of this program into the ring; with
    SA_TMA also the K block's column of a's 1x128 block scales (the rows of this tile: BLOCK_M fp32 from the
    flattened (ceil(K/128), M rounded up to 4) transposed scales; ``sa_col`` = that row length). Grouped: b is
    the (G*N, K) view of the (G, N, K) weights, group g's rows from g*N."""
    num_tiles, num_pid_m, num_pid_n, g_idx, g_lo, g_hi, g_tiles, g_cum = _schedule(
        group_rows, num_groups, group_cap, M, N, BLOCK_M, BLOCK_N, GROUPED, G_PAD, 1)
    k_blocks = gl.cdiv(K, BLOCK_K)
    nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes + (BLOCK_M * 4 if SA_TMA else 0)
    li = 0
    for unit in range(gl.program_id(0), num_tiles * SPLIT_K, gl.num_programs(0)):
        tile_id, split, kb_lo, kb_hi = _work_unit(unit, num_tiles, k_blocks, SPLIT_K)
        g, row0, row_end, pid_n = _tile_at(tile_id, M, num_pid_m, num_pid_n, g_idx, g_lo, g_hi, g_tiles, g_cum,
                                           BLOCK_M, GROUP_M, GROUPED)
        b_row = g * N + pid_n * BLOCK_N
        for kb in range(kb_lo, kb_hi):
            s = li % STAGES
            # A fresh barrier counts as having completed the phase before phase 0: the first pass does not wait.
            mbarrier.wait(empty.index(s), ((li // STAGES) & 1) ^ 1)
            bar = ready.index(s)
            mbarrier.expect(bar, nbytes)
            tma.async_copy_global_to_shared(a_desc, [row0, kb * BLOCK_K], bar, a_ring.index(s))
            tma.async_copy_global_to_shared(b_desc, [b_row, kb * BLOCK_K], bar, b_ring.index(s))
            if SA_TMA:
                # Rows past M read padding or the next column's first scales (finite; those rows are zero-filled
                # in a and clipped in C), past the end TMA fills zeros.
                tma.async_copy_global_to_shared(sa_desc, [kb * sa_col + row0], bar, sa_ring.index(s))
            li += 1


@gluon.jit
def _store_piece(v, c_desc, c_smem, off_m, off_n):
    """TMA store of one (64, EPI_N) piece through this warp group's staging buffer."""
    tma.store_wait(pendings=0)  # the previous store has read the buffer
    c_smem.store(v)
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)


@gluon.jit
def _store_tile(v, c_desc, c_smem, out_ptr, offs_m, offs_n, off_m, off_n, row_end, N, GROUPED: gl.constexpr):
    """Store one warp group's (64, W) result at (off_m, off_n) by TMA, in one or two EPI_N-wide column pieces
    (through one staging buffer: its TMA read is done long before the second piece is converted). A grouped tile
    reaching past its group's rows (a TMA box would overwrite the next group's) stores through pointers instead,
    masked to rows < row_end and columns < N."""
    WG_M: gl.constexpr = v.shape[0]
    if GROUPED == 0:
        _store_tma(v, c_desc, c_smem, off_m, off_n)
    elif off_m + WG_M <= row_end:
        _store_tma(v, c_desc, c_smem, off_m, off_n)
    else:
        mask = (offs_m < row_end)[:, None] & (offs_n < N)[None, :]
        gl.store(out_ptr + offs_m.to(gl.int64)[:, None] * N + offs_n[None, :], v, mask=mask)


@gluon.jit
def _store_tma(v, c_desc, c_smem, off_m, off_n):
    WG_M: gl.constexpr = v.shape[0]
    W: gl.constexpr = v.shape[1]
    EPI_N: gl.constexpr = c_desc.block_type.shape[1]
    if EPI_N == W:
        _store_piece(v, c_desc, c_smem, off_m, off_n)
    else:
        gl.static_assert(2 * EPI_N == W, "the epilogue stores one or two column pieces")
        lo, hi = gl.split(v.reshape([WG_M, 2, EPI_N]).permute((0, 2, 1)))
        _store_piece(lo, c_desc, c_smem, off_m, off_n)
        _store_piece(hi, c_desc, c_smem, off_m, off_n + EPI_N)


@gluon.jit
def _finish(acc, offs_m, offs_n, s_tensor, scale_a, scale_b, bias, M, N, SCALE_A: gl.constexpr,
            SCALE_B: gl.constexpr, HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr, out_dtype: gl.constexpr):
    """Epilogue math of one accumulator piece (rows offs_m, columns offs_n): per-row / per-tensor scales, bias,
    activation, one rounding to the output type."""
    if SCALE_A == 1:
        acc = acc * gl.load(scale_a + offs_m, mask=offs_m < M, other=0.0)[:, None]
    if SCALE_B == 1:
        acc = acc * gl.load(scale_b + offs_n, mask=offs_n < N, other=0.0)[None, :]
    if SCALE_A + SCALE_B < 2:  # at least one per-tensor scale
        acc = acc * s_tensor
    if HAS_BIAS:
        acc = acc + gl.load(bias + offs_n, mask=offs_n < N, other=0.0).to(gl.float32)[None, :]
    acc = _apply_activation(acc, ACTIVATION)
    return acc.to(out_dtype)


@gluon.jit
def _store_partial(acc, ws, split, offs_m, offs_n, s_tensor, scale_a, scale_b, M, N, SCALE_A: gl.constexpr,
                   SCALE_B: gl.constexpr):
    """Split ``split``'s scaled fp32 partial of rows offs_m, columns offs_n into ws (SPLIT_K, M, N)."""
    part = _finish(acc, offs_m, offs_n, s_tensor, scale_a, scale_b, scale_a, M, N, SCALE_A, SCALE_B, False, 0,
                   gl.float32)
    rows = (split * M + offs_m).to(gl.int64)
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    gl.store(ws + rows[:, None] * N + offs_n[None, :], part, mask=mask)


@gluon.jit
def _consumer(HALF: gl.constexpr, a_ring, b_ring, sa_ring, ready, empty, c_desc, c_smem, scale_a, scale_b, bias, M, N, K,
              stride_sa_m, stride_sa_k, stride_sb_n, stride_sb_k,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr,
              STAGES: gl.constexpr, SCALE_A: gl.constexpr, SCALE_B: gl.constexpr, HAS_BIAS: gl.constexpr,
              ACTIVATION: gl.constexpr, FAST: gl.constexpr, SA_TMA: gl.constexpr, NSPLIT: gl.constexpr,
              ws, SPLIT_K: gl.constexpr, out_ptr, group_rows, num_groups, group_cap, stride_sa_g, stride_sb_g,
              GROUPED: gl.constexpr, G_PAD: gl.constexpr):
    """Consumer partition (one warp group): rows HALF*64 .. HALF*64+63 of every tile of this program.

    Grouped (GROUPED > 0): the tile's group g selects b's rows (loader), the scales at scale_a + g * stride_sa_g
    and scale_b + g * stride_sb_g, bias row g; rows past the group's end are computed (from the next group's
    rows of a, or TMA's zero fill) but not stored (:func:`_store_tile`).

    NSPLIT (promoting modes, BLOCK_N = 256): the tile's columns are two 128-wide accumulators; each K block runs
    two fresh 64x128 wgmmas, one after the other, each waited and promoted into its own accumulator, so one fresh
    product (64 registers) is live at a time: 3 x 64 fp32 registers where a 64x256 product would need 4 x 64."""
    WG_M: gl.constexpr = BLOCK_M // 2
    MMA_N: gl.constexpr = BLOCK_N // NSPLIT
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, MMA_N, 32])
    row_layout: gl.constexpr = gl.SliceLayout(1, mma_layout)
    col_layout: gl.constexpr = gl.SliceLayout(0, mma_layout)
    num_tiles, num_pid_m, num_pid_n, g_idx, g_lo, g_hi, g_tiles, g_cum = _schedule(
        group_rows, num_groups, group_cap, M, N, BLOCK_M, BLOCK_N, GROUPED, G_PAD, 4)
    k_blocks = gl.cdiv(K, BLOCK_K)
    gl.static_assert(NSPLIT == 1 or (not FAST and SCALE_B != 2), "two column halves: promoting modes, b not 1x128")
    scale_a0 = scale_a
    scale_b0 = scale_b
    bias0 = bias

    ci = 0
    t = gl.zeros([WG_M, MMA_N], gl.float32, mma_layout)
    t1 = t  # the second product in flight (NSPLIT 4)
    for unit in range(gl.program_id(0), num_tiles * SPLIT_K, gl.num_programs(0)):
        tile_id, split, kb_lo, kb_hi = _work_unit(unit, num_tiles, k_blocks, SPLIT_K)
        g, row0, row_end, pid_n = _tile_at(tile_id, M, num_pid_m, num_pid_n, g_idx, g_lo, g_hi, g_tiles, g_cum,
                                           BLOCK_M, GROUP_M, GROUPED)
        if GROUPED > 0:
            scale_a = scale_a0 + g * stride_sa_g
            scale_b = scale_b0 + g.to(gl.int64) * stride_sb_g
            if HAS_BIAS:
                bias = bias0 + g.to(gl.int64) * N
        # The per-tensor factor(s) the epilogue applies (block modes: none; both per row: none).
        s_tensor = 1.0
        if SCALE_A == 0:
            s_tensor = gl.load(scale_a)
            if SCALE_B == 0:
                s_tensor = s_tensor * gl.load(scale_b)
        elif SCALE_A == 1:
            if SCALE_B == 0:
                s_tensor = gl.load(scale_b)
        off_m = row0 + HALF * WG_M
        off_n = pid_n * BLOCK_N
        offs_m = off_m + gl.arange(0, WG_M, layout=row_layout)
        offs_n = off_n + gl.arange(0, MMA_N, layout=col_layout)
        acc = gl.zeros([WG_M, MMA_N], gl.float32, mma_layout)
        acc2 = acc  # the second column half (NSPLIT 2) / quarter (NSPLIT 4)
        acc3 = acc  # quarters 3 and 4 (NSPLIT 4)
        acc4 = acc
        if FAST:
            # Fast accumulation: one chained accumulator over all of K, one wgmma group kept in flight; a slot is
            # released once the group after it has been issued and its own group retired.
            for kb in range(kb_lo, kb_hi):
                s = ci % STAGES
                mbarrier.wait(ready.index(s), (ci // STAGES) & 1)
                a_half = a_ring.index(s).slice(HALF * WG_M, WG_M, dim=0)
                acc = warpgroup_mma(a_half, b_ring.index(s).permute((1, 0)), acc, is_async=True)
                acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
                mbarrier.arrive(empty.index((ci + STAGES - 1) % STAGES), count=1, pred=kb > kb_lo)
                ci += 1
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            mbarrier.arrive(empty.index((ci + STAGES - 1) % STAGES), count=1, pred=kb_hi > kb_lo)
        elif NSPLIT == 4:
            # Four 64-wide quarters per K block, two products (t, t1: 32 registers each) in flight: quarter q + 1
            # runs on the tensor cores while quarter q is promoted, so this warp group's promotion overlaps its
            # own next wgmma (the two-halves form waits for each product before issuing the next).
            for kb in range(kb_lo, kb_hi):
                s = ci % STAGES
                mbarrier.wait(ready.index(s), (ci // STAGES) & 1)
                sa, sb = _block_scales(scale_a, scale_b, kb, k_blocks, offs_m, offs_n, off_n, M, N, stride_sa_m,
                                       stride_sa_k, stride_sb_n, stride_sb_k, SCALE_A, SCALE_B, SA_TMA)
                sb2 = sb
                if SCALE_A == 2:
                    sb2 = _block_scale_b(scale_b, kb, k_blocks, off_n + 2 * MMA_N, N, stride_sb_n, stride_sb_k)
                if SA_TMA:
                    sa = sa_ring.index(s).slice(HALF * WG_M, WG_M).load(row_layout)
                a_half = a_ring.index(s).slice(HALF * WG_M, WG_M, dim=0)
                b_s = b_ring.index(s)
                t = warpgroup_mma(a_half, b_s.slice(0, MMA_N, dim=0).permute((1, 0)), t, use_acc=False,
                                  is_async=True)
                t1 = warpgroup_mma(a_half, b_s.slice(MMA_N, MMA_N, dim=0).permute((1, 0)), t1, use_acc=False,
                                   is_async=True)
                t = warpgroup_mma_wait(num_outstanding=1, deps=(t,))
                acc = _promote(acc, t, sa, sb, SCALE_A, SCALE_B)
                # (Each promoted quarter goes through a wait, as in the two-halves form: the FFMAs then stay above
                # the next wgmma that reuses the product's registers.)
                acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
                t = warpgroup_mma(a_half, b_s.slice(2 * MMA_N, MMA_N, dim=0).permute((1, 0)), t, use_acc=False,
                                  is_async=True)
                t1 = warpgroup_mma_wait(num_outstanding=1, deps=(t1,))
                acc2 = _promote(acc2, t1, sa, sb, SCALE_A, SCALE_B)
                acc2 = warpgroup_mma_wait(num_outstanding=1, deps=(acc2,))
                t1 = warpgroup_mma(a_half, b_s.slice(3 * MMA_N, MMA_N, dim=0).permute((1, 0)), t1, use_acc=False,
                                   is_async=True)
                t = warpgroup_mma_wait(num_outstanding=1, deps=(t,))
                acc3 = _promote(acc3, t, sa, sb2, SCALE_A, SCALE_B)
                acc3 = warpgroup_mma_wait(num_outstanding=1, deps=(acc3,))  # (under the last quarter's wgmma)
                t1 = warpgroup_mma_wait(num_outstanding=0, deps=(t1,))
                mbarrier.arrive(empty.index(s), count=1)
                acc4 = _promote(acc4, t1, sa, sb2, SCALE_A, SCALE_B)
                ci += 1
        elif NSPLIT == 2:
            for kb in range(kb_lo, kb_hi):
                s = ci % STAGES
                mbarrier.wait(ready.index(s), (ci // STAGES) & 1)
                # This K block's scales, loaded under the first wgmma (b's: one scalar per 128-wide column half;
                # loading them a K block ahead measured no different, glws-sb-ahead-20261202-000953.json).
                sa, sb = _block_scales(scale_a, scale_b, kb, k_blocks, offs_m, offs_n, off_n, M, N, stride_sa_m,
                                       stride_sa_k, stride_sb_n, stride_sb_k, SCALE_A, SCALE_B, SA_TMA)
                sb2 = sb
                if SCALE_A == 2:
                    sb2 = _block_scale_b(scale_b, kb, k_blocks, off_n + MMA_N, N, stride_sb_n, stride_sb_k)
                if SA_TMA:
                    sa = sa_ring.index(s).slice(HALF * WG_M, WG_M).load(row_layout)
                a_half = a_ring.index(s).slice(HALF * WG_M, WG_M, dim=0)
                b_s = b_ring.index(s)
                t = warpgroup_mma(a_half, b_s.slice(0, MMA_N, dim=0).permute((1, 0)), t, use_acc=False,
                                  is_async=True)
                t = warpgroup_mma_wait(num_outstanding=0, deps=(t,))
                acc = _promote(acc, t, sa, sb, SCALE_A, SCALE_B)
                # An empty wait that takes the promoted half: LLVM otherwise sinks these FFMAs below the next
                # wgmma, which then needs a second 64-register product (256 registers: spills, measured offline).
                acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
                t = warpgroup_mma(a_half, b_s.slice(MMA_N, MMA_N, dim=0).permute((1, 0)), t, use_acc=False,
                                  is_async=True)
                t = warpgroup_mma_wait(num_outstanding=0, deps=(t,))
                mbarrier.arrive(empty.index(s), count=1)
                acc2 = _promote(acc2, t, sa, sb2, SCALE_A, SCALE_B)
                ci += 1
        else:
            # Block scales are loaded one K block ahead: their global-load latency would otherwise sit between
            # the wgmma's completion and the promotion that needs them.
            sa_next, sb_next = _block_scales(scale_a, scale_b, kb_lo, k_blocks, offs_m, offs_n, off_n, M, N,
                                             stride_sa_m, stride_sa_k, stride_sb_n, stride_sb_k, SCALE_A, SCALE_B,
                                             SA_TMA)
            for kb in range(kb_lo, kb_hi):
                sa = sa_next
                sb = sb_next
                sa_next, sb_next = _block_scales(scale_a, scale_b, kb + 1, k_blocks, offs_m, offs_n, off_n, M, N,
                                                 stride_sa_m, stride_sa_k, stride_sb_n, stride_sb_k, SCALE_A,
                                                 SCALE_B, SA_TMA)
                s = ci % STAGES
                mbarrier.wait(ready.index(s), (ci // STAGES) & 1)
                if SA_TMA:  # this K block's scales of a's rows, delivered with the tiles (read before the release)
                    sa = sa_ring.index(s).slice(HALF * WG_M, WG_M).load(row_layout)
                a_half = a_ring.index(s).slice(HALF * WG_M, WG_M, dim=0)
                t = warpgroup_mma(a_half, b_ring.index(s).permute((1, 0)), t, use_acc=False, is_async=True)
                t = warpgroup_mma_wait(num_outstanding=0, deps=(t,))
                mbarrier.arrive(empty.index(s), count=1)
                acc = _promote(acc, t, sa, sb, SCALE_A, SCALE_B)
                ci += 1

        # (Recomputed here: the column offsets are 32 registers per thread, not kept live across the K loop.)
        offs_n = off_n + gl.arange(0, MMA_N, layout=col_layout)
        if SPLIT_K > 1:
            # Split-K: this split's scaled fp32 partial sums into the (SPLIT_K, M, N) workspace (pointer stores: a
            # TMA box of a partial M tile would write into the next split's rows); bias and activation come in
            # the reduction (fp8_gemm_splitk_reduce_kernel of the Triton kernel).
            _store_partial(acc, ws, split, offs_m, offs_n, s_tensor, scale_a, scale_b, M, N, SCALE_A, SCALE_B)
            if NSPLIT >= 2:
                _store_partial(acc2, ws, split, offs_m, offs_n + MMA_N, s_tensor, scale_a, scale_b, M, N, SCALE_A,
                               SCALE_B)
            if NSPLIT == 4:
                _store_partial(acc3, ws, split, offs_m, offs_n + 2 * MMA_N, s_tensor, scale_a, scale_b, M, N,
                               SCALE_A, SCALE_B)
                _store_partial(acc4, ws, split, offs_m, offs_n + 3 * MMA_N, s_tensor, scale_a, scale_b, M, N,
                               SCALE_A, SCALE_B)
        elif NSPLIT == 4:
            for q in gl.static_range(4):
                part = (acc, acc2, acc3, acc4)[q]
                _store_tile(_finish(part, offs_m, offs_n + q * MMA_N, s_tensor, scale_a, scale_b, bias, M, N, SCALE_A,
                                    SCALE_B, HAS_BIAS, ACTIVATION, c_desc.dtype), c_desc, c_smem, out_ptr, offs_m,
                            offs_n + q * MMA_N, off_m, off_n + q * MMA_N, row_end, N, GROUPED)
        elif NSPLIT == 2:
            _store_tile(_finish(acc, offs_m, offs_n, s_tensor, scale_a, scale_b, bias, M, N, SCALE_A, SCALE_B,
                                HAS_BIAS, ACTIVATION, c_desc.dtype), c_desc, c_smem, out_ptr, offs_m, offs_n,
                        off_m, off_n, row_end, N, GROUPED)
            _store_tile(_finish(acc2, offs_m, offs_n + MMA_N, s_tensor, scale_a, scale_b, bias, M, N, SCALE_A,
                                SCALE_B, HAS_BIAS, ACTIVATION, c_desc.dtype), c_desc, c_smem, out_ptr, offs_m,
                        offs_n + MMA_N, off_m, off_n + MMA_N, row_end, N, GROUPED)
        else:
            out = _finish(acc, offs_m, offs_n, s_tensor, scale_a, scale_b, bias, M, N, SCALE_A, SCALE_B, HAS_BIAS,
                          ACTIVATION, c_desc.dtype)
            _store_tile(out, c_desc, c_smem, out_ptr, offs_m, offs_n, off_m, off_n, row_end, N, GROUPED)
    tma.store_wait(pendings=0)


@named_gluon_jit(do_not_specialize=["M", "N", "K", "num_groups", "group_cap"])
def fp8_gemm_promote_kernel(
    a_desc, b_desc, c_desc, sa_desc,
    scale_a, scale_b, bias, ws,
    M, N, K,
    stride_sa_m, stride_sa_k, stride_sb_n, stride_sb_k,
    out_ptr, group_rows, num_groups, group_cap, stride_sa_g, stride_sb_g,
    KERNEL_NAME: gl.constexpr,
    GROUP_M: gl.constexpr, STAGES: gl.constexpr,
    SCALE_A: gl.constexpr, SCALE_B: gl.constexpr,
    HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr, FAST: gl.constexpr, SPLIT_K: gl.constexpr,
    CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr,
    num_warps: gl.constexpr, GROUPED: gl.constexpr = 0, G_PAD: gl.constexpr = 1, QUARTERS: gl.constexpr = False,
):
    """C = (a·scale_a)(b·scale_b)ᵀ (+ bias, activation) with fp32 promotion every 128 of K (module docstring).

    a_desc: TMA descriptor of a (M, K) FP8, block [BLOCK_M, 128]; b_desc: b (N, K) FP8, block [BLOCK_N, 128];
    c_desc: C (M, N) row-major in the output type, block [BLOCK_M // 2, BLOCK_N] (each warp group stores its half).
    bias: (N,) or a dummy pointer. SPLIT_K > 1: work units (split, tile), each split a run of K blocks, whose
    scaled fp32 partials go to ``ws`` (SPLIT_K, M, N) (bias, activation and the rounding in the reduction kernel;
    c_desc unused). Grouped GEMM (GROUPED 1 offsets / 3 sizes / 2 masked, see :func:`_schedule`): a holds the
    rows of all groups, b_desc is over the (G*N, K) view of the (G, N, K) weights, c_desc and out_ptr (the same
    (M, N) output) get each group's rows, group_rows the int32 offsets / sizes / counts of the num_groups groups
    (G_PAD: ``gemm.group_pad``), group_cap the masked capacity; scales per group at scale_a + g * stride_sa_g
    (0 for one scalar or per-row / block scales over all rows) and scale_b + g * stride_sb_g, bias (G, N).
    Launch with num_warps=4 (the first consumer warp group; the second consumer and the one-warp
    loader are worker partitions).
    """
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[0]
    gl.static_assert(BLOCK_K == 128, "promotion interval = one 128-wide K block")
    gl.static_assert(BLOCK_M == 128, "two consumer warp groups of 64 rows")
    gl.static_assert(FAST or BLOCK_N <= 256, "promoting modes: 64-row products of at most 128 columns")
    # Promoting modes at BLOCK_N = 256: two 128-wide column halves per consumer (see _consumer).
    # QUARTERS: four 64-wide quarters instead, two products in flight (see _consumer).
    NSPLIT: gl.constexpr = (4 if QUARTERS else 2) if (not FAST and BLOCK_N == 256) else 1
    gl.static_assert(num_warps == 4, "the default partition is one consumer warp group")

    # The DeepSeek-V3 recipe: a's scales through TMA (dense only: a grouped tile's first row, its group's offset
    # plus a multiple of 128, is not the 16-byte aligned box start TMA needs).
    SA_TMA: gl.constexpr = SCALE_A == 2 and SCALE_B == 3 and GROUPED == 0
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    if SA_TMA:
        sa_ring = gl.allocate_shared_memory(gl.float32, [STAGES, BLOCK_M], sa_desc.layout)
    else:
        sa_ring = a_ring  # unused
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [2, BLOCK_M // 2, c_desc.block_type.shape[1]], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)  # one arrival per consumer warp group
    fence_async_shared()

    # (Argument tuples inline: a tuple assigned to a variable first has its constexprs turned into tensors. The
    # two consumers are one function specialized by its first, constexpr argument: the warp group's half.)
    gl.warp_specialize([
        (_consumer, (0, a_ring, b_ring, sa_ring, ready, empty, c_desc, c_smem.index(0), scale_a, scale_b, bias,
                     M, N, K, stride_sa_m, stride_sa_k, stride_sb_n, stride_sb_k, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                     STAGES, SCALE_A, SCALE_B, HAS_BIAS, ACTIVATION, FAST, SA_TMA, NSPLIT, ws, SPLIT_K, out_ptr,
                     group_rows, num_groups, group_cap, stride_sa_g, stride_sb_g, GROUPED, G_PAD)),
        (_consumer, (1, a_ring, b_ring, sa_ring, ready, empty, c_desc, c_smem.index(1), scale_a, scale_b, bias,
                     M, N, K, stride_sa_m, stride_sa_k, stride_sb_n, stride_sb_k, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                     STAGES, SCALE_A, SCALE_B, HAS_BIAS, ACTIVATION, FAST, SA_TMA, NSPLIT, ws, SPLIT_K, out_ptr,
                     group_rows, num_groups, group_cap, stride_sa_g, stride_sb_g, GROUPED, G_PAD)),
        (_loader, (a_desc, b_desc, sa_desc, a_ring, b_ring, sa_ring, ready, empty, M, N, K, stride_sa_k,
                   group_rows, num_groups, group_cap, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, SA_TMA, SPLIT_K,
                   GROUPED, G_PAD)),
    ], [4, 1], [CONSUMER_REGS, LOADER_REGS])


# ------------------------------------------------------------------------------------------------------------------
# Host side

SMEM_LIMIT_SM90 = 232448  # bytes of shared memory one block may take on sm_90 (227 KB)
_BARRIER_BYTES = 1024     # the two barrier arrays and alignment slack (compile metadata: 164056 = 5*32 KB + 32 KB + 216)
CONSUMER_REGS = 232
LOADER_REGS = 40
# Promoting 128 x 256 tiles in four 64-wide quarters with two products in flight (the QUARTERS constexpr) instead of
# two 128-wide halves waited one at a time. "block": dense block-scaled launches without split-K, where it measured
# 1.02-1.06x on the large-K shapes and 0.99-1.01x elsewhere (two runs, gemm-quarters-20261202-183402.json /
# -183842.json); precise (0.95-0.99x) and grouped (0.93-0.95x) stay on halves. True / False: every / no promoting
# 128 x 256 launch (the A/B of scripts/gpu_gemm_quarters.py).
QUARTERS = "block"


def _quarters(fast: bool, block_n: int, sa_mode: int, split: int, grouped: bool) -> bool:
    if fast or block_n != 256:
        return False
    if QUARTERS == "block":
        return sa_mode == SCALE_BLOCK_1X128 and split == 1 and not grouped
    return bool(QUARTERS)
_GL_DTYPES = {}


def _gl_dtype(t):
    if not _GL_DTYPES:
        _GL_DTYPES.update({torch.float8_e4m3fn: gl.float8e4nv, torch.float8_e5m2: gl.float8e5,
                           torch.bfloat16: gl.bfloat16, torch.float16: gl.float16, torch.float32: gl.float32})
    return _GL_DTYPES[t]


@functools.lru_cache(maxsize=64)
def _layout(block: tuple, dtype):
    """The NVMMA shared layout of a TMA box (cached: ``get_default_for`` is a constexpr function, ~10 us a call)."""
    return gl.NVMMASharedLayout.get_default_for(list(block), _gl_dtype(dtype))


def _descriptor(t, block):
    """Host TMA descriptor of ``t`` (validated by ``tritonfp8.gemm``: 16-byte aligned base and row strides, last
    stride 1), built without the dataclass's per-call checks: this runs on every eager call."""
    d = object.__new__(TensorDescriptor)
    d.base, d.shape, d.strides, d.block_shape = t, t.shape, t.stride(), list(block)
    d.layout, d.padding = _layout(tuple(block), t.dtype), "zero"
    return d


def scale_modes(a_vec: bool, b_vec: bool, b_block_rows: int | None) -> tuple[int, int]:
    """(SCALE_A, SCALE_B) constexprs of the kernel for the launcher's scale description."""
    if b_block_rows is not None:
        return SCALE_BLOCK_1X128, (SCALE_BLOCK_128X128 if b_block_rows == 128 else SCALE_BLOCK_1X128)
    return (SCALE_ROW if a_vec else SCALE_TENSOR), (SCALE_ROW if b_vec else SCALE_TENSOR)


def _runtime_args(a, b, scale_a, scale_b, bias, out, block_n: int, sa_mode: int, sb_mode: int, split: int,
                  grouped: tuple | None = None, quarters: bool = False):
    """The kernel's runtime arguments (descriptors, pointers, sizes, scale strides) and the split-K workspace.
    ``grouped``: (group_rows, G, cap, a group stride, b group stride) of a grouped launch (b then (G*N, K),
    block scales of b (G, Nb, Kb))."""
    M, K = a.shape
    N = out.shape[1]
    if sa_mode == SCALE_BLOCK_1X128:
        sam, sak = scale_a.stride()
        sbn, sbk = scale_b.stride()[-2:]
    else:
        sam = sak = sbn = sbk = 0
    ws = torch.empty((split, M, N), device=out.device, dtype=torch.float32) if split > 1 else None
    a_desc = _descriptor(a, [128, 128])
    if sa_mode == SCALE_BLOCK_1X128 and sb_mode == SCALE_BLOCK_128X128 and grouped is None:
        # a's block scales go through TMA as the flattened (ceil(K/128), M) transpose: read in place when stored
        # outer-dim-major (strides (1, M), the torch._scaled_mm layout), else copied into that layout here (M x
        # ceil(K/128) fp32: ~1% of the GEMM's time at 8192 x 7168 x 7168).
        # Each column starts on a 16-byte boundary (TMA box starts must be: M = 83 faulted on the H200), so
        # M is padded to a multiple of 4 in the copy.
        sa_t = scale_a.t()
        if not sa_t.is_contiguous() or sa_t.data_ptr() % 16 or M % 4:
            m_pad = -(-M // 4) * 4
            padded = scale_a.new_zeros(sa_t.shape[0], m_pad)
            padded[:, :M] = sa_t
            sa_t = padded
        sak = sa_t.stride(0)  # elements from one K block's column to the next (M rounded up to 4)
        sa_desc = _descriptor(sa_t.reshape(-1), [128])
    else:
        sa_desc = a_desc  # unused by the kernel
    group_args = (scale_a, 1, 0, 0, 0) if grouped is None else grouped
    epi_n = 64 if quarters and block_n == 256 else min(block_n, 128)  # the quarters form stores 64-wide pieces
    args = (a_desc, _descriptor(b, [block_n, 128]), _descriptor(out, [64, epi_n]), sa_desc,
            scale_a, scale_b, bias if bias is not None and split == 1 else scale_a, ws if ws is not None else scale_a,
            M, N, K, sam, sak, sbn, sbk, out) + group_args
    return args, ws


class Template:
    """A recorded launch (``tritonfp8.gemm``'s launch plans keep one per plan): the compiled kernels, grids and
    constexpr tails of the first call, so a repeat call only rebuilds the runtime arguments (the descriptors are
    plain objects; their encodings are cached by ``_direct``) and calls the compiled launchers. Without it every
    eager call rebuilt the kernel name and the launch key: ~100-190 us per call on the H200's host, several times
    a 30 us GEMM at M = 128 (s8-call3-bench_m128.log)."""

    __slots__ = ("main", "grid3", "tail", "red", "rgrid3", "rtail", "block_n", "sa_mode", "sb_mode", "split",
                 "quarters")

    def __init__(self, main, grid3, tail, red, rgrid3, rtail, block_n, sa_mode, sb_mode, split, quarters):
        self.main, self.grid3, self.tail = main, grid3, tail
        self.red, self.rgrid3, self.rtail = red, rgrid3, rtail
        self.block_n, self.sa_mode, self.sb_mode, self.split = block_n, sa_mode, sb_mode, split
        self.quarters = quarters

    def launch(self, a, b, scale_a, scale_b, bias, out) -> None:
        args, ws = _runtime_args(a, b, scale_a, scale_b, bias, out, self.block_n, self.sa_mode, self.sb_mode,
                                 self.split, quarters=self.quarters)
        _fast.run_compiled(self.main, self.grid3, args + self.tail)
        if self.red is not None:
            _fast.run_compiled(self.red, self.rgrid3, (ws, out, bias, out.shape[0], out.shape[1]) + self.rtail)


def _compiled(k) -> bool:
    return k is not None and not hasattr(k, "result")  # (an async-compile future has .result)


def launch(a, b, scale_a, scale_b, bias, activation_code: int, out, *, block_n: int, num_stages: int, group_m: int,
           a_vec: bool, b_vec: bool, b_block_rows: int | None, sms: int, name: str, fast: bool = False,
           warmup: bool = False, split_k: int = 1, reduce_name: str = "", record: list | None = None):
    """Launch :func:`fp8_gemm_promote_kernel` for ``out = act((a·scale_a)(b·scale_b)ᵀ + bias)``; inputs validated
    by ``tritonfp8.gemm`` (a (M, K), b (N, K) TMA-ready FP8; out (M, N) contiguous). Scales as in
    ``launch_gemm``: (M,)/(1,) and (N,)/(1,) vectors, or block scales read in place with their strides.
    ``record``: a list that gets the :class:`Template` of this launch (CUDA launches of compiled kernels only)."""
    M, K = a.shape
    N = b.shape[0]
    sa_mode, sb_mode = scale_modes(a_vec, b_vec, b_block_rows)
    tiles = -(-M // 128) * -(-N // block_n)  # (triton.cdiv is a JIT function: ~7 us per call from Python)
    split = effective_split(K, split_k)
    grid = (max(1, min(tiles * split, sms)),)
    quarters = _quarters(fast, block_n, sa_mode, split, grouped=False)
    args, ws = _runtime_args(a, b, scale_a, scale_b, bias, out, block_n, sa_mode, sb_mode, split, quarters=quarters)
    kw = dict(KERNEL_NAME=name, GROUP_M=group_m, STAGES=num_stages, SCALE_A=sa_mode, SCALE_B=sb_mode,
              HAS_BIAS=bias is not None and split == 1, ACTIVATION=activation_code if split == 1 else 0, FAST=fast,
              SPLIT_K=split, CONSUMER_REGS=CONSUMER_REGS, LOADER_REGS=LOADER_REGS, num_warps=4, QUARTERS=quarters)
    red = rgrid = rkw = None
    if split > 1:
        rgrid = (-(-M * N // _triton_gemm.REDUCE_BLOCK),)
        rkw = dict(KERNEL_NAME=reduce_name, SPLIT_K=split, BLOCK=_triton_gemm.REDUCE_BLOCK, HAS_BIAS=bias is not None,
                   ACTIVATION=activation_code, OUT_DTYPE=_triton_gemm._TL_OUT[out.dtype], num_warps=4)
    if warmup:
        if split > 1:
            _triton_gemm.fp8_gemm_splitk_reduce_kernel.warmup(ws, out, bias, M, N, grid=rgrid, **rkw)
        return fp8_gemm_promote_kernel.warmup(*args, grid=grid, **kw)
    # Repeat launches skip Triton's dispatch and re-encode no TMA descriptor (tritonfp8._launch, _direct): for a
    # ~0.1 ms GEMM the host time left the GPU idle between calls (4096^3 precise ran 0.64-0.98x cuBLAS exact from
    # run to run, session 7: ~200 us of host time per call measured on the H200, s7-call7-glws_launch.json).
    main = _fast.launch(fp8_gemm_promote_kernel, grid, *args, **kw)
    if split > 1:
        red = _fast.launch(_triton_gemm.fp8_gemm_splitk_reduce_kernel, rgrid, ws, out, bias, M, N, **rkw)
    if record is not None and _fast.enabled() and _compiled(main) and (split == 1 or _compiled(red)):
        record.append(Template(
            main, grid + (1, 1), _fast._tail_values(fp8_gemm_promote_kernel, len(args), kw),
            red, None if red is None else rgrid + (1, 1),
            None if red is None else _fast._tail_values(_triton_gemm.fp8_gemm_splitk_reduce_kernel, 5, rkw),
            block_n, sa_mode, sb_mode, split, quarters))
    return main


def launch_grouped(a, b, scale_a, scale_b, bias, activation_code: int, out, *, mode: int, group_rows, group_cap: int,
                   a_group_stride: int, b_group_stride: int, block_n: int, num_stages: int, group_m: int,
                   a_vec: bool, b_vec: bool, b_block_rows: int | None, sms: int, name: str, fast: bool = False,
                   warmup: bool = False):
    """One persistent launch of :func:`fp8_gemm_promote_kernel` over all groups' tiles (GROUPED = ``mode``: the
    Triton kernel's GROUPED_* codes); inputs as in ``tritonfp8._kernels.gemm.launch_grouped`` (validated by
    :mod:`tritonfp8.grouped`): a (R, K) rows of all groups, b (G, N, K) contiguous, out (R, N) contiguous with a
    16-byte aligned base (TMA stores). No host sync: the grid is min(#SMs, an upper bound of the tile count), the
    kernel counts the real tiles from ``group_rows``."""
    R, K = a.shape
    G, N, _ = b.shape
    sa_mode, sb_mode = scale_modes(a_vec, b_vec, b_block_rows)
    row_tiles = G * -(-group_cap // 128) if mode == 2 else -(-R // 128) + G  # each group: at most one partial tile
    grid = (max(1, min(row_tiles * -(-N // block_n), sms)),)
    quarters = _quarters(fast, block_n, sa_mode, 1, grouped=True)
    args, _ = _runtime_args(a, b.view(G * N, K), scale_a, scale_b, bias, out, block_n, sa_mode, sb_mode, 1,
                            grouped=(group_rows, G, group_cap, a_group_stride, b_group_stride), quarters=quarters)
    kw = dict(KERNEL_NAME=name, GROUP_M=group_m, STAGES=num_stages, SCALE_A=sa_mode, SCALE_B=sb_mode,
              HAS_BIAS=bias is not None, ACTIVATION=activation_code, FAST=fast, SPLIT_K=1,
              CONSUMER_REGS=CONSUMER_REGS, LOADER_REGS=LOADER_REGS, num_warps=4, GROUPED=mode,
              G_PAD=_triton_gemm.group_pad(G), QUARTERS=quarters)
    if warmup:
        return fp8_gemm_promote_kernel.warmup(*args, grid=grid, **kw)
    return _fast.launch(fp8_gemm_promote_kernel, grid, *args, **kw)


# ------------------------------------------------------------------------------------------------------------------
# Offline codegen specs (python -m tritonfp8 codegen --list)

def _desc_sig(dtype: str, bits: int, block: tuple[int, int]) -> str:
    swizzle = min(128, block[1] * bits // 8)
    return (f"tensordesc<{dtype}[{block[0]}, {block[1]}],NVMMASharedLayout(swizzle_byte_width={swizzle}, "
            f"element_bitwidth={bits}, rank=2, transposed=False, fp4_padded=False, cga_layout=[])>")


_SA_DESC_SIG = ("tensordesc<fp32[128],NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=1, "
                "transposed=False, fp4_padded=False, cga_layout=[])>")


def codegen_spec(*, block_n: int = 128, stages: int = 6, scale_a: int = SCALE_TENSOR, scale_b: int = SCALE_TENSOR,
                 has_bias: bool = False, activation: int = 0, fast: bool = False, split_k: int = 1,
                 grouped: int = 0, groups: int = 64, quarters: bool = False, description: str = ""):
    from tritonfp8.codegen import CodegenSpec
    from tritonfp8.naming import KernelName

    scaling = {(0, 0): "tensorwise", (1, 1): "rowwise", (2, 3): "blockwise", (2, 2): "group1x128"}.get(
        (scale_a, scale_b), "mixed")
    extras = ("precise",) if scale_a < 2 and not fast else ()
    if has_bias or activation:
        extras += ("bias" + ("", "relu", "gelu", "silu")[activation],)
    if split_k > 1:
        extras += (f"splitk{split_k}",)
    if quarters:
        extras += ("q4",)
    op = {0: "fp8gemm", 2: "fp8maskedgemm"}.get(grouped, "fp8groupedgemm")
    name = KernelName(arch=90, op=op, types=("e4m3", "e4m3", "f32", "bf16"), tile=(128, block_n, 128),
                      warps=4, stages=stages, schedule="glws", scaling=scaling, extras=extras)
    sig = {"a_desc": _desc_sig("fp8e4nv", 8, (128, 128)), "b_desc": _desc_sig("fp8e4nv", 8, (block_n, 128)),
           "c_desc": _desc_sig("bf16", 16, (64, 64 if quarters else min(block_n, 128))),
           "sa_desc": (_SA_DESC_SIG if (scale_a, scale_b) == (SCALE_BLOCK_1X128, SCALE_BLOCK_128X128)
                       else _desc_sig("fp8e4nv", 8, (128, 128))), "scale_a": "*fp32", "scale_b": "*fp32", "bias": "*bf16", "ws": "*fp32",
           "M": "i32", "N": "i32", "K": "i32", "stride_sa_m": "i32", "stride_sa_k": "i32", "stride_sb_n": "i32",
           "stride_sb_k": "i32", "out_ptr": "*bf16", "group_rows": "*i32", "num_groups": "i32", "group_cap": "i32",
           "stride_sa_g": "i32", "stride_sb_g": "i32"}
    if grouped:  # ``groups`` only sets G_PAD (default 64, the largest count)
        sig["sa_desc"] = _desc_sig("fp8e4nv", 8, (128, 128))  # a's block scales through pointer loads
    const = dict(GROUP_M=8, STAGES=stages, SCALE_A=scale_a, SCALE_B=scale_b, HAS_BIAS=has_bias,
                 ACTIVATION=activation, FAST=fast, SPLIT_K=split_k, CONSUMER_REGS=CONSUMER_REGS,
                 LOADER_REGS=LOADER_REGS, num_warps=4, GROUPED=grouped,
                 G_PAD=_triton_gemm.group_pad(groups) if grouped else 1, QUARTERS=quarters)
    for k in const:
        sig[k] = "constexpr"
    return CodegenSpec(fn=fp8_gemm_promote_kernel, signature=sig, constexprs=const, name=name, num_warps=4,
                       num_stages=stages, min_arch=90, description=description,
                       divisible=("scale_a", "scale_b", "bias", "out_ptr", "group_rows"))


def codegen_specs() -> dict:
    return {
        "gemm_glws_precise": codegen_spec(description="Gluon precise GEMM: loader warp + 2 consumer warp groups, "
                                                      "per-tensor scales"),
        "gemm_glws_precise_rowwise_bias_gelu": codegen_spec(scale_a=SCALE_ROW, scale_b=SCALE_ROW, has_bias=True,
                                                            activation=2, description="rowwise + bias + gelu"),
        "gemm_glws_block": codegen_spec(stages=4, scale_a=SCALE_BLOCK_1X128, scale_b=SCALE_BLOCK_128X128,
                                        description="1x128 x 128x128 block scales"),
        "gemm_glws_precise_n256": codegen_spec(block_n=256, stages=3, description="precise 128x256: two 128-wide "
                                                                              "column halves per consumer group"),
        "gemm_glws_block_n256": codegen_spec(block_n=256, stages=3, scale_a=SCALE_BLOCK_1X128,
                                             scale_b=SCALE_BLOCK_128X128, description="block scales, 128x256"),
        "gemm_glws_precise_n256_q4": codegen_spec(block_n=256, stages=3, quarters=True,
                                                  description="precise 128x256 in four 64-wide quarters, two "
                                                              "products in flight"),
        "gemm_glws_block_n256_q4": codegen_spec(block_n=256, stages=3, scale_a=SCALE_BLOCK_1X128,
                                                scale_b=SCALE_BLOCK_128X128, quarters=True,
                                                description="block scales, 128x256, quarters"),
        "grouped_glws_block_n256_q4": codegen_spec(block_n=256, stages=3, scale_a=SCALE_BLOCK_1X128,
                                                   scale_b=SCALE_BLOCK_128X128, grouped=3, groups=8, quarters=True,
                                                   description="grouped, block scales, 128x256, quarters"),
        "gemm_glws_precise_splitk": codegen_spec(split_k=3, description="precise, split-K 3 (fp32 partials)"),
        "gemm_glws_block_n256_splitk": codegen_spec(block_n=256, stages=3, scale_a=SCALE_BLOCK_1X128,
                                                    scale_b=SCALE_BLOCK_128X128, split_k=4,
                                                    description="block scales, 128x256, split-K 4"),
        "gemm_glws_fast_splitk": codegen_spec(split_k=2, fast=True, description="fast, 128x128, split-K 2"),
        "gemm_glws_fast": codegen_spec(block_n=256, stages=4, fast=True,
                                       description="Gluon fast-accumulation GEMM, 128x256 (two 64x256 groups)"),
        "gemm_glws_fast_rowwise": codegen_spec(block_n=256, stages=4, fast=True, scale_a=SCALE_ROW,
                                               scale_b=SCALE_ROW, description="fast, rowwise scales"),
        # Grouped (MoE) launches on the same kernel: 64 groups, sizes prefix-summed in the kernel.
        "grouped_glws_block_n256": codegen_spec(block_n=256, stages=3, scale_a=SCALE_BLOCK_1X128,
                                                scale_b=SCALE_BLOCK_128X128, grouped=3,
                                                description="grouped (m_sizes), block scales, 128x256"),
        "grouped_glws_block": codegen_spec(stages=4, scale_a=SCALE_BLOCK_1X128, scale_b=SCALE_BLOCK_128X128,
                                           grouped=1, description="grouped (offsets), block scales, 128x128"),
        "grouped_glws_precise_n256_g8": codegen_spec(block_n=256, stages=3, grouped=3, groups=8,
                                                     description="grouped, precise, 8 groups (issue 4's G 8 shape)"),
        "grouped_glws_precise_n256_bias": codegen_spec(block_n=256, stages=3, has_bias=True, grouped=3,
                                                       description="grouped, precise, per-group scales, bias"),
        "grouped_glws_fast_rowwise": codegen_spec(block_n=256, stages=4, fast=True, scale_a=SCALE_ROW,
                                                  scale_b=SCALE_ROW, grouped=3, description="grouped, fast, rowwise"),
        "grouped_glws_masked_block": codegen_spec(stages=4, scale_a=SCALE_BLOCK_1X128, scale_b=SCALE_BLOCK_128X128,
                                                  grouped=2, description="masked (decode), block scales"),
        # Not used by the heuristics: the (BLOCK_N,) scale vector of b spills (86 spill stores offline).
        "gemm_glws_block_group1x128": codegen_spec(stages=4, scale_a=SCALE_BLOCK_1X128, scale_b=SCALE_BLOCK_1X128,
                                                   description="1x128 x 1x128 block scales (spills; not a default)"),
    }
