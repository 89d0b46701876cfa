"""The lagged fp32 promotion (``GemmConfig(promote="lag")``) of the precise and block-scaled GEMM modes.

The lag changes when block kb's fresh dot is added into the fp32 accumulator (one K step later), not what is added
or in which order: the first step adds a zero tile (0 + 0 * scale = 0 for finite scales), so the output must equal
the unlagged kernel's bit for bit, here with fp32 output (the interpreter's dot is exact per block, so any change of
order or a block scaled by the wrong column shows up). Error bounds against the fp64 reference as in test_gemm.py /
test_gemm_block.py. Without a GPU these run in the Triton interpreter (conftest.py).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tritonfp8._kernels import gemm as K_
from tritonfp8._kernels.gemm_configs import PROMOTES
from tritonfp8.bench.harness import rel_error
from tritonfp8.gemm import GemmConfig, error_bound, gemm, gemm_torch

E4 = torch.float8_e4m3fn

# Small tiles (interpreter time); BLOCK_K 128 so block scales run too. Partial tiles in M and N everywhere below.
LAG_CONFIGS = [
    GemmConfig(64, 64, 128, group_m=2, num_warps=4, num_stages=3, schedule="tmapersistent", promote="lag"),
    GemmConfig(64, 64, 128, group_m=2, num_warps=4, num_stages=3, schedule="tma", split_k=3, promote="lag"),
    GemmConfig(64, 32, 128, group_m=1, num_warps=4, num_stages=3, schedule="tma", swap_ab=True, promote="lag"),
]


def _inputs(M, N, Kd, device, block=False, rowwise=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, Kd, generator=g).to(E4)
    b = torch.randn(N, Kd, generator=g).to(E4)
    if block:
        kb = -(-Kd // 128)
        sa = torch.rand(M, kb, generator=g) + 0.5
        sb = torch.rand(-(-N // 128), kb, generator=g) + 0.5
    elif rowwise:
        sa = torch.rand(M, 1, generator=g) + 0.5
        sb = torch.rand(1, N, generator=g) + 0.5
    else:
        sa = torch.tensor(0.75)
        sb = torch.tensor(1.25)
    return [t.to(device) for t in (a, b, sa, sb)]


def _check(cfg, M, N, Kd, device, block=False, rowwise=False):
    if device == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA schedules need sm_90")
    a, b, sa, sb = _inputs(M, N, Kd, device, block=block, rowwise=rowwise)
    acc = "fast" if block else "precise"
    sync = dataclasses.replace(cfg, promote="sync")
    out = gemm(a, b, sa, sb, accumulate=acc, out_dtype=torch.float32, config=cfg)
    base = gemm(a, b, sa, sb, accumulate=acc, out_dtype=torch.float32, config=sync)
    ref = gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), out_dtype=torch.float64, compute_dtype=torch.float64)
    assert rel_error(out, ref) <= error_bound(torch.float32, Kd, "precise")
    if device == "cpu":  # interpreter: exact dots, so the same fp32 adds in the same order give the same bits
        assert torch.equal(out, base)
    else:
        assert rel_error(out, base.double()) <= error_bound(torch.float32, Kd, "precise")


@pytest.mark.parametrize("cfg", LAG_CONFIGS, ids=lambda c: c.short().replace(" ", "-"))
@pytest.mark.parametrize("Kd", [128, 400])  # exactly one K block; 3 full blocks + a partial one
def test_lag_precise_tensorwise_matches_sync(cfg, Kd, device):
    _check(cfg, 70, 112, Kd, device)


@pytest.mark.parametrize("cfg", LAG_CONFIGS[:2], ids=lambda c: c.short().replace(" ", "-"))
def test_lag_precise_rowwise_matches_sync(cfg, device):
    _check(cfg, 70, 112, 272, device, rowwise=True)


@pytest.mark.parametrize("cfg", LAG_CONFIGS, ids=lambda c: c.short().replace(" ", "-"))
@pytest.mark.parametrize("Kd", [256, 400])  # block scales need K > 128 to stay block-scaled; 400: partial block
def test_lag_block_scales_match_sync(cfg, Kd, device):
    _check(cfg, 70, 160, Kd, device, block=True)


def kernel_name(cfg, **kw):
    """The built kernel name of ``cfg`` for an E4M3 x E4M3 -> bf16 call (fast, per tensor, unless ``kw`` says)."""
    args = dict(arch=90, a_dtype=E4, b_dtype=E4, out_dtype=torch.bfloat16, a_vec=False, b_vec=False,
                precise=False, has_bias=False, activation=None)
    return K_.gemm_kernel_name(cfg, **{**args, **kw}).build()


def test_lag_config_field_and_kernel_names():
    assert PROMOTES == ("sync", "lag", "split")
    with pytest.raises(ValueError, match="GemmConfig.promote"):
        GemmConfig(promote="early")
    lag = GemmConfig(128, 128, 128, num_warps=8, num_stages=5, promote="lag")
    assert lag.short().endswith(" lag") and GemmConfig.from_dict(lag.as_dict()) == lag
    assert "promote" not in GemmConfig().short() and GemmConfig.from_dict({"block_m": 64}).promote == "sync"

    name = kernel_name
    assert name(lag, precise=True).endswith("_tensorwise_precise_lag")
    assert name(lag, b_block_rows=128).endswith("_blockwise_lag")
    assert name(lag) == name(dataclasses.replace(lag, promote="sync"))  # fast mode: no promotion to lag
    # Kept on the unlagged loop (and named so): pointer loads (Ada) and warp specialization.
    ptr = dataclasses.replace(lag, schedule="ptr", block_k=64)
    ws = dataclasses.replace(lag, schedule="tmaws", num_warps=4)
    for cfg in (ptr, ws):
        assert "lag" not in name(cfg, precise=True) and not K_.promote_lag(cfg, True)
    assert K_.promote_lag(lag, True) and not K_.promote_lag(lag, False)


def test_lag_on_pointer_path_runs_the_unlagged_loop(device):
    """A "lag" config on the pointer schedule is accepted and computes the same product (old loop, see
    promote_lag)."""
    if device == "cuda":
        pytest.skip("interpreter check of the host-side switch")
    cfg = GemmConfig(64, 64, 128, group_m=2, num_warps=4, num_stages=3, schedule="ptr", promote="lag")
    _check(cfg, 70, 112, 272, device)


def test_bench_gemm_times_lag_in_precise_mode(cpu_tools, tmp_path):
    """``bench gemm --modes precise --variants lag`` on CPU (interpreter kernels, stand-in timer): the variant is
    timed in the precise mode against cuBLAS exact and against the default precise kernel."""
    import argparse
    import json

    from tritonfp8.bench.suites import gemm as suite
    args = argparse.Namespace(quick=True, repeats=1, out=str(tmp_path), no_save=False, profile=False,
                              shapes="80x256x256", modes="precise", variants="lag", no_bf16=True,
                              name_ab=None, scaling="tensor")
    assert suite.run(args) == 0
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    rows = {r["mode"]: r for r in data["rows"]}
    assert set(rows) == {"precise", "precise:lag"}
    assert rows["precise:lag"]["config"].endswith(" lag") and rows["precise:lag"]["vs_default"] > 0
    assert rows["precise:lag"]["peer"] == "cublas_exact" and rows["precise:lag"]["err"] <= rows["precise:lag"]["err_bound"]
    assert "vs_default" not in rows["precise"]
    assert suite.variant_config(GemmConfig(), "lag").promote == "lag"
