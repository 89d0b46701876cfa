"""FP8 attention prefill (FlashAttention forward) for Hopper, and its plain-PyTorch reference.

Layouts (the FlashAttention ones):

- dense:  q (B, Sq, Hq, D), k and v (B, Sk, Hkv, D); out (B, Sq, Hq, D); lse (B, Hq, Sq) fp32.
- varlen: q (total_q, Hq, D), k and v (total_k, Hkv, D) with int32 ``cu_seqlens_q`` / ``cu_seqlens_k`` of shape
  (B + 1,) (sequence b is rows ``cu[b]:cu[b+1]``); out (total_q, Hq, D); lse (Hq, total_q) fp32.

Hq is a multiple of Hkv (MHA, GQA, MQA): query head h reads KV head ``h // (Hq // Hkv)``.

Scales are fp32 *dequantization* factors (``x ≈ x_fp8.float() * descale``), of shape ``()`` (per tensor) or
(B, Hkv) (per batch and KV head; for q, per batch and KV-head group of query heads).

Masking: with ``causal``, query i of a sequence sees keys j <= i + Sk - Sq (bottom-right aligned, as
FlashAttention >= 2.1). A query row that sees no key outputs 0 and has lse = -inf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import triton

from tritonfp8 import _backend
from tritonfp8._backend import arch_of, check_device, interpreting, is_hopper, warn_once
from tritonfp8._formats import E4M3, short_name
from tritonfp8.naming import KernelName

# P (the softmax numerator, in [0, 1]) is multiplied by this power of two before it is cast to E4M3 for the P·V
# product, and the factor is divided out of the output. 2^8 maps the largest P (1.0) to 256 <= 448 (E4M3 max),
# and moves the subnormal threshold of E4M3 (2^-6) down to P = 2^-14: every P >= 2^-14 keeps E4M3's full 4-bit
# significand, and only P < 2^-17 flushes to zero (unscaled, P < 2^-9 would flush). A power of two keeps the
# scaling exact; 448 would gain 0.8 binade of range for an extra rounding of every P.
P_SCALE = 256.0

_LOG2E = 1.4426950408889634


def _round_p_fp8(p: torch.Tensor) -> torch.Tensor:
    """P rounded through E4M3 exactly as the kernel does: scaled by P_SCALE, RNE-cast, scaled back (fp32)."""
    return (p * P_SCALE).clamp(max=E4M3.max).to(E4M3.torch_dtype).float() / P_SCALE


def _expand_heads(x: torch.Tensor, hq: int) -> torch.Tensor:
    """(S, Hkv, D) -> (S, Hq, D) by repeating each KV head for its group of query heads."""
    hkv = x.shape[1]
    return x.repeat_interleave(hq // hkv, dim=1) if hkv != hq else x


def _attention_rows(q, k, v, causal, scale, p_fp8, rows: int | None):
    """:func:`_attention_one` over query rows ``rows`` at a time (None: all at once). A causal chunk of rows
    [i0, i1) sees keys < i1 + Sk - Sq: cutting the keys there keeps every row's bottom-right alignment, and each row
    keeps all its visible keys (its max, sum and E4M3 rounding of P are those of the whole row)."""
    sq, sk = q.shape[0], k.shape[0]
    if rows is None or sq <= rows:
        return _attention_one(q, k, v, causal, scale, p_fp8)
    outs, lses = [], []
    for i0 in range(0, sq, rows):
        i1 = min(i0 + rows, sq)
        kend = min(sk, max(0, i1 + sk - sq)) if causal else sk
        o, lse = _attention_one(q[i0:i1], k[:kend], v[:kend], causal, scale, p_fp8)
        outs.append(o)
        lses.append(lse)
    return torch.cat(outs, 0), torch.cat(lses, 1)


def _attention_one(q, k, v, causal, scale, p_fp8):
    """One sequence: q (Sq, Hq, D), k/v (Sk, Hq, D) fp32 -> out (Sq, Hq, D) fp32, lse (Hq, Sq) fp32 (natural log)."""
    sq, sk = q.shape[0], k.shape[0]
    s = torch.einsum("qhd,khd->hqk", q, k) * scale  # (Hq, Sq, Sk)
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(j > i + (sk - sq), float("-inf"))
    m = s.amax(dim=-1, keepdim=True) if sk > 0 else s.new_full((*s.shape[:2], 1), float("-inf"))
    empty = torch.isneginf(m)  # rows that see no key
    m_safe = torch.where(empty, torch.zeros_like(m), m)
    p = torch.exp(s - m_safe)  # masked entries: exp(-inf) = 0
    l = p.sum(dim=-1, keepdim=True)
    if p_fp8:
        p = _round_p_fp8(p)
    o = torch.einsum("hqk,khd->qhd", p, v)
    l_safe = torch.where(empty, torch.ones_like(l), l)
    o = o / l_safe.permute(1, 0, 2)  # (Sq, Hq, 1)
    o = torch.where(empty.permute(1, 0, 2), torch.zeros_like(o), o)
    lse = torch.where(empty, torch.full_like(m, float("-inf")), m_safe + torch.log(l_safe))[..., 0]
    return o, lse


def attention_torch(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    softmax_scale: float | None = None,
    q_descale: torch.Tensor | None = None,
    k_descale: torch.Tensor | None = None,
    v_descale: torch.Tensor | None = None,
    cu_seqlens_q: torch.Tensor | None = None,
    cu_seqlens_k: torch.Tensor | None = None,
    max_seqlen_q: int | None = None,
    max_seqlen_k: int | None = None,
    return_lse: bool = False,
    p_fp8: bool = False,
    query_chunk: int | None = None,
):
    """Reference attention in fp32: ``softmax(scale · q kᵀ + mask) v``, inputs dequantized with their descales.

    Same layouts, scale conventions and masking rules as :func:`attention` (see the module docstring); q, k, v may be
    FP8 (dequantized as ``x.float() * descale``) or any float type (descales default to 1).
    ``softmax_scale`` defaults to ``1 / sqrt(D)``. With ``p_fp8`` the unnormalized probabilities
    ``P = exp(s - rowmax)`` are rounded through E4M3 after scaling by :data:`P_SCALE`, as the kernel rounds them
    before its FP8 P·V product (the row sum stays the fp32 sum of unrounded P, as in the kernel); tests use it to
    measure the error that FP8 P alone causes.

    Returns the fp32 output (same shape as q, sized by v's head dim), and with ``return_lse`` also the fp32
    natural-log log-sum-exp: (B, Hq, Sq) dense, (Hq, total_q) varlen.
    ``max_seqlen_*`` are accepted for signature parity with :func:`attention` and not needed here.
    ``query_chunk``: compute each sequence ``query_chunk`` query rows at a time (the fp32 scores of one step are
    Hq · query_chunk · Sk instead of Hq · Sq · Sk: gigabytes for one long sequence); the result is the same.
    """
    if query_chunk is not None and query_chunk < 1:
        raise ValueError(f"query_chunk: expected a positive int or None, got {query_chunk}")
    varlen = cu_seqlens_q is not None
    if varlen != (cu_seqlens_k is not None):
        raise ValueError("cu_seqlens_q and cu_seqlens_k: give both (varlen) or neither (dense)")
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else float(softmax_scale)
    hq, hkv = q.shape[-2], k.shape[-2]
    group = hq // hkv
    if varlen:
        cq = [int(x) for x in cu_seqlens_q.tolist()]
        ck = [int(x) for x in cu_seqlens_k.tolist()]
        nb = len(cq) - 1
        seqs = [(q[cq[b] : cq[b + 1]], k[ck[b] : ck[b + 1]], v[ck[b] : ck[b + 1]]) for b in range(nb)]
    else:
        nb = q.shape[0]
        seqs = [(q[b], k[b], v[b]) for b in range(nb)]

    outs, lses = [], []
    for b, (qb, kb, vb) in enumerate(seqs):
        qf = qb.float()
        kf = kb.float()
        vf = vb.float()
        # descales: () or (B, Hkv); q's per-head descale applies to each KV head's group of query heads.
        qf = qf * _per_head(q_descale, b, hkv, group, qf.device)
        kf = kf * _per_head(k_descale, b, hkv, 1, kf.device)
        vf = vf * _per_head(v_descale, b, hkv, 1, vf.device)
        o, lse = _attention_rows(qf, _expand_heads(kf, hq), _expand_heads(vf, hq), causal, scale, p_fp8, query_chunk)
        outs.append(o)
        lses.append(lse)

    if varlen:
        dv = v.shape[-1]
        out = torch.cat(outs, dim=0) if outs else q.new_zeros((0, hq, dv), dtype=torch.float32)
        lse = torch.cat(lses, dim=1) if lses else q.new_zeros((hq, 0), dtype=torch.float32)
    else:
        if nb:
            out = torch.stack(outs, dim=0)
            lse = torch.stack(lses, dim=0)
        else:
            out = q.new_zeros((*q.shape[:-1], v.shape[-1]), dtype=torch.float32)
            lse = q.new_zeros((0, hq, q.shape[1]), dtype=torch.float32)
    return (out, lse) if return_lse else out


def _per_head(descale, b: int, hkv: int, group: int, device) -> torch.Tensor | float:
    """Descale broadcastable over (S, H, D): scalar, or (H, 1) with each KV head's value repeated ``group`` times."""
    if descale is None:
        return 1.0
    d = descale.to(device=device, dtype=torch.float32)
    if d.dim() == 0:
        return d
    return d[b].repeat_interleave(group)[:, None]


# ---------------------------------------------------------------------------------------------------------------
# Configuration: a frozen record per launch, chosen by a small pure function; tests and the bench may pin one.


@dataclass(frozen=True)
class AttnConfig:
    """Tile and schedule of the forward kernel.

    block_m x block_n is the (query rows, key rows) tile of one S = Q·Kᵀ step; num_warps = 8 gives two warpgroups
    of 64 query rows each (wgmma M = 64 per warpgroup). ``v_transposed``: read Vᵀ (sequence-contiguous, produced
    by the quantize/transpose pass) instead of transposing V tiles on chip. ``permute_p`` (with Vᵀ only): write
    Vᵀ with the keys of each 32-key chunk permuted so that P goes from the Q·Kᵀ accumulator into the P·V wgmma
    without cross-lane shuffles (see ``_kernels.attention._permute_keys``). ``warp_specialize``: ask Triton's
    automatic warp specialization for the unmasked key loop (Triton 3.6 documents it for Blackwell; on sm_90 the
    offline compile gave the same instruction count as without it). ``maxnreg`` caps registers per thread (e.g.
    128 lets two 8-warp hd64 CTAs share an SM: 122 registers, no spills, offline sm_90). ``overlap`` (0, 1, 2):
    restructure the unmasked key loop (``_kernels.attention._kv_loop_overlap``): 1 issues P_{j-1}·V_{j-1} before
    S_j = Q·K_jᵀ (P goes through shared memory), 2 also issues S_{j+1} before block j's softmax so that the tensor
    core computes it while the softmax runs (FlashAttention-3's intra-warpgroup overlap). 0: the plain loop.
    ``lazy_rescale``: in the unmasked key loop (plain or overlapped), rescale acc only when some row max grew by
    more than 0.75 (log2 units) since the last rescale; exact, P stays <= 2^8.75 < 448. ``poly_exp2`` (0, 2, 4, 8):
    compute 1/poly_exp2 of the exp2s in the unmasked key loop with a cubic on the FMA pipe instead of
    MUFU.EX2 (the SFU's exp2 throughput equals the FP8 tensor core's work per block at hd128). ``row_sum_mma``
    (plain loop only): the softmax row sums l come from a wgmma of the E4M3 P with a block of ones
    (``_kernels.attention._row_sum_mma``) instead of BLOCK_N / 2 FADD per thread and block on the FMA pipe; the
    output is then normalized by the sum of the E4M3-rounded P that P·V used. Calls that return the lse run
    with FADD row sums (the lse stays exact in fp32).

    ``kernel="glws"`` runs the warp-specialized Gluon forward (``_kernels/attention_gluon.py``: a TMA loader warp
    and two consumer warp groups of 64 query rows; sm_90, dense or varlen, bf16 / fp16 / E4M3 output, compiled
    only: not in the interpreter) instead of the Triton kernel. Its tile is 128 query rows x ``block_n`` keys with
    ``num_stages`` ring slots; ``overlap`` != 0 selects its overlapped loop (the softmax of block j under
    P_{j-1}·V; >= 3 stages), ``p_carry`` (0, 1) how P enters the next step there (1: fp32, no byte repacking),
    ``pingpong`` orders the two groups' wgmma issue (with overlap=0: the serial ping-pong loop, P·V and the next
    block's S issued together in the group's turn); ``permute_p`` as above; ``row_sum_mma`` with the serial loop.
    It is the default on sm_90 at hd256 (:data:`GLWS_DEFAULTS`) and for dense non-causal hd128 problems
    (:data:`GLWS_DENSE_DEFAULTS`); benchmarks/NOTES.md has its measurements.

    ``head_group`` (causal only, both kernels): the order in which the programs take (query block, head) work.
    Causal query blocks differ in work (block m sees m + 1 key blocks), and the GPU starts programs in launch
    order as slots free up, so the heaviest should start first over the whole grid: the launch order is heaviest
    query block first across a group of ``head_group`` heads, then the next lighter one across the same heads, then
    the next group of heads. 1 is the per-head order (each head's blocks heaviest first, then the next head: the
    heaviest blocks of the last heads start near the end and leave a tail); 0 picks the group from the keys' bytes
    (:func:`causal_head_group`: the group's K and Vᵀ about :data:`CAUSAL_GROUP_BYTES`, so they stay in L2).
    """

    block_m: int = 128
    block_n: int = 128
    num_warps: int = 8
    num_stages: int = 2
    v_transposed: bool = True
    warp_specialize: bool = False
    permute_p: bool = True
    maxnreg: int | None = None
    overlap: int = 0
    lazy_rescale: bool = False
    poly_exp2: int = 0
    kernel: str = "triton"
    p_carry: int = 0
    pingpong: bool = False
    row_sum_mma: bool = False
    head_group: int = 0

    def __post_init__(self):
        if self.head_group < 0:
            raise ValueError(f"AttnConfig: head_group must be >= 0 (0: chosen per problem), got {self.head_group!r}")
        if self.overlap not in (0, 1, 2):
            raise ValueError(f"AttnConfig: overlap must be 0, 1 or 2, got {self.overlap!r}")
        if self.poly_exp2 not in (0, 2, 4, 8):
            raise ValueError(f"AttnConfig: poly_exp2 must be 0, 2, 4 or 8, got {self.poly_exp2!r}")
        if self.poly_exp2 * 8 > self.block_n:
            raise ValueError(f"AttnConfig: poly_exp2={self.poly_exp2} splits the key tile on column bits 3.."
                             f"{2 + self.poly_exp2.bit_length()}: block_n must be >= {8 * self.poly_exp2}, "
                             f"got {self.block_n}")
        if self.kernel not in ("triton", "glws"):
            raise ValueError(f"AttnConfig: kernel must be 'triton' or 'glws', got {self.kernel!r}")
        if self.p_carry not in (0, 1):
            raise ValueError(f"AttnConfig: p_carry must be 0 or 1, got {self.p_carry!r}")
        if self.kernel == "triton" and (self.p_carry or self.pingpong):
            raise ValueError("AttnConfig: p_carry and pingpong are options of kernel='glws'")
        if self.row_sum_mma and self.overlap:
            raise ValueError("AttnConfig: row_sum_mma is an option of the plain (serial) loop (overlap=0), got "
                             f"kernel={self.kernel!r}, overlap={self.overlap}")
        if self.kernel == "glws":
            if self.block_m != 128 or self.block_n not in (64, 128, 256) or not self.v_transposed:
                raise ValueError("AttnConfig: kernel='glws' takes block_m=128, block_n 64, 128 or 256 and "
                                 f"v_transposed=True, got block_m={self.block_m}, block_n={self.block_n}, "
                                 f"v_transposed={self.v_transposed}")
            if self.lazy_rescale or self.poly_exp2 or self.warp_specialize or self.maxnreg:
                raise ValueError("AttnConfig: lazy_rescale, poly_exp2, warp_specialize and maxnreg are options of "
                                 "the Triton kernel, not of kernel='glws'")
            if self.overlap and self.num_stages < 3:
                raise ValueError(f"AttnConfig: kernel='glws' with overlap needs num_stages >= 3 (its loop holds two "
                                 f"slots while it waits for a third), got {self.num_stages}")
            if self.p_carry and not self.overlap:
                raise ValueError("AttnConfig: p_carry applies to kernel='glws' with overlap")

    def evolve(self, **kw) -> "AttnConfig":
        return replace(self, **kw)


_SUPPORTED_D = (64, 128, 256)

# The K and Vᵀ bytes one group of heads of a causal launch should read (AttnConfig.head_group = 0): well inside the
# H100 / H200 L2 (50 MB), so the programs of a group, which run together, share their keys from L2.
CAUSAL_GROUP_BYTES = 16 << 20


def causal_head_group(cfg: AttnConfig, batch: int, heads_q: int, heads_kv: int, seqlen_k: int, head_dim: int) -> int:
    """Heads per group of a causal launch's heaviest-first order (``AttnConfig.head_group``; 0 chooses): as many
    heads as keep the group's distinct E4M3 K and Vᵀ (heads sharing a KV head under GQA count once) within
    :data:`CAUSAL_GROUP_BYTES`, at least 1, at most all B·Hq."""
    n = batch * heads_q
    if cfg.head_group:
        return min(cfg.head_group, max(n, 1))
    per_q_head = max(seqlen_k, 1) * head_dim * 2 / max(heads_q // max(heads_kv, 1), 1)
    return int(min(max(CAUSAL_GROUP_BYTES // per_q_head, 1), max(n, 1)))


def _head_group_arg(cfg: AttnConfig, prob: "_Problem", causal: bool) -> int:
    """The forward kernels' ``head_group`` argument: :func:`causal_head_group` for causal calls, 1 (unused) else."""
    if not causal:
        return 1
    return causal_head_group(cfg, prob.batch, prob.heads_q, prob.heads_kv, prob.seqlen_k, prob.head_dim)


def default_config(head_dim: int) -> AttnConfig:
    """The Triton kernel's launch config for a head dim (64, 128 or 256) on sm_90 (``attention``'s default except
    where :data:`GLWS_DEFAULTS` has the head dim).

    Measured on the H200 (benchmarks/results/attention-nvidia-h200-20261129-113800.json, the variants timed
    interleaved against the previous defaults, S = 2048..8192):
    - hd128: 64 x 128 tiles, 4 warps (one warpgroup), registers capped at 168 (154 used, no spills) so three CTAs
      share an SM: 1.18-1.47x the 128 x 128 / 8-warp / 1-CTA config (S 8192 B2: 826 vs 639 TFLOPS). Since
      session 15 with the row sums on the tensor core (``row_sum_mma``; 156 registers, three CTAs still fit):
      see docs/attention.md for its measurement.
    - hd64: 64 x 128 tiles, 4 warps, registers capped at 128: up to four CTAs per SM. The 128 x 128 / 8-warp / r128
      config (1.16-1.45x the uncapped one in that run) was the default until a later run
      (attention-nvidia-h200-20261129-130907.json, `bench attention --variants bm64w4`) measured the 64-row tile
      1.10x faster at S 8192 (1.86 vs 2.05 ms, three rounds each, spread < 1.5%).
    - hd256: 128 x 64 (the fp32 O accumulator, 128 x 256 = 128 registers per thread over two warpgroups, plus S
      stay below 255 registers) with 3 pipeline stages: 1.06-1.31x the 2-stage config.
    """
    if head_dim == 256:
        return AttnConfig(block_m=128, block_n=64, num_warps=8, num_stages=3)
    if head_dim == 128:
        return AttnConfig(block_m=64, block_n=128, num_warps=4, num_stages=2, maxnreg=168, row_sum_mma=True)
    return AttnConfig(block_m=64, block_n=128, num_warps=4, num_stages=2, maxnreg=128)


# Interpreter runs (CPU tests, demos): smaller tiles run faster there and exercise the multi-block paths.
_INTERPRETER_CONFIG = AttnConfig(block_m=64, block_n=64, num_warps=4, num_stages=1)


def kernel_name_of(arch: int, head_dim: int, causal: bool, cfg: AttnConfig, *, varlen: bool, out_short: str,
                   per_head: bool, lse: bool = False) -> KernelName:
    """CUTLASS-style name of one forward specialization, e.g.
    ``cutlass_sm90_fmhafwd_e4m3_e4m3_f32_bf16_128x128x128_w8s2_tma_tensorwise_hd128_causal_vt``."""
    extras = [f"hd{head_dim}"]
    if causal:
        extras.append("causal")
    if varlen:
        extras.append("varlen")
    extras.append(("vtp" if cfg.permute_p else "vt") if cfg.v_transposed else "vonchip")
    if lse:
        extras.append("lse")
    if cfg.maxnreg:
        extras.append(f"r{cfg.maxnreg}")
    if cfg.overlap:
        extras.append(f"ov{cfg.overlap}")
    if cfg.lazy_rescale:
        extras.append("lazy")
    if cfg.poly_exp2:
        extras.append(f"px{cfg.poly_exp2}")
    if cfg.row_sum_mma:
        extras.append("rsmma")
    return KernelName(
        arch=arch,
        op="fmhafwd",
        types=("e4m3", "e4m3", "f32", out_short),
        tile=(cfg.block_m, cfg.block_n, head_dim),
        warps=cfg.num_warps,
        stages=cfg.num_stages,
        schedule="tmaws" if cfg.warp_specialize else "tma",
        scaling="headwise" if per_head else "tensorwise",
        extras=tuple(extras),
    )


def quant_kernel_name(arch: int, in_short: str, block_s: int, head_dim: int, *, quantize: bool, transpose: bool,
                      amax: bool = False) -> KernelName:
    """Names of the per-head amax / quantize (+Vᵀ) passes, e.g.
    ``cutlass_sm90_attnquant_bf16_e4m3_64x128x1_w4s1_ptr_headwise_vt``."""
    if amax:
        return KernelName(arch=arch, op="attnamax", types=(in_short, "f32"), tile=(block_s, head_dim, 1), warps=4,
                          stages=1, schedule="ptr", scaling="headwise")
    return KernelName(
        arch=arch, op="attnquant" if quantize else "attnvtrans", types=(in_short, "e4m3"),
        tile=(block_s, head_dim, 1), warps=4, stages=1, schedule="ptr",
        scaling="headwise" if quantize else None, extras=("vt",) if transpose else (),
    )


# ---------------------------------------------------------------------------------------------------------------
# Validation.

_OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float8_e4m3fn)
_FLOAT_IN = (torch.bfloat16, torch.float16, torch.float32)


@dataclass(frozen=True)
class _Problem:
    """Shapes of one validated call."""

    varlen: bool
    batch: int
    seqlen_q: int  # dense Sq, or max_seqlen_q
    seqlen_k: int  # dense Sk, or max_seqlen_k
    heads_q: int
    heads_kv: int
    head_dim: int
    fp8_in: bool
    cu_q: tuple[int, ...] = ()  # varlen: cu_seqlens_q on the host
    cu_k: tuple[int, ...] = ()


def _check_descale(name: str, d, batch: int, heads_kv: int, fp8_in: bool) -> None:
    if d is None:
        return
    if not isinstance(d, torch.Tensor):
        raise TypeError(
            f"attention: {name} must be a torch.Tensor (fp32, shape () or (B, Hkv)), got {type(d).__name__}"
        )
    if not fp8_in:
        raise ValueError(
            f"attention: {name} is only for E4M3 inputs; bf16/fp16/fp32 inputs are quantized per head internally"
        )
    if d.dtype != torch.float32:
        raise TypeError(f"attention: {name} must be float32 dequantization factors, got {d.dtype}")
    if d.dim() != 0 and tuple(d.shape) != (batch, heads_kv):
        raise ValueError(
            f"attention: {name} must have shape () (per tensor) or (B, Hkv) = ({batch}, {heads_kv}) (per head), "
            f"got {tuple(d.shape)}"
        )


def _check_cu_seqlens(name: str, cu: torch.Tensor, rows: int, max_seqlen, max_name: str) -> tuple[list[int], int]:
    if not isinstance(cu, torch.Tensor):
        raise TypeError(f"attention: {name} must be an int32 torch.Tensor of shape (B + 1,)")
    if cu.dtype != torch.int32:
        raise TypeError(f"attention: {name} must be int32, got {cu.dtype}")
    if cu.dim() != 1 or cu.numel() < 1:
        raise ValueError(f"attention: {name} must have shape (B + 1,), got {tuple(cu.shape)}")
    vals = [int(x) for x in cu.tolist()]
    if vals[0] != 0:
        raise ValueError(f"attention: {name}[0] must be 0, got {vals[0]}")
    lens = [b - a for a, b in zip(vals[:-1], vals[1:])]
    if any(n < 0 for n in lens):
        raise ValueError(f"attention: {name} must be non-decreasing (monotone), got {vals}")
    if vals[-1] != rows:
        raise ValueError(f"attention: {name}[-1] = {vals[-1]} must equal the number of rows of its tensor ({rows})")
    actual = max(lens, default=0)
    if max_seqlen is None:
        return vals, actual
    if int(max_seqlen) < actual:
        raise ValueError(f"attention: {max_name} = {max_seqlen} is smaller than the longest sequence ({actual})")
    return vals, int(max_seqlen)


def _validate(q, k, v, causal, softmax_scale, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k,
              max_seqlen_q, max_seqlen_k, out_dtype, out_scale) -> _Problem:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"attention: {name} must be a torch.Tensor, got {type(t).__name__}")
    fp8_in = q.dtype == torch.float8_e4m3fn
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"attention: q, k and v must have one dtype; q is {q.dtype} but {name} is {t.dtype}")
    if not fp8_in and q.dtype not in _FLOAT_IN:
        raise TypeError(
            f"attention: q, k, v must be torch.float8_e4m3fn (with fp32 descales) or bf16/fp16/fp32, got {q.dtype}"
        )
    varlen = cu_seqlens_q is not None or cu_seqlens_k is not None
    if varlen and (cu_seqlens_q is None or cu_seqlens_k is None):
        missing = "cu_seqlens_k" if cu_seqlens_k is None else "cu_seqlens_q"
        raise ValueError(f"attention: varlen needs both cu_seqlens_q and cu_seqlens_k; {missing} is missing")
    rank = 3 if varlen else 4
    layout = "(total, H, D) with cu_seqlens" if varlen else "(B, S, H, D)"
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != rank:
            raise ValueError(f"attention: {name} must be {rank}-D {layout}, got shape {tuple(t.shape)}")
    d = q.shape[-1]
    if k.shape[-1] != d or v.shape[-1] != d:
        raise ValueError(
            f"attention: q, k, v must have one head dim; got q {q.shape[-1]}, k {k.shape[-1]}, v {v.shape[-1]}"
        )
    if d > 256 or d < 1:
        raise ValueError(f"attention: head dim must be in 1..256 (64, 128, 256 natively, others padded), got {d}")
    if k.shape != v.shape:
        raise ValueError(f"attention: k and v must have one shape, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    hq, hkv = q.shape[-2], k.shape[-2]
    if hkv < 1 or hq % hkv != 0:
        raise ValueError(f"attention: query heads ({hq}) must be a multiple of KV heads ({hkv}) (MHA, GQA, MQA)")
    if varlen:
        cq, mq = _check_cu_seqlens("cu_seqlens_q", cu_seqlens_q, q.shape[0], max_seqlen_q, "max_seqlen_q")
        ck, mk = _check_cu_seqlens("cu_seqlens_k", cu_seqlens_k, k.shape[0], max_seqlen_k, "max_seqlen_k")
        if len(cq) != len(ck):
            raise ValueError(
                f"attention: cu_seqlens_q and cu_seqlens_k must have one length (B + 1); got {len(cq)} and {len(ck)}"
            )
        batch, sq, sk = len(cq) - 1, mq, mk
    else:
        if max_seqlen_q is not None or max_seqlen_k is not None:
            raise ValueError("attention: max_seqlen_q / max_seqlen_k are for varlen inputs (with cu_seqlens_*) only")
        if k.shape[0] != q.shape[0]:
            raise ValueError(f"attention: q and k must have one batch size, got {q.shape[0]} and {k.shape[0]}")
        batch, sq, sk = q.shape[0], q.shape[1], k.shape[1]
    _check_descale("q_descale", q_descale, batch, hkv, fp8_in)
    _check_descale("k_descale", k_descale, batch, hkv, fp8_in)
    _check_descale("v_descale", v_descale, batch, hkv, fp8_in)
    if softmax_scale is not None:
        s = float(softmax_scale)
        if not (s > 0.0 and math.isfinite(s)):
            raise ValueError(f"attention: softmax_scale must be a positive finite number, got {softmax_scale}")
    if out_dtype not in _OUT_DTYPES:
        raise TypeError(
            f"attention: out_dtype must be torch.bfloat16, torch.float16 or torch.float8_e4m3fn, got {out_dtype}"
        )
    if out_dtype == torch.float8_e4m3fn:
        if out_scale is None:
            raise ValueError(
                "attention: out_dtype=float8_e4m3fn needs out_scale (fp32 dequantization factor of the output, "
                "shape () or (B, Hq)); |out| <= max|v|, so the V descale (times max|v_fp8| / 448) never overflows"
            )
        if not isinstance(out_scale, torch.Tensor) or out_scale.dtype != torch.float32:
            raise TypeError("attention: out_scale must be a float32 torch.Tensor of shape () or (B, Hq)")
        if out_scale.dim() != 0 and tuple(out_scale.shape) != (batch, hq):
            raise ValueError(
                f"attention: out_scale must have shape () or (B, Hq) = ({batch}, {hq}), got {tuple(out_scale.shape)}"
            )
    elif out_scale is not None:
        raise ValueError("attention: out_scale is only used with out_dtype=torch.float8_e4m3fn")
    # Last, so that shape and dtype errors are reported the same way on every machine.
    check_device(
        "attention",
        [("q", q), ("k", k), ("v", v), ("q_descale", q_descale), ("k_descale", k_descale),
         ("v_descale", v_descale), ("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k),
         ("out_scale", out_scale)],
    )
    if varlen:
        return _Problem(varlen, batch, sq, sk, hq, hkv, d, fp8_in, tuple(cq), tuple(ck))
    return _Problem(varlen, batch, sq, sk, hq, hkv, d, fp8_in)


# ---------------------------------------------------------------------------------------------------------------
# Per-head quantization (bf16/f16/f32 in) and the V -> Vᵀ relayout.


def _fmax_like(t: torch.Tensor) -> torch.Tensor:
    """448 as a tensor on ``t``'s device. On CUDA, torch divides by a Python scalar by multiplying with its
    reciprocal (which can differ from IEEE division in the last bit); dividing by a tensor is IEEE-exact, like the
    kernel's ``div_rn``."""
    return torch.full((), E4M3.max, dtype=torch.float32, device=t.device)


def quantize_per_head_torch(x: torch.Tensor, heads_kv: int, cu_seqlens: torch.Tensor | None = None):
    """Reference of the fused per-head quantizer: (E4M3 tensor in x's layout, fp32 descale (B, Hkv)).

    x: (B, S, H, D) or varlen (total, H, D) with ``cu_seqlens``. One descale per (batch, KV head): the amax over the
    sequence, the head dim and the H / Hkv heads of the group (for q: the query heads that share a KV head), divided
    by 448 (1 where the amax is 0). Quantized values are ``clamp(x / descale, -448, 448)`` rounded to nearest even.
    """
    h = x.shape[-2]
    group = h // heads_kv
    xf = x.float()
    if cu_seqlens is None:
        b = x.shape[0]
        amax = xf.abs().reshape(b, x.shape[1], heads_kv, group, x.shape[-1]).amax(dim=(1, 3, 4))
        descale = torch.where(amax > 0, amax / _fmax_like(amax), torch.ones_like(amax))
        y = (xf / descale.repeat_interleave(group, dim=1)[:, None, :, None]).clamp(-E4M3.max, E4M3.max)
        return y.to(E4M3.torch_dtype), descale
    cu = [int(c) for c in cu_seqlens.tolist()]
    b = len(cu) - 1
    descale = torch.ones(b, heads_kv, dtype=torch.float32, device=x.device)
    y = torch.empty_like(xf)
    for i in range(b):
        seg = xf[cu[i] : cu[i + 1]]
        if seg.shape[0]:
            amax = seg.abs().reshape(seg.shape[0], heads_kv, group, x.shape[-1]).amax(dim=(0, 2, 3))
            descale[i] = torch.where(amax > 0, amax / _fmax_like(amax), torch.ones_like(amax))
        y[cu[i] : cu[i + 1]] = seg / descale[i].repeat_interleave(group)[None, :, None]
    return y.clamp(-E4M3.max, E4M3.max).to(E4M3.torch_dtype), descale


def _round32(n: int) -> int:
    return (n + 31) // 32 * 32


def _vt_columns(cu: tuple[int, ...]) -> list[int]:
    """Varlen Vᵀ column starts: sequence b at Σ_{i<b} round32(len_i): TMA boxes start 16-byte aligned and the
    32-key permutation chunks of :func:`_quantize_heads` line up with the kernel's."""
    cols = [0]
    for a, b in zip(cu[:-1], cu[1:]):
        cols.append(cols[-1] + _round32(b - a))
    return cols


# Sequence rows per program of the per-head passes: 64, and 32 for the quantizing pass at hd256 (its fp32 values
# sit in registers). The E4M3 Vᵀ relayout (copy + transpose) takes 64 at every head dim since session 18: H200,
# read + write GB/s at 32 / 64 / 128 rows (vt-relayout-20261203-184736.json, 5 interleaved rounds): hd256 3071 /
# 3212 / 3196, hd128 2612 / 2754 / 2695, hd64 1353 / 1345 / 1375.


def _quantize_heads(x: torch.Tensor, heads_kv: int, cu: torch.Tensor | None, batch: int, seqlen: int,
                    *, quantize: bool, transpose: bool, cu_host: tuple[int, ...] = (), permute_keys: bool = False,
                    block_s: int | None = None):
    """Launch the per-head amax + quantize (or plain copy) kernels.

    x: (B, S, H, D) or (total, H, D), (H, D) contiguous. y is E4M3 in x's layout, or with ``transpose`` Vᵀ,
    sequence contiguous: (B, H, D, round32(S)) dense / (H, D, Σ round32(len_b)) varlen with sequence b from column
    :func:`_vt_columns` [b]; the padding columns hold zeros (read by the kernel, times P = 0). ``permute_keys``
    permutes the keys within each 32-key chunk as the forward kernel's ``PERMUTE_P`` expects. ``block_s`` (a
    multiple of 32) pins the sequence rows per program (tests, benchmarks).
    Returns (y, descale (B, Hkv) or None, varlen column starts as an int32 tensor or None).
    """
    from tritonfp8._kernels.attention import head_amax_kernel, head_quantize_kernel

    h, d = x.shape[-2], x.shape[-1]
    group = h // heads_kv
    varlen = cu is not None
    rows = x.shape[0] if varlen else x.shape[0] * x.shape[1]
    x2 = x.reshape(rows, h, d)
    cols = None
    if transpose:
        if varlen:
            cols_host = _vt_columns(cu_host)
            cols = torch.tensor(cols_host, dtype=torch.int32, device=x.device)
            y = torch.empty((h, d, max(cols_host[-1], 16)), dtype=E4M3.torch_dtype, device=x.device)
        else:
            y = torch.empty((batch, h, d, _round32(seqlen)), dtype=E4M3.torch_dtype, device=x.device)
        stride_y = y.shape[-1]
    else:
        y = torch.empty(x.shape, dtype=E4M3.torch_dtype, device=x.device)
        stride_y = 0
    cu_arg = cu if varlen else x.new_zeros(1, dtype=torch.int32)
    if block_s is None:
        block_s = 32 if quantize and d > 128 else 64
    arch = arch_of(x.device)
    in_short = short_name(x.dtype)
    grid = (triton.cdiv(seqlen, block_s), batch * h)
    descale = None
    if quantize:
        amax = torch.zeros(batch, heads_kv, dtype=torch.float32, device=x.device)
        descale = torch.ones(batch, heads_kv, dtype=torch.float32, device=x.device)
        _launch_kernel(
            head_amax_kernel, grid,
            *_amax_args(x2, amax, cu_arg, seqlen, h, heads_kv),
            KERNEL_NAME=quant_kernel_name(arch, in_short, block_s, d, quantize=False, transpose=False,
                                          amax=True).build(),
            BLOCK_S=block_s, HEAD_DIM=d, GROUP=group, VARLEN=varlen, num_warps=4,
        )
    else:
        amax = None
    dummy = torch.empty(1, dtype=torch.float32, device=x.device)
    _launch_kernel(
        head_quantize_kernel, grid,
        *_quantize_args(x2, y, amax if quantize else dummy, descale if quantize else dummy, cu_arg,
                        cols if cols is not None else cu_arg, seqlen, h, heads_kv, stride_y),
        KERNEL_NAME=quant_kernel_name(arch, in_short, block_s, d, quantize=quantize, transpose=transpose).build(),
        BLOCK_S=block_s, HEAD_DIM=d, GROUP=group, VARLEN=varlen, QUANTIZE=quantize, TRANSPOSE=transpose,
        EXACT_ROUND=interpreting(), PERMUTE_KEYS=transpose and permute_keys, num_warps=4,
    )
    return y, descale, cols


def _amax_args(x2, amax, cu_arg, seqlen, h, heads_kv) -> tuple:
    """Runtime arguments of ``head_amax_kernel`` in order (shared by the full path and a plan's replay)."""
    return (x2, amax, cu_arg, seqlen, h, heads_kv, x2.stride(0))


def _quantize_args(x2, y, amax, descale, cu_arg, cols, seqlen, h, heads_kv, stride_y) -> tuple:
    """Runtime arguments of ``head_quantize_kernel`` in order (the full path and a plan's replay share them)."""
    return (x2, y, amax, descale, cu_arg, cols, seqlen, h, heads_kv, x2.stride(0), stride_y)


# ---------------------------------------------------------------------------------------------------------------
# The public op.


def _aligned_contiguous(t: torch.Tensor) -> torch.Tensor:
    """t contiguous with a 16-byte aligned base (TMA needs both)."""
    t = t.contiguous()
    if t.data_ptr() % 16:
        t = t.clone()
    return t


def _pad_head_dim(t: torch.Tensor, d_pad: int) -> torch.Tensor:
    d = t.shape[-1]
    if d == d_pad:
        return t
    if t.dtype == E4M3.torch_dtype:
        # F.pad has no FP8 kernel: pad through the raw bytes (E4M3 0x00 is +0).
        return torch.nn.functional.pad(t.view(torch.uint8), (0, d_pad - d)).view(E4M3.torch_dtype)
    return torch.nn.functional.pad(t, (0, d_pad - d))


def _descale_arg(d: torch.Tensor | None, per_head: bool, batch: int, hkv: int, device) -> torch.Tensor:
    if d is None:
        d = torch.ones((), dtype=torch.float32, device=device)
    if per_head:
        return d.expand(batch, hkv).contiguous() if d.dim() == 0 else d.contiguous()
    return d.reshape(1)


def _lse_init(prob: _Problem, q) -> torch.Tensor:
    """The lse output filled with -inf (a row with no visible key keeps it): (Hq, total_q) varlen, (B, Hq, Sq)."""
    shape = (prob.heads_q, q.shape[0]) if prob.varlen else (prob.batch, prob.heads_q, prob.seqlen_q)
    return torch.full(shape, float("-inf"), dtype=torch.float32, device=q.device)


def _empty_result(prob: _Problem, q, out_dtype, return_lse, d):
    """Results for zero-size problems: out zeros (no key: 0), lse -inf."""
    out = torch.zeros((*q.shape[:-1], d), dtype=out_dtype, device=q.device)
    return (out, _lse_init(prob, q)) if return_lse else out


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    softmax_scale: float | None = None,
    q_descale: torch.Tensor | None = None,
    k_descale: torch.Tensor | None = None,
    v_descale: torch.Tensor | None = None,
    cu_seqlens_q: torch.Tensor | None = None,
    cu_seqlens_k: torch.Tensor | None = None,
    max_seqlen_q: int | None = None,
    max_seqlen_k: int | None = None,
    out_dtype: torch.dtype = torch.bfloat16,
    return_lse: bool = False,
    out_scale: torch.Tensor | None = None,
    config: AttnConfig | None = None,
):
    """FP8 flash attention forward: ``softmax(softmax_scale · q kᵀ + causal mask) v``.

    Inputs (see the module docstring for the dense and varlen layouts):

    - E4M3 q, k, v with fp32 dequantization descales ``q_descale``/``k_descale``/``v_descale`` of shape ``()``
      or (B, Hkv) (``x ≈ x_fp8.float() * descale``; None means 1), or
    - bf16 / fp16 / fp32 q, k, v: quantized to E4M3 per (batch, KV head) by a fused kernel (amax / 448 descales;
      for q, per group of query heads sharing a KV head), V written transposed for the tensor core.

    ``causal`` is bottom-right aligned (query i sees keys j <= i + Sk - Sq); a row that sees no key gives 0 and
    lse -inf. ``softmax_scale`` defaults to 1/sqrt(D) and must be positive. Head dims 64, 128, 256 run natively;
    other D <= 256 are zero-padded to the next of those (costs a copy). ``out_dtype``: bf16, fp16, or
    float8_e4m3fn with ``out_scale`` (fp32, () or (B, Hq), a dequantization factor: out ≈ out_fp8.float() *
    out_scale; values saturate at ±448). ``return_lse`` also returns the natural-log log-sum-exp of the scaled
    scores, fp32, (B, Hq, Sq) dense / (Hq, total_q) varlen. ``config`` pins the kernel's tile and schedule
    (tests, benchmarks); by default the measured choice per head dim is made: the Gluon warp-specialized forward
    at hd256 on sm_90 (:data:`GLWS_DEFAULTS`), the Triton kernel with :func:`default_config` otherwise.

    Runs the sm_90 TMA + wgmma kernel on Hopper, the same kernel in the Triton interpreter for CPU tensors under
    ``TRITON_INTERPRET=1``; other GPUs get a BF16 SDPA fallback with a one-time warning.
    """
    key = None
    if _FAST_FWD.on and cu_seqlens_q is None and cu_seqlens_k is None:
        key = _plan_key(q, k, v, causal, softmax_scale, q_descale, k_descale, v_descale, out_dtype, return_lse,
                        out_scale, config)
        plan = _PLANS.get(key) if key is not None else None
        if plan is not None:
            res = _replay(plan, q, k, v, q_descale, k_descale, v_descale, out_dtype, out_scale, return_lse)
            if res is not None:
                return res
    prob = _validate(q, k, v, causal, softmax_scale, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k,
                     max_seqlen_q, max_seqlen_k, out_dtype, out_scale)
    d = prob.head_dim
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else float(softmax_scale)
    device = q.device
    if prob.batch == 0 or q.shape[0] == 0 or prob.seqlen_q == 0 or k.shape[0] == 0 or prob.seqlen_k == 0:
        return _empty_result(prob, q, out_dtype, return_lse, d)

    if _uses_fallback(device):
        return _fallback_sdpa(q, k, v, prob, causal, scale, q_descale, k_descale, v_descale, cu_seqlens_q,
                              cu_seqlens_k, out_dtype, out_scale, return_lse)

    cfg = config or _default_config_for(device, d, causal, prob.varlen)
    if return_lse and cfg.row_sum_mma:
        # The lse needs the fp32 row sums (see _kernels.attention._row_sum_mma); decided here, before a launch plan
        # records the config, so the full path and its replays run the same kernel.
        cfg = cfg.evolve(row_sum_mma=False)
    _check_config_for(cfg, prob, device, out_dtype)
    if key is None or not _plan_eligible(prob, q, k, v):
        prep = _prepare(q, k, v, prob, cfg, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k)
        return _run_prepared(prep, prob, cfg, causal, scale, out_dtype, out_scale, return_lse)
    from tritonfp8 import _launch

    with _launch.recording() as records:
        prep = _prepare(q, k, v, prob, cfg, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k)
        res = _run_prepared(prep, prob, cfg, causal, scale, out_dtype, out_scale, return_lse)
    _keep_plan(key, records, prob, cfg, scale, prep, causal)
    return res


def _check_config_for(cfg: AttnConfig, prob: _Problem, device: torch.device, out_dtype) -> None:
    """What a config asks for that this problem or device cannot give: a ValueError naming it (no silent
    substitution of another kernel)."""
    if cfg.kernel != "glws":
        return
    why = None
    if device.type != "cuda" or interpreting():
        why = "CPU tensors / the Triton interpreter (Gluon kernels run compiled only)"
    elif arch_of(device) != 90:
        why = f"sm_{arch_of(device)} (the kernel is sm_90 only)"
    elif next(x for x in _SUPPORTED_D if x >= prob.head_dim) == 256 and not (
            cfg.block_n == 64 or (cfg.block_n == 128 and cfg.num_stages <= 3 and not cfg.overlap)):
        why = (f"head dim 256 with block_n={cfg.block_n}, num_stages={cfg.num_stages}, overlap={cfg.overlap} "
               f"(shared memory / registers): use block_n=64, or block_n=128 with num_stages <= 3 and overlap=0")
    elif next(x for x in _SUPPORTED_D if x >= prob.head_dim) == 128 and cfg.block_n == 256 and cfg.overlap:
        why = "head dim 128 with block_n=256 and overlap (registers: two 64 x 256 score tiles): use overlap=0"
    if why is not None:
        raise ValueError(f"config: kernel='glws' does not support {why}; use the default kernel='triton'")


# Where the warp-specialized Gluon forward measured faster than the Triton kernel it is the default on sm_90
# (compiled runs only; the interpreter and other GPUs keep the Triton kernel). hd256 (session 18): 128 x 128 tiles,
# the serial loop, 2 stages (164 KB; offline 548 instructions per 64 x 128 block, 8.6 per score, against 409 per
# 64 x 64 block, 12.8, for the 128 x 64 overlapped form, the default from session 10 to 17). H200, B4 H8 S8192,
# kernel alone, interleaved with that form in three runs: dense 1014 / 1022 / 1004 vs 912 / 931 / 919 TFLOPS
# (1.09-1.11x), causal 958 / 960 / 932 vs 858 / 865 / 824 (1.11-1.13x; the third run with the causal masked steps
# unrolled, no spills; 158 spill stores offline before); cuDNN FP8 in the same runs 967 / 1028 / 1006 dense,
# 904 / 910 / 907 causal (attention-nvidia-h200-20261203-180422.json, -180845.json, -184233.json). 3 stages
# (229,648 B) ran 1038 / 961 in the second run: within the spread, not adopted.
GLWS_DEFAULTS = {256: AttnConfig(kernel="glws", block_m=128, block_n=128, num_warps=8, num_stages=2,
                                 permute_p=False)}
# Dense non-causal problems only (session 17): hd128 on 128 x 256 tiles of the Gluon forward (serial loop, 2
# stages). Per thread and 64 x 256 block its loop issues 821 instructions for 128 scores (6.4 per score) against
# the Triton kernel's 428 for 64 (6.7). H200, kernel alone, interleaved with the Triton kernel's default in three
# runs: S 8192 895 / 884 / 878 vs 822 / 825 / 824 TFLOPS, S 16384 917 / 899 / 898 vs 832 / 803 / 824, GQA 64/8
# 887 / 878 / 878 vs 831 / 802 / 824, S 2048 754 / 745 / 746 vs 752 / 762 / 767 (attention-nvidia-h200-20261203-
# 155810.json, -162214.json, -162518.json; docs/attention.md). Causal problems stay on the Triton kernel (421-801
# vs 631-814 TFLOPS there: one program per SM, uneven causal programs); varlen is unmeasured on these tiles.
GLWS_DENSE_DEFAULTS = {128: AttnConfig(kernel="glws", block_m=128, block_n=256, num_warps=8, num_stages=2,
                                       permute_p=False)}


def _default_config_for(device: torch.device, d: int, causal: bool = False, varlen: bool = False) -> AttnConfig:
    """The config ``attention`` runs without ``config=``: on a compiled sm_90 run :data:`GLWS_DEFAULTS` where it
    has the head dim (and :data:`GLWS_DENSE_DEFAULTS` for dense non-causal problems), else the Triton kernel's
    :func:`default_config` (the interpreter's small tiles for CPU tests)."""
    d_pad = next(x for x in _SUPPORTED_D if x >= d)
    if interpreting() and device.type == "cpu":
        return _INTERPRETER_CONFIG
    if device.type == "cuda" and not interpreting() and arch_of(device) == 90:
        if d_pad in GLWS_DENSE_DEFAULTS and not causal and not varlen:
            return GLWS_DENSE_DEFAULTS[d_pad]
        if d_pad in GLWS_DEFAULTS:
            return GLWS_DEFAULTS[d_pad]
    return default_config(d_pad)


@dataclass(frozen=True)
class _Prepared:
    """Kernel-ready operands: E4M3 q, k and V (as Vᵀ when the config reads it), fp32 descales, varlen offsets."""

    q8: torch.Tensor
    k8: torch.Tensor
    v8: torch.Tensor
    qds: torch.Tensor
    kds: torch.Tensor
    vds: torch.Tensor
    per_head: bool
    cu_q: torch.Tensor | None
    cu_k: torch.Tensor | None
    vt_cols: torch.Tensor | None
    d_pad: int


def _prepare(q, k, v, prob: _Problem, cfg: AttnConfig, q_descale, k_descale, v_descale, cu_seqlens_q,
             cu_seqlens_k) -> _Prepared:
    """Pad D, make TMA-ready copies where needed, quantize bf16/fp16/fp32 inputs per head, lay V out as Vᵀ."""
    device = q.device
    d_pad = next(x for x in _SUPPORTED_D if x >= prob.head_dim)
    q, k, v = (_aligned_contiguous(_pad_head_dim(t, d_pad)) for t in (q, k, v))
    cu_q = cu_seqlens_q.contiguous() if prob.varlen else None
    cu_k = cu_seqlens_k.contiguous() if prob.varlen else None
    hkv, b = prob.heads_kv, prob.batch
    vt_cols = None
    if prob.fp8_in:
        per_head = any(x is not None and x.dim() == 2 for x in (q_descale, k_descale, v_descale))
        qds, kds, vds = (_descale_arg(x, per_head, b, hkv, device) for x in (q_descale, k_descale, v_descale))
        q8, k8 = q, k
        if cfg.v_transposed:
            v8, _, vt_cols = _quantize_heads(v, hkv, cu_k, b, prob.seqlen_k, quantize=False, transpose=True,
                                             cu_host=prob.cu_k, permute_keys=cfg.permute_p)
        else:
            v8 = v
    else:
        per_head = True
        q8, qds, _ = _quantize_heads(q, hkv, cu_q, b, prob.seqlen_q, quantize=True, transpose=False)
        k8, kds, _ = _quantize_heads(k, hkv, cu_k, b, prob.seqlen_k, quantize=True, transpose=False)
        v8, vds, vt_cols = _quantize_heads(v, hkv, cu_k, b, prob.seqlen_k, quantize=True,
                                           transpose=cfg.v_transposed, cu_host=prob.cu_k,
                                           permute_keys=cfg.permute_p)
    return _Prepared(q8, k8, v8, qds, kds, vds, per_head, cu_q, cu_k, vt_cols, d_pad)


def _run_prepared(prep: _Prepared, prob: _Problem, cfg: AttnConfig, causal, scale, out_dtype, out_scale,
                  return_lse):
    """Allocate the outputs and launch the forward kernel on prepared operands."""
    device = prep.q8.device
    out = torch.empty((*prep.q8.shape[:-1], prep.d_pad), dtype=out_dtype, device=device)
    if return_lse:
        lse = _lse_init(prob, prep.q8)
    else:
        lse = torch.empty(1, dtype=torch.float32, device=device)
    _launch_fwd(prep.q8, prep.k8, prep.v8, out, lse, prep.qds, prep.kds, prep.vds, out_scale, prep.cu_q, prep.cu_k,
                prep.vt_cols, prob, cfg, causal, scale, prep.per_head, return_lse, prep.d_pad)
    if prep.d_pad != prob.head_dim:
        out = out[..., : prob.head_dim].contiguous()
    return (out, lse) if return_lse else out


def kernel_only_fn(q, k, v, *, causal=False, softmax_scale=None, q_descale=None, k_descale=None, v_descale=None,
                   cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                   out_dtype=torch.bfloat16, out_scale=None, config: AttnConfig | None = None):
    """For benchmarks: quantize / transpose the inputs once, return a callable that runs only the forward kernel.

    Same arguments as :func:`attention`; the returned function's result equals ``attention(...)``'s. With E4M3
    inputs and a Vᵀ config it times the kernel as if V already came transposed (e.g. from the fused quantizer).
    """
    prob = _validate(q, k, v, causal, softmax_scale, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k,
                     max_seqlen_q, max_seqlen_k, out_dtype, out_scale)
    scale = 1.0 / math.sqrt(prob.head_dim) if softmax_scale is None else float(softmax_scale)
    cfg = config or _default_config_for(q.device, prob.head_dim, causal, prob.varlen)
    _check_config_for(cfg, prob, q.device, out_dtype)
    prep = _prepare(q, k, v, prob, cfg, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k)
    return lambda: _run_prepared(prep, prob, cfg, causal, scale, out_dtype, out_scale, False)


# The fast path, on by default since session 11 (TRITONFP8_ATTN_FAST_LAUNCH=0 turns it off): the forward (Triton
# or Gluon) and the per-head quantize / Vᵀ relayout kernels launched through _launch (Triton's dispatch skipped on
# repeat calls, as the GEMM and decode do), and dense FP8 calls replayed from launch plans (_PLANS below). H200,
# public call with it off / on, interleaved (attn-launch-20261202-070728.json): B1 H16 S1024 hd128 causal 207 ->
# 31 us (the kernel alone, through Triton's dispatch, 78 us), B1 H16 S256 277 -> 42 us, B4 H8 S2048 hd256 causal
# (Gluon) 227 -> 142 us (kernel 131 us), B8 H16 S2048 dense 403 -> 380 us (kernel 365 us); outputs bit-equal
# (tests/test_attention_launch.py, and the attention GPU suites ran with it on).
_FAST_FWD = _backend.Switch("TRITONFP8_ATTN_FAST_LAUNCH", default=True)


# Launch plans of the public op by call metadata (see :func:`_plan_key`): with _FAST_FWD on, the first eligible call
# runs the full path while recording its launches (the Vᵀ relayout, the forward); a repeat call with the same
# metadata skips validation, config choice, names and Triton's dispatch and replays the recorded kernels with this
# call's tensors (:func:`_replay`). Eligible: dense inputs (E4M3, or bf16/fp16/fp32 through the fused per-head
# quantization) on a compiled Hopper run, head dim 64/128/256, q, k, v contiguous and 16-byte aligned.
# Session 11 (host-profile-20261202-065437.json): the public call's host time was ~200 us at B1 H16 S256.
_PLANS: dict[tuple, "_Plan"] = {}
_PLAN_CACHE_SIZE = 256


@dataclass(frozen=True)
class _Plan:
    prob: _Problem
    cfg: AttnConfig
    scale: float  # softmax scale (the forward's only float argument; causal and the rest are in the tail)
    per_head: bool
    vt_shape: tuple | None  # the relayout's Vᵀ buffer, None where the kernel reads V as given
    relayout: tuple | None  # recorded (compiled kernel, grid3, tail values) of the relayout (E4M3 inputs)
    quant: tuple | None  # bf16/fp16/fp32 inputs: (amax, quantize) records of q, k and v
    fwd: tuple  # recorded forward
    head_group: int  # the forward's head_group argument (_head_group_arg)
    dummy_f: torch.Tensor  # placeholder pointers the kernels do not read in this form
    dummy_i: torch.Tensor


def _meta(t):
    return None if t is None else (t.shape, t.stride(), t.dtype, t.device)


def _plan_key(q, k, v, causal, softmax_scale, q_descale, k_descale, v_descale, out_dtype, return_lse, out_scale,
              config):
    """Everything of a dense call that the full path's decisions depend on, or None where a call is never
    planned (non-tensor arguments, a softmax scale that is not a Python number)."""
    if not (softmax_scale is None or type(softmax_scale) in (float, int)):
        return None
    try:
        from tritonfp8.naming import naming_mode

        return (_meta(q), _meta(k), _meta(v), bool(causal), softmax_scale, _meta(q_descale), _meta(k_descale),
                _meta(v_descale), out_dtype, bool(return_lse), _meta(out_scale), config, naming_mode())
    except (AttributeError, TypeError):
        return None


def _ready(t: torch.Tensor) -> bool:
    return t.is_contiguous() and t.data_ptr() % 16 == 0


def _plan_eligible(prob: _Problem, q, k, v) -> bool:
    return (not prob.varlen and q.device.type == "cuda" and not interpreting()
            and prob.head_dim in _SUPPORTED_D and _ready(q) and _ready(k) and _ready(v))


def _keep_plan(key, records, prob, cfg, scale, prep: _Prepared, causal: bool) -> None:
    """Store the plan of a recorded full-path call: E4M3 inputs, the relayout (when V was transposed) and the
    forward; other inputs, the amax and quantize launches of q, k and v, then the forward."""
    want = (2 if cfg.v_transposed else 1) if prob.fp8_in else 7
    if len(records) != want or any(r is None for r in records):
        return
    if len(_PLANS) >= _PLAN_CACHE_SIZE:
        _PLANS.pop(next(iter(_PLANS)))
    dev = prep.q8.device
    quant = None if prob.fp8_in else tuple((records[i], records[i + 1]) for i in (0, 2, 4))
    relayout = records[0] if prob.fp8_in and cfg.v_transposed else None
    _PLANS[key] = _Plan(prob, cfg, scale, prep.per_head,
                        tuple(prep.v8.shape) if cfg.v_transposed else None, relayout, quant, records[-1],
                        _head_group_arg(cfg, prob, causal), torch.empty(1, dtype=torch.float32, device=dev),
                        torch.zeros(1, dtype=torch.int32, device=dev))


def _replay(plan: _Plan, q, k, v, q_descale, k_descale, v_descale, out_dtype, out_scale, return_lse):
    """A planned call: the recorded kernels launched with this call's tensors (None: take the full path)."""
    if not (_ready(q) and _ready(k) and _ready(v)):
        return None
    from tritonfp8._launch import run_compiled

    prob, cfg = plan.prob, plan.cfg
    b, hkv, d = prob.batch, prob.heads_kv, prob.head_dim
    dev = q.device
    if plan.quant is not None:  # per-head amax + quantize of each input, as _quantize_heads launches them
        def quantized(t, h, seqlen, recs, y_shape, stride_y):
            x2 = t.view(-1, h, d)
            amax = torch.zeros(b, hkv, dtype=torch.float32, device=dev)
            ds = torch.ones(b, hkv, dtype=torch.float32, device=dev)
            y = torch.empty(y_shape, dtype=E4M3.torch_dtype, device=dev)
            (ka, ga, ta), (kq, gq, tq) = recs
            run_compiled(ka, ga, _amax_args(x2, amax, plan.dummy_i, seqlen, h, hkv) + ta)
            run_compiled(kq, gq, _quantize_args(x2, y, amax, ds, plan.dummy_i, plan.dummy_i, seqlen, h, hkv,
                                                stride_y) + tq)
            return y, ds

        rq, rk, rv = plan.quant
        q, qds = quantized(q, prob.heads_q, prob.seqlen_q, rq, q.shape, 0)
        k, kds = quantized(k, hkv, prob.seqlen_k, rk, k.shape, 0)
        if plan.vt_shape is not None:
            vt, vds = quantized(v, hkv, prob.seqlen_k, rv, plan.vt_shape, plan.vt_shape[-1])
        else:
            vt, vds = quantized(v, hkv, prob.seqlen_k, rv, v.shape, 0)
    else:
        if plan.relayout is not None:
            vt = torch.empty(plan.vt_shape, dtype=E4M3.torch_dtype, device=dev)
            kern, grid3, tail = plan.relayout
            run_compiled(kern, grid3, _quantize_args(v.view(-1, hkv, d), vt, plan.dummy_f, plan.dummy_f,
                                                     plan.dummy_i, plan.dummy_i, prob.seqlen_k, hkv, hkv,
                                                     plan.vt_shape[-1]) + tail)
        else:
            vt = v
        qds, kds, vds = (_descale_arg(x, plan.per_head, b, hkv, dev) for x in (q_descale, k_descale, v_descale))
    out = torch.empty((*q.shape[:-1], d), dtype=out_dtype, device=dev)
    lse = _lse_init(prob, q) if return_lse else plan.dummy_f
    kern, grid3, tail = plan.fwd
    if cfg.kernel == "glws":
        from tritonfp8._kernels import attention_gluon

        _, args = attention_gluon.launch_args(q, k, vt, out, qds, kds, vds, plan.scale, block_n=cfg.block_n,
                                              lse=lse if return_lse else None, row_sum_mma=cfg.row_sum_mma,
                                              out_scale=None if out_scale is None else
                                              out_scale.reshape(-1).contiguous(), head_group=plan.head_group)
    else:
        args = _triton_fwd_args(q, k, vt, out, lse, qds, kds, vds, out_scale, None, None, None, plan.dummy_i, prob,
                                cfg, plan.scale, d, plan.head_group)
    run_compiled(kern, grid3, args + tail)
    return (out, lse) if return_lse else out


def _launch_kernel(fn, grid, *args, **kwargs):
    """``fn[grid](*args, **kwargs)``, or through :func:`tritonfp8._launch.launch` with :data:`_FAST_FWD` on."""
    if _FAST_FWD.on:
        from tritonfp8 import _launch

        return _launch.launch(fn, grid, *args, **kwargs)
    return fn[grid](*args, **kwargs)


def _triton_fwd_args(q8, k8, v8, out, lse, qds, kds, vds, out_scale, cu_q, cu_k, vt_cols, dummy_cu, prob: _Problem,
                     cfg: AttnConfig, scale, d, head_group: int) -> tuple:
    """Runtime arguments of ``attn_fwd_kernel`` in order (the full path and a plan's replay share them): TMA
    descriptors of q, k and V or Vᵀ (built without the dataclass's checks: shapes are validated), pointers, sizes."""
    from tritonfp8._direct import descriptor

    hq, hkv = prob.heads_q, prob.heads_kv
    rows_q, rows_k = q8.numel() // (hq * d), k8.numel() // (hkv * d)
    q_desc = descriptor(q8, (rows_q, hq * d), (hq * d, 1), [cfg.block_m, d])
    k_desc = descriptor(k8, (rows_k, hkv * d), (hkv * d, 1), [cfg.block_n, d])
    if cfg.v_transposed:
        # Vᵀ: (B, Hkv, D, round32(Sk)) dense / (Hkv, D, Σ round32(len)) varlen, viewed as 2-D (rows of D,
        # sequence columns); the padding columns up to a multiple of 32 hold zeros (written by the relayout
        # pass), TMA zero-fills beyond.
        cols = v8.shape[-1]
        v_desc = descriptor(v8, (v8.numel() // cols, cols), (cols, 1), [d, cfg.block_n])
    else:
        v_desc = descriptor(v8, (rows_k, hkv * d), (hkv * d, 1), [cfg.block_n, d])
    ones_desc = None
    if cfg.row_sum_mma:
        from tritonfp8._kernels.attention import ones_tile

        ones_desc = descriptor(ones_tile(cfg.block_n, v8.device), (16, cfg.block_n), (cfg.block_n, 1),
                               [16, cfg.block_n])
    if out.dtype == E4M3.torch_dtype:
        os_arg = out_scale.contiguous() if out_scale.dim() else out_scale.reshape(1)
    else:
        os_arg = qds
    return (q_desc, k_desc, v_desc, ones_desc, out, lse, qds, kds, vds, os_arg,
            cu_q if prob.varlen else dummy_cu, cu_k if prob.varlen else dummy_cu,
            vt_cols if vt_cols is not None else dummy_cu,
            scale * _LOG2E, prob.seqlen_q, prob.seqlen_k, hq, hkv, triton.cdiv(prob.seqlen_q, cfg.block_m),
            head_group)


def _launch_fwd(q8, k8, v8, out, lse, qds, kds, vds, out_scale, cu_q, cu_k, vt_cols, prob: _Problem,
                cfg: AttnConfig, causal, scale, per_head, return_lse, d):
    if cfg.kernel == "glws":  # checked by _check_config_for: sm_90, compiled
        from tritonfp8._kernels import attention_gluon

        attention_gluon.launch(q8, k8, v8, out, qds, kds, vds, scale, block_n=cfg.block_n, stages=cfg.num_stages,
                               permute_p=cfg.permute_p, overlap=bool(cfg.overlap), pingpong=cfg.pingpong,
                               p_carry=cfg.p_carry, causal=bool(causal), lse=lse if return_lse else None,
                               cu_q=cu_q if prob.varlen else None, cu_k=cu_k,
                               vt_cols=vt_cols, max_seqlen_q=prob.seqlen_q,
                               out_scale=None if out_scale is None else out_scale.reshape(-1).contiguous(),
                               fast_launch=_FAST_FWD.on, row_sum_mma=cfg.row_sum_mma,
                               head_group=_head_group_arg(cfg, prob, causal))
        return

    from tritonfp8._kernels.attention import attn_fwd_kernel

    hq, hkv, b = prob.heads_q, prob.heads_kv, prob.batch
    out_fp8 = out.dtype == E4M3.torch_dtype
    dummy_cu = torch.zeros(1, dtype=torch.int32, device=q8.device)
    num_m_blocks = triton.cdiv(prob.seqlen_q, cfg.block_m)
    out_short = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float8_e4m3fn: "e4m3"}[out.dtype]
    name = kernel_name_of(arch_of(q8.device), d, causal, cfg, varlen=prob.varlen, out_short=out_short,
                          per_head=per_head, lse=return_lse).build()
    grid = (num_m_blocks, b * hq)
    _launch_kernel(
        attn_fwd_kernel, grid,
        *_triton_fwd_args(q8, k8, v8, out, lse, qds, kds, vds, out_scale, cu_q, cu_k, vt_cols, dummy_cu, prob, cfg,
                          scale, d, _head_group_arg(cfg, prob, causal)),
        KERNEL_NAME=name,
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, HEAD_DIM=d, GROUP=hq // hkv,
        CAUSAL=bool(causal), VARLEN=prob.varlen, V_TRANSPOSED=cfg.v_transposed,
        DESCALE_PER_HEAD=per_head, OUT_FP8=out_fp8, OUT_SCALE_PER_HEAD=out_fp8 and out_scale.dim() == 2,
        WRITE_LSE=bool(return_lse), LOG2_P_SCALE=int(math.log2(P_SCALE)), EXACT_P_ROUND=interpreting(),
        WARP_SPECIALIZE=cfg.warp_specialize, PERMUTE_P=cfg.v_transposed and cfg.permute_p, OVERLAP=cfg.overlap,
        LAZY_RESCALE=cfg.lazy_rescale, POLY_EXP2=cfg.poly_exp2, ROW_SUM_MMA=cfg.row_sum_mma,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        **({"maxnreg": cfg.maxnreg} if cfg.maxnreg else {}),
    )


# ---------------------------------------------------------------------------------------------------------------
# Fallback for CUDA GPUs other than Hopper: dequantize to BF16 and run PyTorch SDPA.


def _uses_fallback(device: torch.device) -> bool:
    """Whether :func:`attention` takes the BF16 SDPA fallback: a CUDA GPU without sm_90. CPU tensors run the
    kernels in the interpreter; tests monkeypatch this to run the fallback there."""
    return device.type == "cuda" and not is_hopper(device)


def _fallback_sdpa(q, k, v, prob: _Problem, causal, scale, q_descale, k_descale, v_descale, cu_q, cu_k, out_dtype,
                   out_scale, return_lse):
    name = torch.cuda.get_device_name(q.device) if q.device.type == "cuda" else str(q.device)
    warn_once(
        "attention-fallback",
        f"tritonfp8.attention: {name} is not Hopper (sm_90); using a BF16 "
        "scaled_dot_product_attention fallback (correct, not FP8-fast)",
    )
    import torch.nn.functional as F

    hq, hkv = prob.heads_q, prob.heads_kv
    group = hq // hkv

    def deq(x, ds, b):
        xf = x.float()
        if ds is not None:
            dsb = ds.float() if ds.dim() == 0 else ds[b].float().repeat_interleave(x.shape[-2] // hkv)[:, None]
            xf = xf * dsb
        return xf.to(torch.bfloat16)

    if prob.varlen:
        cq, ck = [int(x) for x in cu_q.tolist()], [int(x) for x in cu_k.tolist()]
        segs = [(slice(cq[i], cq[i + 1]), slice(ck[i], ck[i + 1])) for i in range(prob.batch)]
        get = lambda t, s: t[s]  # noqa: E731
    else:
        segs = [(i, i) for i in range(prob.batch)]
        get = lambda t, s: t[s]  # noqa: E731
    outs, lses = [], []
    for b, (sq_, sk_) in enumerate(segs):
        qb, kb, vb = deq(get(q, sq_), q_descale, b), deq(get(k, sk_), k_descale, b), deq(get(v, sk_), v_descale, b)
        n_q, n_k = qb.shape[0], kb.shape[0]
        mask = None
        if causal:
            i = torch.arange(n_q, device=q.device)[:, None]
            j = torch.arange(n_k, device=q.device)[None, :]
            mask = j <= i + (n_k - n_q)
        qt, kt, vt = qb.transpose(0, 1), kb.repeat_interleave(group, 1).transpose(0, 1), vb.repeat_interleave(
            group, 1).transpose(0, 1)
        if n_k == 0:
            o = torch.zeros_like(qt)
        else:
            o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale)
            o = torch.nan_to_num(o, nan=0.0)  # rows with no visible key
        outs.append(o.transpose(0, 1))
        if return_lse:
            s = torch.einsum("hqd,hkd->hqk", qt.float(), kt.float()) * scale
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            lses.append(torch.logsumexp(s, dim=-1) if n_k else s.new_full((hq, n_q), float("-inf")))
    out = torch.cat(outs, 0) if prob.varlen else torch.stack(outs, 0)
    if out_dtype == E4M3.torch_dtype:
        of = out.float()
        os_ = out_scale.float()
        if os_.dim() == 0:
            of = of / os_
        elif prob.varlen:
            lens = torch.tensor([s.stop - s.start for s, _ in segs], device=q.device)
            row_b = torch.repeat_interleave(torch.arange(prob.batch, device=q.device), lens)
            of = of / os_[row_b][:, :, None]
        else:
            of = of / os_[:, None, :, None]
        out = of.clamp(-E4M3.max, E4M3.max).to(E4M3.torch_dtype)
    else:
        out = out.to(out_dtype)
    if not return_lse:
        return out
    lse = torch.cat(lses, 1) if prob.varlen else torch.stack(lses, 0)
    return out, lse


# ---------------------------------------------------------------------------------------------------------------
# Interpreter / GPU correctness demo (``python -m tritonfp8 bench`` without a GPU; contract in bench/demo.py).


def demo_cases(device: str) -> list[dict]:
    """Small attention checks against :func:`attention_torch`: FP8 in (per-head descales, GQA, causal with
    Sq != Sk), BF16 in → BF16 out (fused per-head quantization), and varlen with an empty key sequence."""
    cases = []

    def fp8_case():
        g = torch.Generator().manual_seed(1)
        q, k, v = (torch.randn(1, s, h, 64, generator=g) for s, h in ((96, 4), (160, 2), (160, 2)))
        ds = [torch.rand(1, 2, generator=g) * 0.5 + 0.25 for _ in range(3)]
        q8, k8, v8 = (torch.clamp(x / d.repeat_interleave(x.shape[2] // 2, 1)[:, None, :, None], -448, 448)
                      .to(E4M3.torch_dtype) for x, d in zip((q, k, v), ds))
        args = [t.to(device) for t in (q8, k8, v8)]
        kw = dict(causal=True, q_descale=ds[0].to(device), k_descale=ds[1].to(device), v_descale=ds[2].to(device))
        out = attention(*args, **kw)
        ref = attention_torch(*args, **kw)
        return out.float().cpu(), ref.cpu()

    def bf16_case():
        g = torch.Generator().manual_seed(2)
        q, k, v = (torch.randn(2, s, 2, 128, generator=g).to(torch.bfloat16).to(device) for s in (80, 128, 128))
        out = attention(q, k, v)
        return out.float().cpu(), attention_torch(q, k, v).cpu()

    def varlen_case():
        g = torch.Generator().manual_seed(3)
        lq, lk = [40, 17, 0, 64], [70, 0, 5, 64]
        cu_q = torch.tensor([0] + list(torch.tensor(lq).cumsum(0)), dtype=torch.int32).to(device)
        cu_k = torch.tensor([0] + list(torch.tensor(lk).cumsum(0)), dtype=torch.int32).to(device)
        q = torch.randn(sum(lq), 2, 64, generator=g).to(torch.bfloat16).to(device)
        k, v = (torch.randn(sum(lk), 1, 64, generator=g).to(torch.bfloat16).to(device) for _ in range(2))
        kw = dict(causal=True, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=64, max_seqlen_k=70)
        out = attention(q, k, v, **kw)
        return out.float().cpu(), attention_torch(q, k, v, **kw).cpu()

    # Tolerances (relative Frobenius error vs the fp32 reference): each E4M3 rounding (RNE) has a relative RMS error
    # of at most eps / sqrt(3) (eps = 2^-4). FP8 inputs exact in E4M3 leave one rounding (P): eps / sqrt(3) = 3.6%
    # (measured 2.1%). BF16 inputs add the q, k, v roundings: four in quadrature, 2 eps / sqrt(3) = 7.2%
    # (measured 4.5-5%; N(0,1) data, so the 2.5% cannot hold end to end, see docs/attention.md).
    cases.append(dict(case="e4m3 B1 Sq96 Sk160 Hq4/Hkv2 D64 causal per-head descales", run=fp8_case,
                      tol=E4M3.eps / math.sqrt(3), note="one E4M3 rounding (P): eps/sqrt(3)"))
    cases.append(dict(case="bf16->bf16 B2 Sq80 Sk128 H2 D128", run=bf16_case, tol=2 * E4M3.eps / math.sqrt(3),
                      note="four E4M3 roundings (q, k, v, P): 2 eps/sqrt(3)"))
    cases.append(dict(case="bf16 varlen 4 seqs (one with no keys) GQA2 D64 causal", run=varlen_case,
                      tol=2 * E4M3.eps / math.sqrt(3), note="four E4M3 roundings (q, k, v, P): 2 eps/sqrt(3)"))
    return cases
