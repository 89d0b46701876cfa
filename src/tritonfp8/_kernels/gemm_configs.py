"""GEMM kernel configurations: a frozen dataclass, pure heuristics, and per-GPU tuned tables.

No autotuning happens at call time. :func:`select_config` returns a :class:`GemmConfig` for any shape:

1. the tuned table of this GPU (``tritonfp8/configs/gemm_<gpu>.json``, written offline by
   ``python -m tritonfp8 tune gemm``), looked up by shape bucket (M rounded up to a power of two, N and K exact,
   accumulate mode), else
2. :func:`heuristic_config`, a pure function of (M, N, K, accumulate, arch, SM count, output size).

Every number the heuristics use is a hardware fact or a measurement, stated where it is used. Configs describe the
kernel in its own orientation (see ``tritonfp8/_kernels/gemm.py``): ``block_m`` tiles the rows of ``D = X·Yᵀ``
(M, or N when ``swap_ab``), ``block_n`` its columns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
from dataclasses import replace, dataclass
from pathlib import Path
from typing import Iterator

# Schedules (the kernel's loop structure and where its operands come from):
#   "tma"             TMA loads, one output tile per program, grouped tile order, TMA store.
#   "tmapersistent"   TMA loads, grid = #SMs, tiles strided over programs in one flattened, software-pipelined
#                     loop (a tile's epilogue overlaps the next tile's first loads), TMA store.
#   "tmaws"           TMA loads, one tile per program, Triton's Hopper warp specialization on the K loop (num_warps
#                     must be 4: one producer warp group + two consumer warp groups are made from it), pointer store
#                     (the host-descriptor store does not survive the consumer split: measured compile failure).
#   "tmawspersistent" as "tmaws", persistent grid, warp specialization on the tile loop.
#   "ptr"             pointer loads/stores (Ada, sm_89: no TMA/wgmma).
#   "glws"            the Gluon kernel (_kernels/gemm_gluon.py), persistent, one TMA loader warp and two consumer
#                     warp groups (64 rows each) whose fp32 promotion (precise, block scales) runs while the other
#                     group's wgmma uses the tensor cores; fast accumulation too (block_n up to 256). block_m =
#                     block_k = 128, num_warps = 4 (the first consumer group; the kernel adds the others), TMA store.
SCHEDULES = ("tma", "tmapersistent", "tmaws", "tmawspersistent", "ptr", "glws")

# Promotion of the precise / block-scaled modes (each K block a fresh dot, added into the fp32 accumulator):
#   "sync"  block kb's dot is promoted in the same step (the default).
#   "lag"   block kb's dot is promoted one step later, after block kb+1's dot is issued (one more fp32 tile live);
#           same fp32 sum in the same order. Kernel names carry "lag".
#   "split" two K blocks per loop step, each loaded as two halves (TMA blocks of block_k // 2) and computed as two
#           chained half-K dots, the form Triton 3.6 keeps asynchronous: each block is promoted while the second
#           half of the next block's wgmmas runs (see _k_loop_split in _kernels/gemm.py). Same sum, same order as
#           "sync" (block_k >= 64: each half a whole FP8 wgmma K of 32). A pipeline stage holds two K blocks.
#           Kernel names carry "split".
PROMOTES = ("sync", "lag", "split")

# Hopper (sm_90) shared memory per block: 227 KB opt-in (232448 bytes). Triton adds barriers (8 bytes per stage)
# and alignment; keep 1 KB spare.
SMEM_BYTES_SM90 = 232448
SMEM_BYTES_SM89 = 101376  # Ada: 99 KB per block
_SMEM_SPARE = 1024


@dataclass(frozen=True)
class GemmConfig:
    """One kernel configuration (hashable: it is part of the compile key).

    block_m/block_n/block_k: tile of D = X·Yᵀ in the kernel's orientation (block_m tiles M, or N when swap_ab).
    group_m: grouped tile order width (row tiles that walk the column tiles together, for L2 reuse).
    num_warps/num_stages: Triton launch options (stages = shared-memory pipeline depth of the K loop).
    schedule: one of :data:`SCHEDULES`.
    swap_ab: compute Cᵀ = B·Aᵀ (small M: N fills wgmma's 64-row dimension).
    split_k: K split over this many programs; fp32 partial sums, then a reduce kernel (deterministic).
    epilogue_subtile: store the tile in this many column pieces (1 or 2): smaller shared-memory staging buffer.
    promote: how the per-K-block fp32 promotion of the precise and block-scaled modes is scheduled (see
    :data:`PROMOTES`); ignored in the fast mode.
    block_n2: 0, or a second, narrower column piece per tile (a power of two, 16 .. block_n / 2): the tile is
    block_n + block_n2 columns wide, two products per K step (wgmma N = block_n and N = block_n2) on one x tile.
    Triton's tiles are powers of two; this gives widths such as 80 that split N = 10240 into 128 tiles, one per
    SM (the one-row-of-tiles case; ``tma`` schedule, no swap-AB or split-K, pointer stores; per-tensor or rowwise
    scales, fast or precise with the "sync" promotion).
    """

    block_m: int = 128
    block_n: int = 256
    block_k: int = 128
    group_m: int = 8
    num_warps: int = 8
    num_stages: int = 3
    schedule: str = "tmapersistent"
    swap_ab: bool = False
    split_k: int = 1
    epilogue_subtile: int = 1
    promote: str = "sync"
    block_n2: int = 0

    def __post_init__(self) -> None:
        for f in ("block_m", "block_n", "block_k"):
            v = getattr(self, f)
            if v < 16 or v & (v - 1):
                raise ValueError(f"GemmConfig.{f}: expected a power of two >= 16, got {v}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"GemmConfig.schedule: expected one of {SCHEDULES}, got {self.schedule!r}")
        if self.epilogue_subtile not in (1, 2):
            raise ValueError(f"GemmConfig.epilogue_subtile: expected 1 or 2, got {self.epilogue_subtile}")
        if self.promote not in PROMOTES:
            raise ValueError(f"GemmConfig.promote: expected one of {PROMOTES}, got {self.promote!r}")
        if self.promote == "split" and self.block_k < 64:
            raise ValueError(f"GemmConfig.promote: 'split' needs block_k >= 64 (two halves of >= 32), got "
                             f"{self.block_k}")
        if self.split_k < 1:
            raise ValueError(f"GemmConfig.split_k: expected >= 1, got {self.split_k}")
        if self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"GemmConfig.num_warps: expected 1, 2, 4, 8 or 16, got {self.num_warps}")
        if self.schedule.startswith("tmaws") and self.num_warps != 4:
            # Triton 3.6's Hopper warp specialization only runs on 4-warp kernels (it adds the other groups).
            raise ValueError("GemmConfig.num_warps: warp-specialized schedules need num_warps=4")
        if self.block_n2 and (self.block_n2 < 16 or self.block_n2 & (self.block_n2 - 1)
                              or 2 * self.block_n2 > self.block_n):
            raise ValueError(f"GemmConfig.block_n2: expected 0 or a power of two in [16, block_n / 2], got "
                             f"{self.block_n2} (block_n {self.block_n})")
        if self.block_n2 and (self.schedule != "tma" or self.swap_ab or self.split_k != 1):
            raise ValueError("GemmConfig.block_n2: needs schedule 'tma', no swap-AB, no split-K")
        if self.schedule == "glws" and (self.block_m != 128 or self.block_k != 128 or self.block_n not in (64, 128, 256)
                                        or self.num_warps != 4 or self.swap_ab):
            raise ValueError("GemmConfig: schedule 'glws' needs block_m = block_k = 128, block_n 64, 128 or 256, "
                             f"num_warps = 4, no swap-AB; got {self.short()}")

    @property
    def uses_tma(self) -> bool:
        return self.schedule != "ptr"

    @property
    def persistent(self) -> bool:
        return self.schedule in ("tmapersistent", "tmawspersistent", "glws")

    @property
    def warp_specialized(self) -> bool:
        return self.schedule in ("tmaws", "tmawspersistent")

    @property
    def tma_store(self) -> bool:
        """The epilogue stores through a TMA descriptor (else pointer stores)."""
        return (self.schedule in ("tma", "tmapersistent") and not self.swap_ab and self.split_k == 1
                and not self.block_n2)

    @property
    def tile_n(self) -> int:
        """Columns of D per tile (block_n + block_n2)."""
        return self.block_n + self.block_n2

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "GemmConfig":
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in fields})

    def short(self) -> str:
        """Compact label for tables: ``128x256x128 w8s4 tmapersistent sub2``."""
        n = f"{self.block_n}+{self.block_n2}" if self.block_n2 else f"{self.block_n}"
        s = f"{self.block_m}x{n}x{self.block_k} w{self.num_warps}s{self.num_stages} {self.schedule}"
        if self.swap_ab:
            s += " swapab"
        if self.split_k > 1:
            s += f" splitk{self.split_k}"
        if self.epilogue_subtile > 1:
            s += f" sub{self.epilogue_subtile}"
        if self.promote != "sync":
            s += f" {self.promote}"
        return s


# ------------------------------------------------------------------------------------------------------------------
# Shared-memory budget -> stages


def smem_bytes(cfg: GemmConfig, out_size: int, stages: int | None = None) -> int:
    """Estimated dynamic shared memory of ``cfg``: the operand ring plus the epilogue staging buffer.

    Calibrated on Triton 3.6's compile metadata for sm_90 with the launcher's alignment specialization (bytes,
    bf16 output unless said; 61 candidate configs checked: none over 227 KB, the largest underestimate 0.4 KB,
    inside the 1 KB spare):
    persistent 128x256x128 s4, TMA store in halves: 229408 (ring 196608 + 32768 staging);
    non-persistent 128x256x128 s4: 196640 (the epilogue reuses the ring once the K loop is done);
    warp-specialized 128x256x128 s4, pointer store: 229608 (ring + 33000 layout-conversion scratch: half a tile);
    warp-specialized 128x128x128 s5 split-K (fp32 partials): 229712 (ring + the full fp32 tile).
    Rule: ring + staging (persistent or warp-specialized), else the larger of the two.
    promote = "split": a stage holds two K blocks (its loop step; measured: persistent 128x128x128 s3, 229496 =
    ring 196608 + 32768 staging), counted so for every mode (the fast mode ignores ``promote``: an overestimate).
    """
    stages = cfg.num_stages if stages is None else stages
    blocks_per_stage = 2 if cfg.promote == "split" else 1
    ring = stages * blocks_per_stage * (cfg.block_m + cfg.tile_n) * cfg.block_k  # FP8: one byte per element
    elem = 4 if cfg.split_k > 1 else out_size
    tile = cfg.block_m * cfg.tile_n * elem
    if cfg.schedule == "glws":
        # Gluon kernel: ring + one (64, <=128) staging buffer per consumer warp group + barriers (compile metadata,
        # 128x128x128 precise: bf16 s4 164056 = 131072 + 32768 + 216; fp32 s4 196824 = 131072 + 65536 + 216).
        # Block scales add a ring of a's scale columns (block_m fp32 per stage), counted for every config (the
        # config does not say its accumulation; 2 KB over for the others; 128x256x128 block s3: 182000 =
        # 147456 + 1536 + 32768 + 240).
        epi_n = min(cfg.block_n, 128)
        staging = 2 * 64 * epi_n * out_size
        sa_ring = stages * cfg.block_m * 4
        return ring + sa_ring + staging + 16 * stages + 256
    if cfg.tma_store:
        epi = tile // cfg.epilogue_subtile
    else:
        epi = tile if elem == 4 else tile // 2
    if cfg.persistent or cfg.warp_specialized or (cfg.tma_store and elem == 4):
        # fp32 output through a TMA store does not reuse the ring even with one tile per program (compile
        # metadata, 128x128x128 s6 tma: 262192 = ring 196608 + 65536 staging; bf16: 196656 = the ring): the
        # H200 refused that 6-stage launch (OutOfResources, session 7), so it is counted as ring + staging.
        return ring + epi + 8 * stages
    return max(ring, epi) + 8 * stages


def max_stages(cfg: GemmConfig, out_size: int, smem_limit: int = SMEM_BYTES_SM90, cap: int = 6) -> int:
    """The deepest pipeline (>= 2 when anything fits, else 1) that fits ``smem_limit``; at most ``cap``."""
    best = 1
    for s in range(2, cap + 1):
        if smem_bytes(cfg, out_size, s) + smem_spare(cfg) <= smem_limit:
            best = s
    return best


def smem_spare(cfg: GemmConfig) -> int:
    """Slack kept below the limit: the Triton kernel's estimate is within 0.4 KB of the compile metadata (1 KB
    kept); the Gluon kernel's allocation is explicit and its estimate never below the metadata (none kept)."""
    return 0 if cfg.schedule == "glws" else _SMEM_SPARE


def with_max_stages(cfg: GemmConfig, out_size: int, smem_limit: int = SMEM_BYTES_SM90, cap: int = 6) -> GemmConfig:
    return dataclasses.replace(cfg, num_stages=max_stages(cfg, out_size, smem_limit, cap))


def fit_stages(cfg: GemmConfig, out_size: int, smem_limit: int = SMEM_BYTES_SM90) -> GemmConfig:
    """``cfg`` itself when it fits ``smem_limit`` with this output size, else with fewer stages."""
    if smem_bytes(cfg, out_size) + smem_spare(cfg) <= smem_limit:
        return cfg
    return dataclasses.replace(cfg, num_stages=max_stages(cfg, out_size, smem_limit, cap=cfg.num_stages))


# ------------------------------------------------------------------------------------------------------------------
# Heuristics (pure functions)


def _next_pow2(x: int) -> int:
    return 1 << max(0, (int(x) - 1).bit_length())


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def wave_efficiency(work_units: int, num_sms: int) -> float:
    """Fraction of SM-slots busy when ``work_units`` equal tiles run on ``num_sms`` SMs (1.0 = no tail wave)."""
    if work_units <= 0:
        return 1.0
    waves = _cdiv(work_units, num_sms)
    return work_units / (waves * num_sms)


def small_m_config(M: int, N: int, K: int, *, precise: bool, num_sms: int, out_size: int = 2) -> GemmConfig:
    """Decode-sized M (<= 64): swap-AB, so N fills wgmma's 64-row dimension and M becomes a 16/32/64-wide tile.

    These shapes are bound by reading b (N x K bytes: 8192 x 8192 e4m3 = 64 MiB, ~16 us at the H200's ~4 TB/s),
    so the goal is every SM streaming b: tiles of 64 rows of N with a deep K pipeline, and split-K when N / 64
    leaves SMs idle (a (SPLIT_K, M, N) fp32 workspace costs M x N x 4 x SPLIT_K bytes: ~2 MB at M=16, N=8192, 4).
    """
    block_n = max(16, _next_pow2(M))  # the M side of the swapped tile
    block_m = 64
    block_k = 128 if precise else 256
    tiles = _cdiv(N, block_m)
    k_blocks = _cdiv(K, block_k)
    # Score = busy fraction of the SMs (tail wave and idle SMs both count), minus 3% for the reduce kernel a
    # split adds (an extra launch and M x N x 4 x SPLIT_K bytes); each split keeps >= 8 K blocks to stream.
    def score(s: int) -> float:
        units = tiles * s
        return wave_efficiency(units, num_sms) * min(1.0, units / num_sms) - (0.03 if s > 1 else 0.0)

    split = 1
    for s in (2, 4, 8):
        if k_blocks // s >= 8 and score(s) > score(split):
            split = s
    cfg = GemmConfig(block_m, block_n, block_k, group_m=1, num_warps=4, num_stages=4, schedule="tma",
                     swap_ab=True, split_k=split)
    # Stage cap 6, measured on the H200 (benchmarks/results/gemm-nvidia-h200-20261129-094602.json, the
    # "fast:nonpersistent" rows differ from "fast" only by this cap): 6 stages ran 1.0-4x faster than 7-8 at every
    # M <= 64 shape (16x8192x8192: 80 vs 20 TFLOPS; 64x8192x28672: 443 vs 241), equal at N = 57344.
    return with_max_stages(cfg, out_size, cap=6)


# The Gluon kernel (schedule "glws") for precise / block-scaled GEMMs with at least this many 128x128 tiles per SM:
# on the H200 it ran 1.16-1.30x the Triton kernel at M >= 1024 (>= 512 tiles), and 0.25-0.40x at M = 128 (64-80
# tiles: one consumer pair per SM on half the SMs) (benchmarks/results/gemm-nvidia-h200-20261201-201913.json).
GLUON_MIN_TILES_PER_SM = 2


# 128x256 tiles (two 128-wide column halves per consumer group, 3 stages) against 128x128 (4 stages) at full waves
# on the H200: precise 1.02-1.08x, block scales 1.05-1.16x over issue 3's / 4's M >= 4096 shapes; 0.92x at
# 1024x10240x8192, where 320 wide tiles make 2.4 waves (benchmarks/results/gemm-nvidia-h200-20261201-234052.json,
# -234124.json). The per-tile speed-up the wave model below assumes:
GLUON_WIDE_GAIN = 1.05


# Block scales with fewer 128x128 tiles than GLUON_MIN_TILES_PER_SM per SM: the Gluon kernel still beat the Triton
# kernel there (whose per-K-block promotion serializes its wgmma), best with one wave of work units: 128x7168x16384
# split-K 2 (112 units) 0.96x cuBLAS blockwise vs 0.63x, 512x7168x16384 128x256 (112 tiles) 0.92x vs 0.59x; more
# units than SMs ran slower at both (gemm-nvidia-h200-20261201-235757.json). Precise / fast at M = 128 did not gain
# (same run, -235733.json): they keep the Triton kernel there.
GLUON_BLOCK_MAX_SPLIT = 4


def effective_split(K: int, split_k: int) -> int:
    """The split-K count the Gluon kernel actually runs: ceil(k_blocks / ceil(k_blocks / split_k)) runs of 128-wide
    K blocks, none empty."""
    kb = _cdiv(K, 128)
    return _cdiv(kb, _cdiv(kb, max(1, split_k)))


def _gluon_block_one_wave(M: int, N: int, K: int, num_sms: int, out_size: int) -> GemmConfig | None:
    """Few-tile block-scaled problems: the (width, split-K) with the most work units that fit one wave; ties go to
    fewer splits (each split writes and re-reads an fp32 M x N partial)."""
    best = None
    for split in range(1, GLUON_BLOCK_MAX_SPLIT + 1):
        if effective_split(K, split) != split:  # that many non-empty runs of K blocks
            continue
        for width in (128, 256):
            units = _cdiv(M, 128) * _cdiv(N, width) * split
            if units <= num_sms and (best is None or units > best[0]):
                best = (units, width, split)
    if best is None:
        return None
    _, width, split = best
    cfg = GemmConfig(128, width, 128, group_m=8, num_warps=4, num_stages=3 if width == 256 else 4,
                     schedule="glws", epilogue_subtile=1, split_k=split)
    return fit_stages(cfg, 4 if split > 1 else out_size)


def gluon_config(M: int, N: int, num_sms: int, out_size: int, *, K: int = 0, block: bool = False
                 ) -> GemmConfig | None:
    """The "glws" config for a precise / block-scaled problem of M x N, or None where the Triton kernel is kept.

    Tile width from whole waves: a 128x256 tile takes ``2 / GLUON_WIDE_GAIN`` of two 128x128 tiles' time, and a
    persistent program runs ceil(tiles / SMs) tiles; the wide tile is taken when its waves finish first. 128x128:
    4 stages (0.99-1.09x the 6-stage form, session 7's first run, gemm-nvidia-h200-20261201-201913.json); 128x256:
    3 stages (0.98-1.06x the 4-stage form in the run above; it also fits fp32 output). ``block``: block-scaled
    operands, which take the Gluon kernel at fewer tiles too (:func:`_gluon_block_one_wave`)."""
    if os.environ.get("TRITONFP8_GLUON", "1") == "0":
        return None
    tiles = _cdiv(M, 128) * _cdiv(N, 128)
    if tiles < GLUON_MIN_TILES_PER_SM * num_sms:
        return _gluon_block_one_wave(M, N, K, num_sms, out_size) if block and K > 0 else None
    wide_tiles = _cdiv(M, 128) * _cdiv(N, 256)
    wide = _cdiv(wide_tiles, num_sms) * 2 / GLUON_WIDE_GAIN < _cdiv(tiles, num_sms)
    cfg = GemmConfig(128, 256 if wide else 128, 128, group_m=8, num_warps=4, num_stages=3 if wide else 4,
                     schedule="glws", epilogue_subtile=1)
    return fit_stages(cfg, out_size)


def heuristic_config(
    M: int, N: int, K: int, *, precise: bool = False, arch: int = 90, num_sms: int = 132, out_size: int = 2,
    gluon: bool = False,
) -> GemmConfig:
    """A config for any shape, from the shape alone (pure; no tuning, no GPU needed).

    sm_90, large M: 128x256x128 tiles with 8 warps (two consumer warp groups, each a 64x256 wgmma accumulator of
    128 fp32 registers per thread), persistent, epilogue stored in two halves so 4 stages fit in 227 KB.
    Precise accumulation adds a second fp32 tile (the fresh per-K-block dot), which spills at 128x256 (measured:
    255 registers, 22 spill stores) and fits at 128x128 (159 registers, no spills): precise uses 128x128x128.
    When 128x256 tiles leave a large tail wave, 128x128 tiles are used instead.
    ``gluon`` (a CUDA device, not the interpreter, which cannot run Gluon): precise problems with enough tiles take
    the Gluon kernel (:func:`gluon_config`).
    """
    if arch < 90 and arch >= 89:
        # Ada: cp.async pipeline into mma.sync (QMMA.16832); 128x128x64 with 8 warps compiles to 128 registers, no
        # spills (offline sm_89 SASS); the operand ring must fit 99 KB. Not measured (no Ada GPU here).
        cfg = GemmConfig(128, 128, 64, group_m=8, num_warps=8, num_stages=4, schedule="ptr")
        return with_max_stages(cfg, out_size, SMEM_BYTES_SM89, cap=4)
    if M <= 64:
        return small_m_config(M, N, K, precise=precise, num_sms=num_sms, out_size=out_size)
    if precise:
        g = gluon_config(M, N, num_sms, out_size) if gluon and arch == 90 else None
        if g is not None:
            return g
        cfg = GemmConfig(128, 128, 128, num_warps=8, schedule="tmapersistent", epilogue_subtile=1)
        if _cdiv(M, 128) * _cdiv(N, 128) < num_sms:
            # As for fast below: one tile per program when the tiles do not fill the SMs (H200, tune run of
            # 2026-11-29: 128x8192x8192 precise 74 us non-persistent s6 vs 80 us persistent s5).
            return with_max_stages(replace(cfg, schedule="tma"), out_size, cap=6)
        return with_max_stages(cfg, out_size, cap=5)
    big = GemmConfig(128, 256, 128, num_warps=8, schedule="tmapersistent", epilogue_subtile=2)
    small = GemmConfig(128, 128, 128, num_warps=8, schedule="tmapersistent", epilogue_subtile=1)
    tiles_big = _cdiv(M, 128) * _cdiv(N, 256)
    tiles_small = _cdiv(M, 128) * _cdiv(N, 128)
    # 128x128 tiles move 1.5x the operand bytes per flop of 128x256 ((128+128)/(128*128) vs (128+256)/(128*256)):
    # weight that as a 10% per-tile cost, and pick the tile with the better effective wave efficiency.
    eff_big = wave_efficiency(tiles_big, num_sms) * min(1.0, tiles_big / num_sms)
    eff_small = 0.9 * wave_efficiency(tiles_small, num_sms) * min(1.0, tiles_small / num_sms)
    cfg = big if eff_big >= eff_small else small
    tiles = tiles_big if cfg is big else tiles_small
    if tiles < num_sms:
        # Fewer tiles than SMs: a persistent grid buys nothing, and on the H200 the one-tile-per-program schedule
        # with 6 stages was 2.0-2.8x faster at M = 128 (128x8192x8192: 434 vs 160 TFLOPS; 128x10240x8192: 537 vs
        # 193), benchmarks/results/gemm-nvidia-h200-20261129-094602.json.
        if M <= 128:
            # One row of tiles (weight-bound): 128x64 tiles with 256-deep K steps, 4 stages (192 KB, one CTA per
            # SM): 0.75-0.98x cuBLAS over the three M = 128 shapes of the set against 0.59-0.83x for 128x128x128
            # s6 (benchmarks/results/gemm-explore-m128-20261203-1320.json). Where 64-wide tiles overflow one CTA
            # per SM and 80-wide ones do not, 64 + 16 columns (N = 10240: 160 -> 128 CTAs; 0.95x cuBLAS against
            # 0.75x, benchmarks/results/gemm-explore-n80-20261203-133800.json).
            n2 = 16 if _cdiv(N, 64) > num_sms >= _cdiv(N, 80) else 0
            return with_max_stages(GemmConfig(128, 64, 256, num_warps=4, schedule="tma", block_n2=n2), out_size,
                                   cap=4)
        return with_max_stages(replace(cfg, schedule="tma"), out_size, cap=6)
    return with_max_stages(cfg, out_size, cap=5)


def block_config(M: int, N: int, K: int, *, arch: int = 90, num_sms: int = 132, out_size: int = 2,
                 gluon: bool = False) -> GemmConfig:
    """Block-scaled operands (1x128 groups of a; 128x128 blocks or 1x128 groups of b): the precise mode's config
    with block_k = 128, so each K step multiplies its fresh dot by exactly one scale column.

    The tile is the precise mode's 128x128 (not 128x256): the per-K-block promotion needs a second fp32 tile in
    registers, which spilled at 128x256 for precise (255 registers, 22 spill stores) and does here too (the block
    scale vectors add registers; see docs/gemm.md for the offline SASS). M <= 64 takes swap-AB (b's rows fill the
    64-row wgmma side) with 128-wide K blocks, as precise does.
    """
    if gluon and arch == 90 and M > 64:
        g = gluon_config(M, N, num_sms, out_size, K=K, block=True)
        if g is not None:
            return g
    cfg = heuristic_config(M, N, K, precise=True, arch=arch, num_sms=num_sms, out_size=out_size, gluon=gluon)
    if cfg.block_k != 128:
        cfg = with_max_stages(replace(cfg, block_k=128), out_size,
                              SMEM_BYTES_SM89 if cfg.schedule == "ptr" else SMEM_BYTES_SM90, cap=cfg.num_stages)
    return cfg


def qkv_config(out_size: int = 2) -> GemmConfig:
    """The fused QKV projection's config on sm_90 where the GEMM's own choice is swap-AB or split-K (M <= 64): the
    quantizing epilogue writes q/k/v by rows of D (tokens), so it needs the normal orientation and one K slice.
    64-row tiles (one wgmma M), 128 columns, block_k 128 (which block scales need too), as deep a pipeline as fits.
    (Ada's heuristic configs are never swap-AB.)"""
    cfg = GemmConfig(64, 128, 128, group_m=1, num_warps=4, num_stages=4, schedule="tma")
    return with_max_stages(cfg, out_size, cap=6)


# ------------------------------------------------------------------------------------------------------------------
# Tuned tables

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


def normalize_gpu_name(name: str) -> str:
    """``"NVIDIA H200"`` -> ``"h200"``; ``"NVIDIA H100 80GB HBM3"`` -> ``"h100_80gb_hbm3"``."""
    s = name.lower().replace("nvidia", "")
    s = re.sub(r"[^a-z0-9]+", "_", s).strip("_")
    return s or "unknown"


def table_path(gpu_name: str, config_dir: Path | None = None) -> Path:
    return (config_dir or CONFIG_DIR) / f"gemm_{normalize_gpu_name(gpu_name)}.json"


def m_bucket(M: int) -> int:
    """Shape bucket of M: the next power of two, at least 16."""
    return max(16, _next_pow2(M))


def table_key(M: int, N: int, K: int, precise: bool, block: bool = False) -> str:
    mode = "block" if block else ("precise" if precise else "fast")
    return f"{m_bucket(M)}x{N}x{K}:{mode}"


@functools.lru_cache(maxsize=None)
def _load_table_file(path: str) -> dict[str, GemmConfig]:
    with open(path) as f:
        data = json.load(f)
    out: dict[str, GemmConfig] = {}
    for e in data.get("entries", []):
        out[e["key"]] = GemmConfig.from_dict(e["config"])
    return out


def load_table(gpu_name: str, config_dir: Path | None = None) -> dict[str, GemmConfig]:
    """The tuned table of ``gpu_name`` (key -> config), or {} when none is shipped.

    Looks for ``gemm_<normalized name>.json``, then for the family (``h100``/``h200`` prefix of the name), so
    ``"NVIDIA H100 80GB HBM3"`` finds ``gemm_h100.json`` when no exact file exists.
    """
    d = config_dir or CONFIG_DIR
    norm = normalize_gpu_name(gpu_name)
    candidates = [d / f"gemm_{norm}.json"]
    fam = norm.split("_")[0]
    if fam != norm:
        candidates.append(d / f"gemm_{fam}.json")
    for p in candidates:
        if p.is_file():
            return _load_table_file(str(p))
    return {}


_pinned: GemmConfig | None = None


@contextlib.contextmanager
def pinned_config(cfg: GemmConfig | None) -> Iterator[None]:
    """Within the block every GEMM uses ``cfg`` (tests, tuning, benchmarks of one variant)."""
    global _pinned
    old = _pinned
    _pinned = cfg
    try:
        yield
    finally:
        _pinned = old


def pinned() -> GemmConfig | None:
    return _pinned


def select_config(
    M: int, N: int, K: int, *, precise: bool, arch: int, num_sms: int, out_size: int, gpu_name: str | None,
    block: bool = False,
) -> tuple[GemmConfig, str]:
    """(config, source): source is "pinned", "table" or "heuristic". ``block``: block-scaled operands (the
    table has its own ``:block`` keys; the heuristic is :func:`block_config`). Repeat GEMM calls do not come here:
    ``tritonfp8.gemm`` keeps the choice in its launch plan."""
    if _pinned is not None:
        return _pinned, "pinned"
    if gpu_name and os.environ.get("TRITONFP8_GEMM_TABLES", "1") != "0":
        cfg = load_table(gpu_name).get(table_key(M, N, K, precise, block))
        if cfg is not None:
            return cfg, "table"
    gluon = gpu_name is not None  # a CUDA device (the interpreter passes no GPU name and cannot run Gluon)
    if block:
        return block_config(M, N, K, arch=arch, num_sms=num_sms, out_size=out_size, gluon=gluon), "heuristic"
    return heuristic_config(M, N, K, precise=precise, arch=arch, num_sms=num_sms, out_size=out_size,
                            gluon=gluon), "heuristic"
