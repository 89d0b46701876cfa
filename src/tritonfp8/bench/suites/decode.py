"""Paged FP8 KV-cache decode: effective bandwidth against the device copy, SDPA on a dense BF16 cache, and our own
kernel on a BF16 paged cache; plus ``write_kv_cache`` bandwidth and a config sweep (``--variants``).

Per case (B sequences of equal length ``ctx``, Hq/Hkv query/KV heads, D = 128, pages of 16 or 64 tokens, one new
token per sequence), timed interleaved in one run (:func:`tritonfp8.bench.harness.bench_interleaved`):

- ``ours``: ``decode_attention`` on the E4M3 paged cache (shuffled block table), heuristic config;
- ``ours_bf16``: the same kernel on a BF16 paged cache of the same lengths (2x the bytes);
- ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)`` on a dense BF16 cache
  (B, Hkv, ctx, D) — what a user would otherwise run; the math backend is excluded (it would copy K/V per query
  head), so a case the fused backends refuse reports n/a;
- ``copy``: a device-to-device copy moving as many bytes (read + write) as ``ours`` reads and writes.

Effective bandwidth = bytes of the K and V cache read + q read + out written, over the median time. Targets (H200):
``ours`` >= 85% of the copy bandwidth for B >= 8 with ctx >= 4096; ``ours`` >= 1.7x faster than ``sdpa``;
``write_kv_cache`` >= 70% of the copy bandwidth. Before timing, ``ours`` is checked against
``decode_attention_torch`` on the first sequences (relative error, bf16 output); a miss fails the suite.

``--variants`` times :class:`tritonfp8.decode.DecodeConfig` alternatives (tokens per step, warps, pipeline stages,
in-kernel vs separate-kernel split merge, split counts) on a few representative shapes, so one GPU call picks the
heuristic's defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any

import torch

DESCRIPTION = "paged FP8 KV-cache decode bandwidth vs copy, SDPA (dense BF16) and a BF16 paged cache"

D = 128
HKV = 8
BATCHES = (1, 8, 32, 128)
CONTEXTS = (1024, 4096, 32768)
HQS = (32, 64)
PAGES = (16, 64)
# (B, ctx, Hq, page)
QUICK_CASES = ((8, 4096, 32, 16), (32, 4096, 64, 64), (1, 32768, 32, 16), (128, 1024, 64, 16))
WRITE_TOKENS_QUICK = (32768,)
WRITE_TOKENS = (128, 4096, 32768, 131072)
TARGET_PCT_OF_COPY = 85.0
TARGET_VS_SDPA = 1.7
TARGET_WRITE_PCT = 70.0
# Relative error allowed for the pre-timing check (bf16 output, fp16 P): 4 x bf16's unit roundoff (2^-8).
CHECK_TOL = 4 * 2.0**-8
# dot="fp8t" variants round q and P to E4M3 (unit roundoff 2^-4): measured 3.5% relative difference from the fp16
# form on random data (interpreter, D 128, GQA 4, 300-700 tokens); their accuracy rule is tests/test_decode_fp8t.py.
FP8T_CHECK_TOL = 2.0**-3
# Where the suite runs; the CPU test sets "cpu" (interpreter, stand-in timer) to check the bookkeeping.
_DEVICE = "cuda"

def _w1(kv_load: str, block_n: int, stages: int, splits_factor: float, warps: int = 1, **extra) -> dict[str, Any]:
    """A VARIANTS entry of the one-warp (or ``warps``) TMA kernels: kv_load, tokens per step, stages, the split
    factor over the gather heuristic's splits, and any other DecodeConfig fields."""
    return {"kv_load": kv_load, "block_n": block_n, "num_warps": warps, "num_stages": stages,
            "splits_factor": splits_factor, **extra}


def _ws(block_n: int, warps: int, stages: int, splits: int, v_stage: bool = True) -> dict[str, Any]:
    """A VARIANTS entry of the warp-split kernel (``DecodeConfig(warp_split=True)``) with ``splits`` KV splits."""
    return {"warp_split": True, "block_n": block_n, "num_warps": warps, "num_stages": stages, "num_splits": splits,
            "v_stage": v_stage, "kv_load": "gather", "loop": "tail"}


# Keys of a VARIANTS entry that steer the sweep rather than name a DecodeConfig field: the kernel names' mode,
# splits relative to the gather heuristic's / the library heuristic's, a program-count target, overrides of the
# library heuristic's config instead of the gather base, the Triton kernel's heuristic config.
SWEEP_KEYS = frozenset({"names", "splits_factor", "heuristic_splits_factor", "programs_target", "on_heuristic",
                        "triton_heuristic"})
# Config variants for --variants (None fields: the heuristic's value).
# The Gluon kernel's variant fields over the heuristic's config: one warp per program unless a variant says otherwise.
# (heads=False: the one-warp-per-head forms also where the heuristic takes the heads form, session 38)
_GLUON: dict[str, Any] = {"on_heuristic": True, "kernel": "gluon", "merge": "kernel", "num_warps": 1, "heads": False}
VARIANTS: dict[str, dict[str, Any]] = {
    "heuristic": {},
    "gather": {},  # the gather heuristic: differs from "heuristic" where the long-context TMA rule applies
    "bn32": {"block_n": 32},
    "bn128": {"block_n": 128},
    "bn128w8": {"block_n": 128, "num_warps": 8},
    "bn64w8": {"num_warps": 8},
    "s2": {"num_stages": 2},
    "s4": {"num_stages": 4},
    "bn32s5": {"block_n": 32, "num_stages": 5},
    "mergekernel": {"merge": "kernel"},
    "splitsx2": {"splits_factor": 2.0},
    "splitshalf": {"splits_factor": 0.5},
    "nosplit": {"num_splits": 1},
    "bn128w8splitshalf": {"block_n": 128, "num_warps": 8, "splits_factor": 0.5},
    # The same kernels compiled under the plain "tfp8_" name: ptxas 12.8 gives them other SASS on sm_90 than
    # under the "cutlass_" name (offline, 16 rows x 64 tokens: 153 vs 208 registers, and no .LTC128B L2 prefetch
    # hint on the cp.async copies).
    "plainname": {"names": "plain"},
    "plainnames4": {"names": "plain", "num_stages": 4},
    # 153 registers (plain name) leave room for 3 resident programs per SM: splits for 3 instead of 2 per SM.
    "plainnamesplits1.5": {"names": "plain", "splits_factor": 1.5},
    # One warp per program: no cross-warp softmax reductions, no P exchange, 5 instead of 8 barriers per step.
    # Offline SASS (sm_90, 16 rows, D 128): warp-instructions per cache token in the loop 52 (4 warps x 64 tokens)
    # -> 34.8 (1 warp x 32 tokens, 4 stages; 255 registers, no spills: 8 programs per SM, so x4 splits fill one
    # wave). 2 warps x 64 tokens spills (9 stores); 2 warps x 32 tokens: 49 per token, no gain.
    "w1bn32s4": {"block_n": 32, "num_warps": 1, "num_stages": 4},
    "w1bn32s4splitsx4": {"block_n": 32, "num_warps": 1, "num_stages": 4, "splits_factor": 4.0},
    # Session 6: the gather kernel with v_stage (offline 1156 -> 1063 instructions per 128-token step, 255 -> 188
    # registers, no spills), and capped at 168 registers (3 CTAs per SM; 13 spill stores)
    "vs": {"v_stage": True},
    "vsr168": {"v_stage": True, "maxnreg": 168},
    # Session 6: the one-warp gather kernel with more splits, now that the inline merge is cheap (pages of 16)
    "w1bn32s4splitsx2": {"block_n": 32, "num_warps": 1, "num_stages": 4, "splits_factor": 2.0},
    "w1bn64s4splitsx2": {"block_n": 64, "num_warps": 1, "num_stages": 4, "splits_factor": 2.0},
    "w1bn64s4splitsx4": {"block_n": 64, "num_warps": 1, "num_stages": 4, "splits_factor": 4.0},
    # Split loop (issue 6): unmasked full steps, then the masked tail; same bits. Offline SASS (sm_90, 16 rows,
    # D 128, 4 warps x 128 tokens): 1139 -> 1066 instructions per step of the main loop (35.6 -> 33.3
    # warp-instructions per cache token); 255 registers and 11 spill stores under the cutlass_ name either way.
    # With 2 stages (one K/V buffer in flight, 32 KB per program): 1042 per step (32.6 per token), 248
    # registers, no spills (the single loop at 2 stages: 1099, 255 registers, no spills).
    "tail": {"loop": "tail"},
    "tails2": {"loop": "tail", "num_stages": 2},
    "tailplainname": {"loop": "tail", "names": "plain"},
    # 1 warp x 32 tokens split loop: 1023 per step (32.0 per token) but 4 spill stores under the cutlass_ name;
    # 1037 (32.4), 180 registers, no spills under the plain name (up to 7 programs per SM by shared memory).
    "w1bn32s4tail": {"block_n": 32, "num_warps": 1, "num_stages": 4, "loop": "tail"},
    "w1bn32s4tailplainsplitsx4": {"block_n": 32, "num_warps": 1, "num_stages": 4, "loop": "tail", "names": "plain",
                                  "splits_factor": 4.0},
    # FP8 tensor-core form (DecodeConfig(dot="fp8t")): E4M3 wgmma, cache tokens as M, q and P rounded to E4M3.
    # Offline SASS (sm_90, 16 rows x 128 tokens, 4 warps, cutlass_ name): 837 instructions per full step, 26.2
    # warp-instructions per token (tail default: 33.3 with 11 spills), 167 registers, no spills, 68 KB shared.
    "fp8t": {"dot": "fp8t", "block_n": 128, "num_warps": 4},
    "fp8ts2": {"dot": "fp8t", "block_n": 128, "num_warps": 4, "num_stages": 2},
    "fp8tsplitsx1.5": {"dot": "fp8t", "block_n": 128, "num_warps": 4, "splits_factor": 1.5},
    # K/V pages by TMA (DecodeConfig(kv_load="tma")): one box per page and K/V, fp16 products as the default.
    # Offline SASS (sm_90, 16 rows, D 128, page 64, cutlass_ name), main loop warp-instructions per token (the
    # default heuristic's page-64 kernel, 4 warps x 128 gathered tokens: 35.6, 255 registers, 11 spills):
    # 2 pages x 64 tokens, 4 warps: 29.9, 255 registers, no spills; 1 page, 4 warps: 35.1, 168 registers (3 per SM);
    # 2 warps x 1 page: 27.1, 255 registers; 1 warp x 32-token sub-boxes: 25.4, 255 registers. Pages of 16 stack
    # 4-8 boxes per step through shared memory (75.6 per token at 64 tokens): page-64 shapes are the target.
    "tma": {"kv_load": "tma", "block_n": 128, "num_warps": 4},
    "tmabn64": {"kv_load": "tma", "block_n": 64, "num_warps": 4},
    "tmabn64splitsx1.5": {"kv_load": "tma", "block_n": 64, "num_warps": 4, "splits_factor": 1.5},
    "tmaw2splitsx2": {"kv_load": "tma", "block_n": 64, "num_warps": 2, "splits_factor": 2.0},
    "tmaw1bn32s4splitsx4": _w1("tma", 32, 4, 4.0),
    # Around the one-warp TMA variant, the best at ctx 32768 in decode-nvidia-h200-20261129-153949.json (B32 1.09x,
    # B128 1.29x the heuristic, 82-84% of copy): splits, stages, token box, warps.
    "tmaw1bn32s4splitsx2": _w1("tma", 32, 4, 2.0),
    "tmaw1bn32s4splitsx8": _w1("tma", 32, 4, 8.0),
    "tmaw1bn32s3splitsx4": _w1("tma", 32, 3, 4.0),
    "tmaw1bn32s6splitsx4": _w1("tma", 32, 6, 4.0),
    "tmaw1bn64s4splitsx4": _w1("tma", 64, 4, 4.0),
    "tmaw2bn32s4splitsx4": _w1("tma", 32, 4, 4.0, warps=2),
    "tmaw1bn32s4": {"kv_load": "tma", "block_n": 32, "num_warps": 1, "num_stages": 4},
    "tmaw1bn64s4splitsx2": _w1("tma", 64, 4, 2.0),
    "tmaw1bn64s4splitsx1": _w1("tma", 64, 4, 1.0),
    "tmaw1bn64s4splitsx8": _w1("tma", 64, 4, 8.0),
    # Split counts between the powers of two (session 5, ctx 4096): the one-warp TMA kernel holds 255 registers
    # (8 programs per SM by registers; offline its K/V boxes are single-buffered: 20.3 KB of shared memory at 3 or 4
    # stages), so x3 / x6 give 768 / 1536 programs at B32 (0.73 / 1.45 of 1056 slots) against x4's 1024.
    "tmaw1bn64s4splitsx3": _w1("tma", 64, 4, 3.0),
    "tmaw1bn64s4splitsx6": _w1("tma", 64, 4, 6.0),
    "tmaw1bn32s4splitsx3": _w1("tma", 32, 4, 3.0),
    "tmaw1bn32s4splitsx6": _w1("tma", 32, 4, 6.0),
    # The long-context kernel with the inline merge's 4-warp chunk (4 splits per step: 198 spill stores offline,
    # against 16 with the one-warp chunk of 1 that decode now picks).
    "tmaw1bn64s4splitsx4mc4": _w1("tma", 64, 4, 4.0, merge_chunk=4),
    "tmaw1bn64s4splitsx2mc4": _w1("tma", 64, 4, 2.0, merge_chunk=4),
    # Pages of 16: one 16-token box per step (no stacking through shared memory) against 2 (bn32) and 4 (bn64).
    "tmaw1bn16s4splitsx4": _w1("tma", 16, 4, 4.0),
    # kv_load="tmab": 2 / 4 page boxes per step kept apart (one score tile and one P.V per box, one softmax update
    # per step). Offline sm_90, page 16, GQA 4, split, one warp: full-step loop 27.2 (bn32) / 26.4 (bn64)
    # instructions per token, no shared-memory stores in it, against the stacked boxes' 36.6 / 38.5. Both 255
    # registers (8 one-warp programs per SM by registers), but the boxes are multi-buffered: shared memory per
    # program bn64 s2/s3/s4 20.6/37.0/53.5 KB (s4: 4 programs per SM), bn32 s3/s4 20.5/28.8 KB.
    "tmabw1bn64s4splitsx4": _w1("tmab", 64, 4, 4.0),
    "tmabw1bn32s4splitsx4": _w1("tmab", 32, 4, 4.0),
    "tmabw1bn32s4splitsx2": _w1("tmab", 32, 4, 2.0),
    "tmabw1bn32s4splitsx1": _w1("tmab", 32, 4, 1.0),
    # Session 6: the one-warp kernels with registers capped at 168 (12 programs per SM instead of 8-9; offline
    # sm_90 spill stores: tmab pages of 16 bn32 7, tma bn32 44, tma bn16 9, tma bn64 177).
    "tmabw1bn32s4splitsx1r168": _w1("tmab", 32, 4, 1.0, maxnreg=168),
    "tmabw1bn32s4splitsx2r168": _w1("tmab", 32, 4, 2.0, maxnreg=168),
    "tmabw1bn32s4splitsx4r168": _w1("tmab", 32, 4, 4.0, maxnreg=168),
    "tmaw1bn64s4splitsx4r168": _w1("tma", 64, 4, 4.0, maxnreg=168),
    "tmaw1bn64s4splitsx1r168": _w1("tma", 64, 4, 1.0, maxnreg=168),
    "tmaw1bn32s4splitsx4r168": _w1("tma", 32, 4, 4.0, maxnreg=168),
    "tmaw1bn16s4splitsx4r168": _w1("tma", 16, 4, 4.0, maxnreg=168),
    # Pages of 64 through the per-box step (one box per step): the pipeliner multi-buffers the boxes (offline 53 KB
    # at 4 stages, 37 KB at 3, against the tma kernel's single 21 KB buffer): deeper prefetch for short programs.
    "tmabw1bn64s4splitsx1": _w1("tmab", 64, 4, 1.0),
    "tmabw1bn64s3splitsx1": _w1("tmab", 64, 3, 1.0),
    "tmabw1bn64s4splitsx2": _w1("tmab", 64, 4, 2.0),
    "tmabw2bn64s4splitsx4": _w1("tmab", 64, 4, 4.0, warps=2),
    "tmabw1bn64s3splitsx4": _w1("tmab", 64, 3, 4.0),
    "tmabw1bn64s2splitsx4": _w1("tmab", 64, 2, 4.0),
    "tmabw1bn32s3splitsx4": _w1("tmab", 32, 3, 4.0),
    # DecodeConfig(v_stage=True): V's P.V operand from 16-byte rows of the page box (columns permuted, inline-asm
    # E4M3 -> fp16) instead of one byte load per element. Offline sm_90, main loop per step: page 64 / 64 tokens
    # 1362 -> 1210 instructions (256 LDS.U8 -> 16 LDS.128, 13 -> 0 spill stores in the kernel), page 16 "tmab" /
    # 32 tokens 866 -> 786. Each next to its v_stage=False twin above.
    "tmaw1bn64s4splitsx4vs": _w1("tma", 64, 4, 4.0, v_stage=True),
    # Prepared in session 6 (not timed): larger inline-merge chunks on the heuristic's v_stage kernel (its loop no
    # longer spills, so the merge tile may take 128 registers: offline sm_90, one warp, 16 splits, no spill stores at
    # GQA 4 chunk 8 (automatic: 4) and GQA 8 chunk 4 (automatic: 2); 61 / 93 at GQA 4 chunk 16 / GQA 8 chunk 8),
    # and the combine kernel (scripts/gpu_run41.sh).
    "tmaw1bn64s4splitsx4vsmk": _w1("tma", 64, 4, 4.0, v_stage=True, merge="kernel"),
    "tmaw1bn64s4splitsx4vsmc4": _w1("tma", 64, 4, 4.0, v_stage=True, merge_chunk=4),
    "tmaw1bn64s4splitsx4vsmc8": _w1("tma", 64, 4, 4.0, v_stage=True, merge_chunk=8),
    "tmaw1bn64s4splitsx1vs": _w1("tma", 64, 4, 1.0, v_stage=True),
    # Session 16 (prepared, scripts/gpu_run102.sh): B 32 ctx 4096 pages of 64 with 2 / 3 splits around the 4 the
    # rule takes (76-81% of copy eager): fewer, longer programs against the merge's cost.
    "tmaw1bn64s4splitsx2vs": _w1("tma", 64, 4, 2.0, v_stage=True),
    "tmaw1bn64s4splitsx3vs": _w1("tma", 64, 4, 3.0, v_stage=True),
    # Prepared in session 6 (not timed): one wave of per-box programs on pages of 16. Offline sm_90 the tmab kernel
    # at 4 stages takes 28.8 KB of shared memory (7 programs per SM: 924 slots, so B 32 x 4 splits = 1024 programs
    # run 1.1 waves, which may be why it lost to the gather kernel at B 8/32), 20.5 KB at 3 stages (8 per SM by its
    # 242 registers: 1056 slots); or 3 splits (768 programs) at 4 stages (scripts/gpu_run42.sh).
    # Session 16: pages of 16 at B x Hkv >= 512 with short contexts (B 128 ctx 4096: 1024 pairs, the gather
    # kernel at 75% of copy because the tmab rule wants 4 splits of >= 4096 tokens): the per-box kernel unsplit
    # (with tmabw1bn32s4splitsx1vs below).
    "tmabw1bn32s3splitsx1vs": _w1("tmab", 32, 3, 1.0, v_stage=True),
    "tmabw1bn64s3splitsx1vs": _w1("tmab", 64, 3, 1.0, v_stage=True),
    "tmabw1bn32s3splitsx2vs": _w1("tmab", 32, 3, 2.0, v_stage=True),
    "tmabw1bn32s3splitsx4vs": _w1("tmab", 32, 3, 4.0, v_stage=True),
    "tmabw1bn32s4splitsx3vs": _w1("tmab", 32, 4, 3.0, v_stage=True),
    "tmabw1bn32s4splitsx4vs": _w1("tmab", 32, 4, 4.0, v_stage=True),
    "tmabw1bn32s4splitsx1vs": _w1("tmab", 32, 4, 1.0, v_stage=True),
    # kv_load="tmat": P.V as O^T = V^T.P^T (wgmma with 4 warps): 2 pages x 4 warps 26.9 per token, 246 registers,
    # no spills; 1 page 33.4, 148 registers.
    "tmat": {"kv_load": "tmat", "block_n": 128, "num_warps": 4},
    "tmatbn64": {"kv_load": "tmat", "block_n": 64, "num_warps": 4},
    "tmatbn64splitsx1.5": {"kv_load": "tmat", "block_n": 64, "num_warps": 4, "splits_factor": 1.5},
    # Session 19: DecodeConfig(warp_split=True), the warps of a program on slices of each step, one softmax each, merged
    # on chip (gather loads, v_stage): "ws{warps}bn{block_n}s{stages}x{splits}" with an absolute split count (B 32
    # ctx 4096: one program per (sequence, KV head), no global merge; B 8: 2 or 4 splits).
    **{f"ws{w}bn{bn}s{st}x{sp}": _ws(bn, w, st, sp)
       for w, bn, st, sp in ((4, 128, 3, 1), (4, 128, 3, 2), (4, 128, 3, 4), (4, 128, 4, 1), (4, 128, 4, 4),
                             (4, 256, 2, 1), (4, 256, 2, 4), (8, 256, 3, 1), (8, 256, 3, 2), (4, 64, 4, 1),
                             (4, 64, 4, 4), (4, 128, 3, 8), (4, 64, 4, 8), (4, 128, 2, 1), (4, 64, 3, 1),
                             (4, 64, 2, 1))},
    # Session 19 call 2: fewer steps in flight at the end of a program (the tail of buffered compute): the
    # per-box TMA kernel with one 64-token page box per step at 2 / 3 stages, 4 splits (B 32 ctx 4096)
    "tmabw1bn64s2splitsx4vs": _w1("tmab", 64, 2, 4.0, v_stage=True),
    "tmabw1bn64s3splitsx4vs": _w1("tmab", 64, 3, 4.0, v_stage=True),
    "tmaw1bn32s4splitsx4vs": _w1("tma", 32, 4, 4.0, v_stage=True),
    # More bytes in flight per SM in one wave (session 19 call 7): 2 or 3 page boxes of 64 tokens in flight per
    # program (37 / 53 KB of shared memory: 6 / 4 programs per SM) with the splits that fill those slots
    "tmabw1bn64s3splitsx3vs": _w1("tmab", 64, 3, 3.0, v_stage=True),
    "tmabw1bn64s4splitsx2vs": _w1("tmab", 64, 4, 2.0, v_stage=True),
    "ws4bn128s3x1nv": _ws(128, 4, 3, 1, v_stage=False),
    # The plain kernel name (offline: no spill stores, 5-11 under the cutlass_ name)
    "ws4bn128s3x1plain": {**_ws(128, 4, 3, 1), "names": "plain"},
    "ws4bn128s3x4plain": {**_ws(128, 4, 3, 4), "names": "plain"},
    # Session 22: the heuristic's own config with L2 evict-first hints on its K/V copies (_kernels/l2hint.py):
    # after do_bench's write flush the stream no longer displaces (and writes back) the flush's dirty lines.
    "l2ef": {"on_heuristic": True, "l2_evict_first": True},
    # ... and on the per-box TMA kernel in one wave at B 8 pages of 16 (the gather kernel's case before session 22)
    "tmabw1bn32s3splitsx2vsl2ef": _w1("tmab", 32, 3, 2.0, v_stage=True, l2_evict_first=True),
    "tmabw1bn32s3splitsx4vsl2ef": _w1("tmab", 32, 3, 4.0, v_stage=True, l2_evict_first=True),
    # Session 22 call 6, B 8 ctx 4096 with the hints: fewer, longer splits (8 of 512 tokens) on pages of 64, the
    # per-box kernel with one 64-token box per step (3 stages: two boxes in flight), and 4 stages on pages of 16
    "tmaw1bn64s4splitsx2vsl2ef": _w1("tma", 64, 4, 2.0, v_stage=True, l2_evict_first=True),
    "tmabw1bn64s3splitsx4vsl2ef": _w1("tmab", 64, 3, 4.0, v_stage=True, l2_evict_first=True),
    "tmabw1bn64s3splitsx2vsl2ef": _w1("tmab", 64, 3, 2.0, v_stage=True, l2_evict_first=True),
    "tmabw1bn32s4splitsx2vsl2ef": _w1("tmab", 32, 4, 2.0, v_stage=True, l2_evict_first=True),
    # Session 29: pages of 64 at B 8 ctx 4096 in the pages-of-16 wave form's shape (32-token steps, 3 stages, 8 splits;
    # on pages of 64 each step is half a page box)
    "tmaw1bn32s3splitsx2vsl2ef": _w1("tma", 32, 3, 2.0, v_stage=True, l2_evict_first=True),
    # Session 23: overrides of the heuristic's own config (its splits and hints kept). 64-token per-box steps at
    # 2 stages: offline sm_90 (GQA 4, pages of 16, v_stage) 22.6 warp-instructions per token against the 32-token
    # step's 24.4 at 3 stages, 20.6 vs 20.5 KB of shared memory (the same 16 KB of K/V in flight: one 64-token step
    # instead of two of 32); on pages of 64 the per-box form of the tma kernel's step.
    "hbn64s2": {"on_heuristic": True, "kv_load": "tmab", "block_n": 64, "num_stages": 2},
    "hbn64s3": {"on_heuristic": True, "kv_load": "tmab", "block_n": 64, "num_stages": 3},
    "hs4": {"on_heuristic": True, "num_stages": 4},
    "hnol2ef": {"on_heuristic": True, "l2_evict_first": False},
    "hx8": {"on_heuristic": True, "num_splits": 8},
    "hx12": {"on_heuristic": True, "num_splits": 12},
    "hbn64s2x12": {"on_heuristic": True, "kv_load": "tmab", "block_n": 64, "num_stages": 2, "num_splits": 12},
    # Session 23 call 1's profile: the per-box kernel's loop stalls mostly on fixed-latency dependencies ("wait")
    # with 2 warps per scheduler (8 one-warp programs per SM by its 255 registers). Capped at 192 registers (offline
    # sm_90, GQA 4, pages of 16, 3 stages: 24.5 warp-instructions per token, no spills in the loop, 9 spill stores
    # after it) 10 programs fit an SM, as many as its 20.5 KB of shared memory (+1 KB reserved each) allow; 168
    # registers (24.8 per token, 43 spill stores outside the loop) gain nothing over 192 there. Splits for 10
    # programs per SM: B 8 20 (1280 programs), B 32 5.
    "hr192": {"on_heuristic": True, "maxnreg": 192},
    "hr192x20": {"on_heuristic": True, "maxnreg": 192, "num_splits": 20},
    "hr192x16": {"on_heuristic": True, "maxnreg": 192, "num_splits": 16},
    "hr192x5": {"on_heuristic": True, "maxnreg": 192, "num_splits": 5},
    "hr168x20": {"on_heuristic": True, "maxnreg": 168, "num_splits": 20},
    "hx20": {"on_heuristic": True, "num_splits": 20},
    "hx16": {"on_heuristic": True, "num_splits": 16},
    "hx5": {"on_heuristic": True, "num_splits": 5},
    # Call 1's profile at B 8 ctx 4096 pages of 64: after the loop, the partial store, the ticket (a fence and an L1
    # invalidate around the acq_rel atomic) and the last program's merge take 22% of the warps' stall samples, most
    # of them instruction-cache misses. The combine kernel moves the merge and the ticket out of the split kernel;
    # launched as a programmatic dependent launch it is scheduled while the partials are written (session 13:
    # 1.07-1.14x from graphs, 0.75x eager when that step was host-bound, before the replayed launches).
    "hmk": {"on_heuristic": True, "merge": "kernel"},
    "hmkpdl": {"on_heuristic": True, "merge": "kernel", "pdl": True},
    # DecodeConfig(kernel="gluon") (session 23, _kernels/decode_gluon.py; _GLUON): the Gluon kernel with the cache
    # tokens as the MMA's M, at the heuristic's splits ("h": half of them), STEP tokens x STAGES ring slots: 32 x 3 =
    # 26.6 KB of shared memory (8 programs per SM), 64 x 2 = 34.8 KB (6 per SM); offline 15.3 / 12.1-13.6
    # warp-instructions per token against the Triton kernel's 18.9 (pages of 64) / 24.4 (pages of 16).
    "gl32s3": {**_GLUON, "block_n": 32, "num_stages": 3},
    "gl32s3pdl": {**_GLUON, "block_n": 32, "num_stages": 3, "pdl": True},
    "gl64s2": {**_GLUON, "block_n": 64, "num_stages": 2},
    "gl64s2h": {**_GLUON, "block_n": 64, "num_stages": 2, "heuristic_splits_factor": 0.5},
    "gl32s3h": {**_GLUON, "block_n": 32, "num_stages": 3, "heuristic_splits_factor": 0.5},
    "gl32s3q": {**_GLUON, "block_n": 32, "num_stages": 3, "heuristic_splits_factor": 0.25},
    "gl32s4h": {**_GLUON, "block_n": 32, "num_stages": 4, "heuristic_splits_factor": 0.5},
    # The Gluon rule's form (about 512 programs) at any context, and the Triton kernel's heuristic where the
    # library's heuristic takes the Gluon kernel (decode_config(gluon=False)).
    "glp512": {**_GLUON, "block_n": 32, "num_stages": 3, "programs_target": 512},
    "triton": {"triton_heuristic": True},
    "nopdl": {"on_heuristic": True, "pdl": False},
    # Session 24: the Gluon kernel at ctx 4096 with more programs per SM: 2 ring slots (16.4 KB of shared memory;
    # its 128-150 registers allow 13 one-warp programs per SM) and absolute split counts, the combine as a PDL.
    **{f"glx{sp}s{st}": {**_GLUON, "block_n": 32, "num_stages": st, "num_splits": sp, "pdl": True}
       for sp, st in ((4, 3), (8, 2), (16, 2), (16, 3), (24, 2), (32, 2))},
    # Session 25: W warps per program, each with its own split of the program's range (splits x W in all) and its
    # own online softmax, merged on chip: the combine kernel's work shrinks by W (none at one split).
    **{f"glw{w}x{sp}s{st}": {**_GLUON, "block_n": 32, "num_warps": w, "num_stages": st, "num_splits": sp,
                             "pdl": sp > 1}
       for w, sp, st in ((2, 1, 2), (2, 1, 3), (2, 2, 3), (2, 4, 3), (2, 8, 3), (4, 1, 2), (4, 1, 3), (4, 2, 3),
                         (4, 4, 2))},
}
VARIANT_CASES = ((8, 4096, 32, 16), (1, 32768, 64, 16), (32, 4096, 32, 64), (128, 1024, 32, 16), (8, 32768, 64, 16),
                 (128, 4096, 32, 16))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", type=int, action="append", default=None, help="batch sizes (repeatable)")
    p.add_argument("--context", type=int, action="append", default=None, help="context lengths (repeatable)")
    p.add_argument("--hq", type=int, action="append", default=None, help="query heads (repeatable)")
    p.add_argument("--hkv", type=int, action="append", default=None,
                   help=f"KV heads of the matrix (default {HKV}; repeatable; each --hq a multiple of each)")
    p.add_argument("--page", type=int, action="append", default=None, help="page sizes (repeatable)")
    p.add_argument("--variants", action="store_true", help="also sweep DecodeConfig variants on a few shapes")
    p.add_argument("--variants-only", action="store_true", help="only the DecodeConfig sweep")
    p.add_argument("--variant-names", default=None,
                   help="comma-separated VARIANTS to time (the heuristic is always timed), e.g. fp8t,tail")
    p.add_argument("--variant-cases", default=None,
                   help="variant sweep shapes as B:ctx:Hq:page, comma-separated (default: VARIANT_CASES)")
    p.add_argument("--no-peers", action="store_true", help="time ours and the copy only (no SDPA, no BF16 cache)")


def _cases(args) -> list[tuple[int, int, int, int]]:
    if any(getattr(args, k, None) for k in ("batch", "context", "hq", "page")):
        return [(b, c, h, p) for b in (args.batch or BATCHES) for c in (args.context or CONTEXTS)
                for p in (args.page or PAGES) for h in (args.hq or HQS)]
    if args.quick:
        return list(QUICK_CASES)
    return [(b, c, h, p) for b in BATCHES for c in CONTEXTS for p in PAGES for h in HQS]


def _kv_heads(args, cases=()) -> list[int]:
    """The matrix's KV head counts (``--hkv``, else Hkv = 8), checked: every case's Hq a multiple of each."""
    hkvs = getattr(args, "hkv", None) or [HKV]
    for hkv in hkvs:
        if hkv < 1:
            raise ValueError(f"--hkv: expected a positive number of KV heads, got {hkv}")
        bad = sorted({hq for _, _, hq, _ in cases if hq % hkv})
        if bad:
            raise ValueError(f"--hq {bad}: expected multiples of --hkv {hkv} (GQA groups of whole query heads)")
    return hkvs


def _fill_fp8(shape, device, gen_scale: float = 4.0) -> torch.Tensor:
    """E4M3 tensor of N(0, gen_scale^2) values, filled in chunks along dim 0 (no full-size fp32 temporary)."""
    out = torch.empty(shape, dtype=torch.float8_e4m3fn, device=device)
    chunk = max(1, (1 << 26) // max(1, math.prod(shape[1:])))
    for i in range(0, shape[0], chunk):
        n = min(chunk, shape[0] - i)
        out[i : i + n] = (torch.randn((n, *shape[1:]), device=device, dtype=torch.bfloat16) * gen_scale).to(out.dtype)
    return out


def _to_bf16(x: torch.Tensor, scale: float) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
    chunk = max(1, (1 << 26) // max(1, math.prod(x.shape[1:])))
    for i in range(0, x.shape[0], chunk):
        out[i : i + chunk] = x[i : i + chunk].to(torch.bfloat16) * scale
    return out


@dataclasses.dataclass
class _Paged:
    k: torch.Tensor
    v: torch.Tensor
    table: torch.Tensor
    lens: torch.Tensor
    descale: torch.Tensor
    page: int


def _paged(b: int, ctx: int, page: int, device, hkv: int = HKV) -> _Paged:
    per_seq = math.ceil(ctx / page)
    nb = b * per_seq
    k = _fill_fp8((nb, page, hkv, D), device)
    v = _fill_fp8((nb, page, hkv, D), device)
    table = torch.randperm(nb, device=device).to(torch.int32).view(b, per_seq)  # shuffled pages
    lens = torch.full((b,), ctx, dtype=torch.int32, device=device)
    descale = torch.full((hkv,), 0.25, device=device)  # dequantized values ~ N(0, 1)
    return _Paged(k, v, table, lens, descale, page)


def cache_bytes(b: int, ctx: int, elem: int, hkv: int = HKV) -> int:
    """Bytes of K and V that one decode step must read: B sequences x ctx tokens x Hkv x D x 2 tensors."""
    return 2 * b * ctx * hkv * D * elem


def io_bytes(b: int, hq: int, sq: int = 1) -> int:
    """q read (bf16) + out written (bf16)."""
    return 2 * b * sq * hq * D * 2


def _sdpa_fn(q, k, v):
    """SDPA on the dense cache with the fused backends only: ``enable_gqa=True`` when a backend takes it, else the
    GQA group folded into the query length (q (B, Hkv, G, D) against k/v (B, Hkv, ctx, D): exact for one new
    token, no mask, and the cache is still read once). Returns (fn, form or the error)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def gqa():
        with sdpa_kernel(backends):
            return sdpa(q, k, v, enable_gqa=True)

    b, hq, sq, d = q.shape
    hkv = k.shape[1]
    qf = q.reshape(b, hkv, (hq // hkv) * sq, d)  # q is (B, Hq, 1, D): heads kvh*G .. kvh*G+G-1 become rows

    def folded():
        with sdpa_kernel(backends):
            return sdpa(qf, k, v)

    errors = []
    for fn, form in ((gqa, "enable_gqa"), (folded, "gqa folded into q rows")):
        try:
            fn()
            return fn, form
        except RuntimeError as e:  # no fused backend for this form
            errors.append(f"{form}: {str(e).splitlines()[0][:100]}")
    return None, "; ".join(errors)


def _check(dec, q, pc: _Paged, out) -> float:
    """Relative error of ``out`` on its first (up to) 2 sequences vs decode_attention_torch."""
    from tritonfp8.bench import harness as H

    n = min(2, q.shape[0])
    ref = dec.decode_attention_torch(q[:n], pc.k, pc.v, pc.table[:n], pc.lens[:n], k_descale=pc.descale,
                                     v_descale=pc.descale)
    return H.rel_error(out[:n].float(), ref)


def profile_case(args):
    """One launch for ``--profile``: B=8, ctx 4096, Hq/Hkv 32/8, pages of 16 (or the first --batch/--context...)."""
    from tritonfp8 import decode as dec

    b = (getattr(args, "batch", None) or [8])[0]
    ctx = (getattr(args, "context", None) or [4096])[0]
    hq = (getattr(args, "hq", None) or [32])[0]
    page = (getattr(args, "page", None) or [16])[0]
    pc = _paged(b, ctx, page, _DEVICE)
    q = torch.randn(b, 1, hq, D, device=_DEVICE, dtype=torch.bfloat16)
    fn = lambda: dec.decode_attention(q, pc.k, pc.v, pc.table, pc.lens, k_descale=pc.descale,  # noqa: E731
                                      v_descale=pc.descale)
    return fn, f"decode B={b} ctx={ctx} Hq/Hkv={hq}/{HKV} D={D} page={page} e4m3 cache"


def _run_matrix(args, H, console, env) -> tuple[list[dict], int]:
    from tritonfp8 import decode as dec

    rows: list[dict[str, Any]] = []
    failures = 0
    cases = _cases(args)
    groups: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    for hkv in _kv_heads(args, cases):
        for b, ctx, hq, page in cases:
            groups.setdefault((hkv, b, ctx), []).append((hq, page))
    for (hkv, b, ctx), rest in groups.items():
        dense = None
        if not args.no_peers:
            try:
                dense = (torch.randn(b, hkv, ctx, D, device=_DEVICE, dtype=torch.bfloat16),
                         torch.randn(b, hkv, ctx, D, device=_DEVICE, dtype=torch.bfloat16))
            except torch.OutOfMemoryError:
                dense = None
        for page in sorted({p for _, p in rest}):
            pc = _paged(b, ctx, page, _DEVICE, hkv)
            k16 = v16 = None
            if not args.no_peers:
                k16, v16 = _to_bf16(pc.k, 0.25), _to_bf16(pc.v, 0.25)
            for hq in sorted({h for h, p in rest if p == page}):
                torch.manual_seed(0)
                q = torch.randn(b, 1, hq, D, device=_DEVICE, dtype=torch.bfloat16)
                sms = dec.num_sms(torch.device(_DEVICE))
                kv_bytes = cache_bytes(b, ctx, 1, hkv)
                cfg = dec.decode_config(b, hkv, hq // hkv, ctx, sms, tma_page=page, kv_bytes=kv_bytes,
                                        gluon=dec.gluon_available(torch.device(_DEVICE)))
                ours = lambda: dec.decode_attention(q, pc.k, pc.v, pc.table, pc.lens,  # noqa: E731
                                                    k_descale=pc.descale, v_descale=pc.descale, config=cfg)
                err = _check(dec, q, pc, ours())
                ok = err <= CHECK_TOL
                failures += not ok
                nbytes = kv_bytes + io_bytes(b, hq)
                copy_fn, copy_moved = H.make_copy_fn(max(1, nbytes // 2), _DEVICE)
                fns = {"ours": ours, "copy": copy_fn}
                note = ""
                if k16 is not None:
                    # the Triton kernel's config (a 16-bit cache takes neither TMA nor the Gluon kernel)
                    cfg16 = dec.decode_config(b, hkv, hq // hkv, ctx, sms, tma_page=page, kv_bytes=kv_bytes)
                    fns["ours_bf16"] = lambda: dec.decode_attention(q, k16, v16, pc.table, pc.lens,  # noqa: E731
                                                                    config=cfg16)
                if dense is not None:
                    qd = q.transpose(1, 2).contiguous()  # (B, Hq, 1, D)
                    sfn, note = _sdpa_fn(qd, dense[0], dense[1])
                    if sfn is not None:
                        fns["sdpa"] = sfn
                times = H.bench_interleaved(fns, repeats=args.repeats)
                t = {n: H.summarize(v) for n, v in times.items()}
                ours_gbps = H.gbps(nbytes, t["ours"].median)
                copy_gbps = H.gbps(copy_moved, t["copy"].median)
                pct_copy = H.pct(ours_gbps, copy_gbps)
                row: dict[str, Any] = {
                    "case": f"B{b} ctx{ctx} {hq}/{hkv} p{page}",
                    "B": b, "ctx": ctx, "Hq": hq, "Hkv": hkv, "D": D, "page": page,
                    "splits": cfg.num_splits, "block_n": cfg.block_n, "warps": cfg.num_warps,
                    "stages": cfg.num_stages, "merge": cfg.merge, "kv_load": cfg.kv_load,
                    "l2_evict_first": cfg.l2_evict_first, "kernel": cfg.kernel,
                    "bytes": nbytes, "rel_err": err, "check_ok": ok,
                    "ours_ms": t["ours"].median, "ours_gbps": ours_gbps, "copy_gbps": copy_gbps,
                    "pct_of_copy": pct_copy,
                    "pct_of_copy_lo": 100.0 * t["copy"].min / t["ours"].max,
                    "pct_of_copy_hi": 100.0 * t["copy"].max / t["ours"].min,
                    "ours_spread": t["ours"].spread,
                    "target_copy": (pct_copy >= TARGET_PCT_OF_COPY) if (b >= 8 and ctx >= 4096) else None,
                    "rounds_ms": {n: list(v) for n, v in times.items()},
                    "sdpa_form": note,
                }
                if "ours_bf16" in t:
                    c = H.compare(times["ours"], times["ours_bf16"])
                    row.update(bf16cache_ms=t["ours_bf16"].median,
                               bf16cache_gbps=H.gbps(cache_bytes(b, ctx, 2, hkv) + io_bytes(b, hq),
                                                    t["ours_bf16"].median),
                               vs_bf16cache=c.ratio, vs_bf16cache_verdict=c.verdict)
                if "sdpa" in t:
                    c = H.compare(times["ours"], times["sdpa"])
                    row.update(sdpa_ms=t["sdpa"].median, vs_sdpa=c.ratio, vs_sdpa_lo=c.lo, vs_sdpa_hi=c.hi,
                               vs_sdpa_verdict=c.verdict, target_sdpa=c.ratio >= TARGET_VS_SDPA)
                rows.append(row)
                del copy_fn
            del pc, k16, v16
        del dense
        if _DEVICE == "cuda":
            torch.cuda.empty_cache()
    H.print_table(
        rows,
        [
            H.Column("case", justify="left"),
            H.Column("splits"),
            H.Column("ours_ms", "ours ms", "{:.4f}"),
            H.Column("ours_gbps", "ours GB/s", "{:.0f}"),
            H.Column("copy_gbps", "copy GB/s", "{:.0f}"),
            H.Column("pct_of_copy", "% copy", "{:.1f}"),
            H.Column(lambda r: f"{r['pct_of_copy_lo']:.0f}-{r['pct_of_copy_hi']:.0f}", "range"),
            H.Column("bf16cache_ms", "bf16 cache ms", "{:.4f}"),
            H.Column("vs_bf16cache", "x bf16 cache", "{:.2f}"),
            H.Column("sdpa_ms", "SDPA ms", "{:.4f}"),
            H.Column("vs_sdpa", "x SDPA", "{:.2f}"),
            H.Column("ours_spread", "spread", "{:.1%}"),
            H.Column("rel_err", "rel err", "{:.2e}"),
            H.Column("target_copy", f">= {TARGET_PCT_OF_COPY:.0f}% copy"),
            H.Column("target_sdpa", f">= {TARGET_VS_SDPA}x SDPA"),
        ],
        title="paged decode: tritonfp8 E4M3 cache vs device copy, same kernel on a BF16 cache, SDPA on dense BF16",
        console=console,
        caption="GB/s = (K+V cache + q + out bytes) / median time; x peer = peer_ms / ours_ms (> 1: ours faster); "
        "range = % copy from the extreme rounds",
    )
    return rows, failures


def _run_write(args, H, console) -> list[dict]:
    from tritonfp8 import decode as dec

    rows = []
    for t_tokens in (WRITE_TOKENS_QUICK if args.quick else WRITE_TOKENS):
        page = 16
        nb = max(1, math.ceil(t_tokens * 1.25 / page))
        k = torch.randn(t_tokens, HKV, D, device=_DEVICE, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        kc = torch.zeros(nb, page, HKV, D, device=_DEVICE, dtype=torch.float8_e4m3fn)
        vc = torch.zeros_like(kc)
        slots = torch.randperm(nb * page, device=_DEVICE)[:t_tokens]
        s = torch.full((HKV,), 0.02, device=_DEVICE)
        kr, vr = kc.clone(), vc.clone()
        dec.write_kv_cache(k, v, kc, vc, slots, s, s)
        dec.write_kv_cache_torch(k, v, kr, vr, slots, s, s)
        exact = torch.equal(kc.view(torch.uint8), kr.view(torch.uint8)) and torch.equal(
            vc.view(torch.uint8), vr.view(torch.uint8))
        del kr, vr
        nbytes = 2 * t_tokens * HKV * D * (2 + 1) + t_tokens * 8  # read bf16 k, v; write e4m3; read slots
        copy_fn, moved = H.make_copy_fn(max(1, nbytes // 2), _DEVICE)
        torch_fn = lambda: dec.write_kv_cache_torch(k, v, kc, vc, slots, s, s)  # noqa: E731
        times = H.bench_interleaved(
            {"ours": lambda: dec.write_kv_cache(k, v, kc, vc, slots, s, s), "torch": torch_fn, "copy": copy_fn},
            repeats=args.repeats,
            # The torch reference is always timed eager (do_bench): its boolean indexing syncs with the host and
            # cannot be captured into a CUDA graph. Ours and the copy follow the timer mode (graphs under --graph).
            timer=(lambda fn, *a: (H.time_events if fn is torch_fn else H.time_once)(fn, *a))
            if H.timer_mode() == "graph" else None,
        )
        t = {n: H.summarize(x) for n, x in times.items()}
        g = H.gbps(nbytes, t["ours"].median)
        cg = H.gbps(moved, t["copy"].median)
        rows.append({
            "case": f"write T={t_tokens} Hkv={HKV} D={D}", "T": t_tokens, "bytes": nbytes, "exact": exact,
            "ours_ms": t["ours"].median, "ours_gbps": g, "copy_gbps": cg, "pct_of_copy": H.pct(g, cg),
            "vs_torch": H.compare(times["ours"], times["torch"]).ratio, "ours_spread": t["ours"].spread,
            "target": (H.pct(g, cg) >= TARGET_WRITE_PCT) if t_tokens >= 32768 else None,
            "rounds_ms": {n: list(x) for n, x in times.items()},
        })
        del k, v, kc, vc, copy_fn
    H.print_table(
        rows,
        [H.Column("case", justify="left"), H.Column("ours_ms", "ours ms", "{:.4f}"),
         H.Column("ours_gbps", "ours GB/s", "{:.0f}"), H.Column("copy_gbps", "copy GB/s", "{:.0f}"),
         H.Column("pct_of_copy", "% copy", "{:.1f}"), H.Column("vs_torch", "x torch", "{:.2f}"),
         H.Column("ours_spread", "spread", "{:.1%}"), H.Column("exact"),
         H.Column("target", f">= {TARGET_WRITE_PCT:.0f}% copy")],
        title="write_kv_cache: quantize + scatter bf16 K/V into the E4M3 paged cache",
        console=console,
        caption="GB/s = (bf16 K,V read + E4M3 written + slots) / median time; x torch = write_kv_cache_torch / ours",
    )
    return rows


def _run_variants(args, H, console) -> list[dict]:
    from tritonfp8 import decode as dec
    from tritonfp8.naming import kernel_names

    rows = []
    variants = VARIANTS
    if getattr(args, "variant_names", None):
        want = [n for n in args.variant_names.split(",") if n]
        unknown = [n for n in want if n not in VARIANTS]
        if unknown:
            raise ValueError(f"--variant-names: unknown {unknown}; known: {sorted(VARIANTS)}")
        variants = {n: VARIANTS[n] for n in ["heuristic", *want]}
    cases = VARIANT_CASES
    if getattr(args, "variant_cases", None):
        cases = [tuple(int(x) for x in c.split(":")) for c in args.variant_cases.split(",") if c]
        if any(len(c) != 4 for c in cases):
            raise ValueError(f"--variant-cases: expected B:ctx:Hq:page items, got {args.variant_cases!r}")
    for b, ctx, hq, page in cases:
        pc = _paged(b, ctx, page, _DEVICE)
        q = torch.randn(b, 1, hq, D, device=_DEVICE, dtype=torch.bfloat16)
        sms = dec.num_sms(torch.device(_DEVICE))
        # Variants change the gather heuristic's config (the base); "heuristic" is what the library picks for this
        # cache (the TMA long-context rule included: the benchmark's caches are dense and aligned).
        base = dec.decode_config(b, HKV, hq // HKV, ctx, sms)
        heur = dec.decode_config(b, HKV, hq // HKV, ctx, sms, tma_page=page, kv_bytes=cache_bytes(b, ctx, 1),
                                 gluon=dec.gluon_available(torch.device(_DEVICE)))
        ref = None
        fns, cfgs = {}, {}
        for name, over in variants.items():
            over = dict(over)
            names = over.pop("names", "cutlass")
            factor = over.pop("splits_factor", None)
            if factor is not None:
                over["num_splits"] = max(1, min(dec.MAX_SPLITS, round(base.num_splits * factor)))
            on_heur = over.pop("on_heuristic", False)  # overrides of the heuristic's config, not the gather base
            if over.pop("triton_heuristic", False):  # every field of the Triton kernel's heuristic config
                tri = dec.decode_config(b, HKV, hq // HKV, ctx, sms, tma_page=page, kv_bytes=cache_bytes(b, ctx, 1))
                over = {f.name: getattr(tri, f.name) for f in dataclasses.fields(tri)}
                on_heur = False
            target = over.pop("programs_target", None)
            if target is not None:
                over["num_splits"] = max(1, min(dec.MAX_SPLITS, target // (b * HKV)))
            hfactor = over.pop("heuristic_splits_factor", None)
            if hfactor is not None:
                over["num_splits"] = max(1, min(dec.MAX_SPLITS, round(heur.num_splits * hfactor)))
            cfg = heur if name == "heuristic" else dataclasses.replace(heur if on_heur else base, **over)
            moot = cfg.num_splits == 1 and cfg.kernel == "triton"  # one split: the merge field is not read
            same = dataclasses.replace(cfg, merge=heur.merge) if moot else cfg
            if name != "heuristic" and same == heur and names == "cutlass":
                continue
            cfgs[name] = (cfg, names)

            def fn(c=cfg, mode=names):
                with kernel_names(mode):
                    return dec.decode_attention(q, pc.k, pc.v, pc.table, pc.lens, k_descale=pc.descale,
                                                v_descale=pc.descale, config=c)

            out = fn()
            ref = out if ref is None else ref
            err = H.rel_error(out.float(), ref.float())
            if err > (FP8T_CHECK_TOL if cfg.dot == "fp8t" else CHECK_TOL):
                console.print(f"[red]variant {name} disagrees with the heuristic config: rel err {err:.2e}[/]")
                continue
            fns[name] = fn
        nbytes = cache_bytes(b, ctx, 1) + io_bytes(b, hq)
        copy_fn, moved = H.make_copy_fn(max(1, nbytes // 2), _DEVICE)
        fns["copy"] = copy_fn
        times = H.bench_interleaved(fns, repeats=args.repeats)
        copy_gbps = H.gbps(moved, H.summarize(times.pop("copy")).median)
        best = min(times, key=lambda n: H.summarize(times[n]).median)
        for name, tt in times.items():
            s = H.summarize(tt)
            c, mode = cfgs[name]
            rows.append({
                "case": f"B{b} ctx{ctx} {hq}/{HKV} p{page}", "variant": name, "names": mode, "block_n": c.block_n,
                "warps": c.num_warps, "stages": c.num_stages, "splits": c.num_splits, "merge": c.merge, "loop": c.loop,
                "dot": c.dot, "kv_load": c.kv_load, "v_stage": c.v_stage, "warp_split": c.warp_split,
                "l2_evict_first": c.l2_evict_first,
                "ms": s.median, "gbps": H.gbps(nbytes, s.median), "pct_of_copy": H.pct(H.gbps(nbytes, s.median),
                                                                                         copy_gbps),
                "vs_heuristic": H.compare(tt, times["heuristic"]).ratio, "spread": s.spread,
                "best": name == best, "rounds_ms": list(tt),
            })
        del pc, copy_fn
    H.print_table(
        rows,
        [H.Column("case", justify="left"), H.Column("variant", justify="left"), H.Column("names"), H.Column("block_n"),
         H.Column("warps"), H.Column("stages"), H.Column("splits"), H.Column("merge"),
         H.Column("ms", "ms", "{:.4f}"), H.Column("gbps", "GB/s", "{:.0f}"),
         H.Column("pct_of_copy", "% copy", "{:.1f}"),
         H.Column("vs_heuristic", "x heuristic", "{:.3f}"), H.Column("spread", "spread", "{:.1%}"),
         H.Column("best")],
        title="decode config sweep (x heuristic > 1: the variant is faster than the default)",
        console=console,
    )
    return rows


def run(args: argparse.Namespace) -> int:
    from tritonfp8.bench import harness as H

    console = H.make_console()
    env = H.environment_info()
    console.print(f"[bold]decode[/]: {env.get('gpu')}, torch {env.get('torch')}, triton {env.get('triton')}, "
                  f"{args.repeats} interleaved rounds per case")
    rows: list[dict] = []
    failures = 0
    if not getattr(args, "variants_only", False):
        m_rows, failures = _run_matrix(args, H, console, env)
        w_rows = _run_write(args, H, console)
        failures += sum(not r["exact"] for r in w_rows)
        rows += [dict(r, kind="decode") for r in m_rows] + [dict(r, kind="write") for r in w_rows]
    if getattr(args, "variants", False) or getattr(args, "variants_only", False):
        rows += [dict(r, kind="variant") for r in _run_variants(args, H, console)]
    if not args.no_save:
        w = H.ResultsWriter("decode", out_dir=args.out, env=env)
        path = w.write(rows, config={"quick": args.quick, "repeats": args.repeats, "D": D,
                                     "Hkv": _kv_heads(args),
                                     "targets": {"pct_of_copy": TARGET_PCT_OF_COPY, "vs_sdpa": TARGET_VS_SDPA,
                                                 "write_pct_of_copy": TARGET_WRITE_PCT}})
        dec_rows = [r for r in rows if r["kind"] == "decode"]
        if dec_rows:
            H.plot_bars(w.png_path, [r["case"] for r in dec_rows],
                        {"ours (E4M3 cache)": [r["ours_gbps"] for r in dec_rows],
                         "ours (BF16 cache, its bytes)": [r.get("bf16cache_gbps") for r in dec_rows]},
                        ylabel="GB/s", title="paged decode effective bandwidth",
                        hline=(sum(r["copy_gbps"] for r in dec_rows) / len(dec_rows), "device copy"))
        console.print(f"results: {path}")
    if failures:
        console.print(f"[red]decode: {failures} correctness check(s) failed[/]")
    return 1 if failures else 0
