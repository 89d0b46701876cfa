"""Offline sm_90 code generation of the GEMM kernels: FP8 wgmma (QGMMA) present, no register spills, shared memory
within the 227 KB of an H100/H200 block, and the precise mode's per-K-block fp32 promotion not folded away.

Each check compiles in a subprocess with the interpreter switched off (``conftest.codegen_env``): ``triton.jit``
returns an interpreter object when TRITON_INTERPRET is set at import time.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import codegen_env

pytestmark = pytest.mark.codegen

SMEM_LIMIT_SM90 = 232448


def _run(code: str, timeout: float = 300) -> str:
    proc = subprocess.run([sys.executable, "-c", code], env=codegen_env(), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_main_config_cli_qgmma_no_spills():
    """The README-level command: ``python -m tritonfp8 codegen gemm_fast_tensorwise --arch 90 --json``."""
    proc = subprocess.run(
        [sys.executable, "-m", "tritonfp8", "codegen", "gemm_fast_tensorwise", "--arch", "90", "--json"],
        env=codegen_env(), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)
    assert r["name"].startswith("cutlass_sm90_fp8gemm_e4m3_e4m3_f32_bf16_128x256x128_w8s4_tmapersistent")
    assert r["qgmma"] > 0 and r["hmma"] == 0
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["stack_bytes"] == 0
    assert 0 < r["registers"] <= 255
    assert r["shared_bytes"] <= SMEM_LIMIT_SM90
    assert isinstance(r["cutlass_name_changes_sass"], bool)


SPECS = ["gemm_fast_rowwise_bias_gelu", "gemm_precise_tensorwise", "gemm_fast_nonpersistent", "gemm_fast_ws",
         "gemm_fast_wspersistent", "gemm_e5m2_e4m3_f16", "gemm_decode_swapab", "gemm_decode_swapab_splitk", "gemm_fast_n64p16",
         "gemm_precise_n64p16"]


def test_variants_compile_with_qgmma_and_no_spills():
    code = f"""
import json
from tritonfp8 import codegen
out = {{}}
for k in {SPECS!r}:
    r = codegen.inspect_kernel(k, arch=90, compare_names=False)
    out[k] = r.as_dict()
print(json.dumps(out))
"""
    reports = json.loads(_run(code).strip().splitlines()[-1])
    for k in SPECS:
        r = reports[k]
        assert r["qgmma"] > 0, k
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, (k, r)
        assert r["shared_bytes"] <= SMEM_LIMIT_SM90, (k, r["shared_bytes"])
    # Warp-specialized schedules really are: producer/consumer register reallocation (setmaxnreg) in the SASS.
    code = """
from tritonfp8 import codegen
for k in ("gemm_fast_ws", "gemm_fast_nonpersistent"):
    r = codegen.inspect_kernel(k, arch=90, compare_names=False)
    print(k, r.sass.count("USETMAXREG"))
"""
    counts = dict(line.split() for line in _run(code).strip().splitlines())
    assert int(counts["gemm_fast_ws"]) > 0
    assert int(counts["gemm_fast_nonpersistent"]) == 0


def test_three_ctas_per_sm_precise_and_block_variants():
    """The p64 bench variant (precise / block scales on 64x128 tiles, 4 warps, 3 stages) must leave room for three
    CTAs per SM: registers <= 170 (65536 / (128 threads x 3)) and shared memory <= 227 KB / 3, no spills."""
    code = """
import json
from tritonfp8 import codegen
print(json.dumps({k: codegen.inspect_kernel(k, arch=90, compare_names=False).as_dict()
                  for k in ("gemm_precise_64x128_3cta", "gemm_block_64x128_3cta")}))
"""
    reports = json.loads(_run(code).strip().splitlines()[-1])
    for k, r in reports.items():
        assert r["qgmma"] > 0 and r["spill_stores"] == 0 and r["spill_loads"] == 0, (k, r)
        assert r["registers"] <= 65536 // (128 * 3), (k, r["registers"])
        assert 3 * (r["shared_bytes"] + 1024) <= 233472, (k, r["shared_bytes"])  # 228 KB per SM, 1 KB reserved each


def test_precise_mode_keeps_fresh_dots():
    """Precise accumulation: every wgmma of the K loop starts from a zero accumulator and the block result is added
    into the fp32 accumulator by separate instructions (Triton did not fold ``acc + dot(x, y, 0) * s`` into
    ``dot(x, y, acc)``). In fast mode the accumulator is carried through the wgmma instead."""
    code = """
import re
from tritonfp8 import codegen
for k in ("gemm_precise_tensorwise", "gemm_fast_tensorwise", "gemm_precise_n64p16", "gemm_fast_n64p16"):
    ck = codegen.compile_spec(codegen.registry()[k], 90, "cutlass")
    ttgir = ck.asm["ttgir"]
    zeros = set(re.findall(r"(%[\\w#]+) = arith.constant dense<0.000000e\\+00> : tensor<\\d+x\\d+xf32", ttgir))
    dots = re.findall(r"ttng.warp_group_dot (%[\\w#]+), (%[\\w#]+), (%[\\w#]+)", ttgir)
    fresh = sum(1 for d in dots if d[2] in zeros)
    adds = len(re.findall(r"arith.addf %[\\w#]+, %[\\w#]+ : tensor<\\d+x\\d+xf32, #mma", ttgir))
    print(k, len(dots), fresh, adds)
"""
    rows = {r[0]: list(map(int, r[1:])) for r in (line.split() for line in _run(code).strip().splitlines())}
    dots, fresh, adds = rows["gemm_precise_tensorwise"]
    assert dots > 0 and fresh == dots and adds > 0
    dots, fresh, adds = rows["gemm_fast_tensorwise"]
    assert dots > 0 and fresh == 0
    # tiles of two column pieces: both pieces' dots fresh in precise mode, both chained in fast mode
    dots, fresh, adds = rows["gemm_precise_n64p16"]
    assert dots >= 2 and fresh == dots and adds >= 2
    dots, fresh, adds = rows["gemm_fast_n64p16"]
    assert dots >= 2 and fresh == 0


def test_splitk_reduce_and_ada_kernels_compile():
    code = """
import json
from tritonfp8 import codegen
r = codegen.inspect_kernel("gemm_splitk_reduce", arch=90, compare_names=False)
a = codegen.inspect_kernel("gemm_ada_ptr", arch=89, compare_names=False)
print(json.dumps([r.as_dict(), a.as_dict(), a.sass.count("QMMA")]))
"""
    r, a, qmma = json.loads(_run(code).strip().splitlines()[-1])
    assert r["spill_stores"] == 0 and r["name"].startswith("cutlass_sm90_fp8gemmreduce_f32_bf16")
    # Ada: FP8 mma.sync (QMMA), no wgmma
    assert qmma > 0 and a["qgmma"] == 0 and a["name"].startswith("cutlass_sm89_fp8gemm")


def test_block_scaled_configs_qgmma_no_spills_fresh_dots():
    """Block scales (issue 4): the heuristic's 128x128x128 persistent config (1x128 x 128x128 scales), the 1x128
    x 1x128 variant with bias + gelu and the swap-AB decode config compile to QGMMA with no spills, and every wgmma
    of the block kernel starts from a zero accumulator (the per-K-block scales are applied in fp32 outside it)."""
    code = """
import json, re
from tritonfp8 import codegen
out = {}
for k in ("gemm_block_128x128", "gemm_block_group1x128_bias_gelu", "gemm_block_decode_swapab"):
    out[k] = codegen.inspect_kernel(k, arch=90, compare_names=False).as_dict()
ck = codegen.compile_spec(codegen.registry()["gemm_block_128x128"], 90, "cutlass")
ttgir = ck.asm["ttgir"]
zeros = set(re.findall(r"(%[\\w#]+) = arith.constant dense<0.000000e\\+00> : tensor<\\d+x\\d+xf32", ttgir))
dots = re.findall(r"ttng.warp_group_dot (%[\\w#]+), (%[\\w#]+), (%[\\w#]+)", ttgir)
out["dots"] = [len(dots), sum(1 for d in dots if d[2] in zeros)]
print(json.dumps(out))
"""
    reports = json.loads(_run(code).strip().splitlines()[-1])
    for k in ("gemm_block_128x128", "gemm_block_group1x128_bias_gelu", "gemm_block_decode_swapab"):
        r = reports[k]
        assert r["qgmma"] > 0, k
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["stack_bytes"] == 0, (k, r)
        assert r["shared_bytes"] <= SMEM_LIMIT_SM90, (k, r["shared_bytes"])
    assert "_blockwise" in reports["gemm_block_128x128"]["name"]
    assert "_group1x128" in reports["gemm_block_group1x128_bias_gelu"]["name"]
    ndots, fresh = reports["dots"]
    assert ndots > 0 and fresh == ndots


def test_lagged_promotion_specs_qgmma_no_spills_fresh_dots():
    """The lagged promotion (GemmConfig.promote = "lag"; precise tensorwise and block 1x128 / 128x128 on the
    128x128x128 tile): QGMMA, no spills, a new kernel name (..._lag), still fresh dots (zero accumulator) promoted
    by fp32 adds, and an extra fp32 tile live (registers above the unlagged kernel's)."""
    code = """
import json, re
from tritonfp8 import codegen
out = {}
for k in ("gemm_precise_tensorwise", "gemm_precise_tensorwise_lag", "gemm_block_128x128", "gemm_block_128x128_lag"):
    r = codegen.inspect_kernel(k, arch=90, compare_names=False).as_dict()
    ttgir = codegen.compile_spec(codegen.registry()[k], 90, "cutlass").asm["ttgir"]
    zeros = set(re.findall(r"(%[\\w#]+) = arith.constant dense<0.000000e\\+00> : tensor<\\d+x\\d+xf32", ttgir))
    dots = re.findall(r"ttng.warp_group_dot (%[\\w#]+), (%[\\w#]+), (%[\\w#]+)", ttgir)
    r["dots"], r["fresh"] = len(dots), sum(d[2] in zeros for d in dots)
    r.pop("sass", None)
    out[k] = r
print(json.dumps(out))
"""
    reports = json.loads(_run(code).strip().splitlines()[-1])
    for k in ("gemm_precise_tensorwise", "gemm_block_128x128"):
        lag, sync = reports[k + "_lag"], reports[k]
        assert lag["name"] == sync["name"] + "_lag"
        assert lag["qgmma"] > 0 and lag["spill_stores"] == 0 and lag["spill_loads"] == 0 and lag["stack_bytes"] == 0
        assert lag["dots"] > 0 and lag["fresh"] == lag["dots"], lag
        assert lag["registers"] > sync["registers"] and lag["shared_bytes"] <= SMEM_LIMIT_SM90


def test_fused_qkv_epilogue_qgmma_no_spills():
    """The fused QKV epilogue (E4M3 q/k/v stores with per-head scales) on the prefill and small-M tiles."""
    names = ["gemm_qkv_hd128", "gemm_qkv_hd64_bias_c", "gemm_qkv_small_m"]
    code = f"""
import json
from tritonfp8 import codegen
print(json.dumps({{k: codegen.inspect_kernel(k, arch=90, compare_names=False).as_dict() for k in {names!r}}}))
"""
    reports = json.loads(_run(code).strip().splitlines()[-1])
    for k in names:
        r = reports[k]
        assert "_e4m3_" in r["name"] and "_qkv_hd" in r["name"], r["name"]
        assert r["qgmma"] > 0, k
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["stack_bytes"] == 0, (k, r)
        assert r["registers"] <= 255 and r["shared_bytes"] <= SMEM_LIMIT_SM90, (k, r)


def test_split_promotion_overlaps_wgmma_with_the_promotion():
    """The "split" promotion (GemmConfig.promote = "split"; precise tensorwise persistent and one-tile-per-program,
    block 1x128 / 128x128): QGMMA, no spills, names ..._split, and the property it exists for, checked at both
    levels. TTGIR: per loop step four fresh-accumulator half-K dots, two of them (the second halves) left
    asynchronous by Triton's pipeliner (no warp_group_dot_wait before the next dot or the end of the loop), and
    fp32 promotion arithmetic between such a dot and the next wait. SASS: FFMAs issued while a QGMMA is in flight
    (after the QGMMA, before the next WARPGROUP.DEPBAR): nearly both blocks' promotions (64 FFMAs per thread
    each); the default precise kernel none and "lag" a few (their QGMMA groups are waited for before the
    promotion).
    ptxas serializes all wgmmas when a non-wgmma instruction reads a running wgmma's accumulator (warning C7514),
    which would also show as no FFMA in flight."""
    code = """
import json, re
from tritonfp8 import codegen

def loop_dots(ttgir):
    # the scf.for body holding the warp_group_dots: for each dot, is it waited for before the next dot / loop end?
    lines = ttgir.splitlines()
    first = next(i for i, l in enumerate(lines) if "ttng.warp_group_dot " in l)
    start = max(i for i in range(first) if " scf.for " in lines[i])
    depth, body = 0, []
    for l in lines[start:]:
        depth += l.count("{") - l.count("}")
        body.append(l)
        if depth <= 0 and len(body) > 1:
            break
    events = []
    for l in body:
        if "ttng.warp_group_dot " in l:
            events.append(["dot", " %cst" in l.split("ttng.warp_group_dot ")[1].split("{")[0].split(",")[2], 0])
        elif "ttng.warp_group_dot_wait" in l:
            events.append(["wait", False, 0])
        elif re.search(r"arith.(mulf|addf) .*tensor<\\d+x\\d+xf32, #mma>", l) and events:
            events[-1][2] += 1
    dots = [e for e in events if e[0] == "dot"]
    async_dots = [i for i, e in enumerate(events) if e[0] == "dot" and
                  next((f[0] for f in events[i + 1:] if f[0] in ("dot", "wait")), "end") != "wait"]
    math_in_flight = sum(events[i][2] for i in async_dots)
    return len(dots), sum(1 for e in dots if e[1]), len(async_dots), math_in_flight

def ffma_in_flight(sass):
    n, busy = 0, False
    for l in sass.splitlines():
        m = re.search(r"\\*/\\s+(?:@!?U?P\\w+\\s+)?([A-Z][A-Z0-9_.]*)", l)
        if not m:
            continue
        op = m.group(1)
        if op.startswith("QGMMA"):
            busy = True
        elif op.startswith("WARPGROUP.DEPBAR"):
            busy = False
        elif op == "FFMA" and busy:
            n += 1
    return n

out = {}
for k in ("gemm_precise_tensorwise", "gemm_precise_tensorwise_lag", "gemm_precise_tensorwise_split",
          "gemm_precise_tensorwise_splitnp", "gemm_block_128x128_split", "gemm_block_128x128_splitnp"):
    r = codegen.inspect_kernel(k, arch=90, compare_names=False)
    d = r.as_dict()
    d.pop("sass", None)
    d["ffma_in_flight"] = ffma_in_flight(r.sass)
    ttgir = codegen.compile_spec(codegen.registry()[k], 90, "cutlass").asm["ttgir"]
    d["dots"], d["fresh"], d["async"], d["math_in_flight"] = loop_dots(ttgir)
    out[k] = d
print(json.dumps(out))
"""
    reports = json.loads(_run(code).strip().splitlines()[-1])
    for k in ("gemm_precise_tensorwise", "gemm_precise_tensorwise_lag"):
        assert reports[k]["async"] == 0, (k, reports[k])
    # Measured: 0 (default), 7 (lag: a few FFMAs ptxas moved ahead of a wait-free point), 125-128 (split).
    assert reports["gemm_precise_tensorwise"]["ffma_in_flight"] == 0
    assert reports["gemm_precise_tensorwise_lag"]["ffma_in_flight"] < 64
    for k in ("gemm_precise_tensorwise_split", "gemm_precise_tensorwise_splitnp", "gemm_block_128x128_split",
              "gemm_block_128x128_splitnp"):
        r = reports[k]
        assert r["name"].endswith("_split"), r["name"]
        assert r["qgmma"] > 0 and r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["stack_bytes"] == 0, r
        assert r["registers"] <= 255 and r["shared_bytes"] <= SMEM_LIMIT_SM90, r
        # Two blocks per step, each a first half chained into a second half; the first block's first half starts
        # from the zero constant, the second block's from a select that is zero at run time (see _k_loop_split).
        assert r["dots"] == 4 and r["fresh"] == 1, r
        assert r["async"] == 2 and r["math_in_flight"] > 0, r
        assert r["ffma_in_flight"] >= 2 * 64 - 8, r  # both blocks' 64 FFMAs per thread, a few may precede
