"""The "split" fp32 promotion (``GemmConfig(promote="split")``) of the precise and block-scaled GEMM modes.

The split loop takes two K blocks per step and computes each block's fresh dot as two chained half-K dots (TMA
blocks of block_k // 2); the promotions are the unlagged loop's (same blocks, same scales, same order). On the GPU
the half dots are the same k32 wgmmas into the same accumulator as one dot; the interpreter adds the two half sums
in fp32, which rounds differently from one dot unless the block sums are exact. So: integer-valued FP8 inputs
(every dot exact in fp32) must give the unsplit kernel's output bit for bit (any block promoted twice, skipped,
scaled by the wrong column or out of order shows up), and random inputs must stay within the precise-mode bound.
Block counts per program: odd and even (the odd one reads one block past its range, which must not be promoted),
with split-K (the block past the range is a neighbour's real data there). Interpreter on CPU (conftest.py).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tritonfp8._kernels import gemm as K_
from tritonfp8._kernels.gemm_configs import PROMOTES, smem_bytes
from tritonfp8.bench.harness import rel_error
from tritonfp8.gemm import GemmConfig, error_bound, gemm, gemm_torch

from test_gemm_lag import _inputs as lag_inputs, kernel_name

E4 = torch.float8_e4m3fn

# Small tiles (interpreter time); BLOCK_K 128 so block scales run too; partial tiles in M and N everywhere below.
SPLIT_CONFIGS = [
    GemmConfig(64, 64, 128, group_m=2, num_warps=4, num_stages=2, schedule="tmapersistent", promote="split"),
    GemmConfig(64, 64, 128, group_m=2, num_warps=4, num_stages=2, schedule="tma", split_k=2, promote="split"),
    GemmConfig(64, 32, 128, group_m=1, num_warps=4, num_stages=2, schedule="tma", swap_ab=True, promote="split"),
]
IDS = ["persistent", "splitk2", "swapab"]


def _inputs(M, N, Kd, device, *, block=False, integer=False):
    """test_gemm_lag's operands and scales; ``integer``: the operands replaced by integers |x| <= 4 (products
    <= 16, sums over any K here far below 2^24: every dot exact in fp32, in any order)."""
    a, b, sa, sb = lag_inputs(M, N, Kd, "cpu", block=block)
    if integer:
        g = torch.Generator().manual_seed(1)
        a = torch.randint(-4, 5, (M, Kd), generator=g).float().to(E4)
        b = torch.randint(-4, 5, (N, Kd), generator=g).float().to(E4)
    return [t.to(device) for t in (a, b, sa, sb)]


def _check(cfg, M, N, Kd, device, *, block=False, integer=False):
    if device == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA schedules need sm_90")
    a, b, sa, sb = _inputs(M, N, Kd, device, block=block, integer=integer)
    acc = "fast" if block else "precise"  # block scales are always promoted per K block
    out = gemm(a, b, sa, sb, accumulate=acc, out_dtype=torch.float32, config=cfg)
    base = gemm(a, b, sa, sb, accumulate=acc, out_dtype=torch.float32, config=dataclasses.replace(cfg, promote="sync"))
    ref = gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), out_dtype=torch.float64, compute_dtype=torch.float64)
    # On tensor cores each 128-K block's wgmma chain sums in the tensor core's precision (error_bound's tensor_core
    # term; the interpreter's dots are exact fp32). The bound tests.test_gemm states once, used as there.
    bound = error_bound(torch.float32, Kd, "precise", tensor_core=out.is_cuda)
    assert rel_error(out, ref) <= bound
    if integer:  # exact dots: the same fp32 promotions in the same order give the same bits (GPU and interpreter)
        assert torch.equal(out, base)
    else:
        assert rel_error(out, base.double()) <= bound


@pytest.mark.parametrize("cfg", SPLIT_CONFIGS, ids=IDS)
@pytest.mark.parametrize("Kd", [128, 400, 640])  # 1 block (odd); 4 (even, the last partial); 5 (odd)
def test_split_precise_matches_sync_bit_exact(cfg, Kd, device):
    _check(cfg, 70, 112, Kd, device, integer=True)


@pytest.mark.parametrize("cfg", SPLIT_CONFIGS[:2], ids=IDS[:2])
def test_split_precise_random_inputs_within_bound(cfg, device):
    _check(cfg, 70, 112, 400, device)


@pytest.mark.parametrize("cfg", SPLIT_CONFIGS, ids=IDS)
@pytest.mark.parametrize("Kd", [256, 640])  # even and odd block counts (block scales need K > 128)
def test_split_block_scales_match_sync_bit_exact(cfg, Kd, device):
    _check(cfg, 70, 160, Kd, device, block=True, integer=True)


def test_split_block_scales_split_k_with_an_empty_split(device):
    """5 K blocks over 4 splits of 2: the last split has none (its range starts past the last scale column)."""
    cfg = dataclasses.replace(SPLIT_CONFIGS[1], split_k=4)
    _check(cfg, 70, 160, 640, device, block=True, integer=True)


def test_split_config_field_names_and_smem():
    assert PROMOTES == ("sync", "lag", "split")
    with pytest.raises(ValueError, match="GemmConfig.promote"):
        GemmConfig(64, 64, 32, promote="split")  # halves of 16: below an FP8 wgmma's K of 32
    split = GemmConfig(128, 128, 128, num_warps=8, num_stages=3, promote="split")
    assert split.short().endswith(" split") and GemmConfig.from_dict(split.as_dict()) == split

    name = kernel_name
    assert name(split, precise=True).endswith("_tensorwise_precise_split")
    assert name(split, b_block_rows=128).endswith("_blockwise_split")
    assert name(split) == name(dataclasses.replace(split, promote="sync"))  # fast mode: nothing to promote
    assert K_.promote_lag(split, True) == 2 and K_.promote_lag(split, False) == 0
    assert K_.tma_k_box(split, True) == 64 and K_.tma_k_box(split, False) == 128
    # Pointer loads (Ada) and warp specialization keep the unsplit loop, with full-width blocks.
    for cfg in (dataclasses.replace(split, schedule="ptr"), dataclasses.replace(split, schedule="tmaws", num_warps=4)):
        assert "split" not in name(cfg, precise=True) and K_.promote_lag(cfg, True) == 0
        assert K_.tma_k_box(cfg, True) == 128
    # Two K blocks per stage: the ring of 3 split stages is that of 6 plain ones.
    sync = dataclasses.replace(split, promote="sync")
    assert smem_bytes(split, 2) == smem_bytes(sync, 2, stages=6) - 8 * 3


def test_split_on_pointer_path_runs_the_unsplit_loop(device):
    """A "split" config on the pointer schedule computes the same product (the old loop, see promote_lag)."""
    if device == "cuda":
        pytest.skip("interpreter check of the host-side switch")
    cfg = GemmConfig(64, 64, 128, group_m=2, num_warps=4, num_stages=3, schedule="ptr", promote="split")
    _check(cfg, 70, 112, 272, device, integer=True)


def test_bench_gemm_times_split_in_precise_and_block_modes(cpu_tools, tmp_path, monkeypatch):
    """``bench gemm --variants split`` on CPU (interpreter kernels, stand-in timer): timed in the precise mode
    against cuBLAS exact and the default precise kernel, and with --scaling block against the block default (the
    cuBLAS blockwise peer replaced as in test_gemm_block.py: CPU ``torch._scaled_mm`` has no block scales)."""
    import argparse
    import json

    from tritonfp8.bench.suites import gemm as suite
    monkeypatch.setattr(suite, "cublas_block", lambda bs: lambda: gemm_torch(
        bs.p.a, bs.p.b, bs.sa, bs.sb, out_dtype=torch.bfloat16))
    for scaling, mode in (("tensor", "precise"), ("block", "block")):
        out = tmp_path / scaling
        args = argparse.Namespace(quick=True, repeats=1, out=str(out), no_save=False, profile=False,
                                  shapes="80x256x384", modes="precise", variants="split", no_bf16=True,
                                  name_ab=None, scaling=scaling)
        assert suite.run(args) == 0
        data = json.loads(next(out.glob("*.json")).read_text())
        rows = {r["mode"]: r for r in data["rows"]}
        row = rows[f"{mode}:split"]
        assert row["config"].endswith(" split") and row["vs_default"] > 0, row
        assert row["err"] <= row["err_bound"], row
    assert suite.variant_config(GemmConfig(128, 128, 128), "split").promote == "split"
    assert suite.variant_config(GemmConfig(128, 128, 128), "splitnp").schedule == "tma"


@pytest.mark.parametrize("block", [False, True], ids=["precise", "block"])
def test_split_grouped_matches_sync_bit_exact(block, device):
    """The grouped (MoE) GEMM runs the same K loop: with "split", integer inputs, bit for bit the unsplit
    kernel's output (groups of 5 and 3 K blocks: odd counts; an empty group)."""
    from tritonfp8.grouped import grouped_gemm

    if device == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA schedules need sm_90")
    G, N, Kd, sizes = 3, 96, 640, (37, 0, 70)
    M = sum(sizes)
    g = torch.Generator().manual_seed(1)
    a = torch.randint(-4, 5, (M, Kd), generator=g).float().to(E4).to(device)
    b = torch.randint(-4, 5, (G, N, Kd), generator=g).float().to(E4).to(device)
    kb = -(-Kd // 128)
    if block:
        sa = (torch.rand(M, kb, generator=g) + 0.5).to(device)
        sb = (torch.rand(G, -(-N // 128), kb, generator=g) + 0.5).to(device)
    else:
        sa = torch.tensor(0.75, device=device)
        sb = (torch.rand(G, generator=g) + 0.5).to(device)
    cfg = GemmConfig(64, 64, 128, group_m=2, num_warps=4, num_stages=2, schedule="tmapersistent", promote="split")
    kw = dict(m_sizes=torch.tensor(sizes, device=device), out_dtype=torch.float32,
              accumulate="fast" if block else "precise")
    out = grouped_gemm(a, b, sa, sb, config=cfg, **kw)
    base = grouped_gemm(a, b, sa, sb, config=dataclasses.replace(cfg, promote="sync"), **kw)
    assert torch.equal(out, base)
