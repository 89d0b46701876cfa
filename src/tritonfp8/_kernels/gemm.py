"""FP8 GEMM kernels for Hopper (TMA + wgmma) and Ada (pointer loads + mma), one kernel with constexpr switches.

Orientation. The kernel computes ``D = X · Yᵀ`` with ``X`` (R, K) and ``Y`` (S, K), both K-major (K contiguous):
FP8 wgmma reads both operands K-major from shared memory, so ``tl.dot(x, y.T)`` on (R, K) and (S, K) tiles needs
no transpose in memory. The public op ``C = (a·scale_a) @ (b·scale_b)ᵀ`` maps onto it two ways:

- normal:  X = a (M, K), Y = b (N, K), D = C (M, N).
- swap-AB: X = b (N, K), Y = a (M, K), D = Cᵀ (N, M). For small M (decode) the large N fills wgmma's 64-row
  M dimension and M becomes a 16/32/64-wide N tile; the store writes Dᵀ into C.

Scales are fp32 *dequantization* factors (x ≈ x_fp8.float() * scale, as ``torch._scaled_mm``). Each operand's
scale is either one scalar (per tensor) or a vector over its rows (a: (M,), b: (N,)); the epilogue multiplies the
fp32 accumulator by ``x_scale[r] * y_scale[s]``, adds the bias (along N), applies the activation, casts, stores.

Accumulation (``K_SCALED``):
- False ("fast"): ``acc = tl.dot(x, y.T, acc)`` over all of K; on sm_90 the tensor core then accumulates FP8
  products in reduced precision (measured error = cuBLAS fast accumulation: 2.6e-3 at K=8192).
- True ("precise"): each K block of BLOCK_K (<= 128) is a *fresh* ``tl.dot`` (zero accumulator) which is added
  into the fp32 accumulator as ``acc += blk * k_scale``, ``k_scale`` a runtime value. The runtime multiply keeps
  Triton's combine pass from folding ``acc + dot(x, y, 0)`` back into ``dot(x, y, acc)``. This is the general
  per-K-block scaling hook: block-scaled FP8 (1×128 activations, 128×128 weights) replaces ``k_scale`` by
  ``x_blockscale[rows, kb][:, None] * y_blockscale[cols // 128, kb][None, :]``.

Schedules (see ``gemm_configs.SCHEDULES``): non-persistent (one tile per program, grouped order); persistent
(grid = #SMs, tiles strided over programs; ``tl.range(flatten=True)`` makes one software-pipelined loop over all
(tile, K block) pairs, so the next tile's first TMA loads are in flight during this tile's epilogue);
warp-specialized (``tl.range(warp_specialize=True)``): Triton 3.6 applies its Hopper pass only to 4-warp kernels
without runtime if/else, and then builds one producer (TMA) warp group plus two consumer warp groups that split the
tile's rows (SASS: ``USETMAXREG`` register reallocation); its data split breaks the host-descriptor TMA store
(compile failure), so these schedules store through pointers; on a flattened persistent loop the pass does not
apply (measured: identical SASS), so WS-persistent keeps the nested loop. Pointer loads for Ada (sm_89: no TMA).
Split-K writes fp32 partial sums (already scaled) to a workspace (SPLIT_K, M, N);
:func:`fp8_gemm_splitk_reduce_kernel` sums them (deterministic, no atomics), adds bias, applies the activation.
Thread-block clusters: ``num_ctas=2`` compiles for sm_90 but splits the tile between the two CTAs without TMA
multicast (no ``.multicast::cluster`` in the PTX), and a 256x256 tile with ``num_ctas=2`` fails to compile in
Triton 3.6: not used.

TMA facts: descriptors need 16-byte aligned base and row strides (FP8: K a multiple of 16; C's row stride N times
the element size); out-of-bounds loads are zero-filled and out-of-bounds stores clipped, so partial tiles in M, N
and K need no masks. TMA coordinates are 32-bit by hardware; pointer paths cast to int64 before address arithmetic.
"""

from __future__ import annotations

import os

import triton
import triton.language as tl

from tritonfp8._kernels.fp8cast import cast_to_fp8
from tritonfp8 import _direct
from tritonfp8 import _launch as _fast
from tritonfp8.naming import named_jit

# The interpreter's fp32 -> bf16 cast keeps the top 16 bits (truncation; measured: half the elements differ from
# torch's round-to-nearest-even). Under the interpreter the epilogue rounds to the bf16 grid in fp32 first, so the
# cast is exact and CPU results equal the GPU's (whose cvt.rn.bf16.f32 is RNE). Decided at import, as triton.jit
# decides interpreter-or-compiled at decoration time; compiled kernels keep the single hardware cast.
_SOFT_BF16_RNE = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"))

# Activation codes (constexpr ACTIVATION).
ACT_NONE, ACT_RELU, ACT_GELU, ACT_SILU = 0, 1, 2, 3
ACTIVATIONS = {None: ACT_NONE, "relu": ACT_RELU, "gelu": ACT_GELU, "silu": ACT_SILU}


@triton.jit
def _tile_coords(tile_id, num_pid_r, num_pid_s, GROUP_R: tl.constexpr):
    """Grouped tile order: GROUP_R consecutive row tiles walk the column tiles together, so the Y tiles they
    share are read from L2 instead of HBM."""
    num_pid_in_group = GROUP_R * num_pid_s
    group_id = tile_id // num_pid_in_group
    first_r = group_id * GROUP_R
    group_size = tl.minimum(num_pid_r - first_r, GROUP_R)
    pid_r = first_r + (tile_id % num_pid_in_group) % group_size
    pid_s = (tile_id % num_pid_in_group) // group_size
    return pid_r, pid_s


@triton.jit
def _to_out_dtype(v, OUT_DTYPE: tl.constexpr):
    """fp32 -> OUT_DTYPE, round to nearest even (see _SOFT_BF16_RNE)."""
    if _SOFT_BF16_RNE and OUT_DTYPE == tl.bfloat16:
        u = v.to(tl.uint32, bitcast=True)
        u = (u + (0x7FFF + ((u >> 16) & 1))) & 0xFFFF0000
        v = tl.where(v != v, v, u.to(tl.float32, bitcast=True))  # NaN stays NaN (the add could carry into sign)
    return v.to(OUT_DTYPE)


@triton.jit
def _apply_activation(v, ACTIVATION: tl.constexpr):
    if ACTIVATION == 1:  # relu
        v = tl.maximum(v, 0.0)
    elif ACTIVATION == 2:  # gelu, exact erf form (torch.nn.functional.gelu default)
        v = 0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476))
    elif ACTIVATION == 3:  # silu
        v = v * tl.sigmoid(v)
    return v


@triton.jit
def _block_scale(s_ptr, off, n_rows, kb, stride_r, stride_k, BLOCK: tl.constexpr, GROUP: tl.constexpr):
    """Block scale of K block ``kb`` for the rows off .. off+BLOCK-1 of one operand, read from the 2-D scale tensor
    ``s_ptr[row // GROUP, kb]`` (any strides). A scalar when one group covers the tile (GROUP >= BLOCK: both powers
    of two and ``off`` a multiple of BLOCK, so the tile never straddles two groups), else a (BLOCK,) vector.
    Offsets stay below the scale tensor's element count (M * ceil(K/128) < 2^31 unless the FP8 operand is over
    256 GiB); rows are int64 anyway."""
    col = s_ptr + kb * stride_k
    if GROUP >= BLOCK:
        return tl.load(col + (off // GROUP).to(tl.int64) * stride_r)
    else:
        rows = off.to(tl.int64) + tl.arange(0, BLOCK)
        return tl.load(col + (rows // GROUP) * stride_r, mask=rows < n_rows, other=0.0)


@triton.jit
def _scaled_block(blk, xs, ys, X_SCALAR: tl.constexpr, Y_SCALAR: tl.constexpr):
    """``blk * xs[:, None] * ys[None, :]`` (fp32), with the scalar cases folded into one broadcast multiply."""
    if X_SCALAR and Y_SCALAR:
        return blk * (xs * ys)
    elif X_SCALAR:
        return blk * (ys * xs)[None, :]
    elif Y_SCALAR:
        return blk * (xs * ys)[:, None]
    else:
        return blk * (xs[:, None] * ys[None, :])

@triton.jit
def _kb_scales(kb, x_scale, y_scale, off_r, off_s, R, S, stride_xs_r, stride_xs_k, stride_ys_r, stride_ys_k,
               blk_scale, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, X_SCALE_GROUP: tl.constexpr,
               Y_SCALE_GROUP: tl.constexpr):
    """The scales of K block ``kb`` as (xs, ys): its block scales (X_SCALE_GROUP > 0; BLOCK_K = 128, so K block kb
    is scale column kb of both operands), else the scalar per-block factor (and an unused copy)."""
    if X_SCALE_GROUP > 0:
        xs = _block_scale(x_scale, off_r, R, kb, stride_xs_r, stride_xs_k, BLOCK_R, X_SCALE_GROUP)
        ys = _block_scale(y_scale, off_s, S, kb, stride_ys_r, stride_ys_k, BLOCK_S, Y_SCALE_GROUP)
        return xs, ys
    else:
        return blk_scale, blk_scale


@triton.jit
def _add_scaled(acc, blk, xs, ys, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, X_SCALE_GROUP: tl.constexpr,
                Y_SCALE_GROUP: tl.constexpr):
    """``acc + blk * scale`` in fp32 with (xs, ys) from :func:`_kb_scales`."""
    if X_SCALE_GROUP > 0:
        acc += _scaled_block(blk, xs, ys, X_SCALE_GROUP >= BLOCK_R, Y_SCALE_GROUP >= BLOCK_S)
    else:
        acc += blk * xs
    return acc


@triton.jit
def _promote(acc, blk, kb, x_scale, y_scale, off_r, off_s, R, S, stride_xs_r, stride_xs_k, stride_ys_r, stride_ys_k,
             blk_scale, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, X_SCALE_GROUP: tl.constexpr,
             Y_SCALE_GROUP: tl.constexpr):
    """``acc + blk * (scale of K block kb)`` in fp32 (see :func:`_kb_scales`)."""
    xs, ys = _kb_scales(kb, x_scale, y_scale, off_r, off_s, R, S, stride_xs_r, stride_xs_k, stride_ys_r,
                        stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP, Y_SCALE_GROUP)
    return _add_scaled(acc, blk, xs, ys, BLOCK_R, BLOCK_S, X_SCALE_GROUP, Y_SCALE_GROUP)


@triton.jit
def _k_step(acc, prev, xt, yt, kb, kb_lo, x_scale, y_scale, off_r, off_s, R, S, stride_xs_r, stride_xs_k,
            stride_ys_r, stride_ys_k, blk_scale, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr,
            X_SCALE_GROUP: tl.constexpr, Y_SCALE_GROUP: tl.constexpr, K_SCALED: tl.constexpr,
            PROMOTE_LAG: tl.constexpr):
    """One K block into the fp32 accumulator, the same for TMA and pointer loads; returns (acc, prev).

    K_SCALED (precise, and block scales): a fresh dot per K block, promoted into ``acc`` with its scale (see
    :func:`_promote`). PROMOTE_LAG (K_SCALED only): the promotion lags one block behind the dot: this step issues
    the dot of block kb and promotes ``prev``, the dot of block kb-1 (zeros in the first step, so the fp32 sum and
    its order are those of the unlagged loop for finite scales); the caller promotes the last ``prev`` after the
    loop. The aim is to let block kb's wgmma run while block kb-1's FFMAs do. Otherwise (fast): the tensor core
    accumulates into ``acc`` itself; ``prev`` is passed through.
    """
    if PROMOTE_LAG:
        cur = tl.dot(xt, yt.T)
        acc = _promote(acc, prev, tl.maximum(kb - 1, kb_lo), x_scale, y_scale, off_r, off_s, R, S, stride_xs_r,
                       stride_xs_k, stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP,
                       Y_SCALE_GROUP)
        prev = cur
    elif X_SCALE_GROUP > 0:
        # (as _promote, but the scales are loaded before the dot is issued: the default kernel's order)
        xs = _block_scale(x_scale, off_r, R, kb, stride_xs_r, stride_xs_k, BLOCK_R, X_SCALE_GROUP)
        ys = _block_scale(y_scale, off_s, S, kb, stride_ys_r, stride_ys_k, BLOCK_S, Y_SCALE_GROUP)
        acc += _scaled_block(tl.dot(xt, yt.T), xs, ys, X_SCALE_GROUP >= BLOCK_R, Y_SCALE_GROUP >= BLOCK_S)
    elif K_SCALED:
        acc += tl.dot(xt, yt.T) * blk_scale
    else:
        acc = tl.dot(xt, yt.T, acc)
    return acc, prev


@triton.jit
def _half_block_dot(x, y, off_r, y_off, kb, init, BLOCK_K: tl.constexpr):
    """The fp32 dot of K block ``kb`` (fresh accumulator), from two TMA loads of BLOCK_K // 2 per operand, as the
    chain ``dot(second halves, dot(first halves))``: on sm_90 the same k32 wgmmas into the same accumulator as
    one dot of the whole block, but two ops for Triton's pipeliner (see :func:`_k_loop_split`)."""
    k0 = kb * BLOCK_K
    lo = tl.dot(x.load([off_r, k0]), y.load([y_off, k0]).T, init)
    return tl.dot(x.load([off_r, k0 + BLOCK_K // 2]), y.load([y_off, k0 + BLOCK_K // 2]).T, lo)


@triton.jit
def _k_loop_split(acc, x, y, K, kb_lo, kb_hi, off_r, off_s, y_off, x_scale, y_scale, R, S, stride_xs_r,
                  stride_xs_k, stride_ys_r, stride_ys_k, blk_scale, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr,
                  BLOCK_K: tl.constexpr, X_SCALE_GROUP: tl.constexpr, Y_SCALE_GROUP: tl.constexpr):
    """K loop of the "split" promotion (PROMOTE_LAG 2; TMA descriptors with BLOCK_K // 2 wide blocks): the fp32
    sum of the unlagged loop (same blocks, same scales, same order), scheduled so that each block's promotion
    runs while the second half of the next block's wgmmas does. Two blocks per step:

        c0 = dot(block kb)        first half waited for (which retires block kb-1, p1); second half left running
        acc += p1 * s[kb-1]         ... while this promotes block kb-1
        c1 = dot(block kb+1)      first half waited for (retires c0); second half left running, carried as p1
        acc += c0 * s[kb]           ... while this promotes block kb
        p1 = c1                   (promoted in the next step, or after the loop)

    How Triton 3.6 is led there (offline TTGIR/PTX/SASS, tests/test_codegen_gemm.py):
    - Its wgmma pipeliner leaves a dot asynchronous ("properly async": no ``warp_group_dot_wait`` right after it)
      only if the loop body reads its result under an ``if`` at most (else: only the loop's yield) and the value
      carried from the previous iteration is read after a ``warp_group_dot_wait {pendings = 0}`` of the body.
      A fresh dot read by its promotion (default, "lag") gets a wait right after it: nothing overlaps. Here each
      block is two chained half-K dots (:func:`_half_block_dot`): the first half is read by the second, so it is
      waited for, and that wait retires every earlier wgmma; the second halves are read after such a wait only
      (c0's promotion sits under an ``if``, true except at an odd count's last step; p1 is loop-carried).
    - Two blocks per step, so the registers alternate between two tiles and no copy of a running wgmma's result
      is made at the loop back edge: a one-block-per-step version copied it, and ptxas then serialized every wgmma
      (warning C7514: a non-wgmma instruction reads a running wgmma's accumulator).
    - The loop scheduler puts promotion arithmetic after all dots and loads of the step unless it feeds a dot; at
      the end p1, c0 and the running c1 were all live (255 registers, spills). So c1's first half starts from
      ``where(K < 0, acc, 0)``: zero (K > 0 inside the loop; the tensor core adds the products to +0, as to a
      fresh accumulator, up to the sign of an all-zero sum) but dependent on p1's promotion, which thereby
      stays before it. 64 FSEL per step.
    An odd block count reads one block past kb_hi (zeros past K, by TMA; a split-K neighbour's block otherwise),
    which is never promoted: the odd count's last block is c0, promoted after the loop.
    """
    zero = tl.zeros((BLOCK_R, BLOCK_S), dtype=tl.float32)
    p1 = zero  # block kb-1 (zeros in the first step)
    c0 = zero
    # Block kb's scales are loaded one step ahead (block scales are global loads; loaded in the step, they sat right
    # before the promotion, after the running wgmma's issue: offline PTX). Block kb-1's stay in its promotion: loaded
    # ahead too, ptxas moved that promotion's FFMAs before the second half's QGMMAs (nothing in flight).
    # (clamped: the range of an empty split-K slice can start past the last scale column; kb_hi - 1 >= 0)
    xs0, ys0 = _kb_scales(tl.minimum(kb_lo, kb_hi - 1), x_scale, y_scale, off_r, off_s, R, S, stride_xs_r,
                          stride_xs_k, stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP,
                          Y_SCALE_GROUP)
    for kb in tl.range(kb_lo, kb_hi, 2):
        nxs0, nys0 = _kb_scales(tl.minimum(kb + 2, kb_hi - 1), x_scale, y_scale, off_r, off_s, R, S, stride_xs_r,
                                stride_xs_k, stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP,
                                Y_SCALE_GROUP)
        c0 = _half_block_dot(x, y, off_r, y_off, kb, zero, BLOCK_K)
        acc = _promote(acc, p1, tl.maximum(kb - 1, kb_lo), x_scale, y_scale, off_r, off_s, R, S, stride_xs_r,
                       stride_xs_k, stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP,
                       Y_SCALE_GROUP)
        c1 = _half_block_dot(x, y, off_r, y_off, kb + 1, tl.where(K < 0, acc, zero), BLOCK_K)
        if kb + 1 < kb_hi:
            acc = _add_scaled(acc, c0, xs0, ys0, BLOCK_R, BLOCK_S, X_SCALE_GROUP, Y_SCALE_GROUP)
        p1 = c1
        xs0, ys0 = nxs0, nys0
    if (kb_hi - kb_lo) % 2 == 1:  # odd count: the last step's first block is the last one (its second is past it)
        acc = _promote(acc, c0, kb_hi - 1, x_scale, y_scale, off_r, off_s, R, S, stride_xs_r, stride_xs_k,
                       stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP, Y_SCALE_GROUP)
    else:
        acc = _promote(acc, p1, kb_hi - 1, x_scale, y_scale, off_r, off_s, R, S, stride_xs_r, stride_xs_k,
                       stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP, Y_SCALE_GROUP)
    return acc


@triton.jit
def _gemm_tile(
    x, y, c, ws,
    x_scale, y_scale, bias,
    R, S, K,
    stride_xr, stride_yr, stride_cm,
    stride_xs_r, stride_xs_k, stride_ys_r, stride_ys_k,
    k_scale,
    work_id, num_tiles, num_pid_r, num_pid_s, k_blocks,
    g_idx, g_lo, g_hi, g_tiles, g_cum, stride_xs_g, stride_ys_g,
    BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_R: tl.constexpr,
    SPLIT_K: tl.constexpr, USE_TMA: tl.constexpr, SUBTILE: tl.constexpr, SWAP_AB: tl.constexpr,
    X_SCALE_VEC: tl.constexpr, Y_SCALE_VEC: tl.constexpr, K_SCALED: tl.constexpr,
    X_SCALE_GROUP: tl.constexpr, Y_SCALE_GROUP: tl.constexpr,
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, OUT_DTYPE: tl.constexpr, WS_KLOOP: tl.constexpr,
    TMA_STORE: tl.constexpr, GROUPED: tl.constexpr, PROMOTE_LAG: tl.constexpr, qkv, QKV: tl.constexpr,
    HEAD_DIM: tl.constexpr, y2, BLOCK_S2: tl.constexpr,
):
    """One output tile (and one K slice when SPLIT_K > 1): main loop, then the fused epilogue.

    BLOCK_S2 > 0 (per-tensor or rowwise scales, TMA, one tile per program, pointer stores): the tile is
    BLOCK_S + BLOCK_S2 columns wide; its last BLOCK_S2 columns are a second product on the same x tile (y2:
    descriptor of y with block [BLOCK_S2, BLOCK_K]), with its own accumulator and epilogue piece.

    GROUPED > 0: ``work_id`` is a linear tile id over all groups; the group's row window [g_lo[g], g_hi[g]) of x,
    its rows g*S .. g*S+S-1 of y and its scale/bias slices are found from the per-group vectors (see the kernel).
    """
    if SPLIT_K > 1:
        split = work_id // num_tiles
        tile_id = work_id % num_tiles
        k_per = tl.cdiv(k_blocks, SPLIT_K)
        kb_lo = split * k_per
        kb_hi = tl.minimum(kb_lo + k_per, k_blocks)
    else:
        split = work_id * 0
        tile_id = work_id
        kb_lo = 0
        kb_hi = k_blocks
    if GROUPED > 0:
        # Group of this tile: the number of groups whose inclusive tile prefix sum is <= tile_id (empty groups
        # have no tiles and are skipped; padding lanes hold the total, which no tile id reaches).
        g = tl.sum((g_cum <= tile_id).to(tl.int32), 0)
        sel = g_idx == g
        first = tl.sum(tl.where(sel, g_cum - g_tiles, 0), 0)
        row_lo = tl.sum(tl.where(sel, g_lo, 0), 0)
        R = tl.sum(tl.where(sel, g_hi, 0), 0)  # rows of x at or past R belong to the next group: not stored
        pid_r, pid_s = _tile_coords(tile_id - first, tl.cdiv(R - row_lo, BLOCK_R), num_pid_s, GROUP_R)
        off_r = row_lo + pid_r * BLOCK_R  # i32: TMA coordinates are 32-bit
        off_s = pid_s * BLOCK_S  # column of C within the group (0 .. S-1)
        y_off = g * S + off_s  # y is the (G*S, K) view of the (G, S, K) weights
        # Per-group slices: x_scale per tensor of group g (stride_xs_g 1) or one scalar (0); y_scale/bias of g.
        x_scale = x_scale + g * stride_xs_g
        y_scale = y_scale + g.to(tl.int64) * stride_ys_g
        if HAS_BIAS:
            bias = bias + g.to(tl.int64) * S
    else:
        pid_r, pid_s = _tile_coords(tile_id, num_pid_r, num_pid_s, GROUP_R)
        off_r = pid_r * BLOCK_R  # i32: TMA coordinates are 32-bit
        off_s = pid_s * (BLOCK_S + BLOCK_S2)
        y_off = off_s

    # Product of the per-tensor (scalar) scales; 1.0 for vector ones, which the epilogue applies per row/column.
    # (Block scales, X_SCALE_GROUP > 0, are all applied in the K loop: 1.0 here.)
    blk_scale_epi = 1.0
    if X_SCALE_GROUP == 0:
        if not X_SCALE_VEC:
            blk_scale_epi = blk_scale_epi * tl.load(x_scale)
        if not Y_SCALE_VEC:
            blk_scale_epi = blk_scale_epi * tl.load(y_scale)
    blk_scale = 1.0  # unused unless K_SCALED
    if K_SCALED:
        # Per-K-block factor, applied in the loop: the scalar scales times the runtime k_scale (1.0), whose
        # multiply keeps `acc + dot(x, y, 0)` from being folded back into `dot(x, y, acc)`.
        blk_scale = k_scale * blk_scale_epi

    acc = tl.zeros((BLOCK_R, BLOCK_S), dtype=tl.float32)
    prev = acc  # the lagged promotion's pending block (PROMOTE_LAG; else unused)
    if PROMOTE_LAG == 2:
        acc = _k_loop_split(acc, x, y, K, kb_lo, kb_hi, off_r, off_s, y_off, x_scale, y_scale, R, S, stride_xs_r,
                            stride_xs_k, stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, BLOCK_K,
                            X_SCALE_GROUP, Y_SCALE_GROUP)
    elif USE_TMA:
        if BLOCK_S2 > 0:  # the second column piece: its own accumulator, the same K step on the same x tile
            tl.static_assert(X_SCALE_GROUP == 0 and PROMOTE_LAG == 0 and SPLIT_K == 1 and GROUPED == 0
                             and not SWAP_AB and not TMA_STORE)
            acc2 = tl.zeros((BLOCK_R, BLOCK_S2), dtype=tl.float32)
        for kb in tl.range(kb_lo, kb_hi, warp_specialize=WS_KLOOP):
            xt = x.load([off_r, kb * BLOCK_K])
            yt = y.load([y_off, kb * BLOCK_K])
            if BLOCK_S2 > 0:
                yt2 = y2.load([y_off + BLOCK_S, kb * BLOCK_K])
            acc, prev = _k_step(acc, prev, xt, yt, kb, kb_lo, x_scale, y_scale, off_r, off_s, R, S, stride_xs_r,
                                stride_xs_k, stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP,
                                Y_SCALE_GROUP, K_SCALED, PROMOTE_LAG)
            if BLOCK_S2 > 0:
                acc2, _ = _k_step(acc2, acc2, xt, yt2, kb, kb_lo, x_scale, y_scale, off_r, off_s + BLOCK_S, R, S,
                                  stride_xs_r, stride_xs_k, stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S2,
                                  X_SCALE_GROUP, Y_SCALE_GROUP, K_SCALED, PROMOTE_LAG)
    else:
        offs_r = off_r.to(tl.int64) + tl.arange(0, BLOCK_R)
        offs_s = off_s.to(tl.int64) + tl.arange(0, BLOCK_S)
        offs_k = tl.arange(0, BLOCK_K)
        x_ptrs = x + offs_r[:, None] * stride_xr + offs_k[None, :]
        y_ptrs = y + (y_off.to(tl.int64) + tl.arange(0, BLOCK_S))[:, None] * stride_yr + offs_k[None, :]
        mask_r = offs_r[:, None] < R
        mask_s = offs_s[:, None] < S
        for kb in range(kb_lo, kb_hi):
            k0 = kb * BLOCK_K
            mk = (k0 + offs_k)[None, :] < K
            xt = tl.load(x_ptrs + k0, mask=mask_r & mk, other=0.0)
            yt = tl.load(y_ptrs + k0, mask=mask_s & mk, other=0.0)
            acc, prev = _k_step(acc, prev, xt, yt, kb, kb_lo, x_scale, y_scale, off_r, off_s, R, S, stride_xs_r,
                                stride_xs_k, stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP,
                                Y_SCALE_GROUP, K_SCALED, PROMOTE_LAG)
    if PROMOTE_LAG == 1:
        # The last block (zeros when this split has no K blocks; kb_hi - 1 is a valid scale column: K > 0).
        acc = _promote(acc, prev, kb_hi - 1, x_scale, y_scale, off_r, off_s, R, S, stride_xs_r, stride_xs_k,
                       stride_ys_r, stride_ys_k, blk_scale, BLOCK_R, BLOCK_S, X_SCALE_GROUP, Y_SCALE_GROUP)

    # ---- epilogue, in SUBTILE column pieces: fewer live registers (a column vector of scales or bias costs one
    # register per column a thread holds: 64 at 128x256 with 8 warps) and a smaller TMA staging buffer ----
    if SUBTILE == 2:
        pieces = tl.permute(tl.reshape(acc, (BLOCK_R, 2, BLOCK_S // 2)), (0, 2, 1))
        acc0, acc1 = tl.split(pieces)
        _epilogue(acc0, c, ws, x_scale, y_scale, bias, R, S, stride_cm, off_r, off_s, split, blk_scale_epi,
                  BLOCK_R, BLOCK_S // 2, SPLIT_K, SWAP_AB, X_SCALE_VEC, Y_SCALE_VEC, K_SCALED, HAS_BIAS,
                  ACTIVATION, OUT_DTYPE, TMA_STORE, qkv, QKV, HEAD_DIM)
        _epilogue(acc1, c, ws, x_scale, y_scale, bias, R, S, stride_cm, off_r, off_s + BLOCK_S // 2, split,
                  blk_scale_epi, BLOCK_R, BLOCK_S // 2, SPLIT_K, SWAP_AB, X_SCALE_VEC, Y_SCALE_VEC, K_SCALED,
                  HAS_BIAS, ACTIVATION, OUT_DTYPE, TMA_STORE, qkv, QKV, HEAD_DIM)
    else:
        _epilogue(acc, c, ws, x_scale, y_scale, bias, R, S, stride_cm, off_r, off_s, split, blk_scale_epi,
                  BLOCK_R, BLOCK_S, SPLIT_K, SWAP_AB, X_SCALE_VEC, Y_SCALE_VEC, K_SCALED, HAS_BIAS,
                  ACTIVATION, OUT_DTYPE, TMA_STORE, qkv, QKV, HEAD_DIM)
    if BLOCK_S2 > 0:
        _epilogue(acc2, c, ws, x_scale, y_scale, bias, R, S, stride_cm, off_r, off_s + BLOCK_S, split,
                  blk_scale_epi, BLOCK_R, BLOCK_S2, SPLIT_K, SWAP_AB, X_SCALE_VEC, Y_SCALE_VEC, K_SCALED,
                  HAS_BIAS, ACTIVATION, OUT_DTYPE, TMA_STORE, qkv, QKV, HEAD_DIM)


@triton.jit
def _epilogue(
    acc, c, ws, x_scale, y_scale, bias, R, S, stride_cm, off_r, off_s, split, scalar_scale,
    BLOCK_R: tl.constexpr, PIECE_S: tl.constexpr, SPLIT_K: tl.constexpr, SWAP_AB: tl.constexpr,
    X_SCALE_VEC: tl.constexpr, Y_SCALE_VEC: tl.constexpr, K_SCALED: tl.constexpr, HAS_BIAS: tl.constexpr,
    ACTIVATION: tl.constexpr, OUT_DTYPE: tl.constexpr, TMA_STORE: tl.constexpr, qkv, QKV: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    """Scales, bias, activation, cast and store of one (BLOCK_R, PIECE_S) piece at (off_r, off_s), fp32 until the
    cast. ``scalar_scale`` is the product of the per-tensor scales (already applied in the K loop when K_SCALED).
    QKV 1: the piece is quantized into q/k/v (:func:`_store_qkv`) instead of stored to c; QKV 2: both."""
    offs_r = off_r.to(tl.int64) + tl.arange(0, BLOCK_R)
    offs_s = off_s.to(tl.int64) + tl.arange(0, PIECE_S)
    if X_SCALE_VEC:
        acc = acc * tl.load(x_scale + offs_r, mask=offs_r < R, other=0.0)[:, None]
    if Y_SCALE_VEC:
        acc = acc * tl.load(y_scale + offs_s, mask=offs_s < S, other=0.0)[None, :]
    if not K_SCALED:
        if not (X_SCALE_VEC and Y_SCALE_VEC):
            acc = acc * scalar_scale
    mask = (offs_r < R)[:, None] & (offs_s < S)[None, :]
    if SPLIT_K > 1:
        # Partial sum of this K slice, scaled (scales are linear); the reduce kernel adds bias/activation.
        # Workspace (SPLIT_K, M, N) fp32, row-major; in swap-AB the tile is Dᵀ: rows of D are columns of C.
        ws_split = ws + split.to(tl.int64) * R * S
        if SWAP_AB:
            w_ptrs = ws_split + offs_s[None, :] * R + offs_r[:, None]
        else:
            w_ptrs = ws_split + offs_r[:, None] * S + offs_s[None, :]
        tl.store(w_ptrs, acc, mask=mask)
    else:
        if HAS_BIAS:
            if SWAP_AB:  # bias runs along N = rows of D
                acc = acc + tl.load(bias + offs_r, mask=offs_r < R, other=0.0).to(tl.float32)[:, None]
            else:
                acc = acc + tl.load(bias + offs_s, mask=offs_s < S, other=0.0).to(tl.float32)[None, :]
        acc = _apply_activation(acc, ACTIVATION)
        if QKV > 0:
            _store_qkv(acc, qkv, offs_r, offs_s, mask, HEAD_DIM)
        if QKV != 1:
            _store_c(acc, c, stride_cm, off_r, off_s, offs_r, offs_s, mask, SWAP_AB, OUT_DTYPE, TMA_STORE)


@triton.jit
def _store_c(acc, c, stride_cm, off_r, off_s, offs_r, offs_s, mask, SWAP_AB: tl.constexpr, OUT_DTYPE: tl.constexpr,
             TMA_STORE: tl.constexpr):
    """Cast to OUT_DTYPE and store the piece into c (TMA or pointers; in swap-AB the piece is a tile of Cᵀ)."""
    out = _to_out_dtype(acc, OUT_DTYPE)
    if TMA_STORE:
        c.store([off_r, off_s], out)
    else:
        if SWAP_AB:
            c_ptrs = c + offs_s[None, :] * stride_cm + offs_r[:, None]
        else:
            c_ptrs = c + offs_r[:, None] * stride_cm + offs_s[None, :]
        tl.store(c_ptrs, out, mask=mask)


@triton.jit
def _store_qkv(acc, qkv, offs_r, offs_s, mask, HEAD_DIM: tl.constexpr):
    """Quantize a piece of the fused QKV projection into the three E4M3 tensors the attention kernel reads.

    Columns of D are heads of HEAD_DIM: [0, q_cols) the query heads, then the key heads, then the value heads
    (q_cols = Hq*D, kv_cols = Hkv*D, runtime ints); q, k, v are (rows, Hq*D), (rows, Hkv*D), (rows, Hkv*D)
    row-major (the (tokens, H, D) layout). ``head_scale`` holds one fp32 dequantization factor per head of D
    (Hq + 2*Hkv; a query head carries its KV group's scale), so the column's scale is one gather at col // D.
    Quantization is the library's rule: IEEE division (div_rn), saturate to +-448, round to nearest even.
    A piece may straddle the q/k/v boundaries (any head counts): the destination is chosen per column.
    """
    q_out, k_out, v_out, head_scale, q_cols, kv_cols = qkv
    scale = tl.load(head_scale + offs_s // HEAD_DIM, mask=offs_s < q_cols + 2 * kv_cols, other=1.0)
    y = cast_to_fp8(tl.math.div_rn(acc, scale[None, :]), tl.float8e4nv)
    is_q = (offs_s < q_cols)[None, :]
    is_k = (offs_s < q_cols + kv_cols)[None, :]
    row_q = (offs_r * q_cols)[:, None]
    row_kv = (offs_r * kv_cols)[:, None]
    ptr = tl.where(is_q, q_out + row_q + offs_s[None, :],
                   tl.where(is_k, k_out + row_kv + (offs_s - q_cols)[None, :],
                            v_out + row_kv + (offs_s - q_cols - kv_cols)[None, :]))
    tl.store(ptr, y, mask=mask)


# num_programs (the persistent grid size) is not specialized: 132 SMs and a small test grid share one compile.
@named_jit(do_not_specialize=["num_programs"])
def fp8_gemm_kernel(
    x, y, c, ws,
    x_scale, y_scale, bias,
    R, S, K,
    stride_xr, stride_yr, stride_cm,
    stride_xs_r, stride_xs_k, stride_ys_r, stride_ys_k,
    k_scale,
    num_programs,
    group_rows, num_groups, group_cap, stride_xs_g, stride_ys_g,
    KERNEL_NAME: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_R: tl.constexpr,
    SPLIT_K: tl.constexpr,
    USE_TMA: tl.constexpr, PERSISTENT: tl.constexpr, FLATTEN: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
    SUBTILE: tl.constexpr, SWAP_AB: tl.constexpr,
    X_SCALE_VEC: tl.constexpr, Y_SCALE_VEC: tl.constexpr, K_SCALED: tl.constexpr,
    X_SCALE_GROUP: tl.constexpr, Y_SCALE_GROUP: tl.constexpr,
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, OUT_DTYPE: tl.constexpr, TMA_STORE: tl.constexpr,
    GROUPED: tl.constexpr, G_PAD: tl.constexpr, PROMOTE_LAG: tl.constexpr,
    q_out=None, k_out=None, v_out=None, head_scale=None, q_cols=0, kv_cols=0,
    QKV: tl.constexpr = 0, HEAD_DIM: tl.constexpr = 0,
    y2=None, BLOCK_S2: tl.constexpr = 0,
):
    """``D = (X·x_scale)(Y·y_scale)ᵀ`` (+ bias, activation) for one or more output tiles.

    x: (R, K) FP8, K-major: a TMA descriptor with block [BLOCK_R, BLOCK_K] (USE_TMA) or a pointer (row stride
    ``stride_xr``). y: (S, K) FP8 likewise. c: the output (M, N) row-major in OUT_DTYPE: a TMA descriptor with block
    [BLOCK_R, BLOCK_S // SUBTILE] (TMA_STORE: not swap-AB, not split-K, not warp-specialized) or a pointer (row
    stride ``stride_cm``).
    ws: fp32 workspace (SPLIT_K, M, N) when SPLIT_K > 1. x_scale/y_scale: fp32 dequantization factors, a vector over
    the rows of x/y (X_SCALE_VEC/Y_SCALE_VEC) or one scalar. bias: (N,) fp32/bf16/fp16 or None.
    k_scale: runtime fp32 factor applied per K block when K_SCALED (1.0 for the precise mode).
    Block scales (X_SCALE_GROUP, Y_SCALE_GROUP > 0, K_SCALED, BLOCK_K = 128): x_scale is a 2-D fp32 tensor
    (ceil(R / X_SCALE_GROUP), ceil(K / 128)) with strides (stride_xs_r, stride_xs_k), one scale per X_SCALE_GROUP
    rows (1: 1x128 groups; 128: 128x128 blocks) and 128-wide K block; y_scale likewise. Each K block's fresh dot
    is multiplied by ``x_scale[rows, kb][:, None] * y_scale[cols, kb][None, :]`` in fp32 and added to the fp32
    accumulator; the epilogue applies no further scale.

    Grouped (MoE) modes, PERSISTENT only, no swap-AB/split-K/TMA store: ``num_groups`` = G problems
    ``D_g = X[rows of g] · Y_gᵀ`` with y the (G*S, K) view of the (G, S, K) weights (S = N per group) and c the
    (R, S) output holding each group's rows where its x rows are.
    GROUPED = 1 (contiguous): group_rows = int32 offsets (G+1,), group g owns x rows offsets[g] .. offsets[g+1]-1.
    GROUPED = 3 (contiguous, sizes): group_rows = int32 rows per group (G,); offsets are their prefix sum.
    GROUPED = 2 (masked, decode): group_rows = int32 valid counts (G,), x is the (G*group_cap, K) view of a
    (G, group_cap, K) buffer, group g owns rows g*group_cap .. g*group_cap+counts[g]-1; other rows are not written.
    The tile schedule is computed here, on the device, from those G values (no host sync): per-group tile counts
    cdiv(m_g, BLOCK_R) * cdiv(S, BLOCK_S) in one G_PAD-wide vector (G_PAD: :func:`group_pad`), their
    prefix sum, and the total, which bounds the persistent loop; each tile finds its group by one vector compare
    and sum. Row windows are clamped to [0, R], so malformed offsets cannot make the kernel write outside c.
    Scales: x_scale a vector over x rows (X_SCALE_VEC), or per tensor at x_scale[g * stride_xs_g]; y_scale of group g
    starts at y_scale + g * stride_ys_g ((G,) per tensor: 1; (G, S) rows: S; block (G, ceil(S/128), Kb): its dim-0
    stride); bias (G, S).

    Fused QKV projection (QKV 1: q/k/v only; 2: q/k/v and c; not swap-AB, split-K or grouped; pointer stores):
    y is the concatenated weight [Wq; Wk; Wv] (S = (Hq + 2*Hkv) * HEAD_DIM rows), and the epilogue writes the fp32
    result quantized to E4M3 into q_out (R, Hq*D), k_out and v_out (R, Hkv*D) with one static scale per head of
    ``head_scale`` (see :func:`_store_qkv`); q_cols = Hq*D, kv_cols = Hkv*D.

    BLOCK_S2 > 0: tiles of BLOCK_S + BLOCK_S2 columns, the second piece read through y2 (see :func:`_gemm_tile`).
    """
    qkv = (q_out, k_out, v_out, head_scale, q_cols, kv_cols)
    pid = tl.program_id(0)
    num_pid_r = tl.cdiv(R, BLOCK_R)  # (unused when GROUPED: each group has its own row-tile count)
    num_pid_s = tl.cdiv(S, BLOCK_S + BLOCK_S2)
    num_tiles = num_pid_r * num_pid_s
    k_blocks = tl.cdiv(K, BLOCK_K)
    if GROUPED > 0:
        g_idx = tl.arange(0, G_PAD)
        g_valid = g_idx < num_groups
        if GROUPED == 1:
            g_lo = tl.load(group_rows + g_idx, mask=g_valid, other=0)
            g_hi = tl.load(group_rows + g_idx + 1, mask=g_valid, other=0)
        elif GROUPED == 3:  # sizes: the offsets are their prefix sum, here (no separate cumsum launch)
            g_size = tl.load(group_rows + g_idx, mask=g_valid, other=0)
            g_hi = tl.cumsum(g_size, 0)
            g_lo = g_hi - g_size
        else:
            g_lo = g_idx * group_cap
            g_hi = g_lo + tl.load(group_rows + g_idx, mask=g_valid, other=0)
        g_lo = tl.minimum(tl.maximum(g_lo, 0), R)
        g_hi = tl.minimum(tl.maximum(g_hi, g_lo), R)
        g_tiles = tl.cdiv(g_hi - g_lo, BLOCK_R) * num_pid_s
        g_cum = tl.cumsum(g_tiles, 0)
        num_tiles = tl.sum(g_tiles, 0)
    else:
        g_idx = 0
        g_lo = 0
        g_hi = 0
        g_tiles = 0
        g_cum = 0
    if PERSISTENT:
        # The "split" promotion (PROMOTE_LAG 2) keeps the nested loop: flattened, the tile's last promotion moves
        # into the loop body (under the epilogue's if) and reads the still-running second-half wgmma, which Triton
        # 3.6 does not wait for there (offline TTGIR: no warp_group_dot_wait before that use); nested, the
        # pipeliner's wait after the K loop precedes it.
        for work_id in tl.range(pid, num_tiles * SPLIT_K, num_programs, flatten=FLATTEN and PROMOTE_LAG != 2,
                                warp_specialize=WARP_SPECIALIZE):
            _gemm_tile(
                x, y, c, ws, x_scale, y_scale, bias, R, S, K, stride_xr, stride_yr, stride_cm,
                stride_xs_r, stride_xs_k, stride_ys_r, stride_ys_k, k_scale,
                work_id, num_tiles, num_pid_r, num_pid_s, k_blocks,
                g_idx, g_lo, g_hi, g_tiles, g_cum, stride_xs_g, stride_ys_g,
                BLOCK_R, BLOCK_S, BLOCK_K, GROUP_R, SPLIT_K, USE_TMA, SUBTILE, SWAP_AB,
                X_SCALE_VEC, Y_SCALE_VEC, K_SCALED, X_SCALE_GROUP, Y_SCALE_GROUP, HAS_BIAS, ACTIVATION, OUT_DTYPE,
                False, TMA_STORE, GROUPED, PROMOTE_LAG, qkv, QKV, HEAD_DIM, y2, BLOCK_S2,
            )
    else:
        _gemm_tile(
            x, y, c, ws, x_scale, y_scale, bias, R, S, K, stride_xr, stride_yr, stride_cm,
            stride_xs_r, stride_xs_k, stride_ys_r, stride_ys_k, k_scale,
            pid, num_tiles, num_pid_r, num_pid_s, k_blocks,
            g_idx, g_lo, g_hi, g_tiles, g_cum, stride_xs_g, stride_ys_g,
            BLOCK_R, BLOCK_S, BLOCK_K, GROUP_R, SPLIT_K, USE_TMA, SUBTILE, SWAP_AB,
            X_SCALE_VEC, Y_SCALE_VEC, K_SCALED, X_SCALE_GROUP, Y_SCALE_GROUP, HAS_BIAS, ACTIVATION, OUT_DTYPE,
            WARP_SPECIALIZE, TMA_STORE, GROUPED, PROMOTE_LAG, qkv, QKV, HEAD_DIM, y2, BLOCK_S2,
        )


# M and N stay runtime values (M = 1 would otherwise become a constexpr without .to()).
@named_jit(do_not_specialize=["M", "N"])
def fp8_gemm_splitk_reduce_kernel(
    ws, c, bias, M, N,
    KERNEL_NAME: tl.constexpr,
    SPLIT_K: tl.constexpr, BLOCK: tl.constexpr,
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, OUT_DTYPE: tl.constexpr,
):
    """C = act(sum over SPLIT_K of ws[k] + bias): ws (SPLIT_K, M, N) fp32, C (M, N) row-major, contiguous."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    total = M.to(tl.int64) * N
    mask = offs < total
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in tl.static_range(SPLIT_K):
        acc += tl.load(ws + k * total + offs, mask=mask, other=0.0)
    if HAS_BIAS:
        acc += tl.load(bias + offs % N, mask=mask, other=0.0).to(tl.float32)
    acc = _apply_activation(acc, ACTIVATION)
    tl.store(c + offs, _to_out_dtype(acc, OUT_DTYPE), mask=mask)


# ------------------------------------------------------------------------------------------------------------------
# Host side: kernel names, launch, offline codegen specs

import dataclasses  # noqa: E402
import functools  # noqa: E402

import torch  # noqa: E402

from tritonfp8._formats import short_name, triton_sig  # noqa: E402
from tritonfp8.naming import KernelName  # noqa: E402
from tritonfp8._kernels.gemm_configs import GemmConfig, effective_split  # noqa: E402

_TL_OUT = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}
REDUCE_BLOCK = 1024


def promote_lag(cfg: GemmConfig, k_scaled: bool) -> int:
    """Constexpr PROMOTE_LAG: 0 (unlagged), 1 ("lag") or 2 ("split"): non-zero when the config asks for a lagged
    promotion, the mode has a promotion at all (precise or block scales), and the loads are TMA (wgmma,
    asynchronous) without warp specialization. The others keep the unlagged loop: the pointer path (Ada's mma.sync
    is synchronous: nothing to overlap; its lagged build measured 252 registers vs 178, offline sm_89) and the
    warp-specialized schedules (Triton 3.6's NVGPUWarpSpecialization pass fails on the lagged loop: measured
    offline, tmaws and tmawspersistent)."""
    if cfg.promote == "sync" or not k_scaled or not cfg.uses_tma or cfg.warp_specialized:
        return 0
    return 1 if cfg.promote == "lag" else 2


def tma_k_box(cfg: GemmConfig, k_scaled: bool) -> int:
    """K width of the operands' TMA blocks: block_k, or half of it for the "split" promotion (each K block is
    loaded as two halves)."""
    return cfg.block_k // 2 if promote_lag(cfg, k_scaled) == 2 else cfg.block_k


def scaling_token(a_vec: bool, b_vec: bool, b_block_rows: int | None = None) -> str:
    """Name field of the scale granularity: per tensor, per row of a and/or per row of b (output channel); block
    scales: "blockwise" (1x128 groups of a, 128x128 blocks of b) or "group1x128" (1x128 groups of both)."""
    if b_block_rows is not None:
        return "blockwise" if b_block_rows > 1 else "group1x128"
    if a_vec and b_vec:
        return "rowwise"
    if a_vec:
        return "rowwisea"
    if b_vec:
        return "rowwiseb"
    return "tensorwise"


def epilogue_token(has_bias: bool, activation: str | None) -> str | None:
    tok = ("bias" if has_bias else "") + (activation or "")
    return tok or None


@functools.lru_cache(maxsize=1024)  # pure; launchers call it on every GEMM
def gemm_kernel_name(
    cfg: GemmConfig, *, arch: int, a_dtype: torch.dtype, b_dtype: torch.dtype, out_dtype: torch.dtype,
    a_vec: bool, b_vec: bool, precise: bool, has_bias: bool, activation: str | None, b_block_rows: int | None = None,
) -> KernelName:
    extras = []
    if precise and b_block_rows is None:  # block scaling is always per-K-block fp32: the scaling field says so
        extras.append("precise")
    lag = promote_lag(cfg, precise or b_block_rows is not None)
    if lag:
        extras.append("lag" if lag == 1 else "split")
    if cfg.swap_ab:
        extras.append("swapab")
    if cfg.block_n2:
        extras.append(f"n{cfg.block_n}p{cfg.block_n2}")  # the tile's two column pieces
    if cfg.split_k > 1:
        extras.append(f"splitk{cfg.split_k}")
    if cfg.epilogue_subtile > 1 and cfg.tma_store:
        extras.append(f"sub{cfg.epilogue_subtile}")
    epi = epilogue_token(has_bias, activation)
    if epi and cfg.split_k == 1:
        extras.append(epi)
    return KernelName(
        arch=arch, op="fp8gemm", types=(short_name(a_dtype), short_name(b_dtype), "f32", short_name(out_dtype)),
        tile=(cfg.block_m, cfg.tile_n, cfg.block_k), warps=cfg.num_warps, stages=cfg.num_stages,
        schedule=cfg.schedule, scaling=scaling_token(a_vec, b_vec, b_block_rows), extras=tuple(extras),
    )


def reduce_kernel_name(*, arch: int, out_dtype: torch.dtype, split_k: int, has_bias: bool,
                       activation: str | None) -> KernelName:
    epi = epilogue_token(has_bias, activation)
    return KernelName(
        arch=arch, op="fp8gemmreduce", types=("f32", short_name(out_dtype)), tile=(1, REDUCE_BLOCK, 1), warps=4,
        stages=1, schedule=f"splitk{split_k}", extras=(epi,) if epi else (),
    )


@functools.lru_cache(maxsize=None)
def num_sms(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _launch(kernel, grid, warmup: bool, *args, **kwargs):
    if warmup:
        return kernel.warmup(*args, grid=grid, **kwargs)
    return _fast.launch(kernel, grid, *args, **kwargs)  # kernel[grid](...) with Triton's dispatch cached


# Programs of a persistent grid under the interpreter: a few, so that every program walks several tiles.
INTERPRETER_SMS = 3


@dataclasses.dataclass(frozen=True)
class QkvTargets:
    """Destinations of the fused QKV epilogue (see ``_store_qkv``): E4M3 q (M, Hq*D), k and v (M, Hkv*D), all
    contiguous; ``head_scale`` fp32 (Hq + 2*Hkv,) one dequantization factor per head of the GEMM's columns;
    ``store_c``: also store the unquantized result into ``out``."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    head_scale: torch.Tensor
    heads_q: int
    heads_kv: int
    head_dim: int
    store_c: bool = False


def qkv_kernel_name(base: KernelName, head_dim: int, store_c: bool) -> KernelName:
    """The GEMM name of a fused-QKV launch: output type e4m3 and extras ``qkv``, ``hd<D>`` (``c`` + the high
    precision type when the unquantized result is stored too), e.g.
    ``cutlass_sm90_fp8gemm_e4m3_e4m3_f32_e4m3_128x128x128_w8s4_tma_tensorwise_qkv_hd128``."""
    types = base.types[:3] + ("e4m3",)
    extras = base.extras + ("qkv", f"hd{head_dim}") + ((f"c{base.types[3]}",) if store_c else ())
    return dataclasses.replace(base, types=types, extras=extras)


def _qkv_launch_args(qkv: QkvTargets | None, cfg: GemmConfig) -> dict:
    """Kernel arguments of the fused-QKV epilogue (empty without one)."""
    if qkv is None:
        return {}
    if cfg.swap_ab or cfg.split_k != 1:
        raise ValueError(f"config: the fused QKV epilogue needs a config without swap-AB or split-K, got {cfg.short()}")
    return dict(q_out=qkv.q, k_out=qkv.k, v_out=qkv.v, head_scale=qkv.head_scale,
                q_cols=qkv.heads_q * qkv.head_dim, kv_cols=qkv.heads_kv * qkv.head_dim,
                QKV=2 if qkv.store_c else 1, HEAD_DIM=qkv.head_dim)


def launch_gemm(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, bias: torch.Tensor | None,
    activation: str | None, out: torch.Tensor, cfg: GemmConfig, *, a_vec: bool, b_vec: bool, precise: bool,
    arch: int, sms: int, warmup: bool = False, b_block_rows: int | None = None, qkv: QkvTargets | None = None,
    _record: list | None = None,
) -> torch.Tensor:
    """Launch ``out = act((a·scale_a)(b·scale_b)ᵀ + bias)`` with ``cfg``; inputs already validated.

    a (M, K) and b (N, K) FP8 with K contiguous, row strides and base 16-byte aligned (TMA); scale_a (M,) when
    ``a_vec`` else (1,), scale_b (N,) when ``b_vec`` else (1,), fp32 contiguous; bias (N,) or None; out (M, N)
    row-major contiguous. Block scales (``b_block_rows`` 128 or 1; ``cfg.block_k`` must be 128): scale_a
    (M, ceil(K/128)) and scale_b (ceil(N/b_block_rows), ceil(K/128)), fp32, any strides (read in place). ``warmup=True`` compiles without launching (``triton.AsyncCompileMode`` can then compile
    many configs in parallel: see ``tritonfp8.tune``). ``qkv``: fused QKV epilogue (:class:`QkvTargets`; pointer
    stores; ``out`` is written only with ``qkv.store_c``).
    """
    if precise and cfg.block_k > 128:
        # each K block's dot accumulates on the tensor core before its fp32 promotion: the precise mode's promise
        # (fp32 at least every 128 K) holds only for blocks of <= 128
        raise ValueError(f"config: accumulate='precise' needs block_k <= 128, got {cfg.short()}")
    if cfg.schedule == "glws":
        if qkv is not None:
            raise ValueError("config: schedule 'glws' has no fused QKV epilogue")
        if b_block_rows == 1 and cfg.block_n > 128:
            raise ValueError(f"config: schedule 'glws' takes 1x128 groups of b with block_n <= 128; got "
                             f"{cfg.block_n}")
        from tritonfp8._kernels import gemm_gluon

        name = gemm_kernel_name(
            cfg, arch=arch, a_dtype=a.dtype, b_dtype=b.dtype, out_dtype=out.dtype, a_vec=a_vec, b_vec=b_vec,
            precise=precise, has_bias=bias is not None, activation=activation, b_block_rows=b_block_rows,
        ).build()
        split = effective_split(a.shape[1], cfg.split_k)
        rname = reduce_kernel_name(arch=arch, out_dtype=out.dtype, split_k=split, has_bias=bias is not None,
                                   activation=activation).build() if split > 1 else ""
        gemm_gluon.launch(a, b, scale_a, scale_b, bias, ACTIVATIONS[activation], out, block_n=cfg.block_n,
                          num_stages=cfg.num_stages, group_m=cfg.group_m, a_vec=a_vec, b_vec=b_vec,
                          b_block_rows=b_block_rows, sms=sms, name=name,
                          fast=not (precise or b_block_rows is not None), warmup=warmup, split_k=split,
                          reduce_name=rname, record=_record)
        return out
    tkey = None
    if not warmup and qkv is None and a.is_cuda and _fast.enabled():
        tkey = _template_key(a, b, scale_a, scale_b, bias, activation, out, cfg, a_vec, b_vec, precise, arch, sms,
                             b_block_rows)
        t = _TEMPLATES.get(tkey)
        if t is not None:
            t.launch(a, b, scale_a, scale_b, bias, out)
            if _record is not None:
                _record.append(t)
            return out
    qkv_args = _qkv_launch_args(qkv, cfg)
    tma_store = cfg.tma_store and qkv is None
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, K = a.shape
    N = b.shape[0]
    if cfg.swap_ab:
        x, y, x_scale, y_scale, x_vec, y_vec, R, S = b, a, scale_b, scale_a, b_vec, a_vec, N, M
    else:
        x, y, x_scale, y_scale, x_vec, y_vec, R, S = a, b, scale_a, scale_b, a_vec, b_vec, M, N
    BR, BS, BK = cfg.block_m, cfg.block_n, cfg.block_k
    if b_block_rows is not None:
        if BK != 128:
            raise ValueError(f"config: block scales need block_k = 128, got {BK}")
        x_group, y_group = (b_block_rows, 1) if cfg.swap_ab else (1, b_block_rows)
        xs_strides, ys_strides = tuple(x_scale.stride()), tuple(y_scale.stride())
    else:
        x_group = y_group = 0
        xs_strides = ys_strides = (0, 0)
    box_k = tma_k_box(cfg, precise or b_block_rows is not None)
    if cfg.uses_tma:
        x_arg = TensorDescriptor.from_tensor(x, [BR, box_k])
        y_arg = TensorDescriptor.from_tensor(y, [BS, box_k])
    else:
        x_arg, y_arg = x, y
    if cfg.block_n2:
        if b_block_rows is not None or qkv is not None or promote_lag(cfg, True):
            raise ValueError(f"config: block_n2 runs per-tensor or rowwise scales (fast, or precise with the 'sync' "
                             f"promotion) and no fused QKV epilogue, got {cfg.short()}")
        y2_arg = TensorDescriptor.from_tensor(y, [cfg.block_n2, box_k])
    else:
        y2_arg = None
    split = cfg.split_k
    ws = torch.empty((split, M, N), device=out.device, dtype=torch.float32) if split > 1 else None
    if tma_store:
        c_arg = TensorDescriptor.from_tensor(out, [BR, BS // cfg.epilogue_subtile])
    else:
        c_arg = out
    name = gemm_kernel_name(
        cfg, arch=arch, a_dtype=a.dtype, b_dtype=b.dtype, out_dtype=out.dtype, a_vec=a_vec, b_vec=b_vec,
        precise=precise, has_bias=bias is not None, activation=activation, b_block_rows=b_block_rows,
    )
    if qkv is not None:
        name = qkv_kernel_name(name, qkv.head_dim, qkv.store_c)
    name = name.build()
    num_tiles = triton.cdiv(R, BR) * triton.cdiv(S, cfg.tile_n)
    work = num_tiles * split
    grid_size = min(work, sms) if cfg.persistent else work
    act = ACTIVATIONS[activation]
    mid = (R, S, K, x.stride(0), y.stride(0), out.stride(0), *xs_strides, *ys_strides, 1.0, grid_size,
           None, 1, 0, 0, 0)
    kwargs = dict(
        KERNEL_NAME=name, BLOCK_R=BR, BLOCK_S=BS, BLOCK_K=BK, GROUP_R=cfg.group_m, SPLIT_K=split,
        USE_TMA=cfg.uses_tma, PERSISTENT=cfg.persistent, FLATTEN=not cfg.warp_specialized,
        WARP_SPECIALIZE=cfg.warp_specialized, SUBTILE=cfg.epilogue_subtile, SWAP_AB=cfg.swap_ab,
        X_SCALE_VEC=x_vec, Y_SCALE_VEC=y_vec, K_SCALED=precise or b_block_rows is not None,
        X_SCALE_GROUP=x_group, Y_SCALE_GROUP=y_group, HAS_BIAS=bias is not None and split == 1,
        ACTIVATION=act if split == 1 else ACT_NONE, OUT_DTYPE=_TL_OUT[out.dtype], TMA_STORE=tma_store,
        GROUPED=0, G_PAD=1, PROMOTE_LAG=promote_lag(cfg, precise or b_block_rows is not None),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages, **qkv_args,
    )
    if cfg.block_n2:
        kwargs.update(y2=y2_arg, BLOCK_S2=cfg.block_n2)
    main = _launch(fp8_gemm_kernel, (grid_size,), warmup, x_arg, y_arg, c_arg, ws, x_scale, y_scale,
                   bias if split == 1 else None, *mid, **kwargs)
    red = None
    if split > 1:
        rname = reduce_kernel_name(arch=arch, out_dtype=out.dtype, split_k=split, has_bias=bias is not None,
                                   activation=activation).build()
        rkw = dict(KERNEL_NAME=rname, SPLIT_K=split, BLOCK=REDUCE_BLOCK, HAS_BIAS=bias is not None,
                   ACTIVATION=act, OUT_DTYPE=_TL_OUT[out.dtype], num_warps=4)
        red = _launch(fp8_gemm_splitk_reduce_kernel, (triton.cdiv(M * N, REDUCE_BLOCK),), warmup,
                      ws, out, bias, M, N, **rkw)
    if tkey is not None and main is not None and not hasattr(main, "result") and (split == 1 or (
            red is not None and not hasattr(red, "result"))):
        if len(_TEMPLATES) >= _TEMPLATE_CACHE_SIZE:
            _TEMPLATES.pop(next(iter(_TEMPLATES)))  # oldest first
        _TEMPLATES[tkey] = _Template(
            cfg=cfg, main=main, main_grid=(grid_size, 1, 1), mid=mid,
            main_tail=_fast._tail_values(fp8_gemm_kernel, 7 + len(mid), kwargs), tma_store=tma_store,
            x_block=[BR, box_k], y_block=[BS, box_k], c_block=[BR, BS // cfg.epilogue_subtile], ws_shape=(split, M, N),
            y2_block=[cfg.block_n2, box_k] if cfg.block_n2 else None,
            y2_pos=_fast.param_index(fp8_gemm_kernel, "y2") - 7 - len(mid),
            red=red, red_grid=(triton.cdiv(M * N, REDUCE_BLOCK), 1, 1),
            red_tail=_fast._tail_values(fp8_gemm_splitk_reduce_kernel, 5, rkw) if red is not None else None,
            M=M, N=N,
        )
        if _record is not None:
            _record.append(_TEMPLATES[tkey])
    return out


# ------------------------------------------------------------------------------------------------------------------
# Launch templates: a repeat launch_gemm call with the same metadata rebuilds only what depends on the data pointers
# (three TMA descriptors, the split-K workspace) and calls the compiled kernels' launchers directly. Measured on
# the H200 host: the eager GEMM call cost ~240 us of Python before these caches (~25 us for torch._scaled_mm).

_TEMPLATES: dict[tuple, "_Template"] = {}
_TEMPLATE_CACHE_SIZE = 512


def _template_key(a, b, scale_a, scale_b, bias, activation, out, cfg, a_vec, b_vec, precise, arch, sms,
                  b_block_rows) -> tuple:
    """Everything the kernels' specialization and arguments depend on, except the data pointers themselves: shapes,
    strides, dtypes, options, the kernel-name mode, the device, and each pointer's 16-byte alignment."""
    from tritonfp8.naming import naming_mode

    return (
        cfg, a.shape, b.shape, a.stride(), b.stride(), a.dtype, b.dtype, out.shape, out.stride(), out.dtype,
        a_vec, b_vec, precise, activation, b_block_rows, arch, sms, naming_mode(), a.device.index,
        scale_a.shape, scale_a.stride(), scale_b.shape, scale_b.stride(),
        None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.data_ptr() % 16 == 0),
        a.data_ptr() % 16 == 0, b.data_ptr() % 16 == 0, out.data_ptr() % 16 == 0,
        scale_a.data_ptr() % 16 == 0, scale_b.data_ptr() % 16 == 0,
    )


def _desc(t: torch.Tensor, block: list, cache: dict | None = None):
    """A host TMA descriptor of ``t`` (shapes and alignment already validated for this template) on its address
    (``_direct.Address``: no tensor kept alive); with ``cache``, reused by address (weights keep their address from
    call to call; at most 8 entries are kept)."""
    ptr = t.data_ptr()
    if cache is not None:
        d = cache.get(ptr)
        if d is not None:
            return d
    d = _direct.descriptor(_direct.Address(ptr, t.dtype), t.shape, t.stride(), block)
    if cache is not None:
        if len(cache) >= 8:
            cache.pop(next(iter(cache)))
        cache[ptr] = d
    return d


@dataclasses.dataclass
class _Template:
    cfg: GemmConfig
    main: object
    main_grid: tuple
    mid: tuple
    main_tail: tuple
    tma_store: bool
    x_block: list
    y_block: list
    c_block: list
    ws_shape: tuple
    red: object
    red_grid: tuple
    red_tail: tuple | None
    M: int
    N: int
    y2_block: list | None = None  # block_n2 configs: the second y descriptor's block, rebuilt per call
    y2_pos: int = -1  # its position in main_tail
    descs: tuple = dataclasses.field(default_factory=lambda: ({}, {}, {}, {}))

    def launch(self, a, b, scale_a, scale_b, bias, out) -> None:
        cfg = self.cfg
        if cfg.swap_ab:
            x, y, xs, ys = b, a, scale_b, scale_a
        else:
            x, y, xs, ys = a, b, scale_a, scale_b
        cx, cy, cc, cy2 = self.descs
        tail = self.main_tail
        if self.y2_block is not None:  # rebuilt for this call's b, as y is
            i = self.y2_pos
            tail = tail[:i] + (_desc(y, self.y2_block, cy2),) + tail[i + 1:]
        if cfg.uses_tma:
            xa, ya = _desc(x, self.x_block, cx), _desc(y, self.y_block, cy)
        else:
            xa, ya = x, y
        c_arg = _desc(out, self.c_block, cc) if self.tma_store else out
        split = cfg.split_k
        ws = torch.empty(self.ws_shape, device=out.device, dtype=torch.float32) if split > 1 else None
        _fast.run_compiled(self.main, self.main_grid,
                           (xa, ya, c_arg, ws, xs, ys, bias if split == 1 else None, *self.mid, *tail))
        if self.red is not None:
            _fast.run_compiled(self.red, self.red_grid, (ws, out, bias, self.M, self.N, *self.red_tail))


# Grouped GEMM modes (constexpr GROUPED).
GROUPED_CONTIGUOUS, GROUPED_MASKED, GROUPED_SIZES = 1, 2, 3


def grouped_kernel_name(cfg: GemmConfig, *, mode: int, arch: int, a_dtype, b_dtype, out_dtype, a_vec: bool,
                        b_vec: bool, precise: bool, has_bias: bool, activation: str | None,
                        b_block_rows: int | None) -> KernelName:
    """The GEMM name with op ``fp8groupedgemm`` (contiguous groups) or ``fp8maskedgemm`` (masked, decode)."""
    base = gemm_kernel_name(cfg, arch=arch, a_dtype=a_dtype, b_dtype=b_dtype, out_dtype=out_dtype, a_vec=a_vec,
                            b_vec=b_vec, precise=precise, has_bias=has_bias, activation=activation,
                            b_block_rows=b_block_rows)
    op = "fp8maskedgemm" if mode == GROUPED_MASKED else "fp8groupedgemm"
    return dataclasses.replace(base, op=op)


@functools.lru_cache(maxsize=256)  # both grouped launchers build the symbol on every call
def _grouped_symbol(cfg: GemmConfig, **kw) -> str:
    return grouped_kernel_name(cfg, **kw).build()


def _grouped_args(cfg: GemmConfig, *, mode: int, G: int, a_vec: bool, b_vec: bool, b_block_rows: int | None):
    """Constexprs shared by :func:`launch_grouped` and :func:`grouped_codegen_spec`."""
    # 'tmawspersistent' fails in Triton 3.6's sm_90 TTGIR passes with the grouped schedule (measured offline:
    # "PassManager::run failed" in make_ttgir), so the grouped GEMM takes 'tmapersistent' only.
    if cfg.schedule != "tmapersistent" or cfg.swap_ab or cfg.split_k != 1:
        raise ValueError(f"config: grouped GEMM needs schedule 'tmapersistent' without swap-AB or split-K, got "
                         f"{cfg.short()}")
    if b_block_rows is not None and cfg.block_k != 128:
        raise ValueError(f"config: block scales need block_k = 128, got {cfg.block_k}")
    return dict(
        BLOCK_R=cfg.block_m, BLOCK_S=cfg.block_n, BLOCK_K=cfg.block_k, GROUP_R=cfg.group_m, SPLIT_K=1,
        USE_TMA=cfg.uses_tma, PERSISTENT=True, FLATTEN=not cfg.warp_specialized,
        WARP_SPECIALIZE=cfg.warp_specialized, SUBTILE=cfg.epilogue_subtile, SWAP_AB=False,
        X_SCALE_VEC=a_vec, Y_SCALE_VEC=b_vec,
        X_SCALE_GROUP=1 if b_block_rows is not None else 0, Y_SCALE_GROUP=b_block_rows or 0,
        # Pointer stores: a tile's rows past its group's end belong to the next group (a TMA store would overwrite
        # them with this group's products); the masked store writes only rows < the group's end.
        TMA_STORE=False, GROUPED=mode, G_PAD=group_pad(G),
    )


def group_pad(G: int) -> int:
    """Width of the grouped schedule's per-group vectors (the G_PAD constexpr): the next power of two >= G, at
    least 32. Narrower vectors (one warp's lanes holding copies of < 32 groups) made ptxas keep the persistent
    loop's counters and shared-memory addresses in vector registers (R2UR before every wgmma): offline sm_90, G 8
    and 16 gave the Gluon consumer's K loop 240 instructions against 188 at >= 32 (the dense kernel's count), and
    on the H200 the G 8 grouped call executed 28% more instructions than the dense GEMM of the same shape
    (ncu, session 14). ``test_codegen_grouped.py`` checks the K loop at G 8 against the dense kernel."""
    return max(32, triton.next_power_of_2(G))


def launch_grouped(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, bias: torch.Tensor | None,
    activation: str | None, out: torch.Tensor, cfg: GemmConfig, *, mode: int, group_rows: torch.Tensor,
    group_cap: int, a_vec: bool, a_group_stride: int, b_vec: bool, b_group_stride: int, precise: bool,
    arch: int, sms: int, b_block_rows: int | None = None, warmup: bool = False,
) -> torch.Tensor:
    """One persistent launch of the grouped GEMM; inputs already validated (see :mod:`tritonfp8.grouped`).

    a (R, K) FP8 rows of all groups (masked: the (G*cap, K) view); b (G, N, K) FP8 contiguous, read as (G*N, K);
    out (R, N) row-major. group_rows: int32 device tensor, offsets (G+1,) (GROUPED_CONTIGUOUS), sizes (G,)
    (GROUPED_SIZES) or counts (G,) (GROUPED_MASKED).
    scale_a: (R,) rowwise (a_vec), per tensor at scale_a[g * a_group_stride] (stride 0: one scalar; 1: (G,)), or
    block (R, Kb). scale_b: (G,) per tensor (b_group_stride 1), (G, N) rowwise (b_vec, stride N) or block
    (G, ceil(N/b_block_rows), Kb) with its dim-0 stride. bias (G, N) contiguous or None. No host sync: the grid is
    min(#SMs, upper bound of the tile count) and the kernel computes the real count from group_rows.
    """
    if cfg.block_n2:
        raise ValueError(f"config: the grouped GEMM has no block_n2 tiles, got {cfg.short()}")
    if cfg.schedule == "glws":
        # The Gluon warp-specialized kernel (its promotion overlaps the other consumer's wgmma) with the same
        # device-side group schedule; TMA stores except for a group's last, partial row tile.
        if cfg.split_k != 1 or (b_block_rows == 1 and cfg.block_n > 128):
            raise ValueError(f"config: grouped schedule 'glws' needs split_k = 1 and, with 1x128 groups of b, "
                             f"block_n <= 128; got {cfg.short()}")
        from tritonfp8._kernels import gemm_gluon

        name = _grouped_symbol(
            cfg, mode=mode, arch=arch, a_dtype=a.dtype, b_dtype=b.dtype, out_dtype=out.dtype, a_vec=a_vec,
            b_vec=b_vec, precise=precise, has_bias=bias is not None, activation=activation,
            b_block_rows=b_block_rows,
        )
        gemm_gluon.launch_grouped(
            a, b, scale_a, scale_b, bias, ACTIVATIONS[activation], out, mode=mode, group_rows=group_rows,
            group_cap=group_cap, a_group_stride=a_group_stride, b_group_stride=b_group_stride,
            block_n=cfg.block_n, num_stages=cfg.num_stages, group_m=cfg.group_m, a_vec=a_vec, b_vec=b_vec,
            b_block_rows=b_block_rows, sms=sms, name=name, fast=not (precise or b_block_rows is not None),
            warmup=warmup)
        return out
    from triton.tools.tensor_descriptor import TensorDescriptor

    R, K = a.shape
    G, N, _ = b.shape
    y = b.view(G * N, K)
    ce = _grouped_args(cfg, mode=mode, G=G, a_vec=a_vec, b_vec=b_vec, b_block_rows=b_block_rows)
    BR, BS = cfg.block_m, cfg.block_n
    if b_block_rows is not None:
        xs_strides = tuple(scale_a.stride())
        ys_strides = (scale_b.stride(1), scale_b.stride(2))
    else:
        xs_strides = ys_strides = (0, 0)
    box_k = tma_k_box(cfg, precise or b_block_rows is not None)
    if cfg.uses_tma:
        x_arg = TensorDescriptor.from_tensor(a, [BR, box_k])
        y_arg = TensorDescriptor.from_tensor(y, [BS, box_k])
    else:
        x_arg, y_arg = a, y
    # Upper bound of the tile count without reading the group sizes: every group adds at most one partial row tile.
    row_tiles = (G * triton.cdiv(group_cap, BR) if mode == GROUPED_MASKED
                 else triton.cdiv(R, BR) + G)
    bound = row_tiles * triton.cdiv(N, BS)
    grid_size = max(1, min(bound, sms))
    name = _grouped_symbol(
        cfg, mode=mode, arch=arch, a_dtype=a.dtype, b_dtype=b.dtype, out_dtype=out.dtype, a_vec=a_vec,
        b_vec=b_vec, precise=precise, has_bias=bias is not None, activation=activation, b_block_rows=b_block_rows,
    )
    _launch(
        fp8_gemm_kernel, (grid_size,), warmup,
        x_arg, y_arg, out, None, scale_a, scale_b, bias,
        R, N, K, a.stride(0), y.stride(0), out.stride(0), *xs_strides, *ys_strides, 1.0, grid_size,
        group_rows, G, group_cap, a_group_stride, b_group_stride,
        KERNEL_NAME=name, K_SCALED=precise or b_block_rows is not None, HAS_BIAS=bias is not None,
        ACTIVATION=ACTIVATIONS[activation], OUT_DTYPE=_TL_OUT[out.dtype],
        PROMOTE_LAG=promote_lag(cfg, precise or b_block_rows is not None),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages, **ce,
    )
    return out


# The fused-QKV arguments of a launch without that epilogue (codegen specs name every kernel argument).
_NO_QKV = dict(q_out=None, k_out=None, v_out=None, head_scale=None, q_cols=0, kv_cols=0, QKV=0, HEAD_DIM=0)
_NO_PIECE2 = dict(y2=None, BLOCK_S2=0)  # the optional second column piece (GemmConfig.block_n2) left out


def grouped_codegen_spec(
    cfg: GemmConfig, *, mode: int = GROUPED_CONTIGUOUS, G: int = 64, a_vec: bool = False, b_vec: bool = False,
    a_per_group: bool = False, precise: bool = False, b_block_rows: int | None = None,
    bias_dtype: torch.dtype | None = None, activation: str | None = None, out_dtype: torch.dtype = torch.bfloat16,
    description: str = "",
):
    """Offline-compilable spec of :func:`launch_grouped` (E4M3 x E4M3; pointers 16-byte aligned, K and N multiples
    of 16; G only sets G_PAD)."""
    from tritonfp8.codegen import CodegenSpec

    ce = _grouped_args(cfg, mode=mode, G=G, a_vec=a_vec, b_vec=b_vec, b_block_rows=b_block_rows)
    BR, BS = cfg.block_m, cfg.block_n
    box_k = tma_k_box(cfg, precise or b_block_rows is not None)
    fp8 = triton_sig(torch.float8_e4m3fn)
    has_bias = bias_dtype is not None
    signature = {
        "x": f"tensordesc<{fp8}[{BR}, {box_k}]>" if cfg.uses_tma else f"*{fp8}",
        "y": f"tensordesc<{fp8}[{BS}, {box_k}]>" if cfg.uses_tma else f"*{fp8}",
        "c": f"*{triton_sig(out_dtype)}", "ws": "constexpr",
        "x_scale": "*fp32", "y_scale": "*fp32", "bias": f"*{triton_sig(bias_dtype)}" if has_bias else "constexpr",
        "R": "i32", "S": "i32", "K": "i32", "stride_xr": "i32", "stride_yr": "i32", "stride_cm": "i32",
        "stride_xs_r": "i32", "stride_xs_k": "i32", "stride_ys_r": "i32", "stride_ys_k": "i32",
        "k_scale": "fp32", "num_programs": "i32",
        "group_rows": "*i32", "num_groups": "i32", "group_cap": "i32", "stride_xs_g": "i32", "stride_ys_g": "i32",
    }
    constexprs = dict(ce, K_SCALED=precise or b_block_rows is not None, HAS_BIAS=has_bias,
                      PROMOTE_LAG=promote_lag(cfg, precise or b_block_rows is not None),
                      ACTIVATION=ACTIVATIONS[activation], OUT_DTYPE=_TL_OUT[out_dtype], ws=None, **_NO_QKV,
                      **_NO_PIECE2)
    if not has_bias:
        constexprs["bias"] = None
    if b_block_rows is None:
        constexprs.update(stride_xs_r=0, stride_xs_k=0, stride_ys_r=0, stride_ys_k=0)
        if not a_vec:
            constexprs["stride_xs_g"] = 1 if a_per_group else 0
    else:
        constexprs.update(stride_xs_k=1, stride_ys_k=1, stride_xs_g=0)
    if mode != GROUPED_MASKED:
        signature["group_cap"] = "constexpr"
        constexprs["group_cap"] = 0
    for k in constexprs:
        signature[k] = "constexpr"
    name = grouped_kernel_name(
        cfg, mode=mode, arch=90, a_dtype=torch.float8_e4m3fn, b_dtype=torch.float8_e4m3fn, out_dtype=out_dtype,
        a_vec=a_vec, b_vec=b_vec, precise=precise, has_bias=has_bias, activation=activation,
        b_block_rows=b_block_rows,
    )
    divisible = [n for n, t in signature.items() if t.startswith("*")] + ["K", "S", "stride_xr", "stride_yr",
                                                                          "stride_cm"]
    return CodegenSpec(
        fn=fp8_gemm_kernel, signature=signature, constexprs=constexprs, name=name, num_warps=cfg.num_warps,
        num_stages=cfg.num_stages, description=description or cfg.short(), min_arch=90 if cfg.uses_tma else 89,
        divisible=tuple(divisible),
    )


def codegen_spec(
    cfg: GemmConfig, *, a_dtype: torch.dtype = torch.float8_e4m3fn, b_dtype: torch.dtype = torch.float8_e4m3fn,
    out_dtype: torch.dtype = torch.bfloat16, a_vec: bool = False, b_vec: bool = False, precise: bool = False,
    bias_dtype: torch.dtype | None = None, activation: str | None = None, description: str = "",
    b_block_rows: int | None = None,
):
    """The offline-compilable :class:`tritonfp8.codegen.CodegenSpec` of the main kernel launched with ``cfg``
    (same constexprs and argument types as :func:`launch_gemm`; pointer arguments assumed 16-byte aligned).
    ``b_block_rows`` (128 or 1): block scales, stored as ``quantize`` returns them (row-major (rows, ceil(K/128)):
    K-block stride 1, which the launcher's specialization turns into a constant)."""
    from tritonfp8.codegen import CodegenSpec

    if cfg.swap_ab:
        x_dt, y_dt, x_vec, y_vec = b_dtype, a_dtype, b_vec, a_vec
    else:
        x_dt, y_dt, x_vec, y_vec = a_dtype, b_dtype, a_vec, b_vec
    BR, BS, BK = cfg.block_m, cfg.block_n, cfg.block_k
    split = cfg.split_k
    has_bias = bias_dtype is not None and split == 1
    box_k = tma_k_box(cfg, precise or b_block_rows is not None)
    if cfg.uses_tma:
        x_sig = f"tensordesc<{triton_sig(x_dt)}[{BR}, {box_k}]>"
        y_sig = f"tensordesc<{triton_sig(y_dt)}[{BS}, {box_k}]>"
    else:
        x_sig, y_sig = f"*{triton_sig(x_dt)}", f"*{triton_sig(y_dt)}"
    c_sig = (f"tensordesc<{triton_sig(out_dtype)}[{BR}, {BS // cfg.epilogue_subtile}]>" if cfg.tma_store
             else f"*{triton_sig(out_dtype)}")
    signature = {
        "x": x_sig, "y": y_sig, "c": c_sig, "ws": "*fp32" if split > 1 else "constexpr",
        "x_scale": "*fp32", "y_scale": "*fp32", "bias": f"*{triton_sig(bias_dtype)}" if has_bias else "constexpr",
        "R": "i32", "S": "i32", "K": "i32", "stride_xr": "i32", "stride_yr": "i32", "stride_cm": "i32",
        "stride_xs_r": "i32", "stride_xs_k": "i32", "stride_ys_r": "i32", "stride_ys_k": "i32",
        "k_scale": "fp32", "num_programs": "i32",
        "group_rows": "constexpr", "num_groups": "constexpr", "group_cap": "constexpr", "stride_xs_g": "constexpr",
        "stride_ys_g": "constexpr",
    }
    block = b_block_rows is not None
    if block:
        x_group, y_group = (b_block_rows, 1) if cfg.swap_ab else (1, b_block_rows)
    else:
        x_group = y_group = 0
    constexprs = dict(
        BLOCK_R=BR, BLOCK_S=BS, BLOCK_K=BK, GROUP_R=cfg.group_m, SPLIT_K=split, USE_TMA=cfg.uses_tma,
        PERSISTENT=cfg.persistent, FLATTEN=not cfg.warp_specialized, WARP_SPECIALIZE=cfg.warp_specialized,
        SUBTILE=cfg.epilogue_subtile, SWAP_AB=cfg.swap_ab, X_SCALE_VEC=x_vec, Y_SCALE_VEC=y_vec,
        K_SCALED=precise or block, X_SCALE_GROUP=x_group, Y_SCALE_GROUP=y_group, HAS_BIAS=has_bias, ACTIVATION=ACTIVATIONS[activation] if split == 1 else ACT_NONE,
        OUT_DTYPE=_TL_OUT[out_dtype], TMA_STORE=cfg.tma_store, GROUPED=0, G_PAD=1,
        PROMOTE_LAG=promote_lag(cfg, precise or block),
        group_rows=None, num_groups=1, group_cap=0, stride_xs_g=0, stride_ys_g=0, **_NO_QKV,
    )
    if cfg.block_n2:
        signature["y2"] = f"tensordesc<{triton_sig(y_dt)}[{cfg.block_n2}, {box_k}]>"
        constexprs["BLOCK_S2"] = cfg.block_n2
    else:
        constexprs.update(_NO_PIECE2)
    if split == 1:
        constexprs["ws"] = None
    if not has_bias:
        constexprs["bias"] = None
    if block:
        constexprs["stride_xs_k"] = 1
        constexprs["stride_ys_k"] = 1
    for k in constexprs:
        signature[k] = "constexpr"
    name = gemm_kernel_name(
        cfg, arch=90, a_dtype=a_dtype, b_dtype=b_dtype, out_dtype=out_dtype, a_vec=a_vec, b_vec=b_vec,
        precise=precise, has_bias=bias_dtype is not None, activation=activation, b_block_rows=b_block_rows,
    )
    # What the launcher's specialization sees for a typical call: 16-byte aligned pointers, K and N (and the
    # row strides K, K, N) multiples of 16 (validated); M is left unspecialized.
    divisible = [n for n, t in signature.items() if t.startswith("*")]
    divisible += ["K", "stride_xr", "stride_yr", "stride_cm", "R" if cfg.swap_ab else "S"]
    return CodegenSpec(
        fn=fp8_gemm_kernel, signature=signature, constexprs=constexprs, name=name, num_warps=cfg.num_warps,
        num_stages=cfg.num_stages, description=description or cfg.short(), min_arch=90 if cfg.uses_tma else 89,
        divisible=tuple(divisible),
    )


def qkv_codegen_spec(cfg: GemmConfig, *, head_dim: int = 128, store_c: bool = False, a_vec: bool = False,
                     b_vec: bool = False, precise: bool = False, bias_dtype: torch.dtype | None = None,
                     b_block_rows: int | None = None, description: str = ""):
    """Offline spec of a fused-QKV launch (:class:`QkvTargets`): :func:`codegen_spec` of the same GEMM with the
    quantizing epilogue (pointer stores into q/k/v; c a bf16 pointer, written only with ``store_c``). q_cols and
    kv_cols are multiples of 16 (heads of 64, 128 or 256)."""
    spec = codegen_spec(cfg, a_vec=a_vec, b_vec=b_vec, precise=precise, bias_dtype=bias_dtype,
                        b_block_rows=b_block_rows, description=description)
    if cfg.swap_ab or cfg.split_k != 1:
        raise ValueError(f"config: the fused QKV epilogue needs a config without swap-AB or split-K, got {cfg.short()}")
    sig = dict(spec.signature, c="*bf16", q_out="*fp8e4nv", k_out="*fp8e4nv", v_out="*fp8e4nv", head_scale="*fp32",
               q_cols="i32", kv_cols="i32")
    constexprs = {k: v for k, v in spec.constexprs.items() if k not in ("q_out", "k_out", "v_out", "head_scale",
                                                                      "q_cols", "kv_cols")}
    constexprs.update(QKV=2 if store_c else 1, HEAD_DIM=head_dim, TMA_STORE=False)
    name = qkv_kernel_name(spec.name, head_dim, store_c)
    divisible = spec.divisible + ("q_out", "k_out", "v_out", "head_scale", "q_cols", "kv_cols")
    return dataclasses.replace(spec, signature=sig, constexprs=constexprs, name=name, divisible=divisible)


# Representative configurations, by codegen name (``python -m tritonfp8 codegen NAME --arch 90``).
MAIN_CONFIG = GemmConfig(128, 256, 128, num_warps=8, num_stages=4, schedule="tmapersistent", epilogue_subtile=2)
# Block scales: the precise mode's tile (block_config of a large shape).
BLOCK_CONFIG = GemmConfig(128, 128, 128, num_warps=8, num_stages=5, schedule="tmapersistent")
# The lagged promotion (GemmConfig.promote = "lag") on the precise / block tile.
PRECISE_CONFIG_LAG = BLOCK_CONFIG_LAG = dataclasses.replace(BLOCK_CONFIG, promote="lag")
# The split promotion (GemmConfig.promote = "split"): each block is promoted while the next one's second half runs.
# Two K blocks per pipeline stage: 3 stages hold the 6 blocks of 6 unsplit stages.
PRECISE_CONFIG_SPLIT = BLOCK_CONFIG_SPLIT = dataclasses.replace(BLOCK_CONFIG, promote="split", num_stages=3)
# Warp specialization on the precise / block tile (Triton 3.6's Hopper pass takes 4-warp kernels: one producer
# warp group + two consumer warp groups of 64 rows each, which drift apart so one promotes while the other's wgmma runs).
PRECISE_CONFIG_WS = GemmConfig(128, 128, 128, num_warps=4, num_stages=5, schedule="tmaws")


def _specs() -> dict:
    from tritonfp8.codegen import CodegenSpec

    e4, e5 = torch.float8_e4m3fn, torch.float8_e5m2
    specs = {
        "gemm_fast_tensorwise": codegen_spec(MAIN_CONFIG, description="main: persistent TMA 128x256x128, fast acc"),
        "gemm_fast_rowwise_bias_gelu": codegen_spec(
            MAIN_CONFIG, a_vec=True, b_vec=True, bias_dtype=torch.bfloat16, activation="gelu",
            description="rowwise scales + bias + gelu epilogue"),
        "gemm_precise_tensorwise": codegen_spec(
            GemmConfig(128, 128, 128, num_warps=8, num_stages=5, schedule="tmapersistent"), precise=True,
            description="precise: fresh dot per 128-K block added into fp32"),
        "gemm_precise_tensorwise_lag": codegen_spec(
            PRECISE_CONFIG_LAG, precise=True,
            description="precise, lagged promotion: block kb-1 added while block kb's dot is issued"),
        "gemm_precise_tensorwise_split": codegen_spec(
            PRECISE_CONFIG_SPLIT, precise=True,
            description="precise, split promotion: each block added while the next one's second half-K wgmmas run"),
        "gemm_precise_tensorwise_splitnp": codegen_spec(
            dataclasses.replace(PRECISE_CONFIG_SPLIT, schedule="tma"), precise=True,
            description="precise, split promotion, one tile per program"),
        "gemm_fast_nonpersistent": codegen_spec(
            GemmConfig(128, 256, 128, num_warps=8, num_stages=4, schedule="tma", epilogue_subtile=2),
            description="one tile per program"),
        "gemm_fast_ws": codegen_spec(
            GemmConfig(128, 256, 128, num_warps=4, num_stages=4, schedule="tmaws"),
            description="Hopper warp specialization (1 producer + 2 consumer warp groups)"),
        "gemm_precise_ws": codegen_spec(
            PRECISE_CONFIG_WS, precise=True,
            description="precise, warp-specialized: 2 consumer warp groups promote while the other's wgmma runs"),
        "gemm_block_ws": codegen_spec(
            PRECISE_CONFIG_WS, b_block_rows=128, description="block scales 1x128 / 128x128, warp-specialized"),
        "gemm_fast_wspersistent": codegen_spec(
            GemmConfig(128, 256, 128, num_warps=4, num_stages=4, schedule="tmawspersistent"),
            description="persistent + warp specialization"),
        "gemm_e5m2_e4m3_f16": codegen_spec(
            MAIN_CONFIG, a_dtype=e5, b_dtype=e4, out_dtype=torch.float16, description="E5M2 x E4M3 -> fp16"),
        "gemm_decode_swapab_splitk": codegen_spec(
            GemmConfig(64, 16, 256, group_m=1, num_warps=4, num_stages=8, schedule="tma", swap_ab=True, split_k=2),
            a_vec=True, b_vec=True, description="M<=64: swap-AB, split-K 2"),
        "gemm_decode_swapab": codegen_spec(
            GemmConfig(64, 16, 256, group_m=1, num_warps=4, num_stages=8, schedule="tma", swap_ab=True),
            bias_dtype=torch.bfloat16, activation="silu", description="M<=64: swap-AB, bias + silu"),
        "gemm_block_128x128": codegen_spec(
            BLOCK_CONFIG, b_block_rows=128,
            description="block scales: 1x128 groups of a, 128x128 blocks of b, applied per 128-K step in fp32"),
        "gemm_block_128x128_lag": codegen_spec(
            BLOCK_CONFIG_LAG, b_block_rows=128, description="block scales 1x128 / 128x128, lagged promotion"),
        "gemm_block_128x128_split": codegen_spec(
            BLOCK_CONFIG_SPLIT, b_block_rows=128, description="block scales 1x128 / 128x128, split promotion"),
        "gemm_block_128x128_splitnp": codegen_spec(
            dataclasses.replace(BLOCK_CONFIG_SPLIT, schedule="tma"), b_block_rows=128,
            description="block scales 1x128 / 128x128, split promotion, one tile per program"),
        "gemm_block_group1x128_bias_gelu": codegen_spec(
            BLOCK_CONFIG, b_block_rows=1, bias_dtype=torch.bfloat16, activation="gelu",
            description="block scales: 1x128 groups of a and b, + bias + gelu"),
        "gemm_block_128x256": codegen_spec(
            GemmConfig(128, 256, 128, num_warps=8, num_stages=4, schedule="tmapersistent", epilogue_subtile=2),
            b_block_rows=128, description="block scales on the fast mode's 128x256 tile (spill check)"),
        "gemm_precise_64x128_3cta": codegen_spec(
            GemmConfig(64, 128, 128, group_m=8, num_warps=4, num_stages=3, schedule="tma"), precise=True,
            description="precise on 64x128 tiles, 1 warpgroup, 3 stages: 3 CTAs/SM (bench variant p64)"),
        "gemm_block_64x128_3cta": codegen_spec(
            GemmConfig(64, 128, 128, group_m=8, num_warps=4, num_stages=3, schedule="tma"), b_block_rows=128,
            description="block scales on 64x128 tiles, 3 CTAs/SM (bench variant p64)"),
        "gemm_block_decode_swapab": codegen_spec(
            GemmConfig(64, 16, 128, group_m=1, num_warps=4, num_stages=6, schedule="tma", swap_ab=True),
            b_block_rows=128, description="block scales, M<=64: swap-AB"),
        "gemm_fast_n64p16": codegen_spec(
            GemmConfig(128, 64, 256, num_warps=4, num_stages=4, schedule="tma", block_n2=16),
            description="fast, 80-column tiles (64 + 16: two wgmma widths on one x tile), one tile per program"),
        "gemm_precise_n64p16": codegen_spec(
            GemmConfig(128, 64, 128, num_warps=4, num_stages=6, schedule="tma", block_n2=16), precise=True,
            description="precise, 80-column tiles: both pieces' fresh dots promoted per 128-K block"),
        "gemm_ada_ptr": codegen_spec(
            GemmConfig(128, 128, 64, num_warps=8, num_stages=4, schedule="ptr"),
            description="Ada (sm_89): pointer loads, mma.sync"),
    }
    # Fused QKV projection (tritonfp8.qkv): the quantizing epilogue on the prefill and decode-sized tiles.
    specs.update({
        "gemm_qkv_hd128": qkv_codegen_spec(
            GemmConfig(128, 256, 128, num_warps=8, num_stages=4, schedule="tmapersistent", epilogue_subtile=2),
            b_vec=True, description="fused QKV: per-channel weight scales, E4M3 q/k/v per-head static scales"),
        "gemm_qkv_hd64_bias_c": qkv_codegen_spec(
            GemmConfig(128, 128, 128, num_warps=8, num_stages=4, schedule="tma"), head_dim=64, store_c=True,
            a_vec=True, b_vec=True, bias_dtype=torch.bfloat16,
            description="fused QKV: rowwise scales + bias, also the bf16 result"),
        "gemm_qkv_small_m": qkv_codegen_spec(
            GemmConfig(64, 128, 128, group_m=1, num_warps=4, num_stages=6, schedule="tma"),
            description="fused QKV, M <= 64 (qkv_config: no swap-AB)"),
    })
    # Grouped (MoE) GEMM: the same kernel with GROUPED = 1 (contiguous groups) / 2 (masked), G = 64 experts.
    grouped_main = GemmConfig(128, 256, 128, num_warps=8, num_stages=4, schedule="tmapersistent", epilogue_subtile=2)
    specs.update({
        "grouped_fast_tensorwise": grouped_codegen_spec(
            grouped_main, mode=GROUPED_SIZES, a_per_group=True,
            description="grouped (m_sizes), 64 groups: per-group scales, 128x256x128 fast"),
        "grouped_fast_tensorwise_g8": grouped_codegen_spec(
            grouped_main, mode=GROUPED_SIZES, G=8, a_per_group=True,
            description="grouped (m_sizes), 8 groups (issue 4's G 8 shape), 128x256x128 fast"),
        "grouped_fast_rowwise": grouped_codegen_spec(
            grouped_main, a_vec=True, b_vec=True, description="grouped: rowwise scales (total_M,1) x (G,N)"),
        "grouped_precise_tensorwise": grouped_codegen_spec(
            BLOCK_CONFIG, a_per_group=True, precise=True, description="grouped, precise accumulation"),
        "grouped_block_128x128": grouped_codegen_spec(
            BLOCK_CONFIG, b_block_rows=128, description="grouped, block scales 1x128 a / 128x128 b"),
        "grouped_masked_decode": grouped_codegen_spec(
            GemmConfig(64, 256, 128, num_warps=4, num_stages=4, schedule="tmapersistent", epilogue_subtile=2),
            mode=GROUPED_MASKED, a_vec=True, b_vec=True, description="masked (decode): 64-row tiles, rowwise"),
    })
    reduce_name = reduce_kernel_name(arch=90, out_dtype=torch.bfloat16, split_k=2, has_bias=True, activation="relu")
    specs["gemm_splitk_reduce"] = CodegenSpec(
        fn=fp8_gemm_splitk_reduce_kernel,
        signature={"ws": "*fp32", "c": "*bf16", "bias": "*bf16", "M": "i32", "N": "i32", "SPLIT_K": "constexpr",
                   "BLOCK": "constexpr", "HAS_BIAS": "constexpr", "ACTIVATION": "constexpr",
                   "OUT_DTYPE": "constexpr"},
        constexprs=dict(SPLIT_K=2, BLOCK=REDUCE_BLOCK, HAS_BIAS=True, ACTIVATION=ACT_RELU, OUT_DTYPE=tl.bfloat16),
        name=reduce_name, num_warps=4, num_stages=1, description="split-K reduction + bias + relu",
        divisible=("ws", "c", "bias", "N"),
    )
    return specs


def codegen_specs() -> dict:
    """Kernel configs compilable offline (``python -m tritonfp8 codegen --list``)."""
    return _specs()
