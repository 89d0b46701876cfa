"""``python -m tritonfp8 tune gemm``: offline autotuning of the FP8 GEMM into this GPU's config table.

For every shape (M, N, K) and accumulate mode ("fast", "precise") it times a short list of candidate configs
(:func:`candidates`, the heuristic's choice always among them) together with the cuBLAS peer
(``torch._scaled_mm``, fast or exact accumulation), interleaved (:func:`tritonfp8.bench.harness.bench_interleaved`),
keeps the fastest candidate whose error is within :func:`tritonfp8.gemm.error_bound`, and writes
``tritonfp8/configs/gemm_<gpu>.json`` (or ``--out``), keyed by shape bucket (M rounded up to a power of two, N
and K exact, mode). :func:`tritonfp8._kernels.gemm_configs.select_config` loads it automatically. When ``$OUT`` is
set (a remote run whose files come back from there) a copy of the table and the full log are written there too.

All candidates of a run are compiled first, in parallel (``triton.AsyncCompileMode`` with a thread pool), so the
timing loop does not wait on ptxas.

Shapes: ``--shapes set`` (default: the issue's set, below), ``--shapes quick``, or ``"MxNxK;MxNxK;..."``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from pathlib import Path
from typing import Callable, Iterable

import torch

from tritonfp8 import _backend
from tritonfp8._kernels.gemm_configs import (
    GemmConfig, heuristic_config, m_bucket, smem_bytes, smem_spare, table_key, table_path, with_max_stages,
    SMEM_BYTES_SM90,
)

# The shape set: (N, K) of LLM projections x M, and square sizes.
LLM_NK = ((10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672))
LLM_M = (16, 64, 128, 1024, 4096, 8192)
SHAPE_SET = [(m, n, k) for (n, k) in LLM_NK for m in LLM_M] + [(s, s, s) for s in (4096, 8192, 16384)]
QUICK_SET = [(16, 8192, 8192), (128, 8192, 8192), (1024, 10240, 8192), (4096, 8192, 8192), (8192, 8192, 8192)]

# Where problems live and how they are timed. The CPU tests set "cpu" (kernels in the interpreter) and a stand-in
# timer to check the bookkeeping (candidates, error checks, table files) without a GPU.
_DEVICE = "cuda"
_TIMER = None


def _sync() -> None:
    _backend.sync(_DEVICE)


def _num_sms() -> int:
    from tritonfp8._kernels import gemm as K_

    return K_.num_sms(torch.cuda.current_device()) if _DEVICE == "cuda" else K_.INTERPRETER_SMS


def parse_shapes(spec: str | None) -> list[tuple[int, int, int]]:
    """``None``/"set" -> :data:`SHAPE_SET`; "quick" -> :data:`QUICK_SET`; else "MxNxK;MxNxK" (or commas)."""
    if spec is None or spec == "set":
        return list(SHAPE_SET)
    if spec == "quick":
        return list(QUICK_SET)
    out = []
    for part in spec.replace(",", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        try:
            m, n, k = (int(x) for x in part.lower().split("x"))
        except ValueError:
            raise ValueError(f"--shapes: expected 'MxNxK;...', 'set' or 'quick', got {part!r}") from None
        out.append((m, n, k))
    if not out:
        raise ValueError("--shapes: no shape given")
    return out


# ------------------------------------------------------------------------------------------------------------------
# Candidates (pure)


def _fit(cfgs: Iterable[GemmConfig], out_size: int, cap: int = 8, keep_first: bool = True) -> list[GemmConfig]:
    """Each config at the deepest pipeline that fits, at most ``cap`` stages, deduplicated. The first config (the
    heuristic's) is kept as it is; a config whose ``num_stages`` is 0 gets the deepest that fits, any other keeps
    its stage count when it fits (a stage count is a tuning dimension: on the H200, 6 stages beat 8 at M <= 64)."""
    seen, out = set(), []
    for i, c in enumerate(cfgs):
        if not (keep_first and i == 0):
            if c.num_stages == 0:
                c = with_max_stages(dataclasses.replace(c, num_stages=2), out_size, cap=cap)
            elif smem_bytes(c, out_size) + smem_spare(c) > SMEM_BYTES_SM90:
                c = with_max_stages(c, out_size, cap=c.num_stages)
        if c.num_stages < 2 or smem_bytes(c, out_size) + smem_spare(c) > SMEM_BYTES_SM90:
            continue
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out


def candidates(M: int, N: int, K: int, *, precise: bool, num_sms: int, quick: bool = False,
               out_size: int = 2) -> list[GemmConfig]:
    """Configs worth timing for one shape; the heuristic's choice comes first. ``num_stages=0``: the deepest
    pipeline that fits (at most 8); small problems also try fixed depths, since deeper was measured slower there."""
    G = GemmConfig
    heur = heuristic_config(M, N, K, precise=precise, num_sms=num_sms, out_size=out_size)
    c: list[GemmConfig] = [heur]
    bk = 128
    if M <= 64:
        bn = max(16, 1 << max(0, (M - 1).bit_length()))
        k_blocks = math.ceil(K / 128)
        for br in (64, 128):
            for bkk in ((128,) if precise else (128, 256)):
                for split in (1, 2, 4, 8):
                    if split > 1 and (k_blocks // split < 4 or math.ceil(N / br) * split > 4 * num_sms):
                        continue
                    if quick and (br, split) not in ((64, 1), (64, 2), (128, 2), (64, 4)):
                        continue
                    for st in ((4, 6) if quick else (3, 4, 6)):
                        c.append(G(br, bn, bkk, group_m=1, num_warps=4, num_stages=st, schedule="tma",
                                   swap_ab=True, split_k=split))
        if not quick:
            for split in (1, 2):
                c.append(G(128, bn, 128, group_m=1, num_warps=4, num_stages=0, schedule="tmaws", swap_ab=True,
                           split_k=split))
    elif M <= 256:
        for st in (3, 4, 6):
            c += [
                G(128, 64, bk, num_warps=4, num_stages=st, schedule="tma"),
                G(64, 128, bk, group_m=1, num_warps=4, num_stages=st, schedule="tma", swap_ab=True),
                G(128, 128, bk, num_warps=8, num_stages=st, schedule="tma"),
                G(128, 128, bk, num_warps=8, num_stages=st, schedule="tma", split_k=2),
            ]
        c += [
            G(128, 64, bk, num_warps=4, num_stages=0, schedule="tmapersistent"),
            G(64, 64, bk, num_warps=4, num_stages=0, schedule="tma"),
            G(128, 128, bk, num_warps=4, num_stages=0, schedule="tmaws"),
            # the Gluon kernel (warp-specialized promotion): 1.13x at 128x57344x8192 precise (session 7); its
            # 128x256 form and split-K (block scales at M = 128: split-K 2 0.96x cuBLAS vs 0.63x, session 8)
            G(128, 128, bk, num_warps=4, num_stages=0, schedule="glws", epilogue_subtile=1),
            G(128, 256, bk, num_warps=4, num_stages=3, schedule="glws", epilogue_subtile=1),
            G(128, 128, bk, num_warps=4, num_stages=4, schedule="glws", epilogue_subtile=1, split_k=2),
        ]
        # 80-column tiles (block_n2) with 128-deep K steps, for both modes (precise promotes every 128 K)
        c += [G(128, 64, bk, num_warps=4, num_stages=st, schedule="tma", block_n2=16) for st in (4, 6)]
        if not precise:
            c += [G(128, 256, bk, num_warps=8, num_stages=0, schedule="tma", epilogue_subtile=2, split_k=2),
                  G(128, 128, bk, num_warps=4, num_stages=0, schedule="tmaws", split_k=2)]
            # 256-deep K steps, as the M <= 64 path (whose swap-AB 128x64x256 streams weights as fast as cuBLAS at
            # M = 64): half the barriers per byte, larger TMA boxes; swap-AB 128 x 64 runs M = 128 as two M = 64
            # tiles that read each weight tile back to back (the second read from L2).
            for st in (3, 4):
                c += [G(128, 64, 256, num_warps=4, num_stages=st, schedule="tma"),
                      G(64, 128, 256, group_m=1, num_warps=4, num_stages=st, schedule="tma", swap_ab=True),
                      G(128, 64, 256, group_m=1, num_warps=4, num_stages=st, schedule="tma", swap_ab=True)]
            c += [G(128, 128, 256, num_warps=8, num_stages=3, schedule="tma"),
                  G(128, 128, 256, group_m=1, num_warps=4, num_stages=3, schedule="tma", swap_ab=True)]
            # Two column pieces per tile (block_n2), 256-deep: widths 80 and 96 (N = 10240: 128 or 107 tiles, one
            # per SM, where 64-wide tiles make 160 and 128-wide 80); the 128-deep forms are in both modes' list above
            c += [G(128, 64, 256, num_warps=4, num_stages=st, schedule="tma", block_n2=16) for st in (3, 4)]
            c += [G(128, 64, 256, num_warps=4, num_stages=3, schedule="tma", block_n2=32)]
    else:
        if precise:
            c += [
                # 64x128 on one warpgroup, 3 stages: 3 CTAs per SM overlap one CTA's promotion with others' wgmma
                G(64, 128, bk, num_warps=4, num_stages=3, schedule="tma"),
                G(128, 128, bk, num_warps=8, num_stages=0, schedule="tma"),
                G(128, 128, bk, num_warps=8, num_stages=4, schedule="tmapersistent"),
                G(128, 128, bk, num_warps=4, num_stages=0, schedule="tmaws"),
                G(128, 128, bk, num_warps=4, num_stages=0, schedule="tmawspersistent"),
                # the Gluon kernel: 1.16-1.30x the Triton configs above at M >= 1024 (session 7); 128x256 (two
                # 128-wide halves per consumer group) 1.02-1.08x its 128x128 form at full waves (session 8)
                G(128, 128, bk, num_warps=4, num_stages=4, schedule="glws", epilogue_subtile=1),
                G(128, 128, bk, num_warps=4, num_stages=0, schedule="glws", epilogue_subtile=1),
                G(128, 256, bk, num_warps=4, num_stages=3, schedule="glws", epilogue_subtile=1),
            ]
        else:
            c += [
                G(128, 256, bk, num_warps=8, num_stages=0, schedule="tmapersistent", epilogue_subtile=2),
                G(128, 256, bk, num_warps=8, num_stages=0, schedule="tma", epilogue_subtile=2),
                G(128, 256, bk, num_warps=4, num_stages=0, schedule="tmaws"),
                G(128, 256, bk, num_warps=4, num_stages=0, schedule="tmawspersistent"),
                G(256, 128, bk, num_warps=8, num_stages=0, schedule="tmapersistent", epilogue_subtile=2),
                G(128, 128, bk, num_warps=8, num_stages=0, schedule="tmapersistent"),
                G(128, 128, bk, num_warps=8, num_stages=0, schedule="tma"),
                G(128, 128, bk, num_warps=4, num_stages=0, schedule="glws", epilogue_subtile=1),
                G(128, 256, bk, num_warps=4, num_stages=0, schedule="glws", epilogue_subtile=1),
            ]
            if not quick:
                c += [G(128, 256, 64, num_warps=8, num_stages=0, schedule="tmapersistent", epilogue_subtile=2),
                      G(128, 256, bk, num_warps=8, num_stages=3, schedule="tma")]
    if _backend.interpreting():  # Gluon kernels do not run in the interpreter
        c = [x for x in c if x.schedule != "glws"]
    return _fit(c, out_size)


# ------------------------------------------------------------------------------------------------------------------
# Problems, launchers, peers (GPU)


@dataclasses.dataclass
class Problem:
    """Inputs of one shape on the GPU: a (M, K), b (N, K) e4m3 ~ N(0,1); per-tensor and rowwise scales; the fp64
    reference of the dequantized product, computed once (fp64 GEMM on the H200: ~16 ms at 8192^3)."""

    M: int
    N: int
    K: int
    a: torch.Tensor
    b: torch.Tensor
    sa: torch.Tensor
    sb: torch.Tensor
    sa_row: torch.Tensor
    sb_row: torch.Tensor
    out: torch.Tensor
    _ref: torch.Tensor | None = None
    _ref_row: torch.Tensor | None = None

    @classmethod
    def make(cls, M: int, N: int, K: int, device: str | None = None, seed: int = 0) -> "Problem":
        device = device or _DEVICE
        g = torch.Generator(device=device).manual_seed(seed)
        a = torch.randn(M, K, device=device, generator=g).to(torch.float8_e4m3fn)
        b = torch.randn(N, K, device=device, generator=g).to(torch.float8_e4m3fn)
        sa = torch.tensor([0.5], device=device)
        sb = torch.tensor([0.25], device=device)
        sa_row = torch.rand(M, 1, device=device, generator=g) + 0.5
        sb_row = torch.rand(1, N, device=device, generator=g) + 0.5
        out = torch.empty(M, N, device=device, dtype=torch.bfloat16)
        return cls(M, N, K, a, b, sa, sb, sa_row, sb_row, out)

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K

    @property
    def bytes(self) -> float:
        """Bytes a GEMM must move at least: a, b once, C (bf16) once."""
        return self.M * self.K + self.N * self.K + 2 * self.M * self.N

    def ref(self, rowwise: bool = False) -> torch.Tensor:
        attr = "_ref_row" if rowwise else "_ref"
        if getattr(self, attr) is None:
            sa, sb = (self.sa_row, self.sb_row) if rowwise else (self.sa, self.sb)
            a = self.a.double() * sa.double()
            b = self.b.double() * (sb.double().reshape(-1, 1) if rowwise else sb.double())
            setattr(self, attr, a @ b.T)
        return getattr(self, attr)

    def free_refs(self) -> None:
        self._ref = self._ref_row = None


def rel_error_gpu(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| on the device, in the reference's precision (fp64 here); NaN/inf -> inf."""
    d = out.to(ref.dtype) - ref
    num = torch.linalg.vector_norm(d).item()
    den = torch.linalg.vector_norm(ref).item()
    if not math.isfinite(num):
        return math.inf
    return num / den if den > 0 else (0.0 if num == 0 else math.inf)


def ours(p: Problem, cfg: GemmConfig | None, *, precise: bool, rowwise: bool = False,
         warmup: bool = False) -> Callable[[], torch.Tensor]:
    """A no-argument launcher of our kernel on ``p`` with ``cfg`` (None: the library's own choice via gemm())."""
    import importlib

    from tritonfp8._backend import arch_of

    G = importlib.import_module("tritonfp8.gemm")  # the package attribute ``tritonfp8.gemm`` is the op, not the module
    from tritonfp8._kernels import gemm as K_

    sa, sb = (p.sa_row, p.sb_row) if rowwise else (p.sa, p.sb)
    acc = "precise" if precise else "fast"
    if cfg is None:
        return lambda: G.gemm(p.a, p.b, sa, sb, accumulate=acc, out=p.out)
    arch = arch_of(p.a.device)
    sms = _num_sms()
    sa1, sb1 = sa.reshape(-1), sb.reshape(-1)

    def run():
        return K_.launch_gemm(p.a, p.b, sa1, sb1, None, None, p.out, cfg, a_vec=rowwise, b_vec=rowwise,
                              precise=precise, arch=arch, sms=sms, warmup=warmup)

    return run


def cublas(p: Problem, *, fast: bool, rowwise: bool = False) -> Callable[[], torch.Tensor]:
    """``torch._scaled_mm`` on the same inputs (b.t() is the column-major (K, N) operand cuBLAS wants)."""
    sa, sb = (p.sa_row, p.sb_row) if rowwise else (p.sa, p.sb)
    bt = p.b.t()
    return lambda: torch._scaled_mm(p.a, bt, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                    use_fast_accum=fast)


def prewarm(jobs: list[Callable[[], object]], workers: int | None = None) -> float:
    """Compile every warmup launcher in ``jobs`` in parallel; returns seconds. Falls back to serial compiles if
    ``triton.AsyncCompileMode`` is unavailable; compile errors surface later, at the first real launch."""
    import triton
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.time()
    workers = workers or min(32, os.cpu_count() or 4)
    mode = getattr(triton, "AsyncCompileMode", None)
    if mode is None:
        for j in jobs:
            try:
                j()
            except Exception:
                pass
        return time.time() - t0
    with ThreadPoolExecutor(workers) as ex:
        with mode(ex, ignore_errors=True):
            for j in jobs:
                try:
                    j()
                except Exception:
                    pass
    return time.time() - t0


# ------------------------------------------------------------------------------------------------------------------
# Canary: warp-specialized schedules run first in a child process with a timeout

# Triton's automatic warp specialization on sm_90 is young; a producer/consumer barrier bug would hang the GPU
# rather than fail. So before any in-process launch of a "tmaws*" schedule, a child process runs each of these on
# small problems (with correctness checks) under a timeout; a hang or a wrong result removes them all.
CANARY_CONFIGS = (
    (GemmConfig(128, 256, 128, num_warps=4, num_stages=4, schedule="tmaws"), False),
    (GemmConfig(128, 256, 128, num_warps=4, num_stages=4, schedule="tmawspersistent"), False),
    (GemmConfig(128, 128, 128, num_warps=4, num_stages=5, schedule="tmaws"), True),
    (GemmConfig(128, 128, 128, num_warps=4, num_stages=5, schedule="tmawspersistent"), True),
    (GemmConfig(128, 128, 128, num_warps=4, num_stages=4, schedule="tmaws", split_k=2), False),
    (GemmConfig(128, 16, 128, group_m=1, num_warps=4, num_stages=6, schedule="tmaws", swap_ab=True), False),
)


WS_ENV = "TRITONFP8_TRY_WS"


def ws_opted_in() -> bool:
    """Warp-specialized schedules are opt-in (``TRITONFP8_TRY_WS=1``): on the H200 with triton 3.6.0 the canary
    below hung (no result within its 240 s timeout; tune and bench were stopped waiting for it, 2026-11-29), and
    run one config per process (``scripts/gpu_ws_probe.py``, session 5) the precise and block-scaled 128x128
    configs hung each, so by default they are neither tuned nor benchmarked."""
    return os.environ.get(WS_ENV, "0") not in ("", "0")


def _canary_child() -> int:
    from tritonfp8.gemm import error_bound

    results = {}
    for cfg, precise in CANARY_CONFIGS:
        label = cfg.short() + (" precise" if precise else "")
        try:
            M = 16 if cfg.swap_ab else 700
            p = Problem.make(M, 1040, 1024)
            for rowwise in (False, True):
                fn = ours(p, cfg, precise=precise, rowwise=rowwise)
                for _ in range(3):
                    fn()
                _sync()
                err = rel_error_gpu(p.out, p.ref(rowwise))
                bound = error_bound(torch.bfloat16, p.K, "precise" if precise else "fast", tensor_core=True)
                if not err <= bound:
                    raise RuntimeError(f"error {err:.3g} > bound {bound:.3g} (rowwise={rowwise})")
            results[label] = "ok"
        except Exception as e:
            results[label] = f"{type(e).__name__}: {str(e)[:200]}"
        print(json.dumps({label: results[label]}), flush=True)
    print("CANARY " + json.dumps(results), flush=True)
    return 0


class Canary:
    """Runs :func:`_canary_child` in a subprocess (start early, collect later). ``result()`` -> (ok, details)."""

    def __init__(self, timeout: float = 240):
        import subprocess
        import sys

        self.timeout = timeout
        self.t0 = time.time()
        self.proc = subprocess.Popen([sys.executable, "-m", "tritonfp8.tune", "--canary"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)

    def result(self) -> tuple[bool, dict]:
        import subprocess

        left = max(1.0, self.timeout - (time.time() - self.t0))
        try:
            out, _ = self.proc.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
            return False, {"timeout": f"no result within {self.timeout:.0f} s (hang?)", "partial": out[-2000:]}
        for line in out.splitlines()[::-1]:
            if line.startswith("CANARY "):
                res = json.loads(line[len("CANARY "):])
                return all(v == "ok" for v in res.values()), res
        return False, {"crash": f"exit {self.proc.returncode}", "output": out[-2000:]}


# ------------------------------------------------------------------------------------------------------------------
# Tuning


def tune_problem(p: Problem, *, precise: bool, cands: list[GemmConfig], repeats: int = 2, warmup_ms: float = 10,
                 rep_ms: float = 40, log: Callable[[str], None] = print) -> dict:
    """Time ``cands`` and the cuBLAS peer on ``p`` interleaved; the fastest correct candidate wins."""
    from tritonfp8.bench import harness as H
    from tritonfp8.gemm import error_bound

    bound = error_bound(torch.bfloat16, p.K, "precise" if precise else "fast", tensor_core=True)
    ref = p.ref()
    fns: dict[str, Callable] = {}
    errors: dict[str, float] = {}
    failed: dict[str, str] = {}
    for cfg in cands:
        label = cfg.short()
        fn = ours(p, cfg, precise=precise)
        try:
            p.out.fill_(float("nan"))
            fn()
            _sync()
        except Exception as e:  # e.g. out of shared memory at load time
            failed[label] = f"{type(e).__name__}: {str(e)[:160]}"
            continue
        err = rel_error_gpu(p.out, ref)
        errors[label] = err
        if err > bound:
            failed[label] = f"error {err:.3g} > bound {bound:.3g}"
            continue
        fns[label] = fn
    peer = "cublas_fast" if not precise else "cublas_exact"
    peer_fn = cublas(p, fast=not precise)
    peer_err = rel_error_gpu(peer_fn(), ref)
    fns[peer] = peer_fn
    times = H.bench_interleaved(fns, repeats=repeats, warmup_ms=warmup_ms, rep_ms=rep_ms, timer=_TIMER)
    med = {k: H.summarize(v).median for k, v in times.items()}
    ranked = sorted((k for k in med if k != peer), key=lambda k: med[k])
    by_label = {c.short(): c for c in cands}
    best = ranked[0] if ranked else None
    entry = {
        "key": table_key(p.M, p.N, p.K, precise),
        "shape": [p.M, p.N, p.K],
        "m_bucket": m_bucket(p.M),
        "accumulate": "precise" if precise else "fast",
        "config": by_label[best].as_dict() if best else None,
        "ms": med.get(best) if best else None,
        "tflops": p.flops / (med[best] * 1e-3) / 1e12 if best else None,
        "rel_error": errors.get(best) if best else None,
        "peer": peer,
        "peer_ms": med[peer],
        "peer_tflops": p.flops / (med[peer] * 1e-3) / 1e12,
        "peer_rel_error": peer_err,
        "ratio_vs_peer": med[peer] / med[best] if best else None,
        "candidates": [{"config": k, "ms": med[k], "rounds": times[k], "rel_error": errors.get(k)} for k in ranked],
        "failed": failed,
    }
    return entry


def tune(shapes: list[tuple[int, int, int]], *, modes=("fast", "precise"), quick: bool = False, repeats: int = 2,
         progress: bool = True, log: Callable[[str], None] = print, use_ws: bool | None = None) -> list[dict]:
    """Tune every shape and mode; returns the table entries (see :func:`tune_problem`). Warp-specialized
    candidates take part only if the :class:`Canary` passes."""
    sms = _num_sms()
    if use_ws is None:
        use_ws = ws_opted_in()
    use_ws = use_ws and _DEVICE == "cuda"
    canary = Canary() if use_ws else None
    # Compile everything first, in parallel (one small problem per shape class suffices: kernels do not depend on
    # the problem size, only on the config, dtypes and the 16-divisibility of the sizes).
    plan = []
    for (M, N, K) in shapes:
        for mode in modes:
            precise = mode == "precise"
            plan.append((M, N, K, precise, candidates(M, N, K, precise=precise, num_sms=sms, quick=quick)))
    small = Problem.make(16, 128, 256)
    big = Problem.make(256, 256, 256)
    jobs, seen = [], set()
    for (M, N, K, precise, cands) in plan:
        for cfg in cands:
            if cfg.warp_specialized and not use_ws:
                continue
            if (cfg, precise) in seen:
                continue
            seen.add((cfg, precise))
            p = small if cfg.swap_ab else big
            jobs.append(ours(p, cfg, precise=precise, warmup=True))
    if _DEVICE == "cuda":
        secs = prewarm(jobs)
        log(f"compiled {len(jobs)} kernel configs in {secs:.1f} s")
    ws_ok = _DEVICE != "cuda"  # the interpreter runs warp-specialized configs like the others
    if canary is not None:
        ws_ok, details = canary.result()
        log(f"warp-specialization canary: {'passed' if ws_ok else 'FAILED: warp-specialized schedules skipped'} "
            f"{json.dumps(details)}")
    if not ws_ok:
        plan = [(M, N, K, pr, [c for c in cands if not c.warp_specialized]) for (M, N, K, pr, cands) in plan]

    entries = []
    it = plan
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(plan), desc="tune gemm", unit="case")
    current = None
    for (M, N, K, precise, cands) in it:
        if current is None or (current.M, current.N, current.K) != (M, N, K):
            current = None
            if _DEVICE == "cuda":
                torch.cuda.empty_cache()
            current = Problem.make(M, N, K)
        e = tune_problem(current, precise=precise, cands=cands, repeats=repeats, log=log)
        entries.append(e)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"{M}x{N}x{K} {e['accumulate']} {e['ratio_vs_peer'] or 0:.2f}x")
    if bar is not None:
        bar.close()
    return entries


def write_table(entries: list[dict], path: Path, env: dict) -> Path:
    """Write (merge into) the per-GPU table at ``path``: existing entries with other keys are kept, and so is the
    existing note (the table's history, added to by hand)."""
    old = {}
    note = "written by `python -m tritonfp8 tune gemm`; key = <M bucket>x<N>x<K>:<accumulate>"
    if path.is_file():
        try:
            prev = json.loads(path.read_text())
            old = {e["key"]: e for e in prev.get("entries", [])}
            note = prev.get("note") or note
        except (ValueError, KeyError, AttributeError):
            old = {}
    for e in entries:
        if e.get("config"):
            old[e["key"]] = {k: e[k] for k in ("key", "shape", "accumulate", "config", "tflops", "peer_tflops",
                                                 "ratio_vs_peer", "rel_error", "peer_rel_error")}
            # a merged table mixes runs: each entry says when and with which timer it was measured
            old[e["key"]]["measured"] = {"date": env.get("date"), "timer": env.get("timer")}
    data = {
        "gpu": env.get("gpu"),
        "note": note,
        # env of the latest run; each entry's "measured" says when and how it was timed
        "env": {k: env.get(k) for k in ("date", "gpu", "capability", "sm_count", "torch", "triton", "cuda",
                                        "driver", "ptxas", "timer")},
        "entries": sorted(old.values(), key=lambda e: e["key"]),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def print_summary(entries: list[dict]) -> None:
    from tritonfp8.bench import harness as H

    rows = []
    for e in entries:
        rows.append({
            "shape": "x".join(map(str, e["shape"])), "mode": e["accumulate"],
            "config": GemmConfig.from_dict(e["config"]).short() if e["config"] else "none passed",
            "tflops": e["tflops"], "peer": e["peer"], "peer_tflops": e["peer_tflops"], "ratio": e["ratio_vs_peer"],
            "err": e["rel_error"], "peer_err": e["peer_rel_error"],
            "runner_up": (f"{e['candidates'][1]['config']} {e['candidates'][0]['ms'] / e['candidates'][1]['ms']:.3f}"
                          if len(e["candidates"]) > 1 else ""),
        })
    H.print_table(rows, [H.Column("shape", justify="left"), H.Column("mode"), H.Column("config", justify="left"),
                         H.Column("tflops", "TFLOPS", "{:.0f}"), H.Column("peer"),
                         H.Column("peer_tflops", "peer TFLOPS", "{:.0f}"), H.Column("ratio", "ratio", "{:.3f}"),
                         H.Column("err", "err", "{:.2e}"), H.Column("peer_err", "peer err", "{:.2e}"),
                         H.Column("runner_up", "runner-up (t_best/t_2nd)", justify="left")],
                  title="tune gemm: best config per shape (ratio = peer ms / ours ms, > 1: ours faster)")


def run(args) -> int:
    if args.op != "gemm":
        print(f"op: only 'gemm' can be tuned, got {args.op!r}")
        return 2
    if not torch.cuda.is_available():
        print("tune gemm needs a CUDA GPU (none found): tables are measured, not guessed")
        return 2
    from tritonfp8.bench import harness as H

    shapes = parse_shapes(args.shapes)
    H.set_timer_mode("graph" if getattr(args, "graph", False) else "events")
    env = H.environment_info()
    t0 = time.time()
    entries = tune(shapes, quick=args.quick, repeats=2)
    print_summary(entries)
    path = Path(args.out) if args.out else table_path(env["gpu"] or "unknown")
    write_table(entries, path, env)
    print(f"wrote {path} ({len(entries)} entries) in {time.time() - t0:.0f} s")
    out_dir = os.environ.get("OUT")
    if out_dir:
        write_table(entries, Path(out_dir) / path.name, env)
        log_path = Path(out_dir) / "tune_gemm_log.json"
        log_path.write_text(json.dumps({"env": env, "entries": entries}, indent=1, default=str) + "\n")
        print(f"copies in $OUT: {path.name}, {log_path.name}")
    return 0


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--canary"]:
        sys.exit(_canary_child())
    print("usage: python -m tritonfp8 tune gemm [--shapes ...] (this module's own entry is --canary)")
    sys.exit(2)
