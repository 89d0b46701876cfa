"""Hybrid stream-K (``GemmConfig(stream_k=1 or 2)``): the tiles of the last one or two waves are computed as one
range of (tile, K block) iterations split evenly over all programs; a tile several programs share is finished by
the last to arrive (fp32 partials in a workspace, a per-tile counter it resets).

Interpreter on CPU (conftest.py): the persistent grid has ``INTERPRETER_SMS`` = 3 programs, so tile counts that are
not multiples of 3 give a partial last wave, and small K-block counts give tiles shared by up to 3 programs (and
programs whose range covers the end of one tile, whole tiles and the start of another: both workspace slots).
Integer-valued FP8 inputs make every fp32 sum exact in any order: stream-K must then equal the data-parallel
kernel bit for bit (a partial added twice, missed, or read from the wrong slot shows up). Random inputs: the
stated bound against the fp64 reference (``error_bound``, see test_gemm.py), and the data-parallel result to
fp32 summation-order tolerance.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tritonfp8._kernels import gemm as K_
from tritonfp8.bench.harness import rel_error
from tritonfp8.gemm import GemmConfig, error_bound, gemm, gemm_torch

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")  # interpreter silu

E4 = torch.float8_e4m3fn
BASE = GemmConfig(64, 64, 64, group_m=2, num_warps=4, num_stages=2, schedule="tmapersistent")
SUB2 = dataclasses.replace(BASE, epilogue_subtile=2)
SWAP = GemmConfig(64, 32, 64, group_m=1, num_warps=4, num_stages=2, schedule="tmapersistent", swap_ab=True)


def _inputs(M, N, Kd, device, *, integer, rowwise=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    if integer:
        a = torch.randint(-4, 5, (M, Kd), generator=g).float().to(E4)
        b = torch.randint(-4, 5, (N, Kd), generator=g).float().to(E4)
    else:
        a = torch.randn(M, Kd, generator=g).to(E4)
        b = torch.randn(N, Kd, generator=g).to(E4)
    if rowwise:
        sa, sb = torch.rand(M, 1, generator=g) + 0.5, torch.rand(1, N, generator=g) + 0.5
    else:
        sa, sb = torch.tensor(0.75), torch.tensor([0.5])
    return [t.to(device) for t in (a, b, sa, sb)]


def _skip_no_sm90(device):
    if device == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA schedules need sm_90")


# (config, M, N, K): tiles / K blocks chosen so the stream-K part is non-trivial with 3 programs.
CASES = [
    (BASE, 200, 128, 320),  # 8 tiles: 2 stream-K tiles of 5 K blocks, 4 per program: tiles shared by 2
    (SUB2, 128, 128, 448),  # 4 tiles: 1 stream-K tile of 7 blocks over 3 programs (sk2: 4 tiles, 10 per program)
    (BASE, 70, 64, 192),  # 2 tiles < 3 programs: all stream-K; 3 blocks per tile, 2 per program
    (SWAP, 40, 208, 256),  # swap-AB: D = Cᵀ, 4 x 2 tiles of 64x32
]


@pytest.mark.parametrize("waves", [1, 2])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].short().replace(' ', '-')}-{c[1]}x{c[2]}x{c[3]}")
def test_stream_k_equals_data_parallel_bit_exact(case, waves, device):
    _skip_no_sm90(device)
    cfg, M, N, Kd = case
    a, b, sa, sb = _inputs(M, N, Kd, device, integer=True)
    dp = gemm(a, b, sa, sb, out_dtype=torch.float32, config=cfg)
    sk = gemm(a, b, sa, sb, out_dtype=torch.float32, config=dataclasses.replace(cfg, stream_k=waves))
    assert torch.equal(sk, dp)


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_stream_k_rowwise_bias_activation_within_bound(out_dtype, device):
    """Rowwise scales, bias and gelu in the fused epilogue of the last arriver; random inputs."""
    _skip_no_sm90(device)
    M, N, Kd = 200, 128, 320
    a, b, sa, sb = _inputs(M, N, Kd, device, integer=False, rowwise=True)
    bias = torch.randn(N, generator=torch.Generator().manual_seed(3)).to(out_dtype).to(device)
    kw = dict(out_dtype=out_dtype, bias=bias, activation="gelu")
    cfg = dataclasses.replace(SUB2, stream_k=1)
    out = gemm(a, b, sa, sb, config=cfg, **kw)
    dp = gemm(a, b, sa, sb, config=SUB2, **kw)
    ref = gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), bias=bias.cpu(), activation="gelu",
                     out_dtype=torch.float64, compute_dtype=torch.float64)
    bound = error_bound(out_dtype, Kd, "fast", tensor_core=out.is_cuda)
    assert rel_error(out, ref) <= bound
    assert rel_error(out, dp.double()) <= bound  # dp vs stream-K: fp32 summation order, then one output rounding


def test_stream_k_fp32_random_inputs_close_to_data_parallel(device):
    _skip_no_sm90(device)
    a, b, sa, sb = _inputs(128, 128, 448, device, integer=False)
    cfg = dataclasses.replace(SUB2, stream_k=2)
    out = gemm(a, b, sa, sb, out_dtype=torch.float32, config=cfg)
    dp = gemm(a, b, sa, sb, out_dtype=torch.float32, config=SUB2)
    ref = gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), out_dtype=torch.float64, compute_dtype=torch.float64)
    bound = error_bound(torch.float32, 448, "fast", tensor_core=out.is_cuda)
    assert rel_error(out, ref) <= bound
    # Interpreter: fp32 sums of 448 products in another order, within K * 2^-24 of each other (relative,
    # Frobenius). GPU: each K range restarts the tensor core's reduced-precision accumulation: the fast bound.
    assert rel_error(out, dp.double()) <= (bound if out.is_cuda else 448 * 2.0 ** -24)


def test_stream_k_counters_reset_between_calls(device):
    """Two consecutive launches on one workspace: each leaves every tile counter at zero, and the second (other
    inputs) is right, so it did not see the first one's counts."""
    _skip_no_sm90(device)
    cfg = dataclasses.replace(BASE, stream_k=1)
    M, N, Kd = 200, 128, 320
    for seed in (1, 2):
        a, b, sa, sb = _inputs(M, N, Kd, device, integer=True, seed=seed)
        out = gemm(a, b, sa, sb, out_dtype=torch.float32, config=cfg)
        assert torch.equal(out, gemm(a, b, sa, sb, out_dtype=torch.float32, config=BASE))
        if device == "cuda":
            torch.cuda.synchronize()
            key = (out.device.index, torch.cuda.current_stream(out.device).cuda_stream)
        else:
            key = ("cpu",)
        ws = K_._SK_WS[key]
        pad = K_.sk_counter_pad(cfg, K_.INTERPRETER_SMS if device == "cpu" else K_.num_sms(out.device.index))
        counters = ws[:pad].view(torch.int32)
        assert torch.count_nonzero(counters).item() == 0
        assert torch.count_nonzero(ws[pad:]).item() > 0  # partials were written: the stream-K path ran


@pytest.mark.parametrize("precise", [True, False], ids=["precise", "block"])
def test_stream_k_precise_and_block_scales(precise, device):
    """The promoting modes sum the same per-K-block promotions; split into K ranges, the partial sums add up."""
    _skip_no_sm90(device)
    M, N, Kd = 200, 128, 640
    a, b, sa, sb = _inputs(M, N, Kd, device, integer=True)
    cfg = GemmConfig(64, 64, 128, group_m=2, num_warps=4, num_stages=2, schedule="tmapersistent")
    if not precise:
        g = torch.Generator().manual_seed(5)
        sa = (torch.rand(M, 5, generator=g) + 0.5).to(device)
        sb = (torch.rand(1, 5, generator=g) + 0.5).to(device)
    acc = "precise" if precise else "fast"
    out = gemm(a, b, sa, sb, accumulate=acc, out_dtype=torch.float32, config=dataclasses.replace(cfg, stream_k=1))
    dp = gemm(a, b, sa, sb, accumulate=acc, out_dtype=torch.float32, config=cfg)
    ref = gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), out_dtype=torch.float64, compute_dtype=torch.float64)
    assert rel_error(out, ref) <= error_bound(torch.float32, Kd, "precise")
    assert rel_error(out, dp.double()) <= Kd * 2.0 ** -24


def test_stream_k_config_validation_and_names():
    cfg = GemmConfig(128, 256, 128, num_warps=8, num_stages=4, epilogue_subtile=2, stream_k=2)
    assert cfg.short().endswith(" sk2") and GemmConfig.from_dict(cfg.as_dict()) == cfg
    name = K_.gemm_kernel_name(cfg, arch=90, a_dtype=E4, b_dtype=E4, out_dtype=torch.bfloat16, a_vec=False,
                               b_vec=False, precise=False, has_bias=False, activation=None).build()
    assert "_sk2" in name
    with pytest.raises(ValueError, match="GemmConfig.stream_k"):
        GemmConfig(stream_k=3)
    with pytest.raises(ValueError, match="GemmConfig.stream_k"):
        GemmConfig(schedule="tma", stream_k=1)
    with pytest.raises(ValueError, match="GemmConfig.stream_k"):
        GemmConfig(split_k=2, stream_k=1)
    with pytest.raises(ValueError, match="stream-K"):
        K_._qkv_launch_args(object(), cfg)
    # Workspace: the counters (padded to 32), then two fp32 tile slots per program.
    assert K_.sk_counter_pad(cfg, 132) == 288
    assert K_.sk_workspace_size(cfg, 132) == 288 + 2 * 132 * 128 * 256
    assert K_.sk_workspace_size(dataclasses.replace(cfg, stream_k=0), 132) == 0


def test_bench_gemm_stream_k_variants(cpu_tools, tmp_path):
    """``bench gemm --variants sk,sk2`` on CPU (interpreter kernels, stand-in timer): timed in the fast and rowwise
    modes against cuBLAS and the default of the same mode, within the error bound."""
    import argparse
    import json

    from tritonfp8.bench.suites import gemm as suite

    args = argparse.Namespace(quick=True, repeats=1, out=str(tmp_path), no_save=False, profile=False,
                              shapes="200x128x256", modes="fast,rowwise", variants="sk,sk2", no_bf16=True,
                              name_ab=None, scaling="tensor")
    assert suite.run(args) == 0
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    rows = {r["mode"]: r for r in data["rows"]}
    for mode in ("fast:sk", "fast:sk2", "rowwise:sk", "rowwise:sk2"):
        row = rows[mode]
        assert f" sk{mode[-1] if mode.endswith('2') else 1}" in row["config"] and row["vs_default"] > 0, row
        assert row["err"] <= row["err_bound"], row
    assert rows["rowwise:sk"]["peer"] == "cublas_rowwise"
    base = GemmConfig(128, 256, 128, num_warps=8, num_stages=4, epilogue_subtile=2)
    assert suite.variant_config(base, "sk") == dataclasses.replace(base, stream_k=1)  # same depth: the only change
    np_base = GemmConfig(128, 64, 128, num_warps=4, num_stages=4, schedule="tma")
    assert suite.variant_config(np_base, "sk2").schedule == "tmapersistent"
    assert suite.variant_config(GemmConfig(64, 16, 256, schedule="tma", swap_ab=True, split_k=2), "sk").split_k == 1
