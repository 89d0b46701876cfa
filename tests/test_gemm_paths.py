"""Paths of the FP8 GEMM (issue 3) not covered by the other GEMM test files: the BF16 fallback of GPUs without FP8
tensor cores through the public ``tritonfp8.gemm``, ``python -m tritonfp8 tune gemm`` (CLI, progress bar, table
format read back by ``select_config``), and the name A/B of ``bench gemm``.

Tolerances, as in tests/test_gemm.py: the relative Frobenius error against the fp64 product of the dequantized inputs
is held to ``error_bound(out_dtype, K, accumulate, tensor_core=...)`` (the output's unit roundoff, bf16 2^-8, plus
the accumulation error, fp32: K * 2^-24). The BF16 fallback rounds twice (cuBLAS's BF16 matmul rounds its fp32 sum to
bf16, 2^-8, then the scaled result is rounded to out_dtype), so its bound is ``2^-8 + error_bound(out_dtype, K)``
(the bound stated in ``gemm._gemm_bf16_fallback``); its block-scale branch dequantizes in fp32 and rounds once:
``error_bound(out_dtype, K)``. Wrong or dropped scales are errors of order 0.1-1, far above these bounds.

Where the BF16 fallback runs: ``gemm`` takes it only for CUDA tensors on a device whose capability is below sm_89
(``device.type == "cuda" and not _backend.has_fp8_tensor_cores(device)``); CPU tensors under the interpreter always
run the Triton kernels. So the fallback tests need a CUDA device; they make it report what an A100 reports
(``_backend.capability`` -> (8, 0)) and skip without a GPU. The CPU suite checks the other half of that rule.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import warnings

import pytest
import torch

from conftest import HAS_CUDA, _cpu_timer, codegen_env, requires_gpu
from test_gemm import rand_fp8
from tritonfp8 import _backend, naming
from tritonfp8._kernels import gemm as K_
from tritonfp8._kernels import gemm_configs as C
from tritonfp8.bench.harness import rel_error
from tritonfp8.gemm import GemmConfig, error_bound, gemm, gemm_torch

G = sys.modules["tritonfp8.gemm"]  # the module (the package attribute ``tritonfp8.gemm`` is the function)

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2
FALLBACK_WARNING = "no FP8 tensor cores"


def ref64(a, b, sa, sb, bias=None, activation=None):
    return gemm_torch(a.cpu(), b.cpu(), sa.cpu(), sb.cpu(), bias=None if bias is None else bias.cpu(),
                      activation=activation, out_dtype=torch.float64, compute_dtype=torch.float64)


@pytest.fixture
def emitted():
    """Every warning emitted in the test, each emission recorded ("always": neither the filters nor a module's
    ``__warningregistry__`` hide a repeat, so a count is the number of ``warnings.warn`` calls)."""
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        yield log


def fallback_warnings(log) -> list:
    return [w for w in log if issubclass(w.category, RuntimeWarning) and FALLBACK_WARNING in str(w.message)]


# ------------------------------------------------------------------------------------------------------------------
# 1. BF16 fallback (GPUs without FP8 tensor cores) through the public gemm()


@pytest.fixture
def no_fp8_gpu(monkeypatch):
    """The CUDA device reports compute capability (8, 0) (an A100: no FP8 tensor cores); warn_once's state is reset;
    no launch plan recorded by an earlier test can be replayed; the FP8 kernels must not be launched."""
    monkeypatch.setattr(_backend, "capability", lambda device_index=0: (8, 0))
    monkeypatch.setattr(_backend, "_warned", set())
    monkeypatch.setattr(G, "_PLANS", {})

    def no_kernel(*args, **kwargs):
        raise AssertionError("the FP8 kernel was launched on a GPU without FP8 tensor cores")

    monkeypatch.setattr(K_, "launch_gemm", no_kernel)
    calls = []
    real = G._gemm_bf16_fallback

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(G, "_gemm_bf16_fallback", spy)
    assert not _backend.has_fp8_tensor_cores(torch.device("cuda"))
    return calls


M, N, K = 96, 208, 320  # Kb = ceil(320/128) = 3 (last K group partial), Nb = ceil(208/128) = 2 (last block partial)


def _scales(kind: str, device: str):
    kb, nb = -(-K // 128), -(-N // 128)
    if kind == "tensor":
        return torch.tensor(0.75, device=device), torch.tensor([0.5], device=device)
    if kind == "row_n1":
        return (torch.rand(M, 1) + 0.5).to(device), (torch.rand(N, 1) + 0.5).to(device)
    if kind == "row_1n":
        return (torch.rand(M, 1) + 0.5).to(device), (torch.rand(1, N) + 0.5).to(device)
    if kind == "block":  # 1x128 groups of a, 128x128 blocks of b
        return (torch.rand(M, kb) + 0.5).to(device), (torch.rand(nb, kb) + 0.5).to(device)
    if kind == "block_group":  # 1x128 groups of a and of b
        return (torch.rand(M, kb) + 0.5).to(device), (torch.rand(N, kb) + 0.5).to(device)
    raise ValueError(kind)


@requires_gpu
@pytest.mark.gpu
def test_bf16_fallback_warns_once_over_two_calls(no_fp8_gpu, emitted):
    """Two identical calls: the same result, the fallback ran both times, one RuntimeWarning; after warn_once's
    state is reset the next call warns again (the once-ness is warn_once's, not Python's warning filter: the ``emitted``
    fixture records every emission; pytest 9's ``recwarn`` drops a repeat from the same line, measured)."""
    a, b = rand_fp8((M, K), device="cuda"), rand_fp8((N, K), device="cuda")
    sa, sb = _scales("tensor", "cuda")
    y1 = gemm(a, b, sa, sb)
    assert len(fallback_warnings(emitted)) == 1
    w = fallback_warnings(emitted)[0]
    assert "BF16 fallback" in str(w.message) and "sm_89" in str(w.message)
    y2 = gemm(a, b, sa, sb)
    assert len(fallback_warnings(emitted)) == 1, [str(x.message) for x in emitted]
    assert len(no_fp8_gpu) == 2
    assert torch.equal(y1, y2)
    assert rel_error(y1, ref64(a, b, sa, sb)) <= 2.0**-8 + error_bound(torch.bfloat16, K)
    _backend._warned.clear()
    gemm(a, b, sa, sb)
    assert len(fallback_warnings(emitted)) == 2


FALLBACK_CASES = [
    ("tensor", E4, E4, torch.bfloat16, None, None),
    ("row_n1", E5, E4, torch.bfloat16, torch.float32, "gelu"),
    ("row_1n", E4, E5, torch.float32, None, "silu"),
    ("block", E4, E4, torch.bfloat16, None, None),
    ("block_group", E4, E4, torch.bfloat16, torch.bfloat16, "relu"),
]


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("kind,a_dtype,b_dtype,out_dtype,bias_dtype,activation", FALLBACK_CASES,
                         ids=[c[0] for c in FALLBACK_CASES])
def test_bf16_fallback_scale_modes(no_fp8_gpu, emitted, kind, a_dtype, b_dtype, out_dtype, bias_dtype, activation):
    """Per-tensor, rowwise ((N, 1) and (1, N)) and block scales ((M, Kb) with (ceil(N/128), Kb) or (N, Kb)) through
    gemm() on the fallback, with partial K groups / N blocks, bias and activations: within the fallback's bound."""
    a, b = rand_fp8((M, K), a_dtype, device="cuda"), rand_fp8((N, K), b_dtype, device="cuda")
    sa, sb = _scales(kind, "cuda")
    bias = torch.randn(N).to(bias_dtype).cuda() if bias_dtype else None
    y = gemm(a, b, sa, sb, out_dtype=out_dtype, bias=bias, activation=activation)
    assert y.dtype == out_dtype and tuple(y.shape) == (M, N) and y.is_cuda
    assert len(fallback_warnings(emitted)) == 1
    block = kind.startswith("block")
    # Block scales take the fp32 dequantize-and-matmul branch (one rounding); the others the BF16 matmul (two).
    assert len(no_fp8_gpu) == (0 if block else 1)
    err = rel_error(y, ref64(a, b, sa, sb, bias, activation))
    tol = error_bound(out_dtype, K) + (0.0 if block else 2.0**-8)
    assert err <= tol, f"relative error {err:.3e} > bound {tol:.3e}"
    if block:
        # The scales really are per block: the same call with every block's scale replaced by the mean is far off.
        flat = gemm(a, b, sa.mean().expand_as(sa).contiguous(), sb.mean().expand_as(sb).contiguous(),
                    out_dtype=out_dtype, bias=bias, activation=activation)
        assert rel_error(flat, ref64(a, b, sa, sb, bias, activation)) > 10 * tol


@pytest.mark.skipif(HAS_CUDA, reason="checks the CPU interpreter half of the rule; the GPU tests above cover CUDA")
def test_cpu_interpreter_never_takes_the_bf16_fallback(monkeypatch, emitted):
    """Even with the capability predicate saying "no FP8 tensor cores", CPU tensors run the Triton kernels in the
    interpreter (README: "CPU tensors with TRITON_INTERPRET=1: the same Triton kernels"), without the warning."""
    monkeypatch.setattr(_backend, "has_fp8_tensor_cores", lambda device: False)
    monkeypatch.setattr(_backend, "_warned", set())
    monkeypatch.setattr(G, "_PLANS", {})
    launched = []
    real = K_.launch_gemm
    monkeypatch.setattr(K_, "launch_gemm", lambda *a, **k: launched.append(a[7]) or real(*a, **k))
    a, b = rand_fp8((32, 64)), rand_fp8((48, 64), E5)
    sa, sb = torch.rand(32, 1) + 0.5, torch.rand(48, 1) + 0.5
    y = gemm(a, b, sa, sb)
    assert len(launched) == 1 and isinstance(launched[0], GemmConfig)
    assert fallback_warnings(emitted) == []
    assert rel_error(y, ref64(a, b, sa, sb)) <= error_bound(torch.bfloat16, 64, "fast", tensor_core=False)


# ------------------------------------------------------------------------------------------------------------------
# 2. python -m tritonfp8 tune gemm

KEY_RE = re.compile(r"^(\d+)x(\d+)x(\d+):(fast|precise)$")
ENTRY_FIELDS = {"key", "shape", "accumulate", "config", "tflops", "peer_tflops", "ratio_vs_peer", "rel_error",
                "peer_rel_error", "measured"}


def _check_table_file(path, shapes, modes=("fast", "precise")) -> dict:
    """The table's documented format: key ``<M bucket>x<N>x<K>:<mode>``, one entry per (shape, mode), sorted."""
    data = json.loads(path.read_text())
    assert set(data) == {"gpu", "note", "env", "entries"}
    keys = [e["key"] for e in data["entries"]]
    assert keys == sorted(keys)
    assert set(keys) == {C.table_key(m, n, k, mode == "precise") for (m, n, k) in shapes for mode in modes}
    for e in data["entries"]:
        assert set(e) == ENTRY_FIELDS, set(e) ^ ENTRY_FIELDS
        mb, n, k, mode = KEY_RE.match(e["key"]).groups()
        assert e["accumulate"] == mode and [n, k] == [str(x) for x in e["shape"][1:]]
        assert int(mb) == C.m_bucket(e["shape"][0]) and int(mb) >= e["shape"][0]
        GemmConfig.from_dict(e["config"])  # a valid config
    return data


@pytest.mark.skipif(HAS_CUDA, reason="on a GPU the CLI runs (test_tune_cli_end_to_end_on_gpu)")
def test_tune_cli_refuses_without_a_gpu(tmp_path, capsys):
    """Without a GPU the CLI writes nothing and exits 2 ("tables are measured, not guessed"): it cannot be run end to
    end on CPU, so the CPU test below drives tune() with the CLI's parsed arguments."""
    from tritonfp8 import cli

    out = tmp_path / "table.json"
    rc = cli.main(["tune", "gemm", "--shapes", "16x64x256", "--quick", "--out", str(out)])
    assert rc == 2
    assert "needs a CUDA GPU" in capsys.readouterr().out
    assert not out.exists()


def test_tune_progress_bar_and_table_read_back(cpu_tools, tmp_path, monkeypatch, capsys):
    """The CLI's arguments (parsed by its own parser) through tune() with progress on and the candidate list cut to
    two per case (the heuristic's first): a tqdm bar on stderr over the 4 cases, the table written in the
    documented format, merged on a second write, and read back by load_table / select_config."""
    from tritonfp8 import cli

    tune = cpu_tools
    path = C.table_path("Test GPU", tmp_path)
    args = cli.build_parser().parse_args(["tune", "gemm", "--shapes", "16x64x256;96x64x128", "--quick",
                                          "--out", str(path)])
    shapes = tune.parse_shapes(args.shapes)
    assert shapes == [(16, 64, 256), (96, 64, 128)] and args.quick
    offered: dict[tuple, list] = {}
    real = tune.candidates

    def two(M, N, K, *, precise, **kw):
        cands = real(M, N, K, precise=precise, **kw)[:2]
        offered[(M, N, K, precise)] = cands
        return cands

    monkeypatch.setattr(tune, "candidates", two)
    capsys.readouterr()
    entries = tune.tune(shapes, quick=args.quick, repeats=1, progress=True, log=lambda s: None)
    err = capsys.readouterr().err
    assert "tune gemm" in err and "4/4" in err, err[-2000:]
    assert "96x64x128 precise" in err  # the bar's postfix names the case
    assert len(entries) == 4 and len(offered) == 4
    for e in entries:
        M_, N_, K2 = e["shape"]
        cands = offered[(M_, N_, K2, e["accumulate"] == "precise")]
        assert e["failed"] == {}, e["failed"]
        assert GemmConfig.from_dict(e["config"]) in cands
        assert len(e["candidates"]) == len(cands)
        assert e["rel_error"] <= error_bound(torch.bfloat16, K2, "precise")

    env = {"gpu": "Test GPU", "date": "2026-12-02", "timer": "cpu"}
    tune.write_table(entries, path, env)
    data = _check_table_file(path, shapes)
    assert data["gpu"] == "Test GPU" and data["env"]["timer"] == "cpu"
    assert all(e["measured"] == {"date": "2026-12-02", "timer": "cpu"} for e in data["entries"])

    monkeypatch.setattr(C, "CONFIG_DIR", tmp_path)
    C._load_table_file.cache_clear()
    try:
        table = C.load_table("Test GPU")
        assert table == {e["key"]: GemmConfig.from_dict(e["config"]) for e in entries}
        kw = dict(arch=90, num_sms=K_.INTERPRETER_SMS, out_size=2, gpu_name="Test GPU")
        for e in entries:
            M_, N_, K2 = e["shape"]
            cfg, src = C.select_config(M_, N_, K2, precise=e["accumulate"] == "precise", **kw)
            assert (cfg, src) == (GemmConfig.from_dict(e["config"]), "table")
        # 65..128 share the bucket of 96; 129 is another bucket (no entry: the heuristic)
        assert C.select_config(100, 64, 128, precise=False, **kw) == (table["128x64x128:fast"], "table")
        assert C.select_config(129, 64, 128, precise=False, **kw)[1] == "heuristic"

        # A later run of one shape and mode merges into the file: the other keys stay.
        monkeypatch.setattr(tune, "candidates", lambda *a, **k: real(*a, **k)[:1])
        more = tune.tune([(16, 64, 384)], modes=("fast",), repeats=1, progress=False, log=lambda s: None)
        assert "tune gemm" not in capsys.readouterr().err  # progress off: no bar
        tune.write_table(more, path, env)
        C._load_table_file.cache_clear()
        assert set(C.load_table("Test GPU")) == set(table) | {"16x64x384:fast"}
    finally:
        C._load_table_file.cache_clear()


@requires_gpu
@pytest.mark.gpu
def test_tune_cli_end_to_end_on_gpu(tmp_path, monkeypatch):
    """``python -m tritonfp8 tune gemm --shapes 16x256x512 --quick --out FILE`` in a subprocess: exit 0, the tqdm bar
    on stderr, the table in the documented format with errors within the bound, read back by select_config."""
    name = torch.cuda.get_device_name()
    path = C.table_path(name, tmp_path)
    env = dict(os.environ)
    env.pop("OUT", None)  # with $OUT set the CLI also writes copies there
    proc = subprocess.run([sys.executable, "-m", "tritonfp8", "tune", "gemm", "--shapes", "16x256x512", "--quick",
                           "--out", str(path)], env=env, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "tune gemm" in proc.stderr and "2/2" in proc.stderr, proc.stderr[-2000:]
    assert f"wrote {path}" in proc.stdout
    data = _check_table_file(path, [(16, 256, 512)])
    assert data["gpu"] == name
    for e in data["entries"]:
        assert e["rel_error"] <= error_bound(torch.bfloat16, 512, e["accumulate"], tensor_core=True)
        assert e["tflops"] > 0 and e["peer_tflops"] > 0
    monkeypatch.setattr(C, "CONFIG_DIR", tmp_path)
    C._load_table_file.cache_clear()
    try:
        for e in data["entries"]:
            cfg, src = C.select_config(16, 256, 512, precise=e["accumulate"] == "precise", arch=90, num_sms=132,
                                       out_size=2, gpu_name=name)
            assert (cfg, src) == (GemmConfig.from_dict(e["config"]), "table")
    finally:
        C._load_table_file.cache_clear()


# ------------------------------------------------------------------------------------------------------------------
# 3. bench gemm's name A/B


def test_name_ab_times_one_config_under_both_names(cpu_tools, monkeypatch):
    """``bench gemm``'s name A/B (``_name_ab``) on CPU (interpreter kernels, the stand-in timer, a small problem in
    place of 8192^3): the two timed functions launch the main config under exactly two symbols, the cutlass one and
    the plain one, equal but for the prefix, equally often; the offline SASS comparison it reports is asked for the
    codegen config whose names are those two symbols; the result's ratio is plain / cutlass; the output is right."""
    from tritonfp8 import codegen
    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import gemm as suite

    tune = cpu_tools
    asked, probs = [], []
    real_make = tune.Problem.make

    def small(cls, M, N, K, device=None, seed=0):
        asked.append((M, N, K))
        probs.append(real_make(128, 256, 256, device=device, seed=seed))
        return probs[-1]

    monkeypatch.setattr(tune.Problem, "make", classmethod(small))
    monkeypatch.setattr(H, "bench_interleaved", functools.partial(H.bench_interleaved, timer=_cpu_timer))
    launched = []
    real_launch = K_._launch

    def spy(kernel, grid, warmup, *args, **kwargs):
        launched.append((naming.naming_mode(), kwargs["KERNEL_NAME"]))
        return real_launch(kernel, grid, warmup, *args, **kwargs)

    monkeypatch.setattr(K_, "_launch", spy)
    inspected = []
    verdict = object()  # whatever the offline comparison says is what the A/B reports

    def fake_inspect(kernel, arch=90, compare_names=True):
        inspected.append((kernel, arch, compare_names))
        return type("Report", (), {"cutlass_name_changes_sass": verdict})()

    monkeypatch.setattr(codegen, "inspect_kernel", fake_inspect)

    res = suite._name_ab(H.make_console(), 90, K_.INTERPRETER_SMS, 1)

    assert asked == [(8192, 8192, 8192)]
    names = {mode: {n for m, n in launched if m == mode} for mode in ("cutlass", "plain")}
    assert all(len(v) == 1 for v in names.values()), launched
    cut, plain = names["cutlass"].pop(), names["plain"].pop()
    assert cut.startswith("cutlass_sm90_fp8gemm_") and plain == "tfp8_" + cut[len("cutlass_"):]
    counts = [sum(m == mode for m, _ in launched) for mode in ("cutlass", "plain")]
    assert counts[0] == counts[1] >= 1 + 3  # one warm-up call each, then max(3, repeats) interleaved rounds
    assert inspected == [("gemm_fast_tensorwise", 90, True)]
    spec = codegen.registry()["gemm_fast_tensorwise"]
    assert (spec.kernel_name(90, "cutlass"), spec.kernel_name(90, "plain")) == (cut, plain)
    assert res["sass_differs"] is verdict
    assert res["config"] == K_.MAIN_CONFIG.short() and res["shape"] == "8192x8192x8192"
    assert res["cutlass_ms"] > 0 and res["plain_ms"] > 0
    assert res["plain_over_cutlass"] == pytest.approx(res["plain_ms"] / res["cutlass_ms"], rel=1e-12)
    assert res["lo"] <= res["plain_over_cutlass"] <= res["hi"]
    p = probs[0]
    assert rel_error(p.out, p.ref()) <= error_bound(torch.bfloat16, p.K, "fast", tensor_core=False)


def test_name_ab_reports_a_failed_offline_compile_and_keeps_the_timing(cpu_tools, monkeypatch):
    """An offline compile problem must not hide the timing: ``sass_differs`` then names the error."""
    from tritonfp8 import codegen
    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import gemm as suite

    tune = cpu_tools
    real_make = tune.Problem.make
    monkeypatch.setattr(tune.Problem, "make",
                        classmethod(lambda cls, M, N, K, device=None, seed=0: real_make(64, 64, 128, device=device)))
    monkeypatch.setattr(H, "bench_interleaved", lambda fns, repeats=3, **kw: {k: [1.0, 1.1, 0.9] for k in fns})

    def broken(*a, **k):
        raise RuntimeError("ptxas not found")

    monkeypatch.setattr(codegen, "inspect_kernel", broken)
    res = suite._name_ab(H.make_console(), 90, K_.INTERPRETER_SMS, 1)
    assert res["sass_differs"] == "RuntimeError: ptxas not found"
    assert res["cutlass_ms"] == res["plain_ms"] == 1.0 and res["plain_over_cutlass"] == 1.0


@pytest.mark.codegen
def test_name_ab_sass_comparison_is_real():
    """The SASS comparison behind the A/B (``codegen.inspect_kernel(..., compare_names=True)``), offline for sm_90:
    the two compiled symbols differ exactly by the prefix; the raw listings always differ (each holds its own
    name), so equality is only ever found after the name is removed; the report's flag equals an independent
    comparison of the two listings; and the findings of docs/gemm.md hold: the persistent main config (the one
    ``bench gemm`` times) gets different SASS under the "cutlass" name, the non-persistent one identical SASS."""
    code = """
import json
import torch
from tritonfp8 import codegen
from tritonfp8._kernels import gemm as K_
specs = codegen.registry()
out = {}
for k in ("gemm_fast_tensorwise", "gemm_fast_nonpersistent"):
    rep = codegen.inspect_kernel(k, arch=90, compare_names=True)
    ckc = codegen.compile_spec(specs[k], 90, "cutlass")
    ckp = codegen.compile_spec(specs[k], 90, "plain")
    sc, _ = codegen.disassemble(ckc.asm["cubin"])
    sp, _ = codegen.disassemble(ckp.asm["cubin"])
    nc, np_ = ckc.metadata.name, ckp.metadata.name
    out[k] = dict(name=rep.name, plain_name=rep.plain_name, flag=rep.cutlass_name_changes_sass, nc=nc, np=np_,
                  qgmma=rep.qgmma, raw_equal=sc == sp, c_has_name=nc in sc, p_has_name=np_ in sp,
                  norm_equal=sc.replace(nc, "KERNEL") == sp.replace(np_, "KERNEL"),
                  left=[n for n in (nc, np_) if n in sc.replace(nc, "KERNEL") + sp.replace(np_, "KERNEL")])
timed = K_.gemm_kernel_name(K_.MAIN_CONFIG, arch=90, a_dtype=torch.float8_e4m3fn, b_dtype=torch.float8_e4m3fn,
                            out_dtype=torch.bfloat16, a_vec=False, b_vec=False, precise=False, has_bias=False,
                            activation=None)
out["timed"] = [timed.build("cutlass"), timed.build("plain")]
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], env=codegen_env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for k in ("gemm_fast_tensorwise", "gemm_fast_nonpersistent"):
        r = out[k]
        assert r["qgmma"] > 0, k
        assert (r["name"], r["plain_name"]) == (r["nc"], r["np"])
        assert r["nc"].startswith("cutlass_sm90_fp8gemm_e4m3_e4m3_f32_bf16_128x256x128_w8s4_")
        assert r["np"] == "tfp8_" + r["nc"][len("cutlass_"):]
        assert r["c_has_name"] and r["p_has_name"] and not r["raw_equal"] and r["left"] == []
        assert r["flag"] is (not r["norm_equal"])
    # The timed kernel of the A/B is the codegen config whose SASS it compares.
    assert out["timed"] == [out["gemm_fast_tensorwise"]["nc"], out["gemm_fast_tensorwise"]["np"]]
    assert "_tmapersistent_" in out["gemm_fast_tensorwise"]["nc"] and "_tma_" in out["gemm_fast_nonpersistent"]["nc"]
    assert out["gemm_fast_tensorwise"]["flag"] is True  # docs/gemm.md: persistent GEMM, SASS differs
    assert out["gemm_fast_nonpersistent"]["flag"] is False  # docs/gemm.md: non-persistent GEMM, identical


@requires_gpu
@pytest.mark.gpu
def test_name_ab_on_gpu():
    """The whole A/B on the GPU (8192^3, both names timed interleaved): the timings and the SASS verdict for sm_90
    (the main config's SASS differs under the cutlass name, docs/gemm.md)."""
    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import gemm as suite

    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the main config needs TMA (sm_90)")
    res = suite._name_ab(H.make_console(), 90, K_.num_sms(torch.cuda.current_device()), 1)
    assert res["sass_differs"] is True
    assert res["cutlass_ms"] > 0 and res["plain_ms"] > 0
    assert res["plain_over_cutlass"] == pytest.approx(res["plain_ms"] / res["cutlass_ms"], rel=1e-12)
    assert res["verdict"] in ("faster", "slower", "within noise")
