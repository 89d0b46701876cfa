"""The grouped GEMM on the Gluon warp-specialized kernel (``gemm_gluon.launch_grouped``, schedule "glws").

Three layers: host logic on CPU (the default config takes the Gluon kernel only where it can run; bad pinned
configs raise), the offline sm_90 compile (QGMMA, no spills: ``test_codegen_grouped.py`` via the ``grouped_glws_*``
codegen specs), the numbers on the GPU (Gluon kernels do not run in the interpreter).

Tolerance (stated once, as in ``test_grouped.py``): each group's relative Frobenius error against the fp64
reference ``grouped_gemm_torch`` at most ``error_bound(out_dtype, K, mode, tensor_core=True)``. Against the Triton
grouped kernel on the same inputs (precise and block modes: the same fp32 sums of the K blocks' products; the
Triton kernel applies per-tensor scales to every K block, the Gluon kernel once in the epilogue, so the fp32
results may differ in their last bits) the two agree per element to one unit in the last place of the output
type (``_ULP``) plus 2^-20 of the largest |output|: that absolute term covers a gelu / silu tail, where an fp32
argument one bit apart turns an output of ~1e-7 into 0 (seen on the H200, s12 call 1). Outputs start NaN-filled:
every row of every group must be written (and, masked, the rows past a group's count must stay NaN).
"""

from __future__ import annotations

import pytest
import torch

from conftest import requires_gpu

from tritonfp8.gemm import GemmConfig, error_bound
from tritonfp8.grouped import grouped_config, grouped_gemm, grouped_gemm_masked, grouped_gemm_torch

E4 = torch.float8_e4m3fn
GLWS128 = GemmConfig(128, 128, 128, group_m=8, num_warps=4, num_stages=4, schedule="glws", epilogue_subtile=1)
GLWS256 = GemmConfig(128, 256, 128, group_m=8, num_warps=4, num_stages=3, schedule="glws", epilogue_subtile=1)
GLWS256_FAST = GemmConfig(128, 256, 128, group_m=8, num_warps=4, num_stages=4, schedule="glws", epilogue_subtile=1)
_ULP = {torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10, torch.float32: 2.0 ** -20}


# ---------------------------------------------------------------------------------------------------- CPU: host


def test_default_config_takes_gluon_where_it_can():
    kw = dict(num_sms=132, out_size=2)
    # Issue 4's grouped shapes: 8 groups of 1024 rows, N 4096 / 7168: thousands of tiles.
    for N, K in ((4096, 7168), (7168, 2048)):
        for block, precise in ((True, True), (False, True)):
            cfg = grouped_config(1024, N, K, block=block, precise=precise, total_rows=8192, gluon=True, **kw)
            assert cfg.schedule == "glws" and cfg.split_k == 1, cfg
    # Not: fast accumulation, decode-sized groups, few tiles, or no Gluon (the interpreter, other archs).
    assert grouped_config(1024, 4096, 7168, block=False, precise=False, total_rows=8192, gluon=True,
                          **kw).schedule == "tmapersistent"
    assert grouped_config(48, 4096, 7168, block=True, precise=True, total_rows=8 * 48, gluon=True,
                          **kw).block_m == 64
    assert grouped_config(128, 512, 7168, block=True, precise=True, total_rows=256, gluon=True,
                          **kw).schedule == "tmapersistent"
    assert grouped_config(1024, 4096, 7168, block=True, precise=True, total_rows=8192,
                          **kw).schedule == "tmapersistent"


def _small(device, G=3, N=256, K=256):
    a = torch.randn(40, K).to(E4).to(device)
    b = torch.randn(G, N, K).to(E4).to(device)
    return a, b, torch.ones(()).to(device), torch.ones(G).to(device)


def test_pinned_glws_misaligned_out_raises(device):
    a, b, sa, sb = _small(device)
    buf = torch.empty(40 * 256 + 1, dtype=torch.bfloat16, device=device)
    out = buf[1:].view(40, 256)  # contiguous, 2-byte aligned base
    with pytest.raises(ValueError, match="out: schedule 'glws'.*16-byte aligned"):
        grouped_gemm(a, b, sa, sb, m_sizes=torch.tensor([10, 0, 30], device=device), accumulate="precise",
                     config=GLWS128, out=out)


@pytest.mark.parametrize("cfg,b_rows", [(GemmConfig(**{**GLWS128.as_dict(), "split_k": 2}), 128),
                                        (GLWS256, 1)], ids=["splitk", "n256-b1x128"])
def test_unsupported_glws_config(device, cfg, b_rows):
    G, N, K = 3, 256, 256
    a = torch.randn(40, K).to(E4).to(device)
    b = torch.randn(G, N, K).to(E4).to(device)
    sa = torch.ones(40, 2, device=device)
    sb = torch.ones(G, 2 if b_rows == 128 else N, 2, device=device)
    with pytest.raises(ValueError, match="config: grouped schedule 'glws'"):
        grouped_gemm(a, b, sa, sb, m_sizes=torch.tensor([10, 0, 30], device=device), config=cfg)


# ------------------------------------------------------------------------------------------------------ GPU

CASES = [  # sizes, N, K, scaling, accumulate, out dtype, bias, activation, config
    # uneven groups, empty ones, a group of one row, groups ending inside a 64-row half and on a tile boundary
    ((0, 1000, 129, 0, 2047, 64, 1, 256), 576, 3888, "block", "precise", torch.bfloat16, False, None, GLWS128),
    ((0, 1000, 129, 0, 2047, 64, 1, 256), 576, 3888, "block", "precise", torch.bfloat16, False, None, GLWS256),
    ((300, 0, 777, 1024), 1040, 2048, "block", "precise", torch.float32, True, "relu", GLWS256),
    ((1024,) * 8, 4096, 7168, "block", "precise", torch.bfloat16, False, None, None),  # the default config
    ((513, 2000, 0, 1), 768, 1024, "group", "precise", torch.bfloat16, True, "gelu", GLWS256),
    ((513, 2000, 0, 1), 768, 1024, "row", "precise", torch.float16, False, "silu", GLWS128),
    ((513, 2000, 0, 1), 768, 1024, "row", "fast", torch.bfloat16, True, None, GLWS256_FAST),
]


def _inputs(sizes, N, K, scaling, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    G, M = len(sizes), sum(sizes)
    kb, nb = -(-K // 128), -(-N // 128)
    a = torch.randn(M, K, device="cuda", generator=g).to(E4)
    b = torch.randn(G, N, K, device="cuda", generator=g).to(E4)
    r = lambda *s: torch.rand(*s, device="cuda", generator=g) + 0.5  # noqa: E731
    sa, sb = {"block": (r(M, kb), r(G, nb, kb)), "group": (r(G), r(G)), "row": (r(M, 1), r(G, N))}[scaling]
    return a, b, sa, sb


def _check_groups(out, ref, sizes, bound):
    from tritonfp8.tune import rel_error_gpu

    lo = 0
    for g, m in enumerate(sizes):
        if m:
            err = rel_error_gpu(out[lo:lo + m], ref[lo:lo + m])
            assert err <= bound, f"group {g} ({m} rows): rel error {err:.3g} > {bound:.3g}"
        lo += m


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"G{len(c[0])}-{c[1]}x{c[2]}-{c[3]}-{c[4]}-"
                                                      f"{str(c[5])[6:]}-{c[7]}-{c[8].block_n if c[8] else 'auto'}")
def test_grouped_glws_matches_reference_and_triton_kernel(case):
    sizes, N, K, scaling, acc, out_dtype, has_bias, act, cfg = case
    G, M = len(sizes), sum(sizes)
    a, b, sa, sb = _inputs(sizes, N, K, scaling)
    bias = torch.randn(G, N, device="cuda").to(out_dtype) if has_bias else None
    m_sizes = torch.tensor(sizes, dtype=torch.int32, device="cuda")
    offsets = torch.tensor([0] + [sum(sizes[:i + 1]) for i in range(G)], dtype=torch.int32, device="cuda")
    ref = grouped_gemm_torch(a, b, sa, sb, m_sizes=m_sizes.cpu(), out_dtype=torch.float64, bias=bias,
                             activation=act, compute_dtype=torch.float64)
    if cfg is None:
        from tritonfp8._kernels.gemm_configs import gluon_config

        cfg = gluon_config(M, N, torch.cuda.get_device_properties(0).multi_processor_count, 2)
        assert cfg is not None and cfg.schedule == "glws"
    outs = []
    for kw in (dict(m_sizes=m_sizes), dict(group_offsets=offsets)):
        out = torch.full((M, N), float("nan"), device="cuda", dtype=out_dtype)
        grouped_gemm(a, b, sa, sb, out_dtype=out_dtype, bias=bias, activation=act, accumulate=acc, config=cfg,
                     out=out, check=False, **kw)
        torch.cuda.synchronize()
        assert not out.isnan().any()
        _check_groups(out, ref, sizes, error_bound(out_dtype, K, acc, tensor_core=True))
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    if case[8] is None:  # the default config picks the same kernel
        auto = grouped_gemm(a, b, sa, sb, out_dtype=out_dtype, bias=bias, activation=act, accumulate=acc,
                            m_sizes=m_sizes)
        assert torch.equal(auto, outs[0])
    if acc == "precise":
        rows = 64 if max(sizes) <= 64 else 128
        tcfg = grouped_config(rows, N, K, block=scaling == "block", precise=True)
        assert tcfg.schedule == "tmapersistent"
        t_out = grouped_gemm(a, b, sa, sb, out_dtype=out_dtype, bias=bias, activation=act, accumulate=acc,
                             config=tcfg, m_sizes=m_sizes)
        tol = _ULP[out_dtype] * t_out.float().abs() + 2.0 ** -20 * t_out.float().abs().max()
        assert ((outs[0].float() - t_out.float()).abs() <= tol).all()


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [GLWS128, GLWS256], ids=["n128", "n256"])
def test_masked_glws_leaves_rows_past_counts(cfg):
    """Masked (decode) groups on the Gluon kernel (pinned): rows past each count stay as they were (NaN)."""
    G, cap, N, K = 5, 320, 640, 1024
    counts = [0, 320, 1, 129, 300]
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(G, cap, K, device="cuda", generator=g).to(E4)
    b = torch.randn(G, N, K, device="cuda", generator=g).to(E4)
    kb, nb = K // 128, N // 128
    sa = torch.rand(G, cap, kb, device="cuda", generator=g) + 0.5
    sb = torch.rand(G, nb, kb, device="cuda", generator=g) + 0.5
    out = torch.full((G, cap, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    grouped_gemm_masked(a, b, sa, sb, masked_m=torch.tensor(counts, dtype=torch.int32, device="cuda"), out=out,
                        config=cfg, check=False)
    torch.cuda.synchronize()
    bound = error_bound(torch.bfloat16, K, "precise", tensor_core=True)
    from tritonfp8.gemm import gemm_torch
    from tritonfp8.tune import rel_error_gpu

    for i, m in enumerate(counts):
        assert out[i, m:].isnan().all(), f"group {i}: rows past its count {m} were written"
        if m:
            ref = gemm_torch(a[i, :m], b[i], sa[i, :m], sb[i], out_dtype=torch.float64,
                             compute_dtype=torch.float64)
            assert rel_error_gpu(out[i, :m], ref) <= bound, i
