"""Prepared in session 10 (not run yet): Nsight Compute profiles of the two open "same kernel, slower form" pairs,
to name the limiting factor the timing runs could not:

- GEMM (issue 4): the library's default for 4096x7168x16384 with block scales vs in precise mode (both the Gluon
  kernel on 128x256 tiles, gemm-nvidia-h200-20261202-051652.json / -000309.json). Block runs 10-15% slower (s8 call 6) while its inner K loop has only 23 more
  instructions per K block offline (212 vs 189: 2 LDS of a's scale column, 10 IMAD, 4 FMUL).
- Attention (issue 5): the Gluon forward's serial loop vs its FA3-style overlapped loop with fp32 P carried, hd128,
  B2 H16 S8192 (0.90x in s10 call 2 although offline the softmax's MUFU.EX2 run under P·V).

Usage on the device: ``python3 scripts/gpu_profile_pairs.py`` (``PROFILE_GROUP=fast``: issue 3's per-tensor fast
pair instead, ours vs cuBLAS fast accumulation; ``PROFILE_GROUP=grouped``: issue 4's grouped G 8 call vs the dense
GEMM of the same total shape, session 13; ``PROFILE_GROUP=quarters``: the halves / quarters forms of the promoting
128x256 kernel, session 14; ``PROFILE_GROUP=rowsums``: the hd128 attention default's row sums on the tensor core
vs FADD, session 15; ``PROFILE_GROUP=decode``: issue 6's short decode steps, session 23; with
``PROFILE_DECODE=s35`` the current B 8 ctx 4096 forms) (the parent runs itself under ncu through the
library's harness, prints a table per kernel: duration, SM / memory throughput, tensor-pipe %, top stall reasons,
and writes JSON under $OUT). ``--child`` is the profiled process: it warms every case up, then runs each once
between ``torch.cuda.profiler.start()`` and ``stop()``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys

import torch


def _fast_cases():
    """Issue 3's per-tensor fast pair: the library's default against cuBLAS fast accumulation, at a large shape and
    at the worst one of the session-9 table (128 x 10240 x 8192, 0.84x)."""
    from tritonfp8 import gemm

    dev, cases = "cuda", {}
    one = torch.tensor(1.0, device=dev)
    for M, N, K in ((4096, 7168, 16384), (128, 10240, 8192)):
        a = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn)
        out = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
        cases[f"gemm_fast_{M}x{N}x{K}"] = (lambda a, b, out: lambda: gemm(a, b, one, one, out=out))(a, b, out)
        cases[f"cublas_fast_{M}x{N}x{K}"] = (lambda a, bt: lambda: torch._scaled_mm(
            a, bt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True))(a, b.t())
    return cases


def _grouped_cases():
    """Issue 4's grouped G 8 gap (session 13: 0.86-0.92x our dense GEMM of the same total shape on the same Gluon
    kernel, GPU time, also with per-tensor scales): the grouped call (8 groups of 1024 rows, each with its own b)
    against the dense GEMM (one b) at 4096x7168, precise per-tensor scales; DRAM bytes and L2 hit rates
    (MemoryWorkloadAnalysis) tell whether per-group b traffic is the cause."""
    from tritonfp8 import gemm, grouped_gemm
    from tritonfp8.bench.suites import grouped as suite

    x = suite.make_inputs(8, 4096, 7168, [1024] * 8, "tensor", "cuda")
    out = torch.empty(x.M, 4096, device="cuda", dtype=torch.bfloat16)
    one = torch.ones((), device="cuda")
    return {
        "grouped_g8x1024_4096x7168_precise": lambda: grouped_gemm(x.a, x.b, x.sa, x.sb, m_sizes=x.m_sizes, out=out,
                                                                  accumulate="precise", check=False),
        "dense_8192x4096x7168_precise": lambda: gemm(x.a, x.b[0], one, one, out=out, accumulate="precise"),
    }


def _quarters_cases():
    """Session 14: the promoting 128x256 Gluon GEMM in halves vs quarters (``gemm_gluon.QUARTERS``), block scales
    and precise at 4096x7168x16384 (quarters: 1.02x on block, 0.95-0.99x on precise in the timing A/B; the
    profiles' tensor-pipe busy fractions and stalls tell why they differ). Kernel names are the same for both
    forms: the cases run in this order."""
    import importlib

    from tritonfp8 import gemm
    from tritonfp8._kernels import gemm as kgemm
    from tritonfp8._kernels import gemm_gluon as gg

    plans = importlib.import_module("tritonfp8.gemm")._PLANS
    dev = "cuda"
    M, N, K = 4096, 7168, 16384
    a = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn)
    sa_blk = (torch.rand(K // 128, M, device=dev) + 0.5).t()
    sb_blk = torch.rand(N // 128, K // 128, device=dev) + 0.5
    one = torch.tensor(1.0, device=dev)
    out = torch.empty(M, N, device=dev, dtype=torch.bfloat16)

    def run(flag, scales, acc):
        def fn():
            gg.QUARTERS = flag
            plans.clear()
            kgemm._TEMPLATES.clear()
            gemm(a, b, *scales, accumulate=acc, out=out)
        return fn

    return {
        "block_halves": run(False, (sa_blk, sb_blk), "precise"),
        "block_quarters": run(True, (sa_blk, sb_blk), "precise"),
        "precise_halves": run(False, (one, one), "precise"),
        "precise_quarters": run(True, (one, one), "precise"),
    }


def _rowsums_cases():
    """Session 15 (prepared, not run): the hd128 attention default with the row sums on the tensor core
    (``row_sum_mma``, 428 instructions per key block offline, wgmma chains not serialized) against the FADD form
    (491, every QGMMA waited), B2 H16 S8192 dense and causal: 1.02-1.03x in the timing runs, less than the 13%
    fewer instructions; the stall reasons per form say what binds the loop now (neither MUFU nor issue alone:
    an eighth of the exp2s on the FMA pipe changed nothing)."""
    from tritonfp8.attention import default_config, kernel_only_fn

    dev = "cuda"
    B, H, S, D = 2, 16, 8192, 128
    q, k, v = (torch.randn(B, S, H, D, device=dev).to(torch.float8_e4m3fn) for _ in range(3))
    ones = torch.ones((), device=dev)
    kw = dict(q_descale=ones, k_descale=ones, v_descale=ones)
    rs = default_config(128)
    cases = {}
    for causal in (False, True):
        tag = "causal" if causal else "dense"
        cases[f"attn_rsmma_hd128_S8192_{tag}"] = kernel_only_fn(q, k, v, config=rs, causal=causal, **kw)
        cases[f"attn_fadd_hd128_S8192_{tag}"] = kernel_only_fn(q, k, v, config=rs.evolve(row_sum_mma=False),
                                                                causal=causal, **kw)
    return cases


def _decode_cases():
    """Session 23: issue 6's short decode steps under Nsight Compute (the heuristic's config each, eager call): where
    the one-warp TMA kernels' warps stall at B 8 ctx 4096 (pages of 64: 16 splits of 256 tokens; pages of 16: the
    per-box kernel, 8 splits), 19.8 us with every page in L2 against the copy's 18.7 us from HBM (session 19), and
    at the near-miss B 8 ctx 32768 pages of 16 (83-84% of copy) and B 32 ctx 4096 pages of 64 (80%). ncu replays
    each kernel after flushing the caches (--cache-control all): the L2 starts clean, not full of dirty lines."""
    from tritonfp8 import decode as dec
    from tritonfp8.bench.suites import decode as suite

    cases = {}
    # PROFILE_DECODE=gluon (prepared in session 23, not run): the Gluon kernel at B 8 ctx 4096 (pinned, 8 splits:
    # where it lost, 0.81-0.96x) and the heuristic's Gluon pick at B 8 ctx 32768, to see its fixed costs.
    gl_cfg = dec.DecodeConfig(kernel="gluon", merge="kernel", block_n=32, num_warps=1, num_stages=3, num_splits=8, pdl=True)
    todo = ((8, 4096, 32, 64, None), (8, 4096, 32, 16, None), (8, 32768, 32, 16, None), (32, 4096, 32, 64, None))
    if os.environ.get("PROFILE_DECODE") == "gluon":
        todo = ((8, 4096, 32, 64, gl_cfg), (8, 4096, 32, 64, None), (8, 32768, 32, 16, None))
    if os.environ.get("PROFILE_DECODE") == "s35":
        # Session 35 (prepared, not run): B 8 ctx 4096 on the heuristic's current form (the hinted Gluon rule, row
        # stores: 72-76% of copy on an H100 against hinted read floors of 85.6-92.7%), Hq 64 / 32 on pages of 64
        # and Hq 64 on pages of 16, and the in-kernel merge's form at Hq 64: how the split kernel's time divides
        # between prologue, loop and epilogue (the last profile, session 24, predates the hints and row stores)
        inline = dataclasses.replace(gl_cfg, l2_evict_first=True, merge="inline", pdl=False)
        todo = ((8, 4096, 64, 64, None), (8, 4096, 32, 64, None), (8, 4096, 64, 16, None), (8, 4096, 64, 64, inline))
    for b, ctx, hq, page, cfg in todo:
        pc = suite._paged(b, ctx, page, "cuda")
        q = torch.randn(b, 1, hq, suite.D, device="cuda", dtype=torch.bfloat16)
        tag = "" if cfg is None else "_inline" if cfg.merge == "inline" else "_gluon"
        cases[f"decode_B{b}_ctx{ctx}_hq{hq}_p{page}{tag}"] = (lambda pc, q, cfg: lambda: dec.decode_attention(
            q, pc.k, pc.v, pc.table, pc.lens, k_descale=pc.descale, v_descale=pc.descale, config=cfg))(pc, q, cfg)
    return cases


def _cases():
    if os.environ.get("PROFILE_GROUP") == "decode":
        return _decode_cases()
    if os.environ.get("PROFILE_GROUP") == "rowsums":
        return _rowsums_cases()
    if os.environ.get("PROFILE_GROUP") == "quarters":
        return _quarters_cases()
    if os.environ.get("PROFILE_GROUP") == "fast":
        return _fast_cases()
    if os.environ.get("PROFILE_GROUP") == "grouped":
        return _grouped_cases()
    from tritonfp8 import gemm
    from tritonfp8.attention import AttnConfig, kernel_only_fn

    dev = "cuda"
    M, N, K = 4096, 7168, 16384
    a = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn)
    sa_blk = (torch.rand(K // 128, M, device=dev) + 0.5).t()  # outer-dim-major, as cuBLAS and our kernel read it
    sb_blk = torch.rand(N // 128, K // 128, device=dev) + 0.5
    one = torch.tensor(1.0, device=dev)
    out = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    bt, sbt = b.t(), sb_blk.t()
    cases = {
        "gemm_glws_precise_4096x7168x16384": lambda: gemm(a, b, one, one, accumulate="precise", out=out),
        "gemm_glws_block_4096x7168x16384": lambda: gemm(a, b, sa_blk, sb_blk, out=out),
        # the peers on the same data: cuBLAS blockwise (the peer) and per-tensor fast (its ceiling)
        "cublas_block_4096x7168x16384": lambda: torch._scaled_mm(a, bt, scale_a=sa_blk, scale_b=sbt,
                                                                  out_dtype=torch.bfloat16),
        "cublas_tensor_fast_4096x7168x16384": lambda: torch._scaled_mm(a, bt, scale_a=one, scale_b=one,
                                                                        out_dtype=torch.bfloat16, use_fast_accum=True),
    }
    B, H, S, D = 2, 16, 8192, 128
    q, k, v = (torch.randn(B, S, H, D, device=dev).to(torch.float8_e4m3fn) for _ in range(3))
    ones = torch.ones((), device=dev)
    kw = dict(q_descale=ones, k_descale=ones, v_descale=ones)
    glws = dict(kernel="glws", block_m=128, block_n=128, maxnreg=None, permute_p=False, num_stages=3)
    cases["attn_triton_default_hd128_S8192"] = kernel_only_fn(q, k, v, **kw)
    cases["attn_glws_serial_hd128_S8192"] = kernel_only_fn(q, k, v, config=AttnConfig(**glws), **kw)
    cases["attn_glws_ovl_pc1_hd128_S8192"] = kernel_only_fn(
        q, k, v, config=AttnConfig(**glws, overlap=2, p_carry=1), **kw)
    return cases


def child() -> int:
    cases = _cases()
    for fn in cases.values():  # compile and warm up outside the profiled window
        fn()
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for fn in cases.values():
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(json.dumps(list(cases)))
    return 0


# Beyond the harness's sections: issue-slot use, the instruction mix, occupancy and per-instruction stall samples
# (SourceCounters: which SASS line the warps wait on -- the question for both pairs).
EXTRA_SECTIONS = ("SchedulerStats", "InstructionStats", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis",
                  "SourceCounters")


def _export(ncu: str, rep: str, out: str) -> None:
    """The report as text, for reading without Nsight Compute: the details page, and the SASS of each kernel with
    its per-instruction counters (gzipped CSV)."""
    import gzip
    import subprocess

    det = subprocess.run([ncu, "--import", rep, "--page", "details", "--print-details", "all"],
                         capture_output=True, text=True, timeout=120)
    group = os.environ.get("PROFILE_GROUP", "pairs")
    with open(os.path.join(out, f"profile-{group}-details.txt"), "w") as f:
        f.write(det.stdout + det.stderr)
    src = subprocess.run([ncu, "--import", rep, "--page", "source", "--csv", "--print-source", "sass"],
                         capture_output=True, text=True, timeout=300)
    with gzip.open(os.path.join(out, f"profile-{group}-source.csv.gz"), "wt") as f:
        f.write(src.stdout + src.stderr)
    print(f"details page: {len(det.stdout)} chars (status {det.returncode}); source page: {len(src.stdout)} chars "
          f"(status {src.returncode}) {src.stderr[-300:]}")


def parent() -> int:
    from tritonfp8.bench import harness

    out = os.environ.get("OUT")
    rep = f"/tmp/profile-{os.environ.get('PROFILE_GROUP', 'pairs')}.ncu-rep"  # not sent back (no ncu here to read it; the exports below are)
    res = harness.profile_with_ncu([sys.executable, os.path.abspath(__file__), "--child"], timeout=480,
                                   sections=EXTRA_SECTIONS, keep_report=rep)
    harness.print_ncu_result(res, "gemm precise vs block, attention serial vs overlapped", harness.make_console())
    if os.path.exists(rep):
        _export(harness.find_ncu(), rep, out or ".")
    if out:
        rows = [dict(k.__dict__) for k in res.kernels]
        for r in rows:
            r["stalls"] = [list(s) for s in r.get("stalls", [])]
        with open(os.path.join(out, f"profile-{os.environ.get('PROFILE_GROUP', 'pairs')}.json"), "w") as f:
            json.dump({"ok": res.ok, "message": res.message, "command": res.command, "kernels": rows,
                       "log_tail": res.log[-4000:]}, f, indent=1,
                      default=lambda x: None if isinstance(x, float) and math.isnan(x) else str(x))
    return 0 if res.ok else 1


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", action="store_true", help="the profiled process (run by the parent under ncu)")
    sys.exit(child() if p.parse_args().child else parent())
