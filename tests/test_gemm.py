"""FP8 GEMM: correctness of every scale mode, dtype, epilogue and schedule, on small shapes.

Without a GPU these run the same Triton kernels in the interpreter on CPU tensors (see conftest.py).

Tolerance (stated once, here): ``tritonfp8.gemm.error_bound(out_dtype, K, accumulate, tensor_core=on GPU)`` on the
relative Frobenius error against the fp64 reference of the dequantized inputs: the unit roundoff of the output type
(one final rounding: bf16 2^-8, fp16 2^-11, fp32 2^-24) plus the accumulation error (fp32: K * 2^-24; the GPU's
fast FP8 accumulation: 1.5 * 2^-13 * sqrt(K/32)). Identities that are exact in every format are checked exactly.
NaN never passes (``rel_error`` returns inf for non-finite output).
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from tritonfp8 import naming
from tritonfp8._kernels import gemm as K_
from tritonfp8._kernels import gemm_configs as C
from tritonfp8.bench.harness import rel_error
from tritonfp8.gemm import GemmConfig, error_bound, gemm, gemm_torch

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")  # interpreter silu

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2
HAS_CUDA = torch.cuda.is_available()

# Small pinned tiles keep the interpreter fast; 64-row tiles are still wgmma-shaped when compiled.
SMALL = GemmConfig(64, 64, 64, group_m=2, num_warps=4, num_stages=3, schedule="tmapersistent")


def rand_fp8(shape, dtype=E4, scale=1.0, device="cpu"):
    return (torch.randn(shape) * scale).to(dtype).to(device)


def check(out, a, b, sa, sb, *, out_dtype=torch.bfloat16, bias=None, activation=None, accumulate="fast"):
    ref = gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), out_dtype=torch.float64,
                     bias=None if bias is None else bias.cpu(), activation=activation, compute_dtype=torch.float64)
    assert out.dtype == out_dtype
    assert tuple(out.shape) == tuple(ref.shape)
    err = rel_error(out, ref)
    tol = error_bound(out_dtype, a.shape[-1], accumulate, tensor_core=out.is_cuda)
    assert err <= tol, f"relative error {err:.3e} > bound {tol:.3e}"
    return err


@dataclasses.dataclass(frozen=True)
class Case:
    M: int
    N: int
    K: int
    a_dtype: torch.dtype = E4
    b_dtype: torch.dtype = E4
    scale_a: str = "tensor"  # "tensor" | "row"
    scale_b: str = "tensor"  # "tensor" | "row_n1" (N, 1) | "row_1n" (1, N)
    out_dtype: torch.dtype = torch.bfloat16
    bias: torch.dtype | None = None
    activation: str | None = None
    accumulate: str = "fast"

    def __str__(self):
        f = [f"{self.M}x{self.N}x{self.K}", str(self.a_dtype)[-6:], str(self.b_dtype)[-6:], self.scale_a,
             self.scale_b, str(self.out_dtype)[6:], self.accumulate]
        if self.bias:
            f.append("bias" + str(self.bias)[6:])
        if self.activation:
            f.append(self.activation)
        return "-".join(f)


def make_inputs(c: Case, device):
    a = rand_fp8((c.M, c.K), c.a_dtype, device=device)
    b = rand_fp8((c.N, c.K), c.b_dtype, device=device)
    sa = (torch.rand(c.M, 1) + 0.5) if c.scale_a == "row" else torch.tensor(0.75)
    sb = {"tensor": torch.tensor([0.5]), "row_n1": torch.rand(c.N, 1) + 0.5, "row_1n": torch.rand(1, c.N) + 0.5}[
        c.scale_b]
    bias = torch.randn(c.N).to(c.bias).to(device) if c.bias else None
    return a, b, sa.to(device), sb.to(device), bias


CASES = [
    # scale modes
    Case(96, 64, 128),
    Case(96, 64, 128, scale_a="row"),
    Case(96, 64, 128, scale_b="row_n1"),
    Case(96, 64, 128, scale_a="row", scale_b="row_1n"),
    # operand types
    Case(80, 48, 96, a_dtype=E4, b_dtype=E5),
    Case(80, 48, 96, a_dtype=E5, b_dtype=E4, scale_a="row", scale_b="row_1n"),
    Case(80, 48, 96, a_dtype=E5, b_dtype=E5),
    # output types
    Case(70, 80, 64, out_dtype=torch.float16, scale_a="row"),
    Case(70, 80, 64, out_dtype=torch.float32, scale_b="row_n1"),
    # bias and activations
    Case(65, 64, 64, bias=torch.float32, activation="relu"),
    Case(65, 64, 64, bias=torch.bfloat16, activation="gelu", scale_a="row", scale_b="row_1n"),
    Case(65, 64, 64, out_dtype=torch.float16, bias=torch.float16, activation="silu"),
    Case(65, 64, 64, bias=torch.float32),
    # partial tiles in every dimension, precise accumulation
    Case(67, 112, 208, accumulate="precise"),
    Case(67, 112, 208, accumulate="precise", scale_a="row", scale_b="row_n1", bias=torch.float32,
         activation="gelu"),
    Case(1, 64, 128),
    Case(3, 48, 80, scale_a="row", scale_b="row_1n", accumulate="precise"),
    # K not a multiple of 16: a and b are copied with zero columns up to one (TMA rows)
    Case(70, 64, 24, scale_a="row"),
    Case(5, 48, 200, scale_b="row_n1", accumulate="precise"),
]


@pytest.mark.parametrize("c", CASES, ids=str)
def test_gemm_cases(c, device):
    a, b, sa, sb, bias = make_inputs(c, device)
    out = gemm(a, b, sa, sb, out_dtype=c.out_dtype, bias=bias, activation=c.activation, accumulate=c.accumulate,
               config=SMALL if c.M > 64 else None)
    check(out, a, b, sa, sb, out_dtype=c.out_dtype, bias=bias, activation=c.activation, accumulate=c.accumulate)


SCHEDULE_CONFIGS = [
    GemmConfig(64, 64, 64, group_m=2, num_warps=4, schedule="tma"),
    GemmConfig(64, 64, 64, group_m=2, num_warps=4, schedule="tma", epilogue_subtile=2),
    GemmConfig(64, 64, 64, group_m=2, num_warps=4, schedule="tmapersistent", epilogue_subtile=2),
    GemmConfig(64, 64, 64, group_m=2, num_warps=4, schedule="tmaws"),
    GemmConfig(64, 64, 64, group_m=2, num_warps=4, schedule="tmawspersistent", split_k=2),
    GemmConfig(64, 64, 64, group_m=2, num_warps=4, schedule="ptr"),
    GemmConfig(64, 64, 64, group_m=2, num_warps=4, schedule="ptr", swap_ab=True, split_k=3),
    GemmConfig(64, 32, 64, group_m=1, num_warps=4, schedule="tma", swap_ab=True),
    GemmConfig(64, 32, 64, group_m=1, num_warps=4, schedule="tmapersistent", swap_ab=True, split_k=2,
               epilogue_subtile=2),
    GemmConfig(64, 64, 64, group_m=2, num_warps=4, schedule="tma", split_k=4),
]


@pytest.mark.parametrize("cfg", SCHEDULE_CONFIGS, ids=lambda c: c.short().replace(" ", "-"))
@pytest.mark.parametrize("accumulate", ["fast", "precise"])
def test_schedules(cfg, accumulate, device):
    """Every schedule/variant computes the same product: partial tiles in M, N and K, rowwise scales, bias + act."""
    if device == "cuda" and cfg.warp_specialized:
        pytest.skip("on a GPU, warp-specialized schedules run in a child process with a timeout (a hang must not "
                    "stall the suite): tests/test_gemm_gpu.py::test_warp_specialization_canary")
    if device == "cuda" and cfg.uses_tma and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA schedules need sm_90")
    M, N, Kd = 70, 96, 352
    a, b = rand_fp8((M, Kd), E4, device=device), rand_fp8((N, Kd), E5, device=device)
    sa, sb = (torch.rand(M, 1) + 0.5).to(device), (torch.rand(1, N) + 0.5).to(device)
    bias = torch.randn(N, device=device)
    out = gemm(a, b, sa, sb, bias=bias, activation="relu", accumulate=accumulate, config=cfg)
    check(out, a, b, sa, sb, bias=bias, activation="relu", accumulate=accumulate)


# Two column pieces per tile (GemmConfig.block_n2): 32 + 16 = 48 columns; N = 144 is three whole tiles, N = 112
# ends in half a first piece (96 + 16), N = 128 in a whole first piece and no second (96 + 32), N = 16 is one
# partial tile (N is a multiple of 16).
@pytest.mark.parametrize("N", [144, 112, 128, 16])
def test_two_column_pieces_per_tile(N, device):
    """Tiles of block_n + block_n2 columns (two products on one x tile) give the same result as any other config:
    partial tiles in M, N and K, rowwise and per-tensor scales, fast and precise accumulation, bias + activation,
    E5M2 b, three output types; a second call with new data (the launch plan's replay, which rebuilds both y
    descriptors on a GPU) too."""
    if device == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA schedules need sm_90")
    cfg = GemmConfig(64, 32, 64, group_m=2, num_warps=4, num_stages=3, schedule="tma", block_n2=16)
    assert cfg.tile_n == 48 and not cfg.tma_store
    M, Kd = 70, 352
    for seed, (b_dtype, out_dtype, rowwise, accumulate) in enumerate(
            [(E4, torch.bfloat16, True, "fast"), (E5, torch.float32, False, "fast"), (E4, torch.float16, True, "fast"),
             (E4, torch.bfloat16, True, "precise"), (E5, torch.float32, False, "precise")]):
        torch.manual_seed(seed)
        a, b = rand_fp8((M, Kd), E4, device=device), rand_fp8((N, Kd), b_dtype, device=device)
        if rowwise:
            sa, sb = (torch.rand(M, 1) + 0.5).to(device), (torch.rand(1, N) + 0.5).to(device)
        else:
            sa, sb = torch.tensor(0.75, device=device), torch.tensor([0.5], device=device)
        bias = torch.randn(N, device=device)
        for _ in range(2):  # the second call of the same metadata takes the launch plan
            out = gemm(a, b, sa, sb, bias=bias, activation="relu", out_dtype=out_dtype, config=cfg,
                       accumulate=accumulate)
            check(out, a, b, sa, sb, bias=bias, activation="relu", out_dtype=out_dtype, accumulate=accumulate)
            b = rand_fp8((N, Kd), b_dtype, device=device)  # new weights at a new address for the replay


def test_launch_template_finds_the_second_descriptor_by_name():
    """A replayed two-piece launch rebuilds y2 in the kernel's tail values at the position of the parameter named
    y2 (the template stores it; a signature change must not make it replace another argument)."""
    from tritonfp8 import _launch

    kern = K_.fp8_gemm_kernel
    n_mid = 17  # launch_gemm's runtime values between the 7 leading tensors and the keyword tail
    marker = object()
    tail = _launch._tail_values(kern, 7 + n_mid, {"y2": marker, "BLOCK_S2": 16, "KERNEL_NAME": "k"} | {
        n: 0 for n in ("BLOCK_R", "BLOCK_S", "BLOCK_K", "GROUP_R", "SPLIT_K", "USE_TMA", "PERSISTENT", "FLATTEN",
                       "WARP_SPECIALIZE", "SUBTILE", "SWAP_AB", "X_SCALE_VEC", "Y_SCALE_VEC", "K_SCALED",
                       "X_SCALE_GROUP", "Y_SCALE_GROUP", "HAS_BIAS", "ACTIVATION", "OUT_DTYPE", "TMA_STORE",
                       "GROUPED", "G_PAD", "PROMOTE_LAG")})
    pos = _launch.param_index(kern, "y2") - 7 - n_mid
    assert tail[pos] is marker and tail[_launch.param_index(kern, "BLOCK_S2") - 7 - n_mid] == 16


def test_two_column_pieces_config_rules(device):
    """block_n2 is validated where the config is built and where a mode cannot take it."""
    for bad in (dict(block_n2=8), dict(block_n2=48), dict(block_n2=64, block_n=64)):
        with pytest.raises(ValueError, match="block_n2"):
            GemmConfig(64, bad.pop("block_n", 64), 64, num_warps=4, schedule="tma", **bad)
    for bad in (dict(schedule="tmapersistent"), dict(schedule="tma", swap_ab=True),
                dict(schedule="tma", split_k=2)):
        with pytest.raises(ValueError, match="block_n2"):
            GemmConfig(64, 64, 64, num_warps=4, block_n2=16, **bad)
    cfg = GemmConfig(64, 32, 64, group_m=2, num_warps=4, num_stages=3, schedule="tma", block_n2=16)
    a, b = rand_fp8((16, 256), device=device), rand_fp8((48, 256), device=device)
    one = torch.tensor(1.0, device=device)
    with pytest.raises(ValueError, match="block_n2"):  # block scales: (M, K/128) and (N/128, K/128)
        gemm(a, b, torch.ones((16, 2), device=device), torch.ones((1, 2), device=device),
             config=dataclasses.replace(cfg, block_k=128))
    with pytest.raises(ValueError, match="block_n2"):  # the lagged promotion
        gemm(a, b, one, one, accumulate="precise", config=dataclasses.replace(cfg, promote="lag"))
    name = K_.gemm_kernel_name(cfg, arch=90, a_dtype=E4, b_dtype=E4, out_dtype=torch.bfloat16, a_vec=False,
                               b_vec=False, precise=False, has_bias=False, activation=None).build()
    assert "_64x48x64_" in name and "_n32p16" in name, name
    with pytest.raises(ValueError, match="block_k <= 128"):  # precise promotes at least every 128 K
        gemm(a, b, one, one, accumulate="precise", config=GemmConfig(64, 32, 256, num_warps=4, schedule="tma"))
    assert cfg.short() == "64x32+16x64 w4s3 tma"
    assert GemmConfig.from_dict(cfg.as_dict()) == cfg
    # The heuristic takes 64 + 16 columns where 64-wide tiles overflow one CTA per SM and 80-wide ones do not.
    assert C.heuristic_config(128, 10240, 8192, num_sms=132).block_n2 == 16
    assert C.heuristic_config(128, 8192, 8192, num_sms=132).block_n2 == 0
    assert C.heuristic_config(128, 12288, 8192, num_sms=132).block_n2 == 0


@pytest.mark.parametrize("M", [1, 16, 33, 64])
def test_small_m_default_config_is_swap_ab(M, device):
    """Decode shapes take the swap-AB path chosen by the heuristic, with rowwise scales and a bias."""
    N, Kd = 128, 512
    a, b = rand_fp8((M, Kd), device=device), rand_fp8((N, Kd), device=device)
    sa, sb = (torch.rand(M, 1) + 0.5).to(device), (torch.rand(N, 1) + 0.5).to(device)
    bias = torch.randn(N, device=device, dtype=torch.bfloat16)
    cfg = C.heuristic_config(M, N, Kd, num_sms=132)
    assert cfg.swap_ab
    out = gemm(a, b, sa, sb, bias=bias)
    check(out, a, b, sa, sb, bias=bias)


def test_default_config_medium_shape(device):
    """The heuristic's large-M config (128x256x128 persistent, two-piece epilogue) on a shape with partial tiles."""
    M, N, Kd = 130, 272, 256
    a, b = rand_fp8((M, Kd), device=device), rand_fp8((N, Kd), device=device)
    sa, sb = torch.tensor(0.5, device=device), torch.tensor(2.0, device=device)
    out = gemm(a, b, sa, sb)
    check(out, a, b, sa, sb)


def test_batched_a_and_scale_shapes(device):
    """Leading dims of a are flattened into M; scale_a may be (M, 1) or a.shape[:-1] + (1,)."""
    a = rand_fp8((2, 3, 64), device=device)
    b = rand_fp8((32, 64), device=device)
    sa = (torch.rand(2, 3, 1) + 0.5).to(device)
    sb = torch.tensor(1.0, device=device)
    out = gemm(a, b, sa, sb, config=SMALL)
    assert out.shape == (2, 3, 32)
    check(out, a, b, sa, sb)
    out2 = gemm(a, b, sa.reshape(6, 1), sb, config=SMALL)
    assert torch.equal(out, out2)


def test_non_contiguous_a_is_copied(device):
    """A transposed view (last stride != 1) and a column slice with an unaligned row stride give correct results."""
    at = rand_fp8((64, 70), device=device).t()  # (70, 64), strides (1, 70)
    b = rand_fp8((48, 64), device=device)
    s1 = torch.tensor(1.0, device=device)
    out = gemm(at, b, s1, s1, config=SMALL)
    check(out, at, b, s1, s1)
    wide = rand_fp8((40, 72), device=device)
    a_slice = wide[:, :64]  # row stride 72: not a multiple of 16 bytes
    out = gemm(a_slice, b, s1, s1, config=SMALL)
    check(out, a_slice, b, s1, s1)
    b_t = rand_fp8((64, 48), device=device).t()  # (48, 64), strides (1, 48): copied as well
    out = gemm(a_slice, b_t, s1, s1, config=SMALL)
    check(out, a_slice, b_t, s1, s1)


def test_out_argument(device):
    a, b = rand_fp8((40, 64), device=device), rand_fp8((32, 64), device=device)
    s = torch.tensor(1.0, device=device)
    out = torch.full((40, 32), float("nan"), device=device, dtype=torch.float16)
    res = gemm(a, b, s, s, out_dtype=torch.float16, out=out, config=SMALL)
    assert res.data_ptr() == out.data_ptr()
    check(out, a, b, s, s, out_dtype=torch.float16)


@pytest.mark.parametrize("accumulate", ["fast", "precise"])
def test_identity_is_exact(accumulate, device):
    """b = I: every E4M3/E5M2 value times 1 summed with zeros is exact in every accumulator and in bf16."""
    Kd = 64
    a = rand_fp8((50, Kd), E4, scale=20.0, device=device)
    eye = torch.eye(Kd).to(E4).to(device)
    one = torch.tensor(1.0, device=device)
    out = gemm(a, eye, one, one, accumulate=accumulate, config=SMALL)
    assert torch.equal(out, a.to(torch.bfloat16))
    # power-of-two scales are exact too
    out = gemm(a, eye, torch.tensor(0.25, device=device), torch.tensor(8.0, device=device), accumulate=accumulate,
               config=SMALL)
    assert torch.equal(out, (a.float() * 2.0).to(torch.bfloat16))


@pytest.mark.parametrize("accumulate", ["fast", "precise"])
def test_all_half_inputs_are_exact(accumulate, device):
    """0.5 * 0.5 summed over K = 0.25 K exactly (small integers: exact in any accumulator and output type)."""
    M, N, Kd = 65, 48, 96
    a = torch.full((M, Kd), 0.5).to(E4).to(device)
    b = torch.full((N, Kd), 0.5).to(E5).to(device)
    one = torch.tensor(1.0, device=device)
    for out_dtype in (torch.bfloat16, torch.float16, torch.float32):
        out = gemm(a, b, one, one, out_dtype=out_dtype, accumulate=accumulate, config=SMALL)
        assert torch.equal(out, torch.full((M, N), 0.25 * Kd, dtype=out_dtype, device=device))


def test_fp8_limits_are_exact(device):
    """±448 (E4M3 max) and 57344 (E5M2 max) products: 448*448*16 and 448*57344*16 are exact in fp32 and bf16."""
    Kd = 16
    a = torch.full((16, Kd), 448.0)
    a[1::2] = -a[1::2]
    a = a.to(E4).to(device)
    b = torch.full((16, Kd), 448.0).to(E4).to(device)
    one = torch.tensor(1.0, device=device)
    out = gemm(a, b, one, one, out_dtype=torch.float32, config=SMALL)
    expect = torch.full((16, 16), 448.0 * 448.0 * Kd, device=device)
    expect[1::2] = -expect[1::2]
    assert torch.equal(out, expect)
    b5 = torch.full((16, Kd), 57344.0).to(E5).to(device)
    out = gemm(a, b5, one, one, out_dtype=torch.float32, config=SMALL)
    expect = torch.full((16, 16), 448.0 * 57344.0 * Kd, device=device)
    expect[1::2] = -expect[1::2]
    assert torch.equal(out, expect)


@pytest.mark.skipif(not HAS_CUDA, reason="the interpreter decodes the E4M3 NaN pattern 0x7F as 480 (measured); "
                    "NaN propagation is a property of the compiled kernel")
def test_nan_propagates(device):
    """A NaN in a makes its output row NaN (never silently a number)."""
    a = rand_fp8((20, 32), device=device)
    a[3, 5] = float("nan")
    b = rand_fp8((16, 32), device=device)
    one = torch.tensor(1.0, device=device)
    out = gemm(a, b, one, one, config=SMALL)
    assert torch.isnan(out[3]).all()
    assert not torch.isnan(out[:3]).any() and not torch.isnan(out[4:]).any()


def test_zero_sizes(device):
    one = torch.tensor(1.0, device=device)
    b = rand_fp8((32, 64), device=device)
    out = gemm(torch.empty(0, 64, dtype=E4, device=device), b, one, one)
    assert out.shape == (0, 32) and out.dtype == torch.bfloat16
    out = gemm(rand_fp8((5, 64), device=device), torch.empty(0, 64, dtype=E4, device=device), one, one)
    assert out.shape == (5, 0)
    # K = 0: the product is zero; bias then activation still apply
    a0, b0 = torch.empty(5, 0, dtype=E4, device=device), torch.empty(32, 0, dtype=E4, device=device)
    out = gemm(a0, b0, one, one, out_dtype=torch.float32)
    assert torch.equal(out, torch.zeros(5, 32, device=device))
    bias = torch.randn(32, device=device)
    out = gemm(a0, b0, one, one, out_dtype=torch.float32, bias=bias, activation="relu")
    assert torch.equal(out, torch.relu(bias).expand(5, 32))


# ------------------------------------------------------------------------------------------------------------------
# Bad input: each error names the argument


def _good(device="cpu"):
    return (rand_fp8((32, 64), device=device), rand_fp8((48, 64), device=device),
            torch.tensor(1.0, device=device), torch.tensor(1.0, device=device))


BAD = [
    ("a", TypeError, lambda a, b, sa, sb: gemm(a.to(torch.bfloat16), b, sa, sb)),
    ("b", TypeError, lambda a, b, sa, sb: gemm(a, b.to(torch.float16), sa, sb)),
    ("a", TypeError, lambda a, b, sa, sb: gemm([1, 2], b, sa, sb)),
    ("b", ValueError, lambda a, b, sa, sb: gemm(a, rand_fp8((48, 80)), sa, sb)),  # mismatched K
    ("b", ValueError, lambda a, b, sa, sb: gemm(a, rand_fp8((40, 64)), sa, sb)),  # N % 16
    ("b", ValueError, lambda a, b, sa, sb: gemm(a, rand_fp8((2, 48, 64)), sa, sb)),  # b not 2-D
    ("a", ValueError, lambda a, b, sa, sb: gemm(rand_fp8((64,)), b, sa, sb)),  # a 1-D
    ("scale_a", TypeError, lambda a, b, sa, sb: gemm(a, b, sa.double(), sb)),
    ("scale_b", TypeError, lambda a, b, sa, sb: gemm(a, b, sa, sb.to(torch.bfloat16))),
    ("scale_a", ValueError, lambda a, b, sa, sb: gemm(a, b, torch.ones(31, 1), sb)),
    ("scale_a", ValueError, lambda a, b, sa, sb: gemm(a, b, torch.ones(1, 32), sb)),  # (1, M) is not a row scale
    ("scale_b", ValueError, lambda a, b, sa, sb: gemm(a, b, sa, torch.ones(48))),  # ambiguous 1-D vector
    ("scale_b", ValueError, lambda a, b, sa, sb: gemm(a, b, sa, torch.ones(32, 1))),  # M rows, not N
    ("bias", ValueError, lambda a, b, sa, sb: gemm(a, b, sa, sb, bias=torch.zeros(47, dtype=torch.bfloat16))),
    ("bias", TypeError, lambda a, b, sa, sb: gemm(a, b, sa, sb, bias=torch.zeros(48, dtype=torch.float16))),
    ("out_dtype", TypeError, lambda a, b, sa, sb: gemm(a, b, sa, sb, out_dtype=E4)),
    ("out_dtype", TypeError, lambda a, b, sa, sb: gemm(a, b, sa, sb, out_dtype=torch.int32)),
    ("activation", ValueError, lambda a, b, sa, sb: gemm(a, b, sa, sb, activation="tanh")),
    ("accumulate", ValueError, lambda a, b, sa, sb: gemm(a, b, sa, sb, accumulate="exact")),
    ("out", ValueError, lambda a, b, sa, sb: gemm(a, b, sa, sb, out=torch.empty(32, 47, dtype=torch.bfloat16))),
    ("out", TypeError, lambda a, b, sa, sb: gemm(a, b, sa, sb, out=torch.empty(32, 48))),
    ("config", TypeError, lambda a, b, sa, sb: gemm(a, b, sa, sb, config={"block_m": 64})),
]


@pytest.mark.parametrize("arg,exc,call", BAD, ids=[f"{i}-{x[0]}" for i, x in enumerate(BAD)])
def test_bad_input_names_the_argument(arg, exc, call):
    with pytest.raises(exc, match=rf"^{arg}: "):
        call(*_good())


@pytest.mark.skipif(not HAS_CUDA, reason="mixing devices needs a CUDA GPU next to the CPU")
def test_mixed_devices_rejected():
    a, b, sa, sb = _good()
    with pytest.raises(ValueError, match=r"^gemm: b is on cuda"):
        gemm(a, b.cuda(), sa, sb)


def test_mixed_devices_rejected_on_cpu_meta():
    """Without a GPU: a tensor on the meta device next to CPU tensors is still named."""
    a, b, sa, sb = _good()
    with pytest.raises(ValueError, match=r"^gemm: scale_b is on meta"):
        gemm(a, b, sa, torch.ones((), device="meta"))


# ------------------------------------------------------------------------------------------------------------------
# Configs, heuristics, tables, names (pure host code)

SHAPE_SET = [(m, n, k) for (n, k) in ((10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672))
             for m in (16, 64, 128, 1024, 4096, 8192)] + [(s, s, s) for s in (4096, 8192, 16384)]


@pytest.mark.parametrize("precise", [False, True])
def test_heuristic_configs_fit_the_hardware(precise):
    for M, N, Kd in SHAPE_SET + [(1, 16, 16), (100, 48, 32), (3, 1 << 20, 16)]:
        for out_size in (2, 4):
            cfg = C.heuristic_config(M, N, Kd, precise=precise, num_sms=132, out_size=out_size)
            assert C.smem_bytes(cfg, out_size) + 1024 <= C.SMEM_BYTES_SM90, (M, N, Kd, cfg)
            assert cfg.num_stages >= 2
            if precise:
                assert cfg.block_k <= 128  # promotion into fp32 at least every 128 of K
            if M <= 64:
                assert cfg.swap_ab and cfg.block_n >= M
            else:
                assert not cfg.swap_ab
    ada = C.heuristic_config(4096, 4096, 4096, arch=89)
    assert ada.schedule == "ptr" and C.smem_bytes(ada, 2) <= C.SMEM_BYTES_SM89


def test_heuristic_is_pure_and_hashable():
    a = C.heuristic_config(1024, 8192, 8192)
    b = C.heuristic_config(1024, 8192, 8192)
    assert a == b and hash(a) == hash(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.block_m = 64


def test_small_m_split_k_fills_the_machine():
    cfg = C.small_m_config(16, 8192, 8192, precise=False, num_sms=132)
    tiles = math.ceil(8192 / cfg.block_m)
    assert cfg.split_k >= 1 and tiles * cfg.split_k >= 128
    assert C.small_m_config(16, 57344, 8192, precise=False, num_sms=132).split_k == 1


def test_config_validation():
    with pytest.raises(ValueError, match="block_m"):
        GemmConfig(block_m=96)
    with pytest.raises(ValueError, match="schedule"):
        GemmConfig(schedule="magic")
    with pytest.raises(ValueError, match="num_warps"):
        GemmConfig(schedule="tmaws", num_warps=8)
    assert GemmConfig.from_dict(GemmConfig().as_dict() | {"unknown": 1}) == GemmConfig()


def test_tuned_table_is_loaded(tmp_path, monkeypatch):
    cfg = GemmConfig(128, 128, 128, num_warps=8, num_stages=5, schedule="tma")
    table = {"gpu": "NVIDIA H200", "entries": [{"key": C.table_key(100, 8192, 8192, False), "config": cfg.as_dict()}]}
    (tmp_path / "gemm_h200.json").write_text(json.dumps(table))
    monkeypatch.setattr(C, "CONFIG_DIR", tmp_path)
    C._load_table_file.cache_clear()
    kw = dict(precise=False, arch=90, num_sms=132, out_size=2)
    got, src = C.select_config(128, 8192, 8192, gpu_name="NVIDIA H200", **kw)  # M 128 -> bucket 128
    assert (got, src) == (cfg, "table")
    got, src = C.select_config(65, 8192, 8192, gpu_name="NVIDIA H200 NVL", **kw)  # family file, bucket 128
    assert src == "table"
    got, src = C.select_config(256, 8192, 8192, gpu_name="NVIDIA H200", **kw)  # other bucket
    assert src == "heuristic"
    got, src = C.select_config(128, 8192, 8192, precise=True, arch=90, num_sms=132, out_size=2,
                               gpu_name="NVIDIA H200")
    assert src == "heuristic"
    with C.pinned_config(SMALL):
        assert C.select_config(128, 8192, 8192, gpu_name="NVIDIA H200", **kw) == (SMALL, "pinned")
    C._load_table_file.cache_clear()


def test_normalized_gpu_names():
    assert C.normalize_gpu_name("NVIDIA H200") == "h200"
    assert C.normalize_gpu_name("NVIDIA H100 80GB HBM3") == "h100_80gb_hbm3"
    assert C.m_bucket(1) == 16 and C.m_bucket(17) == 32 and C.m_bucket(4096) == 4096


def test_kernel_names_follow_the_grammar():
    kn = K_.gemm_kernel_name(
        K_.MAIN_CONFIG, arch=90, a_dtype=E4, b_dtype=E4, out_dtype=torch.bfloat16, a_vec=True, b_vec=True,
        precise=False, has_bias=True, activation="relu")
    name = kn.build("cutlass")
    assert name == "cutlass_sm90_fp8gemm_e4m3_e4m3_f32_bf16_128x256x128_w8s4_tmapersistent_rowwise_sub2_biasrelu"
    p = naming.parse_kernel_name(name)
    assert p["tile"] == (128, 256, 128) and p["types"] == ("e4m3", "e4m3", "f32", "bf16")
    swap = GemmConfig(64, 16, 256, num_warps=4, num_stages=8, schedule="tma", swap_ab=True, split_k=4)
    name = K_.gemm_kernel_name(swap, arch=90, a_dtype=E5, b_dtype=E4, out_dtype=torch.float16, a_vec=False,
                               b_vec=False, precise=True, has_bias=False, activation=None).build("plain")
    assert name == "tfp8_sm90_fp8gemm_e5m2_e4m3_f32_f16_64x16x256_w4s8_tma_tensorwise_precise_swapab_splitk4"
    naming.parse_kernel_name(name)


def test_reference_matches_float64_formula():
    a, b = rand_fp8((7, 32)), rand_fp8((16, 32), E5)
    sa, sb = torch.rand(7, 1) + 0.5, torch.rand(1, 16) + 0.5
    bias = torch.randn(16)
    ref = gemm_torch(a, b, sa, sb, bias=bias, activation="silu", out_dtype=torch.float64,
                     compute_dtype=torch.float64)
    direct = torch.nn.functional.silu((a.double() * sa.double()) @ (b.double() * sb.double().T).T + bias.double())
    assert torch.allclose(ref, direct, rtol=1e-12, atol=0)


# ------------------------------------------------------------------------------------------------------------------
# Tuning and benchmark bookkeeping, exercised on CPU (interpreter kernels, a stand-in timer, torch._scaled_mm on CPU)


def test_tune_writes_a_table_that_select_config_reads(cpu_tools, tmp_path, monkeypatch):
    tune = cpu_tools
    shapes = tune.parse_shapes("16x64x512;96x64x128")
    entries = tune.tune(shapes, quick=True, repeats=1, progress=False, log=lambda s: None)
    assert len(entries) == 4
    for e in entries:
        assert e["config"] is not None and e["rel_error"] <= error_bound(torch.bfloat16, e["shape"][2], "precise")
        assert e["failed"] == {}, e["failed"]  # every candidate ran and was correct
        assert e["candidates"][0]["ms"] <= e["candidates"][-1]["ms"]
    path = tune.write_table(entries, C.table_path("Test GPU", tmp_path), {"gpu": "Test GPU"})
    monkeypatch.setattr(C, "CONFIG_DIR", tmp_path)
    C._load_table_file.cache_clear()
    table = C.load_table("Test GPU")
    assert set(table) == {e["key"] for e in entries}
    cfg, src = C.select_config(16, 64, 512, precise=False, arch=90, num_sms=3, out_size=2, gpu_name="Test GPU")
    assert src == "table" and cfg == GemmConfig.from_dict(entries[0]["config"])
    C._load_table_file.cache_clear()
    assert json.loads(path.read_text())["entries"]


def test_bench_suite_runs_and_saves(cpu_tools, tmp_path):
    import argparse

    from tritonfp8.bench.suites import gemm as suite

    args = argparse.Namespace(quick=True, repeats=1, out=str(tmp_path), no_save=False, profile=False,
                              shapes="16x64x256;80x64x128", modes="fast,precise,rowwise",
                              variants="nonpersistent,tile128", no_bf16=False, name_ab=None)
    assert suite.run(args) == 0
    files = sorted(p.suffix for p in tmp_path.iterdir())
    assert files == [".json", ".png"]
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    modes = {r["mode"] for r in data["rows"]}
    assert {"fast", "precise", "rowwise", "fast:nonpersistent"} <= modes
    for r in data["rows"]:
        assert r["err"] <= r["err_bound"]
        if r["M"] <= 64:
            assert r["ours_gbps"] > 0


def test_bench_suite_block_scaling_has_both_cublas_peers(cpu_tools, tmp_path, monkeypatch):
    """--scaling block: ours vs cuBLAS blockwise and vs per-tensor cuBLAS on the same shape (issue 4's two peers),
    with each one's error. torch's CPU _scaled_mm has no blockwise mode: off the GPU the blockwise peer is a
    stand-in (the fp64 reference rounded to bf16), so the suite's bookkeeping is what is tested here."""
    import argparse

    from tritonfp8.bench.suites import gemm as suite

    if not torch.cuda.is_available():
        monkeypatch.setattr(suite, "cublas_block", lambda bs: (lambda: bs.ref().to(torch.bfloat16)))

    args = argparse.Namespace(quick=True, repeats=1, out=str(tmp_path), no_save=False, profile=False,
                              shapes="80x256x384", modes="fast", variants="", no_bf16=True, name_ab=None,
                              scaling="block")
    suite.run(args)
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    rows = [r for r in data["rows"] if r["mode"] == "block"]
    assert len(rows) == 1, data.get("notes")
    r = rows[0]
    assert r["peer"] == "cublas_block" and r["err"] <= r["err_bound"]
    assert r["tensor_peer_tflops"] > 0 and r["vs_cublas_tensor"] > 0 and r["tensor_peer_err"] < 0.05
    assert math.isclose(r["cublas_block_vs_tensor"], r["peer_tflops"] / r["tensor_peer_tflops"])


def test_misaligned_out_and_fp32_refit(device):
    """A contiguous ``out`` starting 2 bytes into its storage (TMA needs 16) is written through a temporary; a table
    config tuned for bf16 output is refitted to fewer stages for fp32 output."""
    a, b = rand_fp8((40, 64), device=device), rand_fp8((32, 64), device=device)
    s = torch.tensor(1.0, device=device)
    storage = torch.empty(40 * 32 + 1, device=device, dtype=torch.bfloat16)
    out = storage[1:].view(40, 32)
    assert out.data_ptr() % 16 != 0
    gemm(a, b, s, s, out=out, config=SMALL)
    check(out, a, b, s, s)
    big = GemmConfig(128, 256, 128, num_warps=8, num_stages=4, schedule="tmapersistent", epilogue_subtile=2)
    assert C.fit_stages(big, 2) == big
    f32 = C.fit_stages(big, 4)
    assert f32.num_stages < 4 and C.smem_bytes(f32, 4) + 1024 <= C.SMEM_BYTES_SM90


def test_bf16_fallback_path():
    """The path for GPUs without FP8 tensor cores, called directly on CPU tensors: exact FP8 -> BF16, a BF16 matmul
    (one extra bf16 rounding of the sum: 2^-8 on top of the bound), then scales, bias and activation."""
    from tritonfp8.gemm import _gemm_bf16_fallback

    M, N, Kd = 33, 48, 128
    a, b = rand_fp8((M, Kd), E5), rand_fp8((N, Kd), E4)
    sa, sb = torch.rand(M) + 0.5, torch.rand(N) + 0.5
    bias = torch.randn(N)
    out = torch.empty(M, N, dtype=torch.bfloat16)
    _gemm_bf16_fallback(a, b, sa, sb, True, True, bias, "gelu", out)
    ref = gemm_torch(a, b, sa[:, None], sb[:, None], bias=bias, activation="gelu", out_dtype=torch.float64,
                     compute_dtype=torch.float64)
    assert rel_error(out, ref) <= 2.0**-8 + error_bound(torch.bfloat16, Kd)


def test_tune_launcher_with_the_library_choice(cpu_tools):
    """``tune.ours(p, None)`` (used by ``bench gemm --profile``) runs the public gemm on the problem."""
    tune = cpu_tools
    p = tune.Problem.make(32, 64, 128)
    out = tune.ours(p, None, precise=False)()
    assert out is p.out
    err = float(((out.double() - p.ref().double()).norm() / p.ref().double().norm()))
    assert err <= error_bound(torch.bfloat16, 128, "fast", tensor_core=False)


def test_repeat_calls_use_the_launch_plan_and_stay_exact(device):
    """The second call with the same metadata takes the recorded plan (no validation, no config choice); new data,
    a pinned config and a misaligned operand with the same shape and strides all still give the right result."""
    import importlib

    G = importlib.import_module("tritonfp8.gemm")
    M, N, K = 33, 64, 96
    G._PLANS.clear()
    sa = torch.tensor(0.5, device=device)
    sb = (torch.rand(N, 1) + 0.5).to(device)
    outs = []
    for seed in range(2):
        torch.manual_seed(seed)
        a = torch.randn(M, K).to(torch.float8_e4m3fn).to(device)
        b = torch.randn(N, K).to(torch.float8_e4m3fn).to(device)
        got = G.gemm(a, b, sa, sb)
        ref = gemm_torch(a, b, sa, sb, out_dtype=torch.float64, compute_dtype=torch.float64)
        assert rel_error(got, ref) <= error_bound(torch.bfloat16, K, "fast", tensor_core=device == "cuda"), seed
        outs.append(got)
        assert len(G._PLANS) == 1  # recorded by the first call, reused by the second
    # Same shape and strides, base 1 byte off 16-byte alignment: the plan declines, the full path copies.
    buf = torch.randn(M * K + 1).to(torch.float8_e4m3fn).to(device)
    a_odd = buf[1:].view(M, K)
    assert a_odd.stride() == (K, 1) and a_odd.data_ptr() % 16
    got = G.gemm(a_odd, b, sa, sb)
    assert torch.equal(got, G.gemm(a_odd.clone(), b, sa, sb))
    # A pinned config is part of the key: it is honoured on the repeat call.
    cfg = GemmConfig(64, 32, 32, group_m=1, num_warps=4, num_stages=2, schedule="tma")
    with G.pinned_config(cfg):
        first = G.gemm(a, b, sa, sb)
        assert torch.equal(G.gemm(a, b, sa, sb), first)
    assert len(G._PLANS) == 2  # the misaligned call shares the first key (and declined it); the pinned one is new


def test_bench_variant_with_stages_keeps_its_depth():
    """A --variants entry that sets num_stages (p64: 3 stages so three CTAs share an SM) keeps that depth; the
    others are refit to the deepest pipeline that fits (at most 6)."""
    from tritonfp8.bench.suites import gemm as bg

    base = C.heuristic_config(8192, 8192, 8192, precise=True)
    p64 = bg.variant_config(base, "p64")
    assert (p64.block_m, p64.block_n, p64.num_warps, p64.num_stages, p64.schedule) == (64, 128, 4, 3, "tma")
    assert bg.variant_config(base, "nonpersistent").num_stages == C.max_stages(
        dataclasses.replace(base, schedule="tma"), 2, cap=6)
    assert bg.VARIANT_MODES["p64"] == ("precise", "block")


def test_k_padding_leaves_the_inputs_and_equals_the_padded_product(device):
    """K % 16 != 0: the result equals the product of the caller's inputs padded by hand (same kernel then), and
    neither input is modified."""
    a, b = rand_fp8((40, 40), device=device), rand_fp8((32, 40), device=device)
    a0, b0 = a.clone(), b.clone()
    sa, sb = torch.tensor(0.5, device=device), torch.tensor(2.0, device=device)
    out = gemm(a, b, sa, sb, out_dtype=torch.float32, config=SMALL)
    ap = torch.zeros(40, 48, dtype=a.dtype, device=device)
    bp = torch.zeros(32, 48, dtype=b.dtype, device=device)
    ap[:, :40], bp[:, :40] = a, b
    assert torch.equal(out, gemm(ap, bp, sa, sb, out_dtype=torch.float32, config=SMALL))
    assert torch.equal(a.view(torch.uint8), a0.view(torch.uint8)) and torch.equal(b.view(torch.uint8),
                                                                                  b0.view(torch.uint8))
