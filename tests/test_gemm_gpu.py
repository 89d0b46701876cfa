"""FP8 GEMM on the GPU: large shapes, decode shapes, the shipped tuned table, the warp-specialization canary, >2^31
elements, and accuracy against cuBLAS. Every test needs CUDA (skipped with a reason otherwise).

Tolerance (stated once, here): ``tritonfp8.gemm.error_bound(torch.bfloat16, K, accumulate, tensor_core=True)`` on
the relative Frobenius error against the fp64 product of the dequantized inputs. Precision versus the
peer: ours "precise" within 1.1x cuBLAS exact accumulation's error, ours "fast" within 1.1x cuBLAS fast's (the
issue's criterion), on the same inputs.
"""

from __future__ import annotations

import pytest
import torch

from conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]

E4 = torch.float8_e4m3fn


def _problem(M, N, K):
    from tritonfp8.tune import Problem

    return Problem.make(M, N, K)


def _err(out, ref):
    from tritonfp8.tune import rel_error_gpu

    return rel_error_gpu(out, ref)


LARGE = [(8192, 8192, 8192), (4096, 57344, 8192), (1024, 8192, 28672), (128, 10240, 8192), (4095, 8208, 4112),
         (16, 8192, 28672), (64, 57344, 8192), (1, 10240, 8192)]


@pytest.mark.parametrize("M,N,K", LARGE, ids=lambda v: str(v))
@pytest.mark.parametrize("accumulate", ["fast", "precise"])
def test_large_shapes_within_bound(M, N, K, accumulate):
    from tritonfp8.gemm import error_bound, gemm

    p = _problem(M, N, K)
    out = gemm(p.a, p.b, p.sa, p.sb, accumulate=accumulate)
    assert _err(out, p.ref()) <= error_bound(torch.bfloat16, K, accumulate, tensor_core=True)
    out = gemm(p.a, p.b, p.sa_row, p.sb_row, accumulate=accumulate)
    assert _err(out, p.ref(rowwise=True)) <= error_bound(torch.bfloat16, K, accumulate, tensor_core=True)


@pytest.mark.parametrize("M,N,K", [(8192, 8192, 8192), (1024, 8192, 28672), (16, 8192, 28672)], ids=str)
def test_error_matches_cublas(M, N, K):
    """Same inputs: precise <= 1.1x cuBLAS exact's error; fast <= 1.1x cuBLAS fast's."""
    from tritonfp8.gemm import gemm
    from tritonfp8.tune import cublas

    p = _problem(M, N, K)
    ref = p.ref()
    ours_fast = _err(gemm(p.a, p.b, p.sa, p.sb), ref)
    ours_prec = _err(gemm(p.a, p.b, p.sa, p.sb, accumulate="precise"), ref)
    cub_fast = _err(cublas(p, fast=True)(), ref)
    cub_exact = _err(cublas(p, fast=False)(), ref)
    assert ours_prec <= 1.1 * cub_exact, (ours_prec, cub_exact)
    assert ours_fast <= 1.1 * cub_fast, (ours_fast, cub_fast)
    assert ours_prec <= ours_fast * 1.0001  # promotion never makes it worse


def test_warp_specialization_canary():
    """The warp-specialized schedules (Triton's automatic Hopper warp specialization) run correctly and do not
    hang: checked in a child process with a timeout, as the tuner and the bench suite do before using them."""
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("warp-specialized TMA schedules need sm_90")
    from tritonfp8.tune import WS_ENV, Canary, ws_opted_in

    if not ws_opted_in():
        pytest.skip(f"warp-specialized schedules hung on the H200 with triton 3.6.0 (2026-11-29); opt in with {WS_ENV}=1")

    ok, details = Canary(timeout=300).result()
    assert ok, details


def test_tuned_table_for_this_gpu():
    """The shipped table of this GPU loads, every entry's config runs correctly on its own shape, and the library
    selects it for that shape."""
    from tritonfp8._kernels import gemm as K_
    from tritonfp8._kernels import gemm_configs as C
    from tritonfp8.gemm import error_bound, gemm

    name = torch.cuda.get_device_name()
    table = C.load_table(name)
    if not table:
        pytest.skip(f"no tuned table shipped for {name!r} ({C.table_path(name)}); run `python -m tritonfp8 tune gemm`")
    import json

    path = C.table_path(name)
    if not path.is_file():
        path = C.CONFIG_DIR / f"gemm_{C.normalize_gpu_name(name).split('_')[0]}.json"
    entries = json.loads(path.read_text())["entries"]
    sms = K_.num_sms(torch.cuda.current_device())
    checked = 0
    for e in entries:
        M, N, K = e["shape"]
        if M * N * K > 8192**3:  # keep the test short: the biggest shapes are covered by the bench
            continue
        precise = e["accumulate"] == "precise"
        cfg, src = C.select_config(M, N, K, precise=precise, arch=90, num_sms=sms, out_size=2, gpu_name=name)
        assert src == "table" and cfg == C.GemmConfig.from_dict(e["config"])
        p = _problem(M, N, K)
        out = gemm(p.a, p.b, p.sa, p.sb, accumulate=e["accumulate"])
        assert _err(out, p.ref()) <= error_bound(torch.bfloat16, K, e["accumulate"], tensor_core=True), e["key"]
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("schedule", ["tmapersistent", "ptr"])
def test_more_than_2_31_elements(schedule):
    """a with 2^31 + 2^24 elements (int64 address arithmetic on the pointer path; 32-bit TMA coordinates suffice)."""
    from tritonfp8.gemm import GemmConfig, error_bound, gemm

    K = 8192
    M = (1 << 31) // K + 2048
    a = torch.empty(M, K, device="cuda", dtype=E4)
    g = torch.Generator(device="cuda").manual_seed(0)
    for i in range(0, M, 65536):  # fill in chunks: an fp32 randn of the whole a would need 8.8 GB
        a[i:i + 65536] = torch.randn(min(65536, M - i), K, device="cuda", generator=g).to(E4)
    b = torch.randn(32, K, device="cuda", generator=g).to(E4)
    one = torch.ones(1, device="cuda")
    cfg = (GemmConfig(128, 32, 128, num_warps=4, num_stages=4, schedule=schedule) if schedule == "ptr"
           else GemmConfig(128, 32, 128, num_warps=4, num_stages=6, schedule=schedule))
    out = gemm(a, b, one, one, config=cfg)
    bound = error_bound(torch.bfloat16, K, "fast", tensor_core=True)
    bf = b.double()
    for i in (0, M // 2, M - 4096):  # rows across the whole range, the last ones past 2^31 elements
        ref = a[i:i + 4096].double() @ bf.T
        assert _err(out[i:i + 4096], ref) <= bound, i
