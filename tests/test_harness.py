"""Unit tests of the benchmark harness, the demo's checking rules, the runner's argument handling and the
quant suite's byte accounting. CPU only, except the tests marked ``requires_gpu`` (timing needs CUDA events).

Tolerances: the harness computes errors in float64; the expected values below are exact in float64 or are
compared with ``math.isclose(rel_tol=1e-12)`` (float64 rounding of a few operations), never looser.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import stat
import sys
import textwrap

import pytest
import torch
from conftest import requires_gpu

from tritonfp8.bench import demo, harness as H, runner
from tritonfp8.bench.suites import quant

REL = 1e-12  # float64 round-off of the few operations in each expected value


# --------------------------------------------------------------------------------------------------------------
# errors


def test_rel_error_exact_and_known_value():
    ref = torch.tensor([3.0, 4.0])
    assert H.rel_error(ref.clone(), ref) == 0.0
    out = torch.tensor([3.0, 5.0])  # ||(0, 1)|| / ||(3, 4)|| = 1/5
    assert math.isclose(H.rel_error(out, ref), 0.2, rel_tol=REL)


def test_rel_error_is_float64_not_input_precision():
    # 1 + 2^-20 is exact in fp32; the difference and the norms in float64 give exactly 2^-20.
    ref = torch.full((4,), 1.0, dtype=torch.float32)
    out = torch.full((4,), 1.0 + 2.0**-20, dtype=torch.float32)
    assert math.isclose(H.rel_error(out, ref), 2.0**-20, rel_tol=REL)


def test_rel_error_nan_and_inf_give_inf():
    ref = torch.ones(3)
    assert H.rel_error(torch.tensor([1.0, float("nan"), 1.0]), ref) == math.inf
    assert H.rel_error(torch.tensor([1.0, float("inf"), 1.0]), ref) == math.inf
    assert H.max_abs_error(torch.tensor([1.0, float("nan"), 1.0]), ref) == math.inf


def test_rel_error_fp8_zero_ref_empty_and_shape():
    x = torch.tensor([0.5, -1.5, 448.0]).to(torch.float8_e4m3fn)
    assert H.rel_error(x, x.float()) == 0.0
    assert H.rel_error(torch.zeros(2), torch.zeros(2)) == 0.0
    assert H.rel_error(torch.tensor([0.0, 1e-30]), torch.zeros(2)) == math.inf
    assert H.rel_error(torch.empty(0, 4), torch.empty(0, 4)) == 0.0
    with pytest.raises(ValueError, match="out: shape"):
        H.rel_error(torch.zeros(2, 3), torch.zeros(3, 2))


def test_max_abs_error():
    assert H.max_abs_error(torch.tensor([1.0, 2.5]), torch.tensor([1.0, 2.0])) == 0.5
    inf = float("inf")
    assert H.max_abs_error(torch.tensor([inf, 1.0]), torch.tensor([inf, 1.0])) == 0.0
    assert H.max_abs_error(torch.tensor([-inf]), torch.tensor([inf])) == math.inf


# --------------------------------------------------------------------------------------------------------------
# timing logic (a fake timer stands in for do_bench) and rate math


def test_bench_interleaved_rotates_order_and_collects_rounds():
    calls = []
    clock = {"a": iter([1.0, 2.0, 3.0]), "b": iter([10.0, 20.0, 30.0]), "c": iter([5.0, 5.0, 5.0])}

    def timer(fn, warmup_ms, rep_ms, flush_l2):
        name = fn()
        calls.append(name)
        assert (warmup_ms, rep_ms, flush_l2) == (7, 9, False)
        return next(clock[name])

    fns = {n: (lambda n=n: n) for n in "abc"}
    out = H.bench_interleaved(fns, repeats=3, warmup_ms=7, rep_ms=9, flush_l2=False, timer=timer)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert out == {"a": [1.0, 2.0, 3.0], "b": [10.0, 20.0, 30.0], "c": [5.0, 5.0, 5.0]}


def test_bench_interleaved_rejects_bad_arguments():
    with pytest.raises(ValueError, match="repeats"):
        H.bench_interleaved({"a": lambda: None}, repeats=0, timer=lambda *a: 1.0)
    with pytest.raises(ValueError, match="fns"):
        H.bench_interleaved({}, timer=lambda *a: 1.0)


def test_summarize_and_compare():
    t = H.summarize([2.0, 1.0, 4.0])
    assert (t.median, t.min, t.max) == (2.0, 1.0, 4.0)
    assert t.spread == 1.5
    with pytest.raises(ValueError):
        H.summarize([])
    # ours 1.0 ms vs peer 2.0 ms: ratio = peer / ours = 2, bounds from the extreme rounds.
    c = H.compare([1.0, 0.9, 1.1], [2.0, 1.9, 2.1])
    assert c.ratio == 2.0
    assert math.isclose(c.lo, 1.9 / 1.1, rel_tol=REL) and math.isclose(c.hi, 2.1 / 0.9, rel_tol=REL)
    assert c.verdict == "faster"
    assert H.compare([2.0, 2.0], [1.0, 1.0]).verdict == "slower"
    # 3% apart, inside the measured 6% run-to-run noise: no claim either way.
    assert H.compare([1.0, 1.0], [1.03, 1.03]).verdict == "within noise"
    # Medians 10% apart but overlapping rounds: no claim.
    assert H.compare([1.0, 0.8, 1.3], [1.1, 1.0, 1.2]).verdict == "within noise"


def test_rates_and_percentages():
    assert math.isclose(H.tflops(2 * 8192**3, 1.0), 2 * 8192**3 / 1e-3 / 1e12, rel_tol=REL)
    assert math.isclose(H.gbps(3e9, 1.0), 3000.0, rel_tol=REL)
    assert H.pct(50.0, 200.0) == 25.0
    assert H.pct(None, 1.0) is None and H.pct(1.0, None) is None and H.pct(1.0, 0.0) is None


def test_peak_table_lookup():
    assert H.peak("fp8", "NVIDIA H200") == 1979.0
    assert H.peak("fp8", "NVIDIA H100 80GB HBM3") == 1979.0  # the SXM part
    assert H.peak("fp8", "NVIDIA H100 PCIe") == 1513.0
    assert H.peak("fp8", "NVIDIA H200 NVL") == 1671.0
    assert H.peak("fp8", "NVIDIA GeForce GTX 1080") is None
    assert math.isclose(H.pct_of_peak(989.5, "fp8", "NVIDIA H200"), 50.0, rel_tol=REL)
    with pytest.raises(ValueError, match="kind"):
        H.peak("int4", "NVIDIA H200")


# --------------------------------------------------------------------------------------------------------------
# environment, command line, results files, plots


def test_environment_info_fields():
    env = H.environment_info()
    for key in ("date", "gpu", "capability", "sm_count", "torch", "triton", "cuda", "driver", "cudnn", "ptxas",
                "python", "tritonfp8", "kernel_names", "triton_interpret"):
        assert key in env, key
    assert env["torch"] == torch.__version__
    assert env["date"][:2] == "20" and "T" in env["date"]
    assert env["ptxas"] is not None and env["ptxas"][0].isdigit()  # triton's bundled ptxas answers --version
    if not torch.cuda.is_available():
        assert env["gpu"] is None and env["capability"] is None


def test_command_line_forms():
    main = os.path.join("x", "site-packages", "tritonfp8", "__main__.py")
    assert H.command_line([main, "bench", "--quick"]) == "python -m tritonfp8 bench --quick"
    assert H.command_line([main, "bench", "quant", "--shape", "8 x 8"]) == "python -m tritonfp8 bench quant --shape '8 x 8'"
    mod = os.path.join("src", "tritonfp8", "bench", "demo.py")
    assert H.command_line([mod]) == "python -m tritonfp8.bench.demo"
    assert H.gpu_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert H.gpu_slug(None) == "cpu"


def test_results_writer_json(tmp_path):
    env = {"gpu": "NVIDIA H200", "date": "2026-11-29T10:00:00+00:00", "torch": "x"}
    w = H.ResultsWriter("quant", out_dir=tmp_path / "res", env=env, command="python -m tritonfp8 bench quant")
    rows = [{"shape": "8x8", "ours_ms": 0.5, "rounds_ms": {"ours": [0.5, 0.6]}, "bad": float("nan"),
             "big": float("inf"), "dtype": torch.float8_e4m3fn}]
    path = w.write(rows, config={"quick": True}, notes=["n1"])
    assert path == w.json_path and path.parent == tmp_path / "res"
    assert path.name.startswith("quant-nvidia-h200-") and path.suffix == ".json"
    assert w.png_path.with_suffix(".json") == path
    data = json.loads(path.read_text())  # strict JSON: no NaN/Infinity tokens
    assert data["suite"] == "quant"
    assert data["command"] == "python -m tritonfp8 bench quant"
    assert data["env"] == env
    assert data["config"] == {"quick": True}
    assert data["notes"] == ["n1"]
    assert data["rows"][0]["rounds_ms"] == {"ours": [0.5, 0.6]}
    assert data["rows"][0]["bad"] is None and data["rows"][0]["big"] == "inf"
    assert data["rows"][0]["dtype"] == "float8_e4m3fn"
    with pytest.raises(ValueError, match="suite"):
        H.ResultsWriter("Bad Name", out_dir=tmp_path, env=env)


def test_results_writer_default_env_and_command(tmp_path):
    w = H.ResultsWriter("demo", out_dir=tmp_path)
    data = json.loads(w.write([]).read_text())
    assert data["env"]["torch"] == torch.__version__
    assert isinstance(data["command"], str) and data["command"]
    assert data["rows"] == []


def _is_png(path) -> bool:
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_plots_written(tmp_path):
    p = H.plot_bars(tmp_path / "sub" / "bars.png", ["a", "b"], {"ours": [1.0, 2.0], "peer": [1.5, None]},
                    ylabel="GB/s", title="t", hline=(2.5, "copy"), errors={"ours": [(0.9, 1.1), None]})
    assert _is_png(p) and p.stat().st_size > 1000
    q = H.plot_lines(tmp_path / "lines.png", [1, 2, 4], {"ours": [1.0, 2.0, 3.0]}, "M", "TFLOPS", "t", logx=True)
    assert _is_png(q)
    with pytest.raises(ValueError, match="series"):
        H.plot_bars(tmp_path / "x.png", ["a"], {"ours": [1.0, 2.0]}, ylabel="y", title="t")
    with pytest.raises(ValueError, match="series"):
        H.plot_lines(tmp_path / "x.png", [1], {}, "x", "y", "t")


def test_print_table_formats(capsys):
    from rich.console import Console

    console = Console(width=200, force_terminal=False)
    H.print_table([{"a": 1.23456, "b": None, "c": float("nan"), "d": True}], ["a", "b", "c", "d"], title="T",
                  console=console)
    out = capsys.readouterr().out
    assert "1.23" in out and "n/a" in out and "NaN" in out and "yes" in out


# --------------------------------------------------------------------------------------------------------------
# Nsight Compute: CSV parsing, a missing ncu, and the whole pipeline against a stand-in ncu script

_RAW_CSV = textwrap.dedent(
    """\
    ==PROF== Connected to process 1
    "ID","Process ID","Kernel Name","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","smsp__average_warps_issue_stalled_selected_per_issue_active.ratio","smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"
    "","","","usecond","%","%","%","%","ratio","ratio","ratio","ratio"
    "0","1","cutlass_sm90_quant_bf16_e4m3","1,234.5","41.5","88.25","90.1","0","7.5","0.25","1","2"
    "1","1","other","3","n/a","1","1","","","","",""
    """
)


def test_parse_and_summarize_ncu_csv():
    rows, units = H.parse_ncu_raw_csv(_RAW_CSV)
    assert [r["ID"] for r in rows] == ["0", "1"]
    assert units["gpu__time_duration.sum"] == "usecond"
    k0, k1 = H.summarize_ncu_rows(rows, units, top=2)
    assert k0.name == "cutlass_sm90_quant_bf16_e4m3"
    assert k0.duration_us == 1234.5  # thousands separator removed, already in us
    assert (k0.sm_pct, k0.dram_pct, k0.memory_pct, k0.tensor_pct) == (41.5, 88.25, 90.1, 0.0)
    assert k0.stalls == [("long_scoreboard", 7.5), ("wait", 2.0)]  # "selected" is not a stall
    assert k1.sm_pct is None and k1.tensor_pct is None and k1.stalls == []
    ns_rows, ns_units = H.parse_ncu_raw_csv(_RAW_CSV.replace('"usecond"', '"nsecond"'))
    assert H.summarize_ncu_rows(ns_rows, ns_units)[0].duration_us == 1.2345


def test_profile_without_ncu_says_so(monkeypatch, capsys):
    monkeypatch.setenv("TRITONFP8_NCU", "/nonexistent/ncu")
    assert H.find_ncu() is None
    res = H.profile_with_ncu([sys.executable, "-c", "pass"])
    assert not res.ok and "not found" in res.message and res.kernels == []
    H.print_ncu_result(res, "case")
    assert "not found" in capsys.readouterr().out


def _fake_ncu(tmp_path, exit_code: int = 0):
    """A stand-in for ncu: the profiling call runs the child and writes the report; --import prints _RAW_CSV."""
    script = tmp_path / "ncu"
    script.write_text(
        f"#!{sys.executable}\n"
        "import subprocess, sys\n"
        "a = sys.argv[1:]\n"
        "if '--import' in a:\n"
        f"    sys.stdout.write({_RAW_CSV!r}); sys.exit(0)\n"
        "assert a[a.index('--clock-control') + 1] == 'none' and a[a.index('--profile-from-start') + 1] == 'off'\n"
        "i = a.index('-o'); report = a[i + 1]; child = a[i + 2:]\n"
        "rc = subprocess.call(child)\n"
        "open(report + '.ncu-rep', 'w').write('r')\n"
        f"sys.exit({exit_code} or rc)\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_profile_pipeline_with_stand_in_ncu(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONFP8_NCU", _fake_ncu(tmp_path))
    marker = tmp_path / "child_ran"
    res = H.profile_with_ncu([sys.executable, "-c", f"open({str(marker)!r}, 'w').write('1')"])
    assert res.ok, res.message + res.log
    assert marker.exists()
    assert [k.name for k in res.kernels] == ["cutlass_sm90_quant_bf16_e4m3", "other"]
    assert "--clock-control" in res.command


def test_profile_pipeline_reports_ncu_failure(tmp_path):
    res = H.profile_with_ncu([sys.executable, "-c", "pass"], ncu=_fake_ncu(tmp_path, exit_code=3))
    assert not res.ok and "status 3" in res.message


# --------------------------------------------------------------------------------------------------------------
# demo checking rules


def _case(out, ref, tol):
    return demo.DemoCase("c", lambda: (out, ref), tol)


def test_demo_check_exact_and_tolerance():
    a = torch.tensor([1.0, -2.0]).to(torch.float8_e4m3fn)
    assert demo.check_case("op", _case(a, a.clone(), 0.0)).ok
    b = torch.tensor([1.0, -2.5]).to(torch.float8_e4m3fn)
    r = demo.check_case("op", _case(b, a, 0.0))
    assert not r.ok and r.max_abs == 0.5
    # -0 vs +0 differ in their bits: bit-exact means bits.
    z, nz = torch.tensor([0.0]).to(torch.float8_e4m3fn), torch.tensor([-0.0]).to(torch.float8_e4m3fn)
    assert not demo.check_case("op", _case(nz, z, 0.0)).ok
    ref = torch.tensor([3.0, 4.0])
    assert demo.check_case("op", _case(torch.tensor([3.0, 5.0]), ref, 0.2)).ok
    assert not demo.check_case("op", _case(torch.tensor([3.0, 5.0]), ref, 0.19)).ok


def test_demo_nan_and_exceptions_fail():
    ref = torch.ones(2)
    nan = torch.tensor([1.0, float("nan")])
    assert not demo.check_case("op", _case(nan, ref, 1e9)).ok
    assert not demo.check_case("op", _case(nan, nan.clone(), 0.0)).ok

    def boom():
        raise RuntimeError("kernel exploded")

    r = demo.check_case("op", demo.DemoCase("c", boom, 0.1))
    assert not r.ok and "kernel exploded" in r.detail


def test_demo_tuple_outputs_and_dict_cases():
    c = demo._as_case({"case": "d", "run": lambda: ((torch.ones(2), torch.zeros(1)), (torch.ones(2), torch.ones(1))),
                       "tol": 0.5})
    r = demo.check_case("op", c)
    assert not r.ok and r.rel == 1.0  # the worst pair: ||0 - 1|| / ||1||
    with pytest.raises(KeyError):
        demo._as_case({"case": "x", "run": lambda: None})


def test_demo_collect_skips_missing_and_flags_broken(monkeypatch):
    import types

    good = types.ModuleType("tfp8_fake_good")
    good.demo_cases = lambda device: [{"case": "ok", "run": lambda: (torch.ones(1), torch.ones(1)), "tol": 0.0}]
    broken = types.ModuleType("tfp8_fake_broken")

    def bad_cases(device):
        raise TypeError("oops")

    broken.demo_cases = bad_cases
    monkeypatch.setitem(sys.modules, "tfp8_fake_good", good)
    monkeypatch.setitem(sys.modules, "tfp8_fake_broken", broken)
    monkeypatch.setattr(demo, "DEMO_OPS", (("good", "tfp8_fake_good"), ("missing", "tfp8_fake_missing_module"),
                                           ("broken", "tfp8_fake_broken")))
    cases, notes, failures = demo.collect("cpu")
    assert [(op, c.case) for op, c in cases] == [("good", "ok")]
    assert any("missing" in n and "does not exist" in n for n in notes)
    assert [f.op for f in failures] == ["broken"] and "oops" in failures[0].detail


# --------------------------------------------------------------------------------------------------------------
# runner argument handling, quant suite helpers


def test_suite_args_defaults():
    ns = runner.suite_args(argparse.Namespace(command="bench", quick=True, repeats=None, suite=None), quant)
    assert ns.repeats == 2 and ns.out == "benchmarks/results" and ns.no_save is False and ns.profile is False
    assert ns.dtype == "e4m3" and ns.granularity is None and ns.shape is None
    assert runner.suite_args(argparse.Namespace(quick=False, repeats=None), quant).repeats == 3
    assert runner.suite_args(argparse.Namespace(quick=False, repeats=5, dtype="e5m2"), quant).dtype == "e5m2"


def test_cli_keeps_common_options_before_the_suite_name():
    from tritonfp8.cli import build_parser

    p = build_parser()
    a = p.parse_args(["bench", "--quick", "--no-save", "quant"])
    assert a.quick and a.no_save and a.suite == "quant"
    b = p.parse_args(["bench", "quant", "--quick", "--repeats", "4", "--granularity", "1x128"])
    assert b.quick and b.repeats == 4 and b.granularity == [(1, 128)]
    c = p.parse_args(["bench", "quant"])
    assert c.quick is False and c.out == "benchmarks/results"


def test_quant_suite_cases_and_bytes():
    quick = argparse.Namespace(quick=True, granularity=None, dtype="e4m3", shape=None)
    cases = quant._cases(quick)
    assert len(cases) == len(quant.GRANULARITIES) and {c[0] for c in cases} == {(8192, 8192)}
    full = quant._cases(argparse.Namespace(quick=False, granularity=None, dtype="both", shape=None))
    assert {c[0] for c in full} >= {(4096, 4096), (16384, 8192), (1, 8192), (16, 8192)}
    assert len(full) == len(quant.FULL_SHAPES) * len(quant.GRANULARITIES) * 2
    # bf16 in (2 B) + fp8 out (1 B) per element + 4 B per fp32 scale.
    assert quant.useful_bytes(8192, 8192, "tensor") == 3 * 8192 * 8192 + 4
    assert quant.useful_bytes(8192, 8192, "row") == 3 * 8192 * 8192 + 4 * 8192
    assert quant.useful_bytes(100, 300, (1, 128)) == 3 * 30000 + 4 * 100 * 3
    assert quant.useful_bytes(100, 300, (128, 128)) == 3 * 30000 + 4 * 1 * 3
    assert quant._parse_gran("1x128") == (1, 128) and quant._parse_gran("ROW") == "row"
    with pytest.raises(argparse.ArgumentTypeError, match="granularity"):
        quant._parse_gran("block")
    with pytest.raises(argparse.ArgumentTypeError, match="shape"):
        quant._parse_shape("8192")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_runner_without_gpu_runs_demo_and_explains_profile(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(demo, "run_in_subprocess", lambda argv=None, timeout=None: calls.append(argv) or 0)
    monkeypatch.setattr(demo, "run_demo", lambda device=None, console=None: calls.append(device) or 0)
    monkeypatch.setenv("TRITONFP8_NCU", "/nonexistent/ncu")
    ns = argparse.Namespace(command="bench", quick=True, repeats=None, out="o", no_save=True, profile=True,
                            suite="quant")
    assert runner.run(ns, {"quant": quant}) == 0
    out = capsys.readouterr().out
    assert "no CUDA GPU found: running the interpreter correctness demo" in out
    assert "--profile needs a CUDA GPU" in out and "not installed" in out
    assert len(calls) == 1  # the demo ran once (in-process under the interpreter, else in a child)


def test_runner_profile_plumbing_with_stand_in_ncu(tmp_path, monkeypatch, capsys):
    # A fake suite whose profile_case records that it ran (in the child) with the parent's arguments.
    marker = tmp_path / "ran.json"
    (tmp_path / "tfp8_fake_suite.py").write_text(textwrap.dedent(f"""
        import json
        def run(args):
            return 0
        def profile_case(args):
            calls = []
            def fn():
                calls.append(1)
                open({str(marker)!r}, "w").write(json.dumps({{"calls": len(calls), "dtype": args.dtype,
                                                              "shape": args.shape, "repeats": args.repeats}}))
            return fn, "fake case 8x8"
        def add_arguments(p):
            p.add_argument("--dtype", default="e4m3")
            p.add_argument("--shape", default=None)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("TRITONFP8_NCU", _fake_ncu(tmp_path))
    import tfp8_fake_suite

    ns = argparse.Namespace(command="bench", quick=True, repeats=None, out="o", no_save=True, profile=True,
                            suite="fake", shape=[[8, 8]])
    assert runner._profile(runner._resolve_common(ns), {"fake": tfp8_fake_suite}) == 0
    ran = json.loads(marker.read_text())
    assert ran == {"calls": 3, "dtype": "e4m3", "shape": [[8, 8]], "repeats": 2}  # 2 warm-up calls + 1 profiled
    out = capsys.readouterr().out
    assert "fake case 8x8" in out and "cutlass_sm90_quant_bf16_e4m3" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU stand-in of the suite; the GPU runs the real one")
def test_quant_suite_bookkeeping_on_cpu(tmp_path, monkeypatch, capsys):
    # The real suite on CPU tensors (kernels in the interpreter) with a stand-in timer: ours 1 ms, the torch
    # reference 4 ms, the copy 0.8 ms, ours with the scale given 0.9 ms per round. Checks the rows, ratios, the JSON
    # and the PNG.
    fake_ms = {"ours": 1.0, "torch": 4.0, "copy": 0.8, "ours_static": 0.9}
    names = list(fake_ms)  # the suite's timing order
    order = iter((names + names[1:] + names[:1]) * 2)  # 2 rounds, rotating, per case

    def timer(fn, warmup_ms, rep_ms, flush_l2):
        fn()
        return fake_ms[next(order)]

    monkeypatch.setattr(quant, "_DEVICE", "cpu")
    monkeypatch.setattr(H, "time_once", timer)
    args = argparse.Namespace(quick=True, repeats=2, out=str(tmp_path), no_save=False, profile=False,
                              granularity=[(1, 128)], dtype="e4m3", shape=[(16, 256), (8, 128)])
    assert quant.run(args) == 0
    (js,) = tmp_path.glob("quant-cpu-*.json")
    assert js.with_suffix(".png").exists() and _is_png(js.with_suffix(".png"))
    data = json.loads(js.read_text())
    r0 = data["rows"][0]
    assert (r0["shape"], r0["granularity"], r0["dtype"], r0["exact"]) == ("16x256", "1x128", "e4m3", True)
    nbytes = quant.useful_bytes(16, 256, (1, 128))
    assert r0["bytes"] == nbytes and r0["rounds_ms"] == {"ours": [1.0, 1.0], "torch": [4.0, 4.0], "copy": [0.8, 0.8],
                                                         "ours_static": [0.9, 0.9]}
    assert r0["static_exact"] and math.isclose(r0["static_pct_of_copy"], 80.0 / 0.9, rel_tol=REL)
    assert r0["passes"] == 1 and r0["traffic_bytes"] == nbytes  # (1, G): one read of x
    assert math.isclose(r0["pct_of_copy_traffic"], 80.0, rel_tol=REL)
    assert math.isclose(r0["ours_gbps"], nbytes / 1e-3 / 1e9, rel_tol=REL)
    assert math.isclose(r0["pct_of_copy"], 80.0, rel_tol=REL)  # copy moves the same bytes in 0.8 ms
    assert r0["vs_torch"] == 4.0 and r0["vs_torch_verdict"] == "faster"
    assert r0["target"] is None  # the 80% target is judged at 8192x8192 only
    assert data["env"]["gpu"] is None and data["config"]["repeats"] == 2
    assert "% of copy" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------------------------
# GPU only


@requires_gpu
def test_time_once_and_interleaved_on_gpu():
    x = torch.randn(1 << 22, device="cuda")
    times = H.bench_interleaved({"mul": lambda: x * 2, "add": lambda: x + 1}, repeats=2, warmup_ms=5, rep_ms=20)
    assert all(len(v) == 2 and all(t > 0 for t in v) for v in times.values())
    assert H.time_once(lambda: x * 2, 5, 20, flush_l2=False) > 0


@requires_gpu
def test_copy_bandwidth_on_gpu():
    bw = H.measure_copy_bandwidth(1 << 28, repeats=2, warmup_ms=5, rep_ms=30)
    hbm = H.peak("hbm_tbps")
    assert bw > 0
    if hbm is not None:  # a copy cannot beat the datasheet HBM bandwidth
        assert bw < hbm * 1000


def test_timer_mode_rejects_unknown():
    with pytest.raises(ValueError, match="mode"):
        H.set_timer_mode("wallclock")
    assert H.timer_mode() in ("events", "graph")


@requires_gpu
def test_time_graph_removes_host_overhead_on_gpu():
    """A tiny kernel behind a slow Python call: events see the host's delay, the graph replay does not; a large
    copy takes about as long either way (the graph's time is the kernel's)."""
    import time as _time

    x = torch.randn(1 << 10, device="cuda")

    def slow_launch():
        t0 = _time.perf_counter()
        while _time.perf_counter() - t0 < 300e-6:  # 300 us of host work before a ~2 us kernel
            pass
        x.mul_(1.0)

    ev = H.time_once(slow_launch, 5, 20, flush_l2=False)
    gr = H.time_graph(slow_launch, flush_l2=False)
    assert gr < 0.1 * ev, (gr, ev)
    big = torch.randn(1 << 26, device="cuda")
    dst = torch.empty_like(big)
    # An SM kernel: a captured dst.copy_(big) becomes a memcpy node on a copy engine, ~1.5x slower than the eager
    # copy kernel on the H200 (s6-call10-copy_ref.json), which is not what this test is about.
    ev_big = H.time_once(lambda: torch.add(big, 1.0, out=dst), 5, 40)
    gr_big = H.time_graph(lambda: torch.add(big, 1.0, out=dst))
    assert 0.7 * ev_big < gr_big < 1.3 * ev_big, (gr_big, ev_big)
    H.set_timer_mode("graph")
    try:
        assert H.time_once(lambda: torch.add(big, 1.0, out=dst), 5, 40) > 0
    finally:
        H.set_timer_mode("events")


def test_copy_reference_under_graphs_is_an_sm_kernel():
    """In the graph timer mode make_copy_fn copies with an elementwise int64 kernel (a captured memcpy runs on a
    copy engine at ~2.7 TB/s on the H200, not the device copy bandwidth): the bytes are copied and counted in
    whole 8-byte words."""
    H.set_timer_mode("graph")
    try:
        fn, moved = H.make_copy_fn(100, "cpu")
    finally:
        H.set_timer_mode("events")
    out = fn()
    assert out.dtype == torch.int64 and out.numel() == 13 and moved == 2 * 104
    src = next(c.cell_contents for c in fn.__closure__ if c.cell_contents is not out)  # the lambda's source buffer
    assert torch.equal(out, src)
    fn_e, moved_e = H.make_copy_fn(100, "cpu")
    assert moved_e == 200 and fn_e().dtype == torch.uint8
