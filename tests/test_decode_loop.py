"""The split-loop variant of the decode kernel (``DecodeConfig(loop="tail")``, issue 6).

Full steps (every token < the split's end and visible to every query row) run without the length and causal
masks, the rest with them. The math per token is unchanged, so the variant must give the single-loop kernel's
output bit for bit (``torch.equal``) and meet tests/test_decode.py's tolerance rule against the reference (the
rule and its eps, from the output format's unit roundoff, are imported from there, stated once). Cases cover
lengths around the step boundary (BLOCK_N 32 and 128), Sq > 1 (the causal tail), splits, a bad page id inside a
full step, 64-bit offsets with distinct K/V strides, and a 16-bit cache.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import codegen_env
from test_decode import Case, _make, assert_decode_close
from tritonfp8 import decode as dec

LOOP_CASES = [
    (Case((0, 1, 31, 32, 33, 97), 4, 1), 32, None),
    (Case((2, 40, 100), 8, 2, sq=3), 32, None),
    (Case((130, 64), 4, 1, sq=3, splits=3), 32, 3),
    (Case((300,), 4, 2, page=64), 128, None),
    (Case((129, 255, 256, 257), 2, 1, sq=2), 128, 2),
]


def _pair(q, kc, vc, bt, sl, ks, vs, cfg, **kw):
    outs = []
    for loop in ("single", "tail"):
        c = dec.DecodeConfig(**{**cfg, "loop": loop})
        outs.append(dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=c, **kw))
    return outs


@pytest.mark.parametrize("case,block_n,splits", LOOP_CASES, ids=lambda x: str(x))
def test_tail_loop_is_bit_identical_and_close(case, block_n, splits, device):
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=11)
    cfg = {"block_n": block_n, "num_splits": splits or 1}
    single, tail = _pair(q, kc, vc, bt, sl, ks, vs, cfg, out_dtype=torch.float32)
    assert torch.equal(single, tail)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, p_dtype=torch.float16)
    assert_decode_close(tail, ref, pt, max(case.lens), torch.float32)


def test_tail_loop_bad_page_in_full_step_is_skipped(device):
    """A page id outside [0, num_blocks) inside a full (unmasked) step: its tokens are skipped there too."""
    case = Case((96, 50), 4, 1)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=12)
    bt = bt.clone()
    bt[0, 1] = kc.shape[0] + 5
    bt[1, 0] = -3
    single, tail = _pair(q, kc, vc, bt, sl, ks, vs, {"block_n": 32}, out_dtype=torch.float32)
    assert not torch.isnan(tail).any()
    assert torch.equal(single, tail)


def test_tail_loop_int64_offsets_bf16_out_and_16bit_cache(device):
    case = Case((70, 33), 4, 2)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=13)
    wide = torch.zeros(kc.shape[0], kc.shape[1], 2 * kc.shape[2], kc.shape[3], dtype=kc.dtype, device=kc.device)
    wide[:, :, ::2] = vc
    v_strided = wide[:, :, ::2]  # other strides than K: separate V offsets
    for v in (vc, v_strided):
        single, tail = _pair(q, kc, v, bt, sl, ks, vs, {"block_n": 32})
        assert tail.dtype == torch.bfloat16 and torch.equal(single, tail)
    kb = (kc.float() * ks.reshape(1, 1, -1, 1)).to(torch.bfloat16)
    vb = (vc.float() * vs.reshape(1, 1, -1, 1)).to(torch.bfloat16)
    single, tail = _pair(q, kb, vb, bt, sl, None, None, {"block_n": 32}, out_dtype=torch.float32)
    assert torch.equal(single, tail)


def test_loop_option_is_validated():
    with pytest.raises(ValueError, match="loop"):
        dec.DecodeConfig(loop="unrolled")


ROOT = Path(__file__).resolve().parents[1]


def _loop_reports(*names):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "decode_loop_sass.py"), "--json", *names],
                          env=codegen_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_tail_loop_main_loop_is_shorter_in_sass():
    """Offline sm_90: the variant's full-step loop (its first loop) issues fewer instructions per step than the
    single loop of the same config (16 rows x 128 tokens, 4 warps), with no more spills."""
    base, tail, tail_s2 = _loop_reports("decode_e4m3_gqa8_page16_bn128", "decode_e4m3_gqa8_page16_bn128_tail",
                                        "decode_e4m3_gqa8_page16_bn128s2_tail")
    lb, lt = [lp["instructions"] for lp in base["loops"]], [lp["instructions"] for lp in tail["loops"]]
    assert len(lb) == 1 and len(lt) == 2, (lb, lt)
    assert lt[0] < lb[0], (lt, lb)
    assert tail["spill_stores"] <= base["spill_stores"], (tail, base)
    # the 2-stage variant (bench "tails2"): no spills at all, and the shortest main loop of the three
    ls2 = [lp["instructions"] for lp in tail_s2["loops"]]
    assert tail_s2["spill_stores"] == tail_s2["spill_loads"] == 0, tail_s2
    assert len(ls2) == 2 and ls2[0] < lt[0], (ls2, lt)


def test_bench_variants_include_the_tail_loop(tmp_path, monkeypatch, device):
    """`bench decode --variants-only` times the split-loop variants next to the heuristic (bookkeeping only here:
    the interpreter with a stand-in timer); a variant that disagreed with the heuristic's output would be dropped."""
    import argparse

    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import decode as suite

    assert {"tail", "tails2", "w1bn32s4tail"} <= set(suite.VARIANTS)
    monkeypatch.setattr(H, "time_once", lambda fn, *a, **k: (fn(), 1.0)[1])
    monkeypatch.setattr(suite, "_DEVICE", device)
    monkeypatch.setattr(suite, "VARIANT_CASES", ((1, 300, 8, 16),))
    monkeypatch.setattr(suite, "VARIANTS", {k: suite.VARIANTS[k] for k in ("heuristic", "tail", "tails2")})
    p = argparse.ArgumentParser()
    suite.add_arguments(p)
    args = p.parse_args(["--variants-only"])
    args.quick, args.repeats, args.out, args.no_save, args.profile = True, 1, str(tmp_path), False, False
    assert suite.run(args) == 0
    data = json.loads(sorted(tmp_path.glob("decode-*.json"))[0].read_text())
    rows = {r["variant"]: r for r in data["rows"] if r.get("kind") == "variant"}
    assert set(rows) == {"heuristic", "tail", "tails2"}
    assert rows["tail"]["loop"] == "tail" and rows["heuristic"]["loop"] == "single"
    assert rows["tails2"]["stages"] == 2
