"""``python -m tritonfp8 bench grouped`` (src/tritonfp8/bench/suites/grouped.py) without a GPU.

The suite runs on CPU tensors with its kernels in the Triton interpreter (conftest.py), on tiny shapes, with a
stand-in timer (the bookkeeping is checked, not speed). cuBLAS peers do not exist there: by default the suite skips
them with a note; to check the loop / dense columns (ratios, the loop's fp64 error) the tests replace the suite's one
cuBLAS call, ``cublas_scaled_mm``, by ``gemm_torch`` reading the operands in cuBLAS's layout (per-tensor scalars,
rowwise (m, 1) x (1, N), blockwise (m, Kb) outer-dim-major x the (Kb, Nb) view). On a GPU the last test runs the
suite with the real cuBLAS peers on small shapes.
"""

from __future__ import annotations

import argparse
import json
import math

import pytest
import torch

from tritonfp8.bench import harness as H
from tritonfp8.bench.suites import grouped as suite
from tritonfp8.gemm import gemm_torch

from conftest import HAS_CUDA, requires_gpu

# Stand-in times (ms) per timed function: the ratios in the rows must come out of these exactly.
TIMES = {"ours": 1.0, "loop": 2.0, "dense": 0.95, "dense_same": 1.2, "ours_dense": 0.9, "ours_triton": 1.4}


def _args(tmp_path, **kw) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    suite.add_arguments(p)
    args = p.parse_args([])
    args.quick, args.repeats, args.out, args.no_save, args.profile = False, 1, str(tmp_path), False, False
    for k, v in kw.items():
        setattr(args, k, v)
    return args


def _fake_cublas(a, bt, scale_a, scale_b, out, fast):
    """``torch._scaled_mm``'s result on CPU: b = bt.t(); scale_b (1, N) rowwise or the (Kb, Nb) block view."""
    sb = scale_b
    if sb.dim() == 2 and sb.shape[0] == 1:
        sb = sb.reshape(-1, 1)
    elif sb.dim() == 2:
        sb = sb.t()
    out.copy_(gemm_torch(a, bt.t(), scale_a, sb, out_dtype=torch.bfloat16))
    return out


def _fake_bench(fns, repeats=1, **kw):
    """Calls each function once (the kernels run) and returns the stand-in TIMES for every round."""
    out = {}
    for name, fn in fns.items():
        fn()
        out[name] = [TIMES[name]] * repeats
    return out


@pytest.fixture
def cpu_suite(monkeypatch):
    if HAS_CUDA:
        pytest.skip("checks the CPU path of the suite; on a GPU test_suite_on_gpu_small runs the real one")
    monkeypatch.setattr(suite, "_DEVICE", "cpu")
    monkeypatch.setattr(suite, "UNEVEN_RANGE", (16, 40))  # G = 3: sizes [0, x, y], both >= 16
    monkeypatch.setattr(suite, "TARGET_MIN_ROWS", 16)  # so tiny groups can qualify for the target
    return suite


# ------------------------------------------------------------------------------------------------------------------
# Pure functions: the case set, the estimate, the target rule, the cuBLAS layouts


def test_full_set_covers_the_issue_and_fits_the_budget():
    full = suite.cases(quick=False)
    assert {c[0] for c in full} == {8, 64}
    assert {(c[1], c[2]) for c in full} == {(4096, 7168), (7168, 2048)}
    uniform = {int(c[3][len("uniform"):]) for c in full if c[3].startswith("uniform")}
    assert min(uniform) == 128 and max(uniform) == 8192 and 1024 in uniform
    for G in (8, 64):  # every G gets every uniform size (8192 included) and the uneven sizes
        assert {c[3] for c in full if c[0] == G} == set(suite.FULL_DISTS)
        sizes = suite._sizes(G, "uneven")
        nonempty = [m for m in sizes if m]
        assert sizes[0] == 0 and sum(m == 0 for m in sizes) == G // 8
        assert min(nonempty) >= 128 and max(nonempty) <= 8192
    assert len(full) == 2 * 2 * len(suite.FULL_DISTS)
    quick = suite.cases(quick=True)
    assert quick == [(8, 4096, 7168, "uniform1024"), (8, 4096, 7168, "uneven"),
                     (8, 7168, 2048, "uniform1024"), (8, 7168, 2048, "uneven")]
    # The filters split the set: the union of the --groups halves is the whole.
    halves = suite.cases(False, groups="8") + suite.cases(False, groups="64")
    assert sorted(halves) == sorted(full)
    assert suite.cases(False, groups="8", nk="4096x7168", dists="uniform128,uneven") == [
        (8, 4096, 7168, "uniform128"), (8, 4096, 7168, "uneven")]
    # A full run of one scaling is planned to fit in about 6 minutes on the H200 (the suite's own model).
    for scaling in suite.SCALINGS:
        assert suite.estimate_seconds(full, 3, scaling) < 6 * 60, scaling
    for bad in ({"dists": "uniformX"}, {"dists": "skewed"}, {"groups": "0"}, {"nk": "4096x100"}):
        with pytest.raises(SystemExit):
            suite.cases(False, **bad)


def test_list_prints_cases_and_runs_nothing(tmp_path, capsys):
    args = _args(tmp_path, list=True, groups="64", dists="uneven")
    assert suite.run(args) == 0
    text = capsys.readouterr().out
    assert "2 cases" in text and "G64 4096x7168 uneven" in text and "8 empty" in text
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("sizes, ratio, scaling, applies, meets, reason", [
    ([1024] * 8, 0.95, "tensor", True, True, "non-empty groups >= 1024 rows"),
    ([1024] * 8, 0.89, "tensor", True, False, "non-empty groups >= 1024 rows"),
    ([0, 1024, 2048, 0], 0.91, "tensor", True, True, "(2 empty)"),  # empty groups do not disqualify
    ([0, 1023, 2048], 1.2, "tensor", False, None, "smallest non-empty group 1023 < 1024"),
    ([0, 0], 1.0, "tensor", False, None, "every group is empty"),
    ([0, 4096], None, "tensor", True, None, "no dense cuBLAS timing"),
    ([4096] * 8, 1.0, "row", False, None, "the target is per-tensor"),
    ([4096] * 8, 1.0, "block", False, None, "the target is per-tensor"),
])
def test_target_rule(sizes, ratio, scaling, applies, meets, reason):
    a, m, why = suite.target(sizes, ratio, scaling)
    assert (a, m) == (applies, meets) and reason in why


def test_cublas_operands_layouts():
    sizes = [0, 20, 33]
    G, N, K = 3, 256, 384
    for scaling in suite.SCALINGS:
        x = suite.make_inputs(G, N, K, sizes, scaling, "cpu")
        assert x.offs == [0, 0, 20, 53] and x.m_sizes.dtype == torch.int32
        a_g, bt, sa, sb = suite.cublas_operands(x, 2)
        assert a_g.shape == (33, K) and a_g.data_ptr() != x.a[20:].data_ptr() and bt.shape == (K, N)
        if scaling == "tensor":
            assert x.sa.shape == (G,) and sa.shape == () and sb.shape == ()
        elif scaling == "row":
            assert x.sa.shape == (53, 1) and x.sb.shape == (G, N)
            assert sa.shape == (33, 1) and sb.shape == (1, N) and sb.is_contiguous()
        else:
            assert x.sa.shape == (53, 3) and x.sb.shape == (G, 2, 3)
            assert sa.shape == (33, 3) and sa.stride() == (1, 33)  # outer-dim-major, as cuBLAS blockwise wants
            assert sb.shape == (3, 2) and sb.stride() == (1, 3)  # the (Kb, Nb) view of (Nb, Kb)
        got = _fake_cublas(a_g, bt, sa, sb, torch.empty(33, N, dtype=torch.bfloat16), True)
        sa_r, sb_r = suite.group_scales(x, 2, slice(20, 53))
        want = gemm_torch(x.a[20:53], x.b[2], sa_r, sb_r, out_dtype=torch.bfloat16)
        assert torch.equal(got, want), scaling
    assert suite.sample_ranges(10, 8) == [(0, 10)]
    assert suite.sample_ranges(40, 4) == [(0, 4), (36, 40)]


def test_reference_errors_on_sampled_rows():
    """The sampled check reads each group's first and last rows: a correct output is within the bf16 rounding, a
    wrong row at a group's end is caught, and every group is judged on its own."""
    from tritonfp8.grouped import grouped_gemm_torch

    x = suite.make_inputs(3, 64, 256, [0, 40, 33], "row", "cpu")
    out = grouped_gemm_torch(x.a, x.b, x.sa, x.sb, m_sizes=x.m_sizes, out_dtype=torch.bfloat16)
    bad = out.clone()
    bad[x.offs[3] - 1] *= 2  # last row of the last group
    outs = {"good": lambda g: out[x.offs[g]:x.offs[g + 1]], "bad": lambda g: bad[x.offs[g]:x.offs[g + 1]]}
    errs, checked = suite.reference_errors(x, outs, check_rows=16)  # half = 8 rows each end
    assert checked == 32
    assert 0 < errs["good"] <= 2.0**-8 and errs["bad"] > 0.1
    errs, checked = suite.reference_errors(x, outs)  # default: every row of these small groups
    assert checked == 73 and errs["bad"] > 0.1


# ------------------------------------------------------------------------------------------------------------------
# The suite end to end on CPU


@pytest.mark.parametrize("scaling", suite.SCALINGS)
def test_suite_runs_each_scaling_and_saves(scaling, cpu_suite, tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "peer_skip_reason", lambda: None)
    monkeypatch.setattr(suite, "cublas_scaled_mm", _fake_cublas)
    monkeypatch.setattr(H, "bench_interleaved", _fake_bench)
    args = _args(tmp_path, scaling=scaling, groups="3", nk="64x256", dists="uniform8,uniform24,uneven")
    assert suite.run(args) == 0
    js = sorted(tmp_path.glob("grouped-*.json"))
    assert len(js) == 1
    stem = js[0].with_suffix("")
    assert stem.with_suffix(".png").exists() and (tmp_path / f"{stem.name}-tokens-G3.png").exists()
    data = json.loads(js[0].read_text())
    assert data["config"]["scaling"] == scaling and data["notes"] == []
    rows = data["rows"]
    assert [r["dist"] for r in rows] == ["uniform8", "uniform24", "uneven"]
    uneven = rows[2]
    assert uneven["sizes"][0] == 0 and uneven["empty_groups"] == 1 and uneven["min_rows"] >= 16
    for r in rows:
        assert r["scaling"] == scaling and r["total_M"] == sum(r["sizes"])
        assert r["checked_rows"] == r["total_M"]  # tiny groups: every row checked
        # Ratios = peer ms / ours ms, from the stand-in times.
        assert r["ours_vs_dense"] == pytest.approx(TIMES["dense"] / TIMES["ours"])
        assert r["ours_vs_loop"] == pytest.approx(TIMES["loop"] / TIMES["ours"])
        assert r["ours_vs_ours_dense"] == pytest.approx(TIMES["ours_dense"] / TIMES["ours"])
        if scaling == "tensor":
            assert "dense_same_tflops" not in r
        else:
            assert r["ours_vs_dense_same"] == pytest.approx(TIMES["dense_same"] / TIMES["ours"])
        for k in ("ours", "loop", "dense", "ours_dense"):
            assert r[f"{k}_tflops"] == pytest.approx(2.0 * r["total_M"] * 64 * 256 / (TIMES[k] * 1e-3) / 1e12)
        # fp64-reference errors of ours and of the loop peer: finite, within ours' bound.
        for k in ("rel_error", "loop_rel_error"):
            assert math.isfinite(r[k]) and 0 < r[k] <= r["err_bound"], (k, r[k])
        assert math.isfinite(r["err_vs_loop"])
    if scaling == "tensor":
        assert [(r["target_applies"], r["meets_target"]) for r in rows] == [(False, None), (True, True),
                                                                            (True, True)]
        assert "smallest non-empty group 8 < 16" in rows[0]["target_reason"]
        assert "(1 empty)" in uneven["target_reason"]  # an empty group no longer makes the case n/a
    else:
        assert all(not r["target_applies"] and r["meets_target"] is None for r in rows)
        assert all("per-tensor" in r["target_reason"] for r in rows)


def test_suite_skips_cublas_peers_on_cpu(cpu_suite, tmp_path, monkeypatch):
    """No stand-in: the cuBLAS columns are skipped with a note, ours and our dense GEMM still run and are timed
    through the harness's interleaved rounds (its timer stood in)."""
    calls = []
    monkeypatch.setattr(H, "time_once", lambda fn, *a, **k: (calls.append(fn()), 1.0)[1])
    args = _args(tmp_path, groups="3", nk="64x256", dists="uneven", repeats=2)
    assert suite.run(args) == 0
    data = json.loads(next(tmp_path.glob("grouped-*.json")).read_text())
    assert any("cuBLAS peers (loop, dense) skipped" in n for n in data["notes"])
    (r,) = data["rows"]
    assert len(calls) == 2 * 2  # ours and ours_dense, 2 rounds
    assert r["ours_ms"] == 1.0 and r["ours_vs_ours_dense"] == 1.0 and "loop_tflops" not in r
    assert "ours_vs_dense" not in r and r["loop_rel_error"] is None
    assert math.isfinite(r["rel_error"]) and r["rel_error"] <= r["err_bound"]
    assert r["target_applies"] and r["meets_target"] is None and "no dense cuBLAS timing" in r["target_reason"]


def test_peer_that_raises_is_dropped_with_a_note(cpu_suite, tmp_path, monkeypatch):
    """A torch whose _scaled_mm lacks block scales: the blockwise loop and dense columns go, with a note; the
    per-tensor dense peer stays."""
    def no_blockwise(a, bt, scale_a, scale_b, out, fast):
        if scale_a.dim() == 2 and scale_a.shape[1] > 1:
            raise RuntimeError("Invalid scaling configuration")
        return _fake_cublas(a, bt, scale_a, scale_b, out, fast)

    monkeypatch.setattr(suite, "peer_skip_reason", lambda: None)
    monkeypatch.setattr(suite, "cublas_scaled_mm", no_blockwise)
    monkeypatch.setattr(H, "bench_interleaved", _fake_bench)
    args = _args(tmp_path, scaling="block", groups="3", nk="64x256", dists="uniform24", no_save=True)
    notes = []
    r = suite.run_case(args, 3, 64, 256, "uniform24", "block", notes, H)
    assert "loop_tflops" not in r and "dense_same_tflops" not in r and r["dense_tflops"] > 0
    assert r["loop_rel_error"] is None and math.isfinite(r["rel_error"])
    assert sorted(n.split()[0] for n in notes) == ["dense_same", "loop"]
    assert all("RuntimeError: Invalid scaling configuration" in n for n in notes)


@requires_gpu
@pytest.mark.parametrize("scaling", suite.SCALINGS)
def test_suite_on_gpu_small(scaling, tmp_path, monkeypatch):
    """On the H200: every cuBLAS peer runs (no note) with each scaling, on small shapes with an empty group, and
    the loop's error is within ours' bound (its operands are in the layouts cuBLAS takes). One exception, seen on
    the H200 (session 13, torch 2.11): cuBLAS's blockwise GEMM refuses (CUBLAS_STATUS_NOT_SUPPORTED) the uneven
    groups, whose row counts are not multiples of 4 (the block loop and the block dense peer); those two peers
    must then be skipped with that note, on the uneven case only, and the uniform case must still have them."""
    monkeypatch.setattr(suite, "UNEVEN_RANGE", (100, 700))
    args = _args(tmp_path, scaling=scaling, groups="8", nk="512x1024", dists="uniform256,uneven")
    assert suite.run(args) == 0
    data = json.loads(next(tmp_path.glob("grouped-*.json")).read_text())
    skipped = set()
    for n in data["notes"]:
        assert scaling == "block" and " uneven: " in n and "CUBLAS_STATUS_NOT_SUPPORTED" in n, n
        assert n.startswith(("loop (", "dense_same (")), n
        skipped.add(n.split(" ")[0])
    for r in data["rows"]:
        peers = {"loop", "dense_same"} - (skipped if r["dist"] == "uneven" else set())
        assert r["dense_tflops"] > 0 and r["ours_dense_tflops"] > 0
        assert r["rel_error"] <= r["err_bound"]
        if "loop" in peers:
            assert r["loop_tflops"] > 0 and r["loop_rel_error"] <= r["err_bound"]
        if scaling != "tensor" and "dense_same" in peers:
            assert r["dense_same_tflops"] > 0


def test_suite_vs_triton_and_precise(cpu_suite, tmp_path, monkeypatch):
    """--vs-triton adds ours pinned to the Triton grouped kernel (ours_triton) with its ratio; --accumulate precise
    runs ours, our dense GEMM and the error bound in precise mode."""
    monkeypatch.setattr(suite, "peer_skip_reason", lambda: None)
    monkeypatch.setattr(suite, "cublas_scaled_mm", _fake_cublas)
    monkeypatch.setattr(H, "bench_interleaved", _fake_bench)
    args = _args(tmp_path, scaling="row", groups="3", nk="64x256", dists="uneven", vs_triton=True,
                 accumulate="precise")
    assert suite.run(args) == 0
    data = json.loads(next(tmp_path.glob("grouped-*.json")).read_text())
    assert data["config"]["vs_triton"] and data["config"]["accumulate"] == "precise"
    (r,) = data["rows"]
    assert r["accumulate"] == "precise"
    assert r["ours_vs_ours_triton"] == pytest.approx(TIMES["ours_triton"] / TIMES["ours"])
    from tritonfp8.gemm import error_bound

    assert r["err_bound"] == error_bound(torch.bfloat16, 256, "precise", tensor_core=False)
    assert "ours_triton" in suite._fn_names("row", True) and "ours_triton" not in suite._fn_names("row")
