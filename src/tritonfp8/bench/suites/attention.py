"""FP8 attention prefill: ``tritonfp8.attention`` vs cuDNN FP8, cuDNN BF16 and flash BF16, with errors.

Per case (B, Hq/Hkv, S, D, causal), all timed in one interleaved run (:func:`tritonfp8.bench.harness.
bench_interleaved`, do_bench medians):

- ``ours`` (E4M3 in (B, S, H, D), bf16 out): the public call; with the default Vᵀ config it includes the V -> Vᵀ
  relayout pass. ``ours_kernel``: the forward kernel alone on a Vᵀ prepared beforehand (what the fused bf16
  quantizer hands it). Extra ``--variants`` (configs, see :data:`VARIANTS`) are timed as ``ours_<variant>``
  kernel-only, so one GPU call decides between V layouts, stages and tiles.
- ``ours_e2e``: bf16 in -> bf16 out, the fused per-head quantization (+Vᵀ) included.
- ``cudnn_fp8``: cudnn-frontend ``sdpa_fp8`` (E4M3 in and out: Hopper requires FP8 output), scale_s = 256.
  Skipped with a note when the ``cudnn`` Python module is missing.
- ``cudnn_bf16`` / ``flash_bf16``: ``scaled_dot_product_attention`` pinned to the cuDNN / flash backend.

TFLOPS = 4·B·Hq·Sq·Sk·D / time, halved for causal (the masked half is not work); ratios ``vs_<peer>`` = peer time /
the public call's, ``kernel_vs_<peer>`` the same for the kernel alone; % of the 1979 TFLOPS FP8 peak for both.
Errors: relative Frobenius error of each output vs :func:`tritonfp8.attention_torch` (fp32) on the same data (the
dequantized E4M3 tensors; the BF16 peers get those values in bf16), on batch 0 and two query heads. ``ours_e2e``
is compared with the reference on its bf16 input. Varlen: 16 sequences of 512-8192 tokens (fixed seed), causal;
the peers (cuDNN FP8 included) run the batch padded to the longest sequence and are credited with the useful FLOPs
only; errors on the first sequence.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable

import torch

from tritonfp8 import _backend

DESCRIPTION = "FP8 attention prefill TFLOPS vs cuDNN FP8 / cuDNN BF16 / flash BF16, errors vs an fp32 reference"

# (B, Hq, Hkv, S, D)
CONFIGS = (
    (8, 16, 16, 2048, 128),
    (2, 16, 16, 8192, 128),
    (1, 16, 16, 16384, 128),
    (2, 32, 32, 8192, 64),
    (4, 8, 8, 8192, 256),
    (1, 64, 8, 8192, 128),  # GQA 64/8
)
QUICK_CONFIGS = ((2, 16, 16, 8192, 128), (2, 32, 32, 8192, 64))
VARLEN_HEADS, VARLEN_D, VARLEN_N, VARLEN_RANGE = 16, 128, 16, (512, 8192)

# The Triton kernel's options that AttnConfig(kernel="glws") does not take, reset for its variants.
_GLWS = dict(kernel="glws", block_m=128, block_n=128, maxnreg=None, permute_p=False, lazy_rescale=False,
             poly_exp2=0, overlap=0, row_sum_mma=False)
# The overlapped loop takes no row_sum_mma (the hd128 default since session 15): its variants keep FADD row sums.
_OV = dict(overlap=2, row_sum_mma=False)

# Kernel-only variants selectable with --variants (the default config is always timed as ours_kernel):
# name -> (AttnConfig overrides, head dims it applies to (None: all)).
VARIANTS: dict[str, tuple[dict[str, Any], tuple[int, ...] | None]] = {
    "vonchip": (dict(v_transposed=False), None),  # V read as given (B, S, H, D), transposed on chip: no relayout
    "noperm": (dict(permute_p=False), None),  # Vᵀ without the 32-key permutation: P shuffled between lanes
    "s3": (dict(num_stages=3), None),
    "s1": (dict(num_stages=1), None),
    "bn64": (dict(block_n=64), (64, 128)),
    "bm64w4": (dict(block_m=64, num_warps=4), None),
    "bn128": (dict(block_n=128), (256,)),  # 239 registers, 165 KB shared memory (offline sm_90)
    "r128": (dict(maxnreg=128), (64,)),  # 122 registers, no spills: two 8-warp CTAs per SM (hd128 fails to compile)
    "bm64w4r168": (dict(block_m=64, num_warps=4, maxnreg=168), (128,)),  # 154 registers: three 4-warp CTAs per SM
    # The defaults before the 2026-11-29 H200 run (128 x 128 / 8 warps / 2 stages, no register cap), per head dim:
    "prev128": (dict(block_m=128, num_warps=8, maxnreg=None), (128,)),
    "prev64": (dict(block_m=128, num_warps=8, maxnreg=None), (64,)),
    "prev64r128": (dict(block_m=128, num_warps=8), (64,)),  # hd64 default until attention-...-130907.json
    "prev256": (dict(num_stages=2), (256,)),
    "s2": (dict(num_stages=2), None),
    "bm64w4r168s3": (dict(block_m=64, num_warps=4, maxnreg=168, num_stages=3), (128,)),
    # Offline sm_90 facts (python -m tritonfp8 codegen NAME --arch 90 --json: gmma_waited, mufu_in_flight): the
    # default hd128 kernel's 16 QGMMA each wait for themselves (ptxas serializes the wgmmas at 168 registers).
    # The ov* variants run AttnConfig(overlap=2): Q·K_{j+1}ᵀ in flight during block j's exp2, wgmmas not serialized.
    # ov2bn64: 64 x 64 tiles, 156 registers (3 CTAs/SM under the 168 cap), 57 KB shared, 33 MUFU.EX2 under a wgmma.
    # hd64 (r128, 4 CTAs/SM): 123 registers, 29 KB, wgmmas not serialized (the default's 12 QGMMA all wait).
    "ov2bn64": (dict(**_OV, block_n=64), (64, 128)),
    "ov2bn64s3": (dict(**_OV, block_n=64, num_stages=3), (128,)),  # 155 registers, 74 KB: still 3 CTAs/SM
    # px4 / px2: a quarter / half of the loop's exp2 by a cubic on the FMA pipe (MUFU.EX2 per thread and 64 x 64
    # block 32 -> 24 / 16; 160 registers, no spills, no extra shuffles): the SFU's exp2 rate equals the tensor core's.
    "ov2bn64px4": (dict(**_OV, block_n=64, poly_exp2=4), (128,)),
    "ov2bn64s3px4": (dict(**_OV, block_n=64, num_stages=3, poly_exp2=4), (128,)),
    "ov2bn64px2": (dict(**_OV, block_n=64, poly_exp2=2), (128,)),
    "ov2nocappx4": (dict(**_OV, maxnreg=None, poly_exp2=4), (128,)),  # 238 registers, 2 CTAs/SM
    # ov2nocap: 64 x 128 tiles, no register cap: 225 registers, 107 KB shared -> 2 CTAs/SM, 65 MUFU.EX2 under a wgmma.
    "ov2nocap": (dict(**_OV, maxnreg=None), (128,)),
    # The default tiles without the register cap: 205 registers (2 CTAs/SM), wgmma not serialized (4 waits / 16).
    "nocap": (dict(maxnreg=None), (128,)),
    # 64 x 128, overlap, one K/Vᵀ buffer (33 KB), 220 registers; lazy: rescale acc (64 FMUL per thread and block)
    # only when a row max grew by more than 0.75 (log2 units), 223 registers.
    "ov2s1": (dict(**_OV, num_stages=1, maxnreg=None), (128,)),
    "ov2s1lazy": (dict(**_OV, num_stages=1, maxnreg=None, lazy_rescale=True), (128,)),
    # hd256 (128 x 64, 8 warps, 1 CTA/SM like the default): 227 registers, 160 KB (s3) / 128 KB (s2), 33 MUFU.EX2
    # per thread and block under the next Q·Kᵀ.
    # hd256 with 64-row, one-warpgroup tiles (offline sm_90: bm64w4 = 64 x 64 s3, 223 registers, 113 KB shared:
    # still 1 CTA/SM by shared memory; s2: 225 registers, 81 KB: 2 CTAs/SM; bn32: 64 x 32 s3, 193 registers, 65 KB:
    # 2 CTAs/SM; bn32r168: 3 CTAs/SM but 17 spills and every QGMMA waited). No spills except r168.
    "bm64w4s2": (dict(block_m=64, num_warps=4, num_stages=2), (256,)),
    "bm64w4bn32": (dict(block_m=64, num_warps=4, block_n=32), (256,)),
    "bm64w4bn32r168": (dict(block_m=64, num_warps=4, block_n=32, maxnreg=168), (256,)),
    "ov2": (dict(**_OV), (256,)),
    "ov2s2": (dict(**_OV, num_stages=2), (256,)),
    # Lazy rescaling in the plain loop on the default tiles: acc *= alpha only in blocks where some row max grew by
    # more than 0.75 (log2 units); the decision is a cross-warp max (2 BAR.SYNC, one more per block than the
    # default) and a uniform branch over exactly the acc FMULs. Offline sm_90, unmasked loop per block and thread
    # (rescale taken / skipped vs the default): hd128 r168: 517 / 453 vs 491 (64 FMUL skipped), 154 registers as
    # the default, no spills, 16 QGMMA all waited as the default; hd64 r128: 479 / 447 vs 453 (32 FMUL), 122
    # registers; hd256 (128 x 64, 8 warps): 432 / 304 vs 404 (128 FMUL), 221 registers, wgmmas still not
    # serialized. Break-even skip fraction: hd128 41%, hd64 81%, hd256 22%. On the bench's N(0,1) data
    # (simulated, non-causal) the rule skips 27% (S 2048), 59% (S 8192), 72% (S 16384) of the blocks after the
    # first: hd128 expected -2.4% loop instructions at S 8192, +1.8% at S 2048; hd64 at best break-even.
    # Row sums on the tensor core (AttnConfig(row_sum_mma=True)): l from a wgmma of the E4M3 P with a block of
    # ones instead of 64 FADD per thread and block. Offline sm_90 (hd128, default tiles), unmasked loop per block
    # and thread: 428 instructions vs 491, 156 registers (cap 168), no spills, 76800 bytes of shared memory (three
    # CTAs per SM exactly fill the 228 KB), and the wgmma chains no longer serialized (6 waited vs 16). px4: a
    # quarter of the exp2s by the FMA-pipe cubic on top (50 MUFU.EX2 instead of 66). Session 15 call 1 ran a first
    # form that summed on the tensor core across the whole sequence: output error 3% / 15% / 32% at 2048 / 8192 /
    # 16384 keys (FP8 wgmma accumulation truncates); each block's sum is now fresh and added in fp32.
    "rsmma": (dict(row_sum_mma=True), (128,)),
    # the hd128 default until session 15: row sums by FADD
    "fadd": (dict(row_sum_mma=False), (128,)),
    "rsmmapx4": (dict(row_sum_mma=True, poly_exp2=4), (128,)),
    # an eighth by the cubic: with the FADDs gone MUFU.EX2 is the busiest unit per block (66 x 8 issue clocks per
    # warp against 428 instructions), and about a tenth of the exp2s on the FMA pipe balances the two.
    "rsmmapx8": (dict(row_sum_mma=True, poly_exp2=8), (128,)),
    # the Triton kernel at hd256 (128 x 64 tiles) with the row sums on the tensor core: 381 vs 404 instructions
    "rsmma256": (dict(row_sum_mma=True), (256,)),
    "lazy": (dict(lazy_rescale=True), (128,)),
    "lazy64": (dict(lazy_rescale=True), (64,)),
    "lazy256": (dict(lazy_rescale=True), (256,)),
    # The warp-specialized Gluon forward (AttnConfig(kernel="glws"), _kernels/attention_gluon.py): 128 query rows
    # per program in two consumer warp groups. glws: the serial loop; pc1: the overlapped loop with fp32 P carried
    # into the next step; pp: with ping-pong between the groups; perm: keys permuted in P and Vᵀ. hd256 (128 x 64
    # tiles): glws256 overlapped + pc1, s4 with 4 stages, pp with ping-pong, ser the serial loop.
    "glws": (dict(_GLWS, num_stages=3), (64, 128)),
    # 128 x 64 tiles at hd64 / hd128 (the hd256 winner's shape): serial, overlapped + pc1, and with 4 stages
    "glws64": (dict(_GLWS, block_n=64, num_stages=3), (64, 128)),
    "glws64pc1": (dict(_GLWS, block_n=64, num_stages=3, overlap=2, p_carry=1), (64, 128)),
    "glws64pc1s4": (dict(_GLWS, block_n=64, num_stages=4, overlap=2, p_carry=1), (64, 128)),
    # the Triton kernel's default_config (on sm_90 the default is the Gluon forward at hd256, GLWS_DEFAULTS, and
    # for dense non-causal hd128, GLWS_DENSE_DEFAULTS; the other variants also start from default_config)
    "triton": ({}, (128, 256)),
    "glwsperm": (dict(_GLWS, num_stages=3, permute_p=True), (64, 128)),
    "glwspc1": (dict(_GLWS, num_stages=3, overlap=2, p_carry=1), (64, 128)),
    "glwspc1pp": (dict(_GLWS, num_stages=3, overlap=2, p_carry=1, pingpong=True), (64, 128)),
    "glwsovl": (dict(_GLWS, num_stages=3, overlap=2), (64, 128)),
    "glws256": (dict(_GLWS, block_n=64, num_stages=3, overlap=2, p_carry=1), (256,)),
    "glws256s4": (dict(_GLWS, block_n=64, num_stages=4, overlap=2, p_carry=1), (256,)),
    "glws256pp": (dict(_GLWS, block_n=64, num_stages=3, overlap=2, p_carry=1, pingpong=True), (256,)),
    "glws256ser": (dict(_GLWS, block_n=64, num_stages=3), (256,)),
    # hd256 on 128 x 128 tiles, serial, 2 stages (164 KB): 548 instructions per 64 x 128 block offline (8.6 per
    # score) against the default's 409 per 64 x 64 (12.8); the causal form spills (155 stores): dense only
    "glws256bn128": (dict(_GLWS, block_n=128, num_stages=2), (256,)),
    # ... with 3 stages: 229,648 bytes of shared memory (the sm_90 limit is 232,448), no spills dense (offline)
    "glws256bn128s3": (dict(_GLWS, block_n=128, num_stages=3), (256,)),
    # Causal launch order (AttnConfig.head_group, session 18): the defaults take the query blocks heaviest first
    # across groups of heads (the group's K and Vᵀ ~16 MB); these variants keep the previous per-head order (each
    # head's blocks heaviest first, head after head), whose last heads' heaviest blocks start near the end. A
    # greedy-schedule simulation of the slots (3 CTAs per SM for hd128 / hd64, 1-2 for the Gluon tiles) puts the
    # per-head order's tail at 5-14% of the run and the grouped order's under 2% at S >= 8192.
    "hg1": (dict(head_group=1), (64, 128)),
    # pinned group sizes (the auto rule gives 8 heads at S 8192 hd128, 4 at 16384, all at 2048); "hgall": one group
    "hg2": (dict(head_group=2), (64, 128)),
    "hg4": (dict(head_group=4), (64, 128)),
    "hg16": (dict(head_group=16), (64, 128)),
    "hgall": (dict(head_group=1 << 20), (64, 128)),
    "glws256hg1": (dict(_GLWS, block_n=64, num_stages=3, overlap=2, p_carry=1, head_group=1), (256,)),
    # 256-key blocks at hd128 (session 17): per thread and block the unmasked loop issues 686 instructions for 128
    # scores (5.4 per score) against the default's 428 for 64 (6.7): the acc rescale, the row reductions and the
    # wgmma bookkeeping are paid once per 256 keys. Offline sm_90: Triton 128 x 256 / 8 warps 225 registers, no
    # spills, 152 KB shared (one CTA, two warp groups per SM sharing K and Vᵀ); Gluon 128 x 256 (FADD row sums:
    # 821 per block) 2 stages 148 KB, 3 stages 208 KB.
    "bm128bn256": (dict(block_m=128, num_warps=8, block_n=256, maxnreg=None), (128,)),
    "glwsbn256": (dict(_GLWS, block_n=256, num_stages=2), (128,)),
    "glwsbn256s3": (dict(_GLWS, block_n=256, num_stages=3), (128,)),
    # hd64 on 128 x 256 tiles (offline: 786 instructions per 64 x 256 block, 74 / 107 KB at 2 / 3 stages, no spills;
    # one program per SM, by registers)
    "glws64bn256": (dict(_GLWS, block_n=256, num_stages=2), (64,)),
    "glws64bn256s3": (dict(_GLWS, block_n=256, num_stages=3), (64,)),
    # with the row sums on the tensor core (each block's sum fresh, added in fp32): 703 instructions per block.
    # s17 call 3 ran a form that stored the ones from registers before the partitions started: wrong sums (errors
    # 89-104%); the ones now come by TMA with Q, as in the Triton kernel
    "glwsbn256rs": (dict(_GLWS, block_n=256, num_stages=2, row_sum_mma=True), (128,)),
    # the serial ping-pong loop (P_j·V_j and S_{j+1} issued together in the group's turn, the other group's
    # softmax under them): 128-key blocks 424-433 instructions (row sums on the tensor core), wgmmas not
    # serialized; 256-key blocks 751, every wgmma serialized by ptxas (registers)
    "glwspp": (dict(_GLWS, num_stages=3, pingpong=True), (128,)),
    "glwsbn256pp": (dict(_GLWS, block_n=256, num_stages=2, pingpong=True), (128,)),
    "glwsrs": (dict(_GLWS, num_stages=3, row_sum_mma=True), (128,)),
    "glwsrspp": (dict(_GLWS, num_stages=3, row_sum_mma=True, pingpong=True), (128,)),
    "glwsrspps2": (dict(_GLWS, num_stages=2, row_sum_mma=True, pingpong=True), (128,)),
    "glwsbn256rspp": (dict(_GLWS, block_n=256, num_stages=2, row_sum_mma=True, pingpong=True), (128,)),
    # keys permuted in P and Vᵀ (the Triton kernel's 32-key permutation): P goes from accumulator to operand
    # without shuffles: 724 instructions per 64 x 256 block instead of 821 (SHFL 40 -> 8, SEL 32 and PRMT 32 -> 0)
    "glwsbn256perm": (dict(_GLWS, block_n=256, num_stages=2, permute_p=True), (128,)),
    "glwsbn256perms3": (dict(_GLWS, block_n=256, num_stages=3, permute_p=True), (128,)),
}
DEFAULT_VARIANTS = ("vonchip", "prev128", "prev64", "prev256", "s3")
QUICK_VARIANTS = ("vonchip", "noperm")

# Where the suite runs. The CPU test sets "cpu" (kernels in the interpreter, tiny configs, a stand-in timer) to
# check the suite's bookkeeping and files without a GPU.
_DEVICE = "cuda"

PEAK_FP8 = 1979.0  # H200/H100 SXM dense FP8 datasheet TFLOPS (the "% of 1979")
TARGETS = {  # (D, causal) -> minimum ratio vs cuDNN FP8 (issue 5), for S >= 8192
    (128, False): 1.10, (128, True): 1.0, (64, False): 1.0, (64, True): 1.0, (256, False): 1.0, (256, True): 1.0,
}
MIN_VS_CUDNN_BF16 = 1.6
P_SCALE_CUDNN = 256.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variants", default=None,
                   help=f"comma list of kernel variants to time besides the default ({', '.join(VARIANTS)}), "
                        f"or 'none' (default: {','.join(DEFAULT_VARIANTS)}; with --quick {','.join(QUICK_VARIANTS)})")
    p.add_argument("--head-dim", type=int, action="append", choices=(64, 128, 256), default=None,
                   help="time only the full set's configs of this head dim (repeatable)")
    masks = p.add_mutually_exclusive_group()
    masks.add_argument("--no-causal", action="store_true", help="time non-causal cases only")
    masks.add_argument("--causal-only", action="store_true", help="time causal cases only")
    p.add_argument("--no-varlen", action="store_true", help="skip the varlen batch")
    p.add_argument("--no-peers", action="store_true", help="time our kernels only")


def _variant_list(args) -> list[str]:
    raw = getattr(args, "variants", None)
    if raw is None:
        raw = ",".join(QUICK_VARIANTS if args.quick else DEFAULT_VARIANTS) or "none"
    if raw.strip().lower() == "none":
        return []
    out = [v.strip() for v in raw.split(",") if v.strip()]
    for v in out:
        if v not in VARIANTS:
            raise SystemExit(f"--variants: unknown variant {v!r}; known: {', '.join(VARIANTS)}")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Data, reference, peers


def _sync() -> None:
    _backend.sync(_DEVICE)


def _make_inputs(b, hq, hkv, s, d, device, seed=0):
    """bf16 N(0,1) q, k, v and their per-tensor E4M3 quantization (amax / 448 descales)."""
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(b, s, hq, d, device=device, generator=g, dtype=torch.bfloat16)
    k = torch.randn(b, s, hkv, d, device=device, generator=g, dtype=torch.bfloat16)
    v = torch.randn(b, s, hkv, d, device=device, generator=g, dtype=torch.bfloat16)

    (q8, qd), (k8, kd), (v8, vd) = _quant(q), _quant(k), _quant(v)
    return (q, k, v), (q8, k8, v8), (qd, kd, vd)


def _quant(x):
    """Per-tensor E4M3 quantization (descale amax / 448): (x8, descale ())."""
    ds = (x.float().abs().amax() / 448.0).reshape(())
    return (x.float() / ds).clamp(-448, 448).to(torch.float8_e4m3fn), ds


def _add_peer(name, made, fns, outs, notes) -> None:
    """Record a peer from ``_cudnn_fp8_fn`` / ``_sdpa_fn``'s ``(fn, out)`` under ``name``, or its skip note once."""
    fn, o = made
    if fn is None:
        if o not in notes:
            notes.append(o)
    else:
        fns[name], outs[name] = fn, o


def _ref_slice(q, k, v, causal, scale, heads, batch=0, chunk=2048):
    """fp32 reference (Sq, len(heads), D) of ``batch`` and query ``heads`` by :func:`tritonfp8.attention_torch`
    (the library's reference, same masking rules), ``chunk`` query rows at a time; q (B, Sq, Hq, D), k / v (B, Sk,
    Hkv, D)."""
    from tritonfp8.attention import attention_torch

    kv_heads = [h // (q.shape[2] // k.shape[2]) for h in heads]
    return attention_torch(q[batch : batch + 1, :, heads], k[batch : batch + 1, :, kv_heads],
                           v[batch : batch + 1, :, kv_heads], causal=causal, softmax_scale=scale,
                           query_chunk=chunk)[0]


def _rel(out, ref) -> float:
    from tritonfp8.bench import harness as H

    return H.rel_error(out.float(), ref)


def _cudnn_fp8_fn(q8, k8, v8, qd, kd, vd, out_scale, causal, scale):
    """A callable running cudnn-frontend sdpa_fp8 on (B, S, H, D) E4M3 tensors, and its (B, S, H, D) E4M3 output;
    or (None, note) when cuDNN FP8 SDPA is unavailable."""
    try:
        import cudnn  # noqa: F401  (the cudnn-frontend wheel; imported lazily, absent on most machines)
    except Exception as e:  # ModuleNotFoundError, or a wheel that fails to load its library
        return None, f"cuDNN FP8 skipped: cannot import cudnn ({type(e).__name__}: {e})"
    if q8.shape[2] != k8.shape[2]:
        hq, hkv = q8.shape[2], k8.shape[2]
        k8 = k8.repeat_interleave(hq // hkv, 2)  # the frontend graph below is MHA; GQA expanded (not timed)
        v8 = v8.repeat_interleave(hq // hkv, 2)
    try:
        b, s, h, d = q8.shape
        sk = k8.shape[1]
        e4m3, fp32 = cudnn.data_type.FP8_E4M3, cudnn.data_type.FLOAT
        handle = cudnn.create_handle()
        cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
        graph = cudnn.pygraph(io_data_type=e4m3, intermediate_data_type=fp32, compute_data_type=fp32,
                              handle=handle)

        def bhsd(t):  # (B, S, H, D) memory viewed as (B, H, S, D)
            return t.permute(0, 2, 1, 3)

        qv, kv, vv = bhsd(q8), bhsd(k8), bhsd(v8)
        tq, tk, tv = (graph.tensor(name=n, dim=list(t.shape), stride=list(t.stride()), data_type=e4m3)
                      for n, t in (("q", qv), ("k", kv), ("v", vv)))
        sc = dict(dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=fp32)
        names = ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")
        ts = [graph.tensor(name=n, **sc) for n in names]
        common = dict(q=tq, k=tk, v=tv, descale_q=ts[0], descale_k=ts[1], descale_v=ts[2], descale_s=ts[3],
                      scale_s=ts[4], scale_o=ts[5], attn_scale=scale, use_causal_mask=causal, name="sdpa_fp8")
        try:
            o, _, amax_s, amax_o = graph.sdpa_fp8(is_inference=True, **common)
        except TypeError:  # newer frontends name the flag generate_stats
            o, _, amax_s, amax_o = graph.sdpa_fp8(generate_stats=False, **common)
        out = torch.empty(b, s, h, d, dtype=torch.float8_e4m3fn, device=q8.device)
        o.set_output(True).set_dim(list(bhsd(out).shape)).set_stride(list(bhsd(out).stride())).set_data_type(e4m3)
        amax_s_t = torch.empty(1, 1, 1, 1, dtype=torch.float32, device=q8.device)
        amax_o_t = torch.empty_like(amax_s_t)
        for a in (amax_s, amax_o):
            a.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(fp32)
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        graph.check_support()
        graph.build_plans()
        ws = torch.empty(graph.get_workspace_size(), dtype=torch.uint8, device=q8.device)
        one = lambda x: torch.full((1, 1, 1, 1), float(x), dtype=torch.float32, device=q8.device)  # noqa: E731
        pack = {tq: qv, tk: kv, tv: vv, ts[0]: one(qd), ts[1]: one(kd), ts[2]: one(vd),
                ts[3]: one(1.0 / P_SCALE_CUDNN), ts[4]: one(P_SCALE_CUDNN), ts[5]: one(1.0 / out_scale),
                o: bhsd(out), amax_s: amax_s_t, amax_o: amax_o_t}
        fn = lambda: graph.execute(pack, ws, handle=handle)  # noqa: E731
        fn()
        _sync()
        return fn, out
    except Exception as e:
        return None, f"cuDNN FP8 skipped: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def _sdpa_fn(q, k, v, causal, scale, backend_name):
    """SDPA pinned to one backend on (B, S, H, D) bf16 tensors (GQA expanded beforehand, not timed)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[backend_name]
    hq, hkv = q.shape[2], k.shape[2]
    qt = q.transpose(1, 2)
    kt = k.repeat_interleave(hq // hkv, 2).transpose(1, 2) if hq != hkv else k.transpose(1, 2)
    vt = v.repeat_interleave(hq // hkv, 2).transpose(1, 2) if hq != hkv else v.transpose(1, 2)

    def fn():
        with sdpa_kernel([backend]):
            return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale)

    try:
        out = fn()
        _sync()
    except Exception as e:
        return None, f"{backend_name} BF16 SDPA skipped: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
    return fn, out.transpose(1, 2)


# ---------------------------------------------------------------------------------------------------------------


def _flops(b, hq, sq, sk, d, causal) -> float:
    f = 4.0 * b * hq * sq * sk * d
    return f / 2 if causal else f


def profile_case(args: argparse.Namespace):
    """One launch of the headline case for ``--profile``: (B, H, S, D) = (2, 16, 8192, 128), non-causal, kernel only."""
    from tritonfp8.attention import kernel_only_fn

    _, (q8, k8, v8), (qd, kd, vd) = _make_inputs(2, 16, 16, 8192, 128, _DEVICE)
    fn = kernel_only_fn(q8, k8, v8, q_descale=qd, k_descale=kd, v_descale=vd)
    return fn, "attention fwd (2,16,8192,128) non-causal, E4M3 in, bf16 out"


def _case(args, b, hq, hkv, s, d, causal, variants, notes) -> dict:
    from tritonfp8.attention import AttnConfig, attention, default_config, kernel_only_fn
    from tritonfp8.bench import harness as H

    scale = 1.0 / math.sqrt(d)
    (qb, kb, vb), (q8, k8, v8), (qd, kd, vd) = _make_inputs(b, hq, hkv, s, d, _DEVICE)
    kw = dict(causal=causal, q_descale=qd, k_descale=kd, v_descale=vd)
    fns: dict[str, Callable] = {}
    outs: dict[str, torch.Tensor] = {}
    fns["ours"] = lambda: attention(q8, k8, v8, **kw)
    outs["ours"] = fns["ours"]()
    fns["ours_kernel"] = kernel_only_fn(q8, k8, v8, **kw)
    outs["ours_kernel"] = fns["ours_kernel"]()
    base = default_config(d)
    for var in variants:
        over, dims = VARIANTS[var]
        if dims is not None and d not in dims:
            continue
        cfg = AttnConfig(**{**base.__dict__, **over})
        try:
            fns[f"ours_{var}"] = kernel_only_fn(q8, k8, v8, config=cfg, **kw)
            outs[f"ours_{var}"] = fns[f"ours_{var}"]()
        except Exception as e:  # a variant that does not compile (shared memory, registers) is reported, not fatal
            notes.append(f"variant {var} at {(b, hq, hkv, s, d, causal)}: {type(e).__name__}: {str(e)[:160]}")
            fns.pop(f"ours_{var}", None)
    fns["ours_e2e"] = lambda: attention(qb, kb, vb, causal=causal)
    outs["ours_e2e"] = fns["ours_e2e"]()

    # Same data for every peer: the dequantized E4M3 values (exact in fp32; bf16 for the BF16 peers).
    qf, kf, vf = q8.float() * qd, k8.float() * kd, v8.float() * vd
    out_scale = float(vf.abs().amax()) / 448.0  # |O| <= max|V|: never saturates
    if not args.no_peers:
        _add_peer("cudnn_fp8", _cudnn_fp8_fn(q8, k8, v8, float(qd), float(kd), float(vd), out_scale, causal, scale),
                  fns, outs, notes)
        qh, kh, vh = qf.bfloat16(), kf.bfloat16(), vf.bfloat16()
        for name in ("cudnn", "flash"):
            _add_peer(f"{name}_bf16", _sdpa_fn(qh, kh, vh, causal, scale, name), fns, outs, notes)

    heads = [0, hq - 1]
    ref = _ref_slice(qf, kf, vf, causal, scale, heads)
    ref_in = _ref_slice(qb.float(), kb.float(), vb.float(), causal, scale, heads)
    errs = {}
    for name, o in outs.items():
        of = o[0][:, heads].float()
        if name == "cudnn_fp8":
            of = of * out_scale
        errs[name] = _rel(of, ref_in if name == "ours_e2e" else ref)
    del outs
    times = H.bench_interleaved(fns, repeats=args.repeats)
    row: dict[str, Any] = dict(case=f"B{b} H{hq}/{hkv} S{s} D{d}" + (" causal" if causal else ""), batch=b,
                               heads_q=hq, heads_kv=hkv, seqlen=s, head_dim=d, causal=causal)
    _fill_row(row, times, errs, _flops(b, hq, s, s, d, causal))
    if "vs_cudnn_fp8" in row and s >= 8192:
        row["target_fp8"] = TARGETS.get((d, causal))
        row["meets_fp8"] = row["vs_cudnn_fp8"] >= TARGETS.get((d, causal), 1.0)
        row["kernel_meets_fp8"] = row["kernel_vs_cudnn_fp8"] >= TARGETS.get((d, causal), 1.0)
    if "vs_cudnn_bf16" in row:
        row["meets_bf16"] = row["vs_cudnn_bf16"] >= MIN_VS_CUDNN_BF16
    if row.get("cudnn_fp8_err") is not None and row.get("ours_err") is not None:
        row["err_no_worse_than_cudnn"] = row["ours_err"] <= row["cudnn_fp8_err"]
    return row


def _fill_row(row: dict, times: dict, errs: dict, flops: float) -> None:
    """Per implementation: median ms, the rounds, TFLOPS (``flops`` useful FLOPs) and error; then the ratios vs each
    peer, for the public call (``vs_<peer>``: what a user's call costs, the Vᵀ pass included) and for the kernel
    alone (``kernel_vs_<peer>``), and their % of the FP8 peak. Variants are reported, never picked as the
    headline (a best-of-N pick would favour noise)."""
    from tritonfp8.bench import harness as H

    for name, t in times.items():
        summ = H.summarize(t)
        row[f"{name}_ms"] = summ.median
        row[f"{name}_rounds_ms"] = list(summ.rounds)
        row[f"{name}_tflops"] = H.tflops(flops, summ.median)
        row[f"{name}_err"] = errs.get(name)
    row["pct_peak"] = 100.0 * row["ours_tflops"] / PEAK_FP8
    row["kernel_pct_peak"] = 100.0 * row["ours_kernel_tflops"] / PEAK_FP8
    for peer in ("cudnn_fp8", "cudnn_bf16", "flash_bf16"):
        if peer in times:
            for mine, key in (("ours", f"vs_{peer}"), ("ours_kernel", f"kernel_vs_{peer}")):
                c = H.compare(times[mine], times[peer])
                row[key], row[f"{key}_lo"], row[f"{key}_hi"], row[f"{key}_verdict"] = c.ratio, c.lo, c.hi, c.verdict


def _varlen_case(args, notes) -> dict:
    """The varlen batch (causal): ours through cu_seqlens; the peers on the batch padded to the longest sequence
    (causal with Sq = Sk: a sequence's rows see only its own keys, so the padding changes no valid row), credited
    with the useful FLOPs only. Errors on the first sequence's first and last heads, as the dense cases."""
    from tritonfp8.attention import attention, kernel_only_fn
    from tritonfp8.bench import harness as H

    g = torch.Generator().manual_seed(1234)
    lo, hi = VARLEN_RANGE
    lens = torch.randint(lo, hi + 1, (VARLEN_N,), generator=g).tolist()
    h, d = VARLEN_HEADS, VARLEN_D
    scale = 1.0 / math.sqrt(d)
    total, smax = sum(lens), max(lens)
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device=_DEVICE)
    gd = torch.Generator(device=_DEVICE).manual_seed(1234)
    qb, kb, vb = (torch.randn(total, h, d, device=_DEVICE, generator=gd, dtype=torch.bfloat16) for _ in range(3))
    (q8, k8, v8), ds = zip(*(_quant(x) for x in (qb, kb, vb)))
    kw = dict(causal=True, q_descale=ds[0], k_descale=ds[1], v_descale=ds[2], cu_seqlens_q=cu, cu_seqlens_k=cu,
              max_seqlen_q=smax, max_seqlen_k=smax)
    fns = {"ours": lambda: attention(q8, k8, v8, **kw), "ours_kernel": kernel_only_fn(q8, k8, v8, **kw),
           "ours_e2e": lambda: attention(qb, kb, vb, causal=True, cu_seqlens_q=cu, cu_seqlens_k=cu,
                                         max_seqlen_q=smax, max_seqlen_k=smax)}
    outs = {name: fn() for name, fn in fns.items()}  # (total, H, D); sequence 0 is rows 0 .. lens[0]-1
    deq = [x.float() * s_ for x, s_ in zip((q8, k8, v8), ds)]
    out_scale = float(deq[2].abs().amax()) / 448.0
    if not args.no_peers:
        def padded(x):  # (total, H, D) -> (N, smax, H, D), zeros past each sequence's end
            pad = torch.zeros(VARLEN_N, smax, h, d, device=_DEVICE, dtype=x.dtype)
            for i, n in enumerate(lens):
                pad[i, :n] = x[cu[i] : cu[i] + n]
            return pad

        _add_peer("cudnn_fp8_padded", _cudnn_fp8_fn(*(padded(x) for x in (q8, k8, v8)), *(float(x) for x in ds),
                                                   out_scale, True, scale), fns, outs, notes)
        qh, kh, vh = (padded(x.bfloat16()) for x in deq)
        for name in ("cudnn", "flash"):
            _add_peer(f"{name}_bf16_padded", _sdpa_fn(qh, kh, vh, True, scale, name), fns, outs, notes)
    n0, heads = lens[0], [0, h - 1]
    ref = _ref_slice(*(x[None, :n0] for x in deq), True, scale, heads)
    ref_in = _ref_slice(*(x[None, :n0].float() for x in (qb, kb, vb)), True, scale, heads)
    errs = {}
    for name, o in outs.items():
        o = o[0] if name.endswith("_padded") else o  # padded peers: (N, smax, H, D), sequence 0 first
        of = o[:n0, heads].float() * (out_scale if name == "cudnn_fp8_padded" else 1.0)
        errs[name.removesuffix("_padded")] = _rel(of, ref_in if name == "ours_e2e" else ref)
    del outs
    times = H.bench_interleaved(fns, repeats=args.repeats)
    times = {name.removesuffix("_padded"): t for name, t in times.items()}
    row: dict[str, Any] = dict(case=f"varlen {VARLEN_N} seqs {lo}-{hi} H{h} D{d} causal", lengths=lens,
                               peers_padded=True)
    _fill_row(row, times, errs, sum(_flops(1, h, n, n, d, True) for n in lens))
    return row


def run(args: argparse.Namespace) -> int:
    from tritonfp8.bench import harness as H

    if _DEVICE == "cuda" and not torch.cuda.is_available():
        print("bench attention: needs a CUDA GPU")
        return 1
    console = H.make_console()
    env = H.environment_info()
    variants = _variant_list(args)
    console.print(f"[bold]attention[/]: {env['gpu']}, torch {env['torch']}, triton {env['triton']}, "
                  f"{args.repeats} interleaved rounds, variants: {', '.join(variants) or 'none'}")
    configs = QUICK_CONFIGS if args.quick else CONFIGS
    if getattr(args, "head_dim", None):
        configs = [c for c in CONFIGS if c[4] in args.head_dim]
    causals = (False,) if getattr(args, "no_causal", False) else (True,) if getattr(args, "causal_only", False) \
        else (False, True)
    rows, notes = [], []
    for b, hq, hkv, s, d in configs:
        for causal in causals:
            if args.quick and d == 64 and causal:
                continue  # --quick: 3 cases (hd128 both masks, hd64 non-causal) to stay within a minute
            rows.append(_case(args, b, hq, hkv, s, d, causal, variants, notes))
            if _DEVICE == "cuda":
                torch.cuda.empty_cache()
    if not args.quick and not getattr(args, "no_varlen", False):
        rows.append(_varlen_case(args, notes))
    cols = [
        H.Column("case", justify="left"),
        H.Column("ours_tflops", "ours", "{:.0f}"),
        H.Column("ours_kernel_tflops", "kernel", "{:.0f}"),
        *[H.Column(f"ours_{v}_tflops", v, "{:.0f}") for v in variants],
        H.Column("ours_e2e_tflops", "bf16 e2e", "{:.0f}"),
        H.Column("cudnn_fp8_tflops", "cuDNN fp8", "{:.0f}"),
        H.Column("cudnn_bf16_tflops", "cuDNN bf16", "{:.0f}"),
        H.Column("flash_bf16_tflops", "flash bf16", "{:.0f}"),
        H.Column("pct_peak", "% peak", "{:.0f}"),
        H.Column("vs_cudnn_fp8", "x cuDNN fp8", "{:.2f}"),
        H.Column("kernel_vs_cudnn_fp8", "kernel x cuDNN fp8", "{:.2f}"),
        H.Column("vs_cudnn_bf16", "x cuDNN bf16", "{:.2f}"),
        H.Column("ours_err", "err ours", "{:.2%}"),
        H.Column("cudnn_fp8_err", "err cuDNN8", "{:.2%}"),
        H.Column("cudnn_bf16_err", "err cuDNN16", "{:.2%}"),
        H.Column("flash_bf16_err", "err flash", "{:.2%}"),
        H.Column("ours_e2e_err", "err e2e", "{:.2%}"),
    ]
    H.print_table(rows, cols, title="attention prefill, TFLOPS (causal counts half)",
                  caption="ours = public call (E4M3 BSHD in, incl. Vᵀ pass); kernel = forward kernel on prepared Vᵀ; "
                          "x = peer time / ours (the call; kernel x: the kernel); % peak: the call; err = "
                          "||out - ref|| / ||ref|| vs attention_torch (fp32) on the same data; varlen peers padded")
    for n in notes:
        console.print(f"note: {n}")
    if not args.no_save:
        writer = H.ResultsWriter("attention", out_dir=args.out, env=env)
        path = writer.write(rows, config=dict(quick=args.quick, repeats=args.repeats, variants=variants,
                                              p_scale=256.0, cudnn_scale_s=P_SCALE_CUDNN), notes=notes)
        labels = [r["case"] for r in rows]
        series = {}
        for key, name in (("ours_tflops", "ours (call)"), ("ours_kernel_tflops", "ours kernel"),
                          ("ours_e2e_tflops", "ours bf16 e2e"),
                          ("cudnn_fp8_tflops", "cuDNN FP8"), ("cudnn_bf16_tflops", "cuDNN BF16"),
                          ("flash_bf16_tflops", "flash BF16")):
            vals = [r.get(key) for r in rows]
            if any(v is not None for v in vals):
                series[name] = vals
        H.plot_bars(writer.png_path, labels, series, ylabel="TFLOPS", title="FP8 attention prefill (H200)",
                    hline=(PEAK_FP8, "FP8 dense peak"))
        # TFLOPS over sequence length: the hd128 MHA configs, non-causal and causal.
        for causal in (False, True):
            pts = sorted((r["seqlen"], r) for r in rows if r.get("head_dim") == 128 and r.get("heads_q") ==
                         r.get("heads_kv") and r.get("causal") == causal)
            if len(pts) >= 2:
                xs = [p[0] for p in pts]
                ser = {name: [p[1].get(key) for p in pts] for key, name in (
                    ("ours_tflops", "ours (call)"), ("ours_kernel_tflops", "ours kernel"),
                    ("cudnn_fp8_tflops", "cuDNN FP8"),
                    ("cudnn_bf16_tflops", "cuDNN BF16"), ("flash_bf16_tflops", "flash BF16"))
                    if any(p[1].get(key) is not None for p in pts)}
                tag = "causal" if causal else "full"
                H.plot_lines(writer.out_dir / f"{writer.stem}-seqlen-{tag}.png", xs, ser, xlabel="sequence length",
                             ylabel="TFLOPS", title=f"hd128 {tag}: TFLOPS over sequence length", logx=True)
        console.print(f"results: {path}")
    return 0
