"""The FP8 tensor-core form of the decode kernel (``DecodeConfig(dot="fp8t")``).

S^T = K.q^T and O^T = V^T.P^T as E4M3 wgmma with the cache tokens as M: q is rounded to E4M3 once per row (a
power-of-two row scale) and 2^8 P is rounded to E4M3, so the reference "with the kernel's own roundings" is
``decode_attention_torch(..., fp8_products=True)``; the tolerance rule is tests/test_decode.py's, stated once there.
Cases: GQA 1/4/8, Sq 1 and 3, pages of 16 with shuffled block tables, seq_lens 1, 17, 339; splits, a page of 64, an
fp16 q, a bad page id, bf16 output.
"""

from __future__ import annotations

import pytest
import torch

from test_decode import Case, _make, assert_decode_close
from tritonfp8 import decode as dec

FP8T = dict(dot="fp8t", block_n=64)

CASES = [
    (Case((1, 17, 339), 2, 2), 1),
    (Case((1, 17, 339), 8, 2), 1),
    (Case((1, 17, 339), 8, 1, sq=3), 1),
    (Case((1, 17, 339), 4, 1, sq=3), 3),
    (Case((130, 64), 8, 1, page=64, q_dtype=torch.float16), 2),
]


def _run(q, kc, vc, bt, sl, ks, vs, splits=1, **kw):
    cfg = dec.DecodeConfig(**FP8T, num_splits=splits)
    return dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=cfg, **kw)


@pytest.mark.parametrize("case,splits", CASES, ids=lambda x: str(x))
def test_fp8t_matches_reference(case, splits, device):
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=21)
    out = _run(q, kc, vc, bt, sl, ks, vs, splits, out_dtype=torch.float32)
    ref = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)
    pt = dec.decode_attention_torch(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, fp8_products=True)
    assert out.shape == q.shape and not torch.isnan(out).any()
    assert_decode_close(out, ref, pt, max(case.lens), torch.float32)


def test_fp8t_bad_page_bf16_out(device):
    case = Case((96, 50), 4, 1)
    q, kc, vc, bt, sl, ks, vs = _make(case, device, seed=22)
    bt = bt.clone()
    bt[0, 1] = kc.shape[0] + 5  # inside a full (unmasked) step
    bt[1, 0] = -3
    out = _run(q, kc, vc, bt, sl, ks, vs)
    assert out.dtype == torch.bfloat16 and not torch.isnan(out.float()).any()
    # the fp16 form skips the same pages (tests/test_decode.py checks it); the two agree to the E4M3 roundings
    fp16 = dec.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs, config=dec.DecodeConfig(block_n=64))
    rel = (out.float() - fp16.float()).norm() / fp16.float().norm()
    assert rel < 2.0**-3, rel


def test_round_q_fp8_torch_is_a_power_of_two_scaled_e4m3():
    q = torch.tensor([[1000.0, -3.0, 0.1, 0.0], [0.0, 0.0, 0.0, 0.0], [2.0**-20, 2.0**-21, 0.0, 0.0]])
    r = dec.round_q_fp8_torch(q)
    assert r[0, 0] == 1024.0 and r[0, 1] == -3.0  # 1000 * 2^-2 = 250 -> 256 (E4M3 step 16 at 2^7)
    assert torch.equal(r[1], q[1])
    assert torch.equal(r[2], q[2])  # exact powers of two stay exact


def test_fp8t_option_is_validated():
    with pytest.raises(ValueError, match="dot"):
        dec.DecodeConfig(dot="fp8")
    with pytest.raises(ValueError, match="num_warps"):
        dec.DecodeConfig(dot="fp8t", num_warps=8)
    with pytest.raises(ValueError, match="block_n"):
        dec.DecodeConfig(dot="fp8t", block_n=32)


def test_bench_variant_names_select_fp8t(tmp_path, monkeypatch, device):
    """`bench decode --variants-only --variant-names fp8t --variant-cases ...` times only the heuristic and fp8t
    (bookkeeping on the interpreter with a stand-in timer)."""
    import argparse
    import json

    from tritonfp8.bench import harness as H
    from tritonfp8.bench.suites import decode as suite

    monkeypatch.setattr(H, "time_once", lambda fn, *a, **k: (fn(), 1.0)[1])
    monkeypatch.setattr(suite, "_DEVICE", device)
    p = argparse.ArgumentParser()
    suite.add_arguments(p)
    args = p.parse_args(["--variants-only", "--variant-names", "fp8t", "--variant-cases", "1:200:32:16"])
    args.quick, args.repeats, args.out, args.no_save, args.profile = True, 1, str(tmp_path), False, False
    assert suite.run(args) == 0
    data = json.loads(sorted(tmp_path.glob("decode-*.json"))[0].read_text())
    rows = {r["variant"]: r for r in data["rows"] if r.get("kind") == "variant"}
    assert set(rows) == {"heuristic", "fp8t"}
    assert rows["fp8t"]["dot"] == "fp8t" and rows["heuristic"]["dot"] == "fp16"
    bad = p.parse_args(["--variants-only", "--variant-names", "nosuch"])
    bad.quick, bad.repeats, bad.out, bad.no_save, bad.profile = True, 1, str(tmp_path), True, False
    with pytest.raises(ValueError, match="variant-names"):
        suite.run(bad)
