"""Grouped FP8 GEMM (MoE): contiguous groups (offsets / sizes) and the masked decode variant, on small shapes.

Without a GPU these run the one GEMM kernel (``GROUPED`` switch) in the interpreter on CPU tensors (conftest.py).

Tolerance (stated once, here): the relative Frobenius error against the fp64 reference ``grouped_gemm_torch``
(inputs dequantized exactly, fp64 product, no rounding) must be at most ``error_bound(out_dtype, K, mode,
tensor_core=on_gpu)``: the one rounding to out_dtype (bf16 2^-8, fp16 2^-11, fp32 2^-24) plus the accumulation
error of the mode (fp32 sums: K * 2^-24; fast accumulation on Hopper's tensor cores: 1.5 * 2^-13 * sqrt(K/32)).
Each group is checked on its own rows (an error in a small group cannot hide in the norm of a big one). Rows of the
masked variant past a group's count must be left untouched (checked against a NaN-filled ``out``). NaN never
passes: ``rel_error`` returns inf for non-finite output.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tritonfp8.bench.harness import rel_error
from tritonfp8.gemm import GemmConfig, error_bound
from tritonfp8.grouped import (
    grouped_config, grouped_gemm, grouped_gemm_masked, grouped_gemm_masked_torch, grouped_gemm_torch,
)

from conftest import requires_gpu

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")  # interpreter silu

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2
# Small tiles keep the interpreter fast; the persistent grid has 3 programs there (kernels.INTERPRETER_SMS), so each
# program walks several tiles of several groups.
CFG = GemmConfig(64, 32, 32, group_m=2, num_warps=4, num_stages=2, schedule="tmapersistent")
CFG_BLOCK = GemmConfig(64, 64, 128, group_m=2, num_warps=4, num_stages=2, schedule="tmapersistent")


def cdiv(a, b):
    return -(-a // b)


@dataclasses.dataclass(frozen=True)
class Case:
    sizes: tuple[int, ...]  # rows per group (0: empty group)
    N: int
    K: int
    a_scale: str = "tensor"  # "tensor" | "group" | "row" | "block"
    b_scale: str = "group"  # "group" | "row" | "block" (128x128) | "block1" (1x128)
    out_dtype: torch.dtype = torch.float32
    bias: bool = False
    activation: str | None = None
    accumulate: str = "fast"
    a_dtype: torch.dtype = E4

    def __str__(self):
        s = f"{'-'.join(map(str, self.sizes))}x{self.N}x{self.K}-{self.a_scale}-{self.b_scale}"
        s += f"-{str(self.out_dtype)[6:]}" + ("-bias" if self.bias else "") + (f"-{self.activation}" if self.activation else "")
        return s + ("-e5m2" if self.a_dtype == E5 else "") + ("-precise" if self.accumulate == "precise" else "")


CASES = [
    Case((5, 0, 70, 3), 48, 96),  # uneven, an empty group in the middle, a tile crossing group boundaries
    Case((0, 0, 33, 0), 32, 64),  # empty first and last groups
    Case((17,), 64, 160, a_scale="row", b_scale="row"),  # one group: a plain GEMM
    Case((64, 1, 65, 0, 2), 48, 64, a_scale="group", b_scale="row"),  # boundaries on and next to the 64-row tile
    Case((9, 40, 0, 23), 32, 96, a_scale="row", b_scale="group", out_dtype=torch.bfloat16, bias=True,
         activation="gelu"),
    Case((12, 30), 32, 64, a_scale="tensor", b_scale="row", out_dtype=torch.float16, a_dtype=E5,
         accumulate="precise", activation="silu"),
    Case((7, 0, 60), 144, 288, a_scale="block", b_scale="block"),  # partial last 128-row b block and K block
    Case((30, 5), 48, 160, a_scale="block", b_scale="block1", bias=True, activation="relu"),
]


def make(c: Case, device):
    G = len(c.sizes)
    M = sum(c.sizes)
    kb, nb = cdiv(c.K, 128), cdiv(c.N, 128)
    a = (torch.randn(M, c.K) * 2).to(c.a_dtype)
    b = torch.randn(G, c.N, c.K).to(E4)
    sa = {"tensor": torch.tensor(0.5), "group": torch.rand(G) + 0.5, "row": torch.rand(M, 1) + 0.5,
          "block": torch.rand(M, kb) + 0.5}[c.a_scale]
    sb = {"group": torch.rand(G) + 0.5, "row": torch.rand(G, c.N) + 0.5, "block": torch.rand(G, nb, kb) + 0.5,
          "block1": torch.rand(G, c.N, kb) + 0.5}[c.b_scale]
    bias = torch.randn(G, c.N) if c.bias else None
    to = (lambda t: None if t is None else t.to(device))
    return to(a), to(b), to(sa), to(sb), to(bias)


def tol(c: Case, device) -> float:
    block = c.b_scale.startswith("block")
    mode = "precise" if (block or c.accumulate == "precise") else "fast"
    return error_bound(c.out_dtype, c.K, mode, tensor_core=device == "cuda")


def check_groups(out, ref, sizes, bound, label=""):
    lo = 0
    for g, m in enumerate(sizes):
        if m:
            err = rel_error(out[lo:lo + m], ref[lo:lo + m])
            assert err <= bound, f"{label} group {g} ({m} rows): rel error {err:.3g} > {bound:.3g}"
        lo += m


@pytest.mark.parametrize("case", CASES, ids=str)
def test_grouped_matches_reference(case, device):
    a, b, sa, sb, bias = make(case, device)
    sizes = torch.tensor(case.sizes, dtype=torch.int32, device=device)
    cfg = CFG_BLOCK if case.b_scale.startswith("block") else CFG
    out = grouped_gemm(a, b, sa, sb, m_sizes=sizes, out_dtype=case.out_dtype, bias=bias,
                       activation=case.activation, accumulate=case.accumulate, config=cfg)
    ref = grouped_gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), m_sizes=sizes.cpu(), out_dtype=torch.float64,
                             bias=None if bias is None else bias.cpu(), activation=case.activation,
                             compute_dtype=torch.float64)
    assert out.shape == (sum(case.sizes), case.N) and out.dtype == case.out_dtype
    check_groups(out, ref, case.sizes, tol(case, device), str(case))


def test_offsets_and_sizes_agree_default_config(device):
    """group_offsets (int64) and m_sizes (int32) give the same result; no config pinned (the grouped heuristic's
    128x256x128 tile), so the default path runs too."""
    c = Case((3, 0, 150, 20), 32, 64, a_scale="row", b_scale="row", out_dtype=torch.bfloat16)
    a, b, sa, sb, _ = make(c, device)
    offs = torch.tensor([0, 3, 3, 153, 173], dtype=torch.int64, device=device)
    o1 = grouped_gemm(a, b, sa, sb, group_offsets=offs)
    o2 = grouped_gemm(a, b, sa, sb, m_sizes=torch.tensor(c.sizes, dtype=torch.int32, device=device))
    assert torch.equal(o1, o2)
    ref = grouped_gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), group_offsets=offs.cpu(),
                             out_dtype=torch.float64, compute_dtype=torch.float64)
    check_groups(o1, ref, c.sizes, tol(c, device))


def test_exact_identity_per_group(device):
    """b[g] = I * 2^g (exact in e4m3), per-group scales powers of two: out rows of group g are a's rows times
    2^g * scale_a * scale_b[g], bit for bit (fp32 output); a wrong group mapping cannot pass."""
    G, N = 4, 32
    sizes = (6, 0, 40, 11)
    M = sum(sizes)
    a = torch.randn(M, N).to(E4)
    b = torch.stack([torch.eye(N) * 2.0**g for g in range(G)]).to(E4)
    sb = torch.tensor([1.0, 0.5, 0.25, 4.0])
    out = grouped_gemm(a.to(device), b.to(device), torch.tensor(2.0).to(device), sb.to(device),
                       m_sizes=torch.tensor(sizes).to(device), out_dtype=torch.float32, config=CFG)
    gid = torch.repeat_interleave(torch.arange(G), torch.tensor(sizes))
    expect = a.float() * 2.0 * (2.0 ** gid.float() * sb[gid])[:, None]
    assert torch.equal(out.cpu(), expect)


def test_masked_matches_reference_and_leaves_rows(device):
    G, cap, N, K = 4, 40, 48, 96
    counts = torch.tensor([3, 0, 40, 17], dtype=torch.int32)
    a = torch.randn(G, cap, K).to(E4)
    b = torch.randn(G, N, K).to(E4)
    sa = torch.rand(G, cap, 1) + 0.5
    sb = torch.rand(G, N, 1) + 0.5
    out = torch.full((G, cap, N), float("nan"))
    args = [t.to(device) for t in (a, b, sa, sb)]
    res = grouped_gemm_masked(*args, masked_m=counts.to(device), out_dtype=torch.float32, out=out.to(device),
                              config=CFG)
    ref = grouped_gemm_masked_torch(a, b, sa, sb, masked_m=counts, out_dtype=torch.float64,
                                    compute_dtype=torch.float64)
    bound = error_bound(torch.float32, K, "fast", tensor_core=device == "cuda")
    res = res.cpu()
    for g in range(G):
        m = int(counts[g])
        if m:
            assert rel_error(res[g, :m], ref[g, :m]) <= bound, g
        assert bool(res[g, m:].isnan().all()), f"group {g}: rows past masked_m were written"


def test_masked_block_scales_default_config(device):
    """Masked decode with block scales (G, M_max, Kb) x (G, Nb, Kb); default config: 64-row tiles for M_max <= 64."""
    G, cap, N, K = 3, 8, 32, 256
    counts = torch.tensor([8, 1, 0])
    a = torch.randn(G, cap, K).to(E4)
    b = torch.randn(G, N, K).to(E4)
    sa = torch.rand(G, cap, 2) + 0.5
    sb = torch.rand(G, 1, 2) + 0.5
    assert grouped_config(cap, N, K, block=True, precise=True).block_m == 64
    res = grouped_gemm_masked(*[t.to(device) for t in (a, b, sa, sb)], masked_m=counts.to(device),
                              out_dtype=torch.float32).cpu()
    ref = grouped_gemm_masked_torch(a, b, sa, sb, masked_m=counts, out_dtype=torch.float64,
                                    compute_dtype=torch.float64)
    bound = error_bound(torch.float32, K, "precise", tensor_core=device == "cuda")
    for g in range(G):
        m = int(counts[g])
        if m:
            assert rel_error(res[g, :m], ref[g, :m]) <= bound, g


def test_zero_size(device):
    b = torch.randn(3, 32, 64).to(E4).to(device)
    a = torch.empty(0, 64, dtype=E4, device=device)
    sizes = torch.zeros(3, dtype=torch.int32, device=device)
    out = grouped_gemm(a, b, torch.tensor(1.0, device=device), torch.ones(3, device=device), m_sizes=sizes)
    assert out.shape == (0, 32)
    # K = 0: each row is its group's bias (activation applied)
    a0 = torch.empty(5, 0, dtype=E4, device=device)
    b0 = torch.empty(3, 32, 0, dtype=E4, device=device)
    bias = torch.randn(3, 32, device=device)
    out = grouped_gemm(a0, b0, torch.tensor(1.0, device=device), torch.ones(3, device=device),
                       group_offsets=torch.tensor([0, 2, 2, 5], device=device), bias=bias, out_dtype=torch.float32,
                       activation="relu")
    expect = torch.relu(bias.cpu()[torch.tensor([0, 0, 2, 2, 2])])
    assert torch.equal(out.cpu(), expect)


def test_unchecked_bad_offsets_stay_in_bounds(device):
    """check=False with offsets past total_M: the kernel clamps the group windows to [0, total_M]; group 0's rows
    are still right and nothing is written outside ``out`` (a guard row after it stays NaN)."""
    a = torch.randn(20, 64).to(E4).to(device)
    b = torch.randn(2, 32, 64).to(E4).to(device)
    buf = torch.full((21, 32), float("nan"), device=device)
    out = grouped_gemm(a, b, torch.tensor(1.0, device=device), torch.ones(2, device=device),
                       group_offsets=torch.tensor([0, 20, 90], device=device), out=buf[:20],
                       out_dtype=torch.float32, config=CFG, check=False)
    ref = grouped_gemm_torch(a.cpu(), b.cpu(), torch.tensor(1.0), torch.ones(2),
                             group_offsets=torch.tensor([0, 20, 20]), out_dtype=torch.float64,
                             compute_dtype=torch.float64)
    assert rel_error(out, ref) <= error_bound(torch.float32, 64, "fast", tensor_core=device == "cuda")
    assert bool(buf[20].isnan().all())


# ---- bad input: errors name the argument and what was expected ----

def _ok(device, G=3, M=10, N=32, K=64):
    return (torch.randn(M, K).to(E4).to(device), torch.randn(G, N, K).to(E4).to(device),
            torch.tensor(1.0, device=device), torch.ones(G, device=device))


@pytest.mark.parametrize("kw, exc, match", [
    (dict(group_offsets=[0, 5, 3, 10]), ValueError, r"group_offsets: expected non-decreasing.*offsets\[1\] = 5"),
    (dict(group_offsets=[0, 2, 5, 9]), ValueError, r"group_offsets: expected .*offsets\[G\] = total_M = 10"),
    (dict(group_offsets=[1, 2, 5, 10]), ValueError, r"group_offsets: expected offsets\[0\] = 0"),
    (dict(m_sizes=[4, 4, 4]), ValueError, r"m_sizes: expected sizes summing to total_M = 10, got 12"),
    (dict(m_sizes=[12, -2, 0]), ValueError, r"m_sizes: expected sizes >= 0"),
    (dict(group_offsets=[0, 5, 10]), ValueError, r"group_offsets: expected shape \(4,\) \(G \+ 1 with G = 3"),
    (dict(m_sizes=[5, 5]), ValueError, r"m_sizes: expected shape \(3,\)"),
    (dict(m_sizes=[5.0, 5.0, 0.0]), TypeError, r"m_sizes: expected an integer tensor"),
    (dict(), ValueError, r"group_offsets, m_sizes: expected exactly one"),
])
def test_bad_group_sizes(device, kw, exc, match):
    a, b, sa, sb = _ok(device)
    kw = {k: torch.tensor(v, device=device) for k, v in kw.items()}
    with pytest.raises(exc, match=match):
        grouped_gemm(a, b, sa, sb, check=True, **kw)


def test_bad_sizes_pass_unchecked_on_device_tensors_only(device):
    """check=None reads host (CPU) sizes for free and checks them; check=False skips the check."""
    a, b, sa, sb = _ok(device)
    with pytest.raises(ValueError, match="m_sizes"):
        grouped_gemm(a, b, sa, sb, m_sizes=torch.tensor([4, 4, 4]))  # CPU sizes: checked by default
    if device == "cpu":
        out = grouped_gemm(a, b, sa, sb, m_sizes=torch.tensor([4, 4, 4]), check=False, config=CFG)
        assert out.shape == (10, 32)


def test_mismatched_groups_and_shapes(device):
    a, b, sa, sb = _ok(device)
    offs = torch.tensor([0, 2, 5, 10], device=device)
    cases = [
        (dict(scale_b=torch.ones(4, device=device)), ValueError, r"scale_b: expected \(3,\) one per group"),
        (dict(scale_a=torch.ones(4, device=device)), ValueError, r"scale_a: expected .*\(3,\) per group"),
        (dict(scale_a=torch.ones(10, 2, device=device)), ValueError, r"scale_a: expected"),
        (dict(b=torch.randn(3, 32, 48).to(E4).to(device)), ValueError, r"b: expected \(G, N, K\) with K = 64"),
        (dict(b=torch.randn(32, 64).to(E4).to(device)), ValueError, r"b: expected \(G, N, K\)"),
        (dict(b=torch.randn(3, 24, 64).to(E4).to(device)), ValueError, r"b: N = 24 must be a multiple of 16"),
        (dict(a=torch.randn(10, 64, device=device)), TypeError, r"a: expected torch.float8"),
        (dict(scale_b=torch.ones(3, device=device, dtype=torch.float16)), TypeError, r"scale_b: expected a torch"),
        (dict(bias=torch.ones(32, device=device)), ValueError, r"bias: expected shape \(3, 32\)"),
        (dict(scale_b=torch.ones(3, 1, 1, device=device), scale_a=torch.ones(10, 1, device=device)), None, None),
        (dict(scale_b=torch.ones(3, 1, 1, device=device), scale_a=torch.ones(10, 1, device=device),
              out=torch.empty(10, 16, device=device, dtype=torch.bfloat16)), ValueError, r"out: expected shape"),
        (dict(scale_b=torch.ones(3, 1, 2, device=device), scale_a=torch.ones(10, 1, device=device),
              b=torch.randn(3, 32, 256).to(E4).to(device), a=torch.randn(10, 256).to(E4).to(device)),
         ValueError, r"scale_a: with block scales for b .* expected \(10, 2\)"),
    ]
    for kw, exc, match in cases:
        args = dict(a=a, b=b, scale_a=sa, scale_b=sb)
        args.update({k: v for k, v in kw.items() if k in args})
        extra = {k: v for k, v in kw.items() if k not in args}
        if exc is None:
            grouped_gemm(args["a"], args["b"], args["scale_a"], args["scale_b"], group_offsets=offs, config=CFG,
                         **extra)
            continue
        with pytest.raises(exc, match=match):
            grouped_gemm(args["a"], args["b"], args["scale_a"], args["scale_b"], group_offsets=offs, **extra)


def test_masked_bad_input(device):
    G, cap, N, K = 3, 8, 32, 64
    a = torch.randn(G, cap, K).to(E4).to(device)
    b = torch.randn(G, N, K).to(E4).to(device)
    one, ones = torch.tensor(1.0, device=device), torch.ones(G, device=device)
    with pytest.raises(ValueError, match=r"masked_m: expected counts in \[0, M_max = 8\], got masked_m\[1\] = 9"):
        grouped_gemm_masked(a, b, one, ones, masked_m=torch.tensor([1, 9, 0], device=device), check=True)
    with pytest.raises(ValueError, match=r"masked_m: expected shape \(3,\)"):
        grouped_gemm_masked(a, b, one, ones, masked_m=torch.tensor([1, 2], device=device))
    with pytest.raises(ValueError, match=r"a: expected \(G, M_max, K\) with G = 2"):
        grouped_gemm_masked(a, b[:2], one, ones[:2], masked_m=torch.tensor([1, 2], device=device))
    with pytest.raises(ValueError, match=r"scale_a: expected .*\(3, 8, 1\)"):
        grouped_gemm_masked(a, b, torch.ones(G * cap, 1, device=device), ones,
                            masked_m=torch.tensor([1, 2, 0], device=device))


# ---- GPU: no host sync on the hot path, large shapes ----

@requires_gpu
def test_gpu_no_host_sync():
    """The grouped launch reads no group size on the host: CUDA's sync debug mode raises on any synchronizing
    call. (The first call compiles; time it separately.)"""
    G, N, K = 8, 256, 512
    sizes = torch.tensor([0, 300, 5, 1000, 0, 128, 77, 2000], device="cuda", dtype=torch.int32)
    M = 3510
    a = torch.randn(M, K, device="cuda").to(E4)
    b = torch.randn(G, N, K, device="cuda").to(E4)
    sa, sb = torch.ones(M, 1, device="cuda"), torch.ones(G, N, device="cuda")
    grouped_gemm(a, b, sa, sb, m_sizes=sizes, check=False)  # compile
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        grouped_gemm(a, b, sa, sb, m_sizes=sizes, check=False)
        grouped_gemm(a, b, sa, sb, m_sizes=sizes)  # check=None: device sizes are not read either
    finally:
        torch.cuda.set_sync_debug_mode("default")


@requires_gpu
@pytest.mark.parametrize("scales", ["tensor", "row", "block"])
def test_gpu_moe_shape(scales):
    """64 experts, N=512, K=7168 (the MoE K), rows per group 0..599 (uneven, empty ones), fast mode bound; default configs."""
    torch.manual_seed(1)
    G, N, K = 64, 512, 7168
    sizes = torch.randint(0, 600, (G,))
    sizes[::7] = 0
    M = int(sizes.sum())
    c = Case(tuple(sizes.tolist()), N, K, a_scale={"tensor": "group", "row": "row", "block": "block"}[scales],
             b_scale={"tensor": "group", "row": "row", "block": "block"}[scales], out_dtype=torch.bfloat16)
    a, b, sa, sb, _ = make(c, "cuda")
    out = grouped_gemm(a, b, sa, sb, m_sizes=sizes.cuda())
    ref = grouped_gemm_torch(a, b, sa, sb, m_sizes=sizes, out_dtype=torch.float64, compute_dtype=torch.float64)
    assert out.shape == (M, N)
    check_groups(out, ref, c.sizes, tol(c, "cuda"))



def test_registered_ops_fake_and_eager(device):
    """torch.ops.tritonfp8.grouped_gemm(_masked): fake tensors give the host-known output shapes (no group sizes
    read); the eager wrappers (tritonfp8.grouped_gemm is the ops wrapper) give the implementation's result."""
    import tritonfp8
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(10, 64, dtype=E4)
        b = torch.empty(3, 32, 64, dtype=E4)
        c = torch.ops.tritonfp8.grouped_gemm(a, b, torch.ones(()), torch.ones(3), None,
                                             torch.ones(3, dtype=torch.int32), torch.bfloat16, None, None, "fast")
        assert c.shape == (10, 32) and c.dtype == torch.bfloat16
        am = torch.empty(3, 8, 64, dtype=E4)
        cm = torch.ops.tritonfp8.grouped_gemm_masked(am, b, torch.ones(()), torch.ones(3),
                                                     torch.ones(3, dtype=torch.int32), torch.float32, None, None,
                                                     "fast")
        assert cm.shape == (3, 8, 32) and cm.dtype == torch.float32
    a, b, sa, sb, _ = make(Case((4, 0, 6), 32, 64), device)
    sizes = torch.tensor([4, 0, 6], dtype=torch.int32, device=device)
    o1 = tritonfp8.grouped_gemm(a, b, sa, sb, m_sizes=sizes)
    o2 = torch.ops.tritonfp8.grouped_gemm(a, b, sa, sb, None, sizes, torch.bfloat16, None, None, "fast")
    assert torch.equal(o1, o2)


def test_many_groups_non_power_of_two(device):
    """G = 65 (G_PAD = 128): mostly empty groups, a few rows in others; the vector search over the prefix sum
    finds every tile's group."""
    G, N, K = 65, 32, 32
    sizes = [0] * G
    for g, m in ((0, 3), (1, 1), (31, 70), (32, 2), (63, 5), (64, 9)):
        sizes[g] = m
    c = Case(tuple(sizes), N, K, a_scale="row", b_scale="row")
    a, b, sa, sb, _ = make(c, device)
    out = grouped_gemm(a, b, sa, sb, m_sizes=torch.tensor(sizes, dtype=torch.int32, device=device),
                       out_dtype=torch.float32, config=CFG)
    ref = grouped_gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), m_sizes=torch.tensor(sizes),
                             out_dtype=torch.float64, compute_dtype=torch.float64)
    check_groups(out, ref, sizes, tol(c, device))


@pytest.mark.parametrize("cfg", [
    GemmConfig(64, 32, 32, num_warps=4, num_stages=2, schedule="tma"),
    GemmConfig(128, 256, 128, num_warps=4, num_stages=4, schedule="tmawspersistent"),
    GemmConfig(64, 32, 32, num_warps=4, num_stages=2, schedule="tmapersistent", split_k=2),
], ids=["nonpersistent", "wspersistent", "splitk"])
def test_unsupported_config(device, cfg):
    a, b, sa, sb = _ok(device)
    with pytest.raises(ValueError, match="config: grouped GEMM needs schedule 'tmapersistent'"):
        grouped_gemm(a, b, sa, sb, m_sizes=torch.tensor([5, 0, 5], device=device), config=cfg)


def test_group_pad_at_least_one_warp():
    """The grouped schedule's per-group vectors are at least 32 wide (one warp's lanes): narrower ones made ptxas
    keep the K loop's addresses in vector registers (session 14; the SASS check is test_codegen_grouped.py)."""
    from tritonfp8._kernels.gemm import group_pad

    assert [group_pad(g) for g in (1, 8, 31, 32, 33, 64, 65)] == [32, 32, 32, 32, 64, 64, 128]
