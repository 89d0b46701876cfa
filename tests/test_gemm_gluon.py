"""The Gluon precise / block-scaled GEMM (schedule "glws", ``tritonfp8/_kernels/gemm_gluon.py``).

Three layers: host logic on CPU (config rules, shared-memory fit, scale-mode mapping, the errors); the offline sm_90
compile (QGMMA, no spills, the warp-specialized register split, promotion waits); the numbers on the GPU (Gluon
kernels do not run in the interpreter).

Tolerance (stated once): ``tritonfp8.gemm.error_bound(out_dtype, K, "precise", tensor_core=True)`` on the relative
Frobenius error against the fp64 product of the dequantized inputs, as every GEMM test. Against the Triton
kernel's precise / block result on the same inputs the fp32 sums are the same additions in the same order, so the
two outputs agree to the output's rounding: at most one unit in the last place of the output type per element
(``_ULP``), checked element-wise; NaN never passes.
"""

from __future__ import annotations

import re

import pytest
import torch

from conftest import requires_gpu

from tritonfp8._kernels.gemm_configs import GemmConfig, smem_bytes, with_max_stages, SMEM_BYTES_SM90

E4 = torch.float8_e4m3fn
GLWS = GemmConfig(128, 128, 128, group_m=8, num_warps=4, num_stages=6, schedule="glws", epilogue_subtile=1)


# ---------------------------------------------------------------------------------------------------- CPU: host


@pytest.mark.parametrize("change", [dict(block_m=64), dict(block_k=64), dict(block_n=512), dict(num_warps=8),
                                    dict(swap_ab=True)], ids=str)
def test_glws_config_rules(change):
    with pytest.raises(ValueError, match="glws"):
        GemmConfig(**{**GLWS.as_dict(), **change})


@pytest.mark.parametrize("block_n,out_size,stages,compiled", [
    # compiled: (stages, bytes) of Triton's compile metadata for sm_90 (the codegen specs, the largest of the
    # precise and block forms: block scales add a 512-byte scale column per stage, counted for every mode). The
    # estimate is never below the metadata, so the Gluon kernel keeps no slack under the limit.
    (128, 2, 5, (6, 229624)),
    (128, 4, 5, (5, 232208)),
    (256, 2, 4, (4, 231672)),
    (256, 4, 3, (3, 214768)),
])
def test_glws_stages_fit_shared_memory(block_n, out_size, stages, compiled):
    cfg = with_max_stages(GemmConfig(**{**GLWS.as_dict(), "block_n": block_n}), out_size, cap=6)
    assert cfg.num_stages == stages
    assert smem_bytes(cfg, out_size) <= SMEM_BYTES_SM90
    assert smem_bytes(GemmConfig(**{**cfg.as_dict(), "num_stages": compiled[0]}), out_size) >= compiled[1]


def test_smem_estimate_fp32_one_tile_per_program():
    """fp32 output through a TMA store keeps its staging buffer next to the ring even with one tile per program:
    the H200 refused the 6-stage 128x128x128 launch this estimate used to allow (262192 bytes, session 7)."""
    from tritonfp8._kernels.gemm_configs import heuristic_config

    cfg = heuristic_config(1024, 1024, 8192, precise=True, out_size=4)
    assert cfg.schedule == "tma"
    assert smem_bytes(GemmConfig(**{**cfg.as_dict(), "num_stages": 6}), 4) >= 262192
    assert smem_bytes(cfg, 4) + 1024 <= SMEM_BYTES_SM90


def test_heuristic_takes_glws_on_gpus_only():
    from tritonfp8._kernels.gemm_configs import block_config, heuristic_config, select_config

    kw = dict(arch=90, num_sms=132, out_size=2)
    assert heuristic_config(8192, 8192, 8192, precise=True, gluon=True, **kw).schedule == "glws"
    assert heuristic_config(8192, 8192, 8192, precise=True, **kw).schedule != "glws"  # the interpreter
    assert heuristic_config(128, 8192, 8192, precise=True, gluon=True, **kw).schedule != "glws"  # 64 tiles
    assert heuristic_config(8192, 8192, 8192, precise=False, gluon=True, **kw).schedule != "glws"
    assert block_config(8192, 7168, 2048, gluon=True, **kw).schedule == "glws"
    cfg, _ = select_config(8192, 8192, 8192, precise=True, gpu_name=None, **kw)
    assert cfg.schedule != "glws"


@pytest.mark.parametrize("M,N,block,expect", [
    # precise, >= 2 tiles per SM: 128x256 where its waves finish first (H200 run 2026-12-01-234052)
    (1024, 10240, False, "128x128x128 w4s4 glws"),   # 320 wide tiles = 2.4 waves: 128x128 (measured 0.92x wide)
    (1024, 8192, False, "128x256x128 w4s3 glws"),
    (4096, 4096, False, "128x256x128 w4s3 glws"),
    (128, 8192, False, None),                         # precise at 64 tiles: the Triton kernel
    # block scales: also below 2 tiles per SM, one wave of work units (H200 run 2026-12-01-235757)
    (128, 7168, True, "128x128x128 w4s4 glws splitk2"),
    (512, 7168, True, "128x256x128 w4s3 glws"),
    (4096, 7168, True, "128x256x128 w4s3 glws"),
])
def test_gluon_config_choices(M, N, block, expect):
    from tritonfp8._kernels.gemm_configs import gluon_config

    cfg = gluon_config(M, N, 132, 2, K=16384, block=block)
    assert (cfg.short() if cfg is not None else None) == expect


def test_gluon_block_one_wave_never_exceeds_the_sms():
    from tritonfp8._kernels.gemm_configs import gluon_config
    from tritonfp8._kernels.gemm_configs import effective_split

    for M in (65, 128, 200, 256, 384, 512):
        for N in (1024, 4096, 7168, 16384):
            for K in (128, 512, 4096, 16384):
                cfg = gluon_config(M, N, 132, 2, K=K, block=True)
                if cfg is None:
                    continue
                units = -(-M // 128) * -(-N // cfg.block_n) * effective_split(K, cfg.split_k)
                tiles = -(-M // 128) * -(-N // 128)
                assert units <= 132 or tiles >= 264, (M, N, K, cfg.short())
                assert effective_split(K, cfg.split_k) == cfg.split_k


def test_scale_modes():
    from tritonfp8._kernels import gemm_gluon as G

    assert G.scale_modes(False, False, None) == (G.SCALE_TENSOR, G.SCALE_TENSOR)
    assert G.scale_modes(True, False, None) == (G.SCALE_ROW, G.SCALE_TENSOR)
    assert G.scale_modes(False, True, None) == (G.SCALE_TENSOR, G.SCALE_ROW)
    assert G.scale_modes(True, True, 128) == (G.SCALE_BLOCK_1X128, G.SCALE_BLOCK_128X128)
    assert G.scale_modes(True, True, 1) == (G.SCALE_BLOCK_1X128, G.SCALE_BLOCK_1X128)


def test_glws_rejects_wide_tiles_for_1x128_groups_of_b():
    """1x128 groups of b need a (block_n,) scale vector per K block: only up to 128 columns (a 256-wide tile keeps
    its columns as two 128-wide products, each with one scalar of a 128x128 block scale)."""
    from tritonfp8._kernels.gemm import launch_gemm

    a = torch.zeros(128, 128, dtype=E4)
    s = torch.ones(128, 1)
    out = torch.empty(128, 128, dtype=torch.bfloat16)
    wide = GemmConfig(**{**GLWS.as_dict(), "block_n": 256, "num_stages": 3})
    with pytest.raises(ValueError, match="glws"):
        launch_gemm(a, a, s, s, None, None, out, wide, a_vec=True, b_vec=True, precise=False, arch=90, sms=132,
                    b_block_rows=1)


@pytest.mark.parametrize("K,split,runs", [(3872, 3, 3), (256, 4, 2), (16384, 8, 8), (8192, 5, 5), (8192, 7, 7),
                                           (128, 4, 1), (8192, 1, 1)])
def test_glws_effective_split_has_no_empty_run(K, split, runs):
    from tritonfp8._kernels.gemm_configs import effective_split

    assert effective_split(K, split) == runs
    kb = -(-K // 128)
    per = -(-kb // runs)
    assert (runs - 1) * per < kb <= runs * per  # every run has at least one K block


@pytest.mark.parametrize("split_k,K,runs", [(1, 1024, 1), (3, 3872, 3), (4, 256, 2)])
def test_glws_launch_gemm_passes_split_and_reduction(split_k, K, runs, monkeypatch):
    """launch_gemm's glws branch (host side, CPU: the Gluon launch is observed, not run): the split count actually
    run and the reduction kernel's name reach gemm_gluon.launch."""
    from tritonfp8._kernels import gemm_gluon
    from tritonfp8._kernels.gemm import launch_gemm

    seen = {}
    monkeypatch.setattr(gemm_gluon, "launch", lambda *a, **k: seen.update(k))
    a = torch.zeros(128, K, dtype=E4)
    b = torch.zeros(256, K, dtype=E4)
    s = torch.ones(1)
    out = torch.empty(128, 256, dtype=torch.bfloat16)
    cfg = GemmConfig(**{**GLWS.as_dict(), "split_k": split_k, "num_stages": 4})
    assert launch_gemm(a, b, s, s, None, "gelu", out, cfg, a_vec=False, b_vec=False, precise=True, arch=90,
                       sms=132) is out
    assert seen["split_k"] == runs and seen["fast"] is False
    assert (seen["reduce_name"] != "") == (runs > 1)
    if runs > 1:
        assert f"splitk{runs}" in seen["reduce_name"] and "gelu" in seen["reduce_name"], seen["reduce_name"]


@pytest.mark.parametrize("split_k,scales", [(1, "tensor"), (3, "tensor"), (2, "block"), (1, "block")])
def test_glws_launch_arguments_bind(split_k, scales, monkeypatch):
    """gemm_gluon.launch on CPU tensors with the launcher observed: every launch (the GEMM, and the reduction with
    split-K) binds to its kernel's signature, grid = min(units, SMs), the workspace is (splits, M, N) fp32."""
    import inspect

    from tritonfp8 import _launch as L
    from tritonfp8._kernels import gemm_gluon as G

    calls = []
    monkeypatch.setattr(L, "launch", lambda kernel, grid, *a, **k: calls.append((kernel, grid, a, k)))
    M, N, K = 128, 1024, 3872
    a = torch.zeros(M, K, dtype=E4)
    b = torch.zeros(N, K, dtype=E4)
    if scales == "block":
        sa, sb = torch.ones(-(-K // 128), M).t(), torch.ones(N // 128, -(-K // 128))
        kw = dict(a_vec=True, b_vec=True, b_block_rows=128)
    else:
        sa = sb = torch.ones(1)
        kw = dict(a_vec=False, b_vec=False, b_block_rows=None)
    out = torch.empty(M, N, dtype=torch.bfloat16)
    G.launch(a, b, sa, sb, torch.zeros(N, dtype=torch.bfloat16), 1, out, block_n=128, num_stages=4, group_m=8,
             sms=132, name="k", split_k=split_k, reduce_name="r" if split_k > 1 else "", **kw)
    assert len(calls) == (2 if split_k > 1 else 1)
    for kernel, grid, args, kwargs in calls:
        params = inspect.signature(kernel.fn).parameters
        params_kw = {k: v for k, v in kwargs.items() if k in params or k != "num_warps"}  # a launch option
        inspect.signature(kernel.fn).bind(*args, **params_kw)
    kernel, grid, args, kwargs = calls[0]
    assert kwargs["SPLIT_K"] == split_k and grid == (min(8 * split_k, 132),)
    assert kwargs["HAS_BIAS"] == (split_k == 1) and kwargs["ACTIVATION"] == (1 if split_k == 1 else 0)
    if split_k > 1:
        ws = args[7]
        assert ws.shape == (split_k, M, N) and ws.dtype == torch.float32
        rkernel, rgrid, rargs, rkw = calls[1]
        assert rargs[0] is ws and rargs[1] is out and rkw["SPLIT_K"] == split_k and rkw["HAS_BIAS"]


@pytest.mark.parametrize("split_k,scales", [(1, "row"), (3, "block")])
def test_glws_template_repeats_the_recorded_launch(split_k, scales, monkeypatch):
    """The recorded Template (CPU, launches observed): a repeat call passes the compiled kernels, grids, fresh
    runtime arguments of the new tensors and the recorded constexpr tail, i.e. exactly what the first call's
    launcher would get for them; every argument list covers the kernel's whole signature."""
    import inspect

    from tritonfp8 import _launch as L
    from tritonfp8._kernels import gemm as TG
    from tritonfp8._kernels import gemm_gluon as G

    class Compiled:  # stands for a compiled kernel
        pass

    main_k, red_k = Compiled(), Compiled()
    monkeypatch.setattr(L, "launch", lambda kernel, grid, *a, **k: main_k if kernel is G.fp8_gemm_promote_kernel
                        else red_k)
    runs = []
    monkeypatch.setattr(L, "run_compiled", lambda kernel, grid3, vals: runs.append((kernel, grid3, vals)))
    monkeypatch.setattr(L, "enabled", lambda: True)
    M, N, K = 128, 1024, 3872
    kb = -(-K // 128)

    def tensors():
        a, b = torch.zeros(M, K, dtype=E4), torch.zeros(N, K, dtype=E4)
        if scales == "block":
            sa, sb, kw = torch.ones(kb, M).t(), torch.ones(N // 128, kb), dict(a_vec=True, b_vec=True,
                                                                           b_block_rows=128)
        else:
            sa, sb, kw = torch.ones(M), torch.ones(N), dict(a_vec=True, b_vec=True, b_block_rows=None)
        return a, b, sa, sb, torch.zeros(N, dtype=torch.bfloat16), torch.empty(M, N, dtype=torch.bfloat16), kw

    a, b, sa, sb, bias, out, kw = tensors()
    rec = []
    G.launch(a, b, sa, sb, bias, 2, out, block_n=128, num_stages=4, group_m=8, sms=132, name="k", split_k=split_k,
             reduce_name="r", record=rec, **kw)
    assert len(rec) == 1
    a, b, sa, sb, bias, out, _ = tensors()  # other tensors, same geometry
    rec[0].launch(a, b, sa, sb, bias, out)
    assert [r[0] for r in runs] == ([main_k, red_k] if split_k > 1 else [main_k])
    kernel, grid3, vals = runs[0]
    assert grid3 == (min(8 * split_k, 132), 1, 1)
    params = list(inspect.signature(G.fp8_gemm_promote_kernel.fn).parameters)
    assert len(vals) == len(params)
    named = dict(zip(params, vals))
    assert named["a_desc"].base is a and named["b_desc"].base is b and named["c_desc"].base is out
    assert named["SPLIT_K"] == split_k and named["KERNEL_NAME"] == "k"
    if split_k > 1:
        _, rgrid3, rvals = runs[1]
        rparams = list(inspect.signature(TG.fp8_gemm_splitk_reduce_kernel.fn).parameters)
        assert len(rvals) == len(rparams)
        rnamed = dict(zip(rparams, rvals))
        assert rnamed["ws"] is named["ws"] and rnamed["c"] is out and rnamed["bias"] is bias
        assert rnamed["ws"].shape == (split_k, M, N) and rnamed["SPLIT_K"] == split_k and rnamed["ACTIVATION"] == 2
    else:
        assert named["bias"] is bias and named["ACTIVATION"] == 2


def test_glws_kernel_name():
    from tritonfp8._kernels.gemm import gemm_kernel_name
    from tritonfp8.naming import parse_kernel_name

    n = gemm_kernel_name(GLWS, arch=90, a_dtype=E4, b_dtype=E4, out_dtype=torch.bfloat16, a_vec=True, b_vec=True,
                         precise=True, has_bias=True, activation="gelu").build("cutlass")
    assert n == "cutlass_sm90_fp8gemm_e4m3_e4m3_f32_bf16_128x128x128_w4s6_glws_rowwise_precise_biasgelu"
    assert parse_kernel_name(n)["rest"][0] == "glws"


# ------------------------------------------------------------------------------------------------ codegen: sm_90


SASS_KERNELS = ["gemm_glws_precise", "gemm_glws_block", "gemm_glws_precise_rowwise_bias_gelu", "gemm_glws_fast",
                "gemm_glws_fast_rowwise", "gemm_glws_precise_n256", "gemm_glws_block_n256", "gemm_glws_precise_splitk",
                "gemm_glws_block_n256_splitk", "gemm_glws_fast_splitk", "grouped_glws_block_n256",
                "grouped_glws_precise_n256_bias", "grouped_glws_fast_rowwise", "grouped_glws_masked_block",
                "grouped_glws_precise_n256_g8", "gemm_glws_precise_n256_q4", "gemm_glws_block_n256_q4",
                "grouped_glws_block_n256_q4"]


@pytest.fixture(scope="module")
def glws_sass():
    """One subprocess with the interpreter off (``conftest.codegen_env``) compiles every kernel of SASS_KERNELS:
    Gluon's reductions (the grouped schedule's sums) cannot reference the interpreter's functions, which
    ``triton.jit`` returns in this process (TRITON_INTERPRET is set at import time)."""
    import json
    import subprocess
    import sys

    from conftest import codegen_env

    code = f"""
import json, re
from tritonfp8 import codegen
out = {{}}
for k in {SASS_KERNELS!r}:
    r = codegen.inspect_kernel(k, arch=90, compare_names=False)
    d = r.as_dict()
    d.update(usetmaxreg="USETMAXREG" in r.sass, utmastg="UTMASTG" in r.sass,
             stg=len(re.findall(r"\\bSTG\\.E", r.sass)), depbar1=r.sass.count("WARPGROUP.DEPBAR.LE gsb0, 0x1"),
             heads=re.findall(r"QGMMA\\.64x128x32\\S* (R\\d+), gdesc\\[\\w+\\], RZ, !UPT", r.sass),
             sass_q="\\n".join(l for l in r.sass.splitlines() if "QGMMA.64x64x32" in l))
    out[k] = d
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], env=codegen_env(), capture_output=True, text=True,
                          timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.codegen
@pytest.mark.parametrize("kernel", SASS_KERNELS)
def test_glws_sass(kernel, glws_sass):
    """QGMMA in both consumer groups, no spills, registers re-split between the partitions (USETMAXREG), and each
    consumer's chain of four wgmmas waited once (no serialized wgmma: C7514 would wait every instruction). The
    256-wide promoting forms run two chains per K block (one per column half), each waited once, and reuse one
    product's registers for both (the promotion of the first half is fenced before the second wgmma)."""
    r = glws_sass[kernel]
    chains = 4 if "_q4" in kernel else 2 if "_n256" in kernel else 1
    assert r["qgmma"] == 8 * chains, r
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0, r
    assert r["usetmaxreg"]
    assert r["gmma_waited"] == 2 * chains, r
    if kernel.startswith("grouped"):
        # Grouped (MoE) launches: TMA stores, and the pointer stores of a group's last, partial row tile (64 x 128
        # bf16 per consumer group: 128 threads x 64 STG, per consumer and column piece).
        assert r["utmastg"] and r["stg"] >= 128, r
    if chains == 2:  # per consumer group, the two chains write the same 64 registers
        heads = r["heads"]
        assert len(heads) == 4 and heads[0] == heads[1] and heads[2] == heads[3], heads
    if chains == 4:
        # Quarters: per consumer group two 32-register products alternate (quarters 1 and 3 in one, 2 and 4 in
        # the other), and a quarter is waited with the next one still in flight (its promotion under that wgmma).
        heads = re.findall(r"QGMMA\.64x64x32\S* (R\d+), gdesc\[\w+\], RZ, !UPT", glws_sass[kernel]["sass_q"])
        assert len(heads) == 8 and len(set(heads[:4])) == 2 and heads[0] == heads[2] != heads[1] == heads[3], heads
        assert r["depbar1"] >= 6, r["depbar1"]
    assert r["shared_bytes"] <= SMEM_BYTES_SM90


@pytest.mark.codegen
def test_grouped_g8_k_loop_matches_dense(glws_sass):
    """The grouped schedule at 8 groups (issue 4's G 8 shape) leaves the consumer's K loop as tight as the dense
    kernel's: the same instructions per K block (session 14: with 8-wide group vectors ptxas moved the loop's
    counters and shared-memory addresses to vector registers, 240 instructions against 188, and the H200 ran the
    G 8 call 17% slower than the dense GEMM; ``gemm.group_pad``)."""
    dense, g8, g64 = (glws_sass[k]["gmma_loop"] for k in ("gemm_glws_precise_n256", "grouped_glws_precise_n256_g8",
                                                          "grouped_glws_precise_n256_bias"))
    assert dense > 0 and g8 == dense and g64 == dense, (dense, g8, g64)


# ------------------------------------------------------------------------------------------------------ GPU


_ULP = {torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10, torch.float32: 2.0 ** -20}

CASES = [  # M, N, K, scaling, out dtype, bias, activation (precise / block); "fast..." rows: fast accumulation
    (700, 1040, 1024, "tensor", torch.bfloat16, False, None),   # partial tiles in M and N
    (129, 256, 3872, "row", torch.bfloat16, False, None),       # odd K-block count, partial last block
    (1024, 1024, 8192, "tensor", torch.float32, False, None),
    (256, 384, 128, "row", torch.float16, True, "gelu"),        # one K block (padded to two)
    (1000, 2048, 2048, "row", torch.bfloat16, True, "silu"),
    (4096, 4096, 4096, "tensor", torch.bfloat16, False, None),  # more tiles than SMs: persistent loop
    (700, 1040, 3872, "block", torch.bfloat16, False, None),
    (83, 576, 3872, "block", torch.float32, True, "relu"),      # partial N block (576 = 4.5 x 128)
    (4096, 7168, 2048, "block", torch.bfloat16, False, None),
    (1000, 1536, 7168, "block-rowmajor", torch.bfloat16, True, "gelu"),  # a's scales as quantize returns them
    (700, 1040, 1024, "block1x128", torch.bfloat16, False, None),
    (700, 1040, 3872, "fast-tensor", torch.bfloat16, False, None),
    (4096, 8192, 8192, "fast-row", torch.bfloat16, True, "silu"),
    (129, 384, 256, "fast-row", torch.float32, False, None),
    # "n256-...": promoting modes on 128x256 tiles (two 128-wide column halves per consumer group)
    (700, 1040, 3872, "n256-tensor", torch.bfloat16, False, None),  # partial tiles; a half past N
    (1000, 2048, 2048, "n256-row", torch.bfloat16, True, "silu"),
    (4096, 4096, 4096, "n256-tensor", torch.float32, False, None),
    (700, 1040, 3872, "n256-block", torch.bfloat16, False, None),    # 1040 = 4 x 256 + 16: last tile's hi half empty
    (83, 576, 3872, "n256-block", torch.float32, True, "relu"),
    (1000, 1536, 7168, "n256-block-rowmajor", torch.bfloat16, True, "gelu"),
    # "sk<S>-...": split-K S (scaled fp32 partials, then the reduction kernel: bias, activation, rounding)
    (128, 1040, 3872, "sk3-tensor", torch.bfloat16, False, None),    # 31 K blocks: runs of 11, 11, 9
    (129, 2048, 8192, "sk4-row", torch.float16, True, "gelu"),
    (128, 1040, 3872, "n256-sk4-block", torch.bfloat16, True, "silu"),
    (83, 576, 16384, "sk8-block", torch.float32, False, None),
    (128, 1040, 3872, "fast-sk2-row", torch.bfloat16, True, "relu"),
    (129, 384, 256, "sk4-tensor", torch.bfloat16, False, None),      # 2 K blocks: 2 splits run, not 4
]


def _tags(scaling):
    """(base scaling, fast, 256-wide, split-K) of a case's scaling field."""
    tags = scaling.split("-")
    split = next((int(t[2:]) for t in tags if t.startswith("sk")), 1)
    base = "-".join(t for t in tags if t not in ("fast", "n256") and not t.startswith("sk"))
    return base, "fast" in tags, "n256" in tags, split


def _inputs(M, N, K, scaling, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", generator=g).to(E4)
    b = torch.randn(N, K, device="cuda", generator=g).to(E4)
    kb = -(-K // 128)
    scaling = _tags(scaling)[0]
    if scaling == "tensor":
        sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(0.25, device="cuda")
    elif scaling == "row":
        sa = torch.rand(M, 1, device="cuda", generator=g) + 0.5
        sb = torch.rand(N, 1, device="cuda", generator=g) + 0.5
    elif scaling == "block":
        sa = (torch.rand(kb, M, device="cuda", generator=g) + 0.5).t()  # outer-dim-major, as _scaled_mm
        sb = torch.rand(-(-N // 128), kb, device="cuda", generator=g) + 0.5
    elif scaling == "block-rowmajor":  # row-major (M, Kb): the kernel's launcher copies it to the TMA layout
        sa = torch.rand(M, kb, device="cuda", generator=g) + 0.5
        sb = torch.rand(-(-N // 128), kb, device="cuda", generator=g) + 0.5
    else:
        sa = torch.rand(M, kb, device="cuda", generator=g) + 0.5
        sb = torch.rand(N, kb, device="cuda", generator=g) * 1e-2  # tiny scales
    return a, b, sa, sb


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[2]}-{c[3]}-{str(c[4])[6:]}-{c[6]}")
def test_glws_matches_reference_and_triton_kernel(case):
    from tritonfp8.gemm import error_bound, gemm, gemm_torch
    from tritonfp8.tune import rel_error_gpu

    M, N, K, scaling, out_dtype, has_bias, act = case
    _, fast, wide, split = _tags(scaling)
    acc = "fast" if fast else "precise"
    a, b, sa, sb = _inputs(M, N, K, scaling)
    bias = torch.randn(N, device="cuda").to(out_dtype) if has_bias else None
    ref = gemm_torch(a, b, sa, sb, out_dtype=torch.float64, bias=bias, activation=act, compute_dtype=torch.float64)
    base = GemmConfig(**{**GLWS.as_dict(), "block_n": 256 if fast or wide else 128, "split_k": split})
    cfg = with_max_stages(base, torch.empty((), dtype=out_dtype).element_size(), cap=6)
    out = torch.full((M, N), float("nan"), device="cuda", dtype=out_dtype)  # poisoned: every element must be written
    gemm(a, b, sa, sb, out_dtype=out_dtype, bias=bias, activation=act, accumulate=acc, config=cfg, out=out)
    torch.cuda.synchronize()
    assert not out.isnan().any()
    assert rel_error_gpu(out, ref) <= error_bound(out_dtype, K, acc, tensor_core=True)
    if not fast and split == 1:
        # (the fast mode's reduced-precision sums depend on the wgmma chain, split-K adds its fp32 partials in
        # another order than one running sum: for those the bound is the check)
        # The Triton kernel's config, explicitly: the heuristics take the Gluon kernel (with split-K) for some of
        # these shapes now.
        from tritonfp8._kernels.gemm_configs import block_config, heuristic_config

        kw = dict(arch=90, num_sms=torch.cuda.get_device_properties(0).multi_processor_count,
                  out_size=out.element_size(), gluon=False)
        tcfg = block_config(M, N, K, **kw) if "block" in scaling else heuristic_config(M, N, K, precise=True, **kw)
        assert tcfg.schedule != "glws"
        triton_out = gemm(a, b, sa, sb, out_dtype=out_dtype, bias=bias, activation=act, accumulate=acc, config=tcfg)
        tol = _ULP[out_dtype] * triton_out.float().abs() + 1e-30
        assert ((out.float() - triton_out.float()).abs() <= tol).all()


@requires_gpu
@pytest.mark.gpu
def test_glws_repeat_calls_and_zero_rows():
    """The cached launch (tritonfp8._launch / _direct) of the Gluon kernel gives the bits of Triton's own dispatch;
    M = 0 gives an empty result."""
    from tritonfp8.gemm import gemm

    from tritonfp8 import _direct

    a, b, sa, sb = _inputs(512, 1024, 2048, "row")
    o1 = gemm(a, b, sa, sb, accumulate="precise", config=GLWS)  # Triton's dispatch (first launch of this key)
    o2 = gemm(a, b, sa, sb, accumulate="precise", config=GLWS)  # the cached launch: descriptors encoded once
    reused = _direct.stats["reused"]
    o3 = gemm(a, b, sa, sb, accumulate="precise", config=GLWS)  # ... and reused from then on
    assert torch.equal(o1, o2) and torch.equal(o1, o3)
    assert _direct.stats["reused"] >= reused + 3  # a, b, C (and the unused scale-column slot) descriptors
    e = gemm(a[:0], b, sa[:0], sb, accumulate="precise", config=GLWS)
    assert e.shape == (0, 1024)


@pytest.mark.parametrize("case", ["e5m2_a", "e5m2_b", "block_b_1x128"])
def test_heuristic_glws_falls_back_where_unmeasured(case, monkeypatch, device):
    """Where the heuristics would pick glws, gemm() keeps the Triton kernel for E5M2 operands and 1x128 groups of b
    (not checked / spilling on the Gluon kernel). The choice is observed at the launch (nothing runs; on a GPU
    machine the tensors are CUDA tensors: CPU tensors are only accepted under the interpreter)."""
    import importlib

    from tritonfp8._kernels import gemm as K_

    G = importlib.import_module("tritonfp8.gemm")  # the module (the package exports the function under that name)

    seen = []
    monkeypatch.setattr(G, "select_config", lambda *a, **k: (GLWS, "heuristic"))
    monkeypatch.setattr(K_, "launch_gemm", lambda *a, **k: seen.append(a[7]) or a[6])
    G._PLANS.clear()
    M, N, K = 256, 256, 256
    a = torch.zeros(M, K, device=device).to(torch.float8_e5m2 if case == "e5m2_a" else E4)
    b = torch.zeros(N, K, device=device).to(torch.float8_e5m2 if case == "e5m2_b" else E4)
    if case == "block_b_1x128":
        sa, sb, acc = torch.ones(M, 2, device=device), torch.ones(N, 2, device=device), "fast"
    else:
        sa, sb, acc = torch.ones((), device=device), torch.ones((), device=device), "precise"
    G.gemm(a, b, sa, sb, accumulate=acc)
    assert seen and seen[0].schedule != "glws", seen
    G._PLANS.clear()


def test_quarters_policy():
    """The quarters form (four 64-wide quarters, two products in flight) is the default for dense block-scaled
    128 x 256 launches without split-K only: measured 1.02-1.06x there on the large-K shapes, 0.95-0.99x precise
    and 0.93-0.95x grouped (session 14, gemm-quarters-20261202-183402.json / -183842.json)."""
    from tritonfp8._kernels import gemm_gluon as gg

    assert gg.QUARTERS == "block"
    B, T = gg.SCALE_BLOCK_1X128, gg.SCALE_TENSOR
    assert gg._quarters(False, 256, B, 1, grouped=False)
    assert not gg._quarters(False, 256, B, 2, grouped=False)   # split-K: not measured
    assert not gg._quarters(False, 256, B, 1, grouped=True)    # grouped: slower
    assert not gg._quarters(False, 256, T, 1, grouped=False)   # precise: slower
    assert not gg._quarters(False, 128, B, 1, grouped=False)   # 128-wide tiles: one product already
    assert not gg._quarters(True, 256, T, 1, grouped=False)    # fast accumulation: no promotion
