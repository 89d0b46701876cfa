"""Session 30: write_kv_cache eager, the session-29 host path (.ab/decode_s29.py: Triton's dispatch, the kernel name
and next_power_of_2 per call) against this tree's (_launch's cached launcher, constexprs cached per geometry), in
the same run, interleaved rounds, plus a device copy of the same bytes. Writes $OUT/results/write-host-ab-<stamp>.json."""
import importlib.util
import sys

import torch

from decode_case import save_results
from tritonfp8 import decode as new
from tritonfp8.bench import harness as H

spec = importlib.util.spec_from_file_location("decode_s29", ".ab/decode_s29.py")
old = importlib.util.module_from_spec(spec)
sys.modules["decode_s29"] = old  # dataclasses look the module up while the class is built
spec.loader.exec_module(old)
HKV, D, PAGE, ROUNDS = 8, 128, 16, 5
rows = []
for t in (128, 4096, 32768):
    nb = -(-t * 5 // 4 // PAGE)
    k = torch.randn(t, HKV, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    kc = torch.zeros(nb, PAGE, HKV, D, device="cuda", dtype=torch.float8_e4m3fn)
    vc, kc2, vc2 = torch.zeros_like(kc), torch.zeros_like(kc), torch.zeros_like(kc)
    slots = torch.randperm(nb * PAGE, device="cuda")[:t]
    s = torch.full((HKV,), 0.02, device="cuda")
    new.write_kv_cache(k, v, kc, vc, slots, s, s)
    old.write_kv_cache(k, v, kc2, vc2, slots, s, s)
    same = torch.equal(kc.view(torch.uint8), kc2.view(torch.uint8)) and torch.equal(vc.view(torch.uint8),
                                                                                    vc2.view(torch.uint8))
    nbytes = 2 * t * HKV * D * 3 + t * 8
    copy_fn, moved = H.make_copy_fn(nbytes // 2, "cuda")
    times = H.bench_interleaved({"s29": lambda: old.write_kv_cache(k, v, kc2, vc2, slots, s, s),
                                 "s30": lambda: new.write_kv_cache(k, v, kc, vc, slots, s, s), "copy": copy_fn},
                                repeats=ROUNDS)
    m = {n: H.summarize(x) for n, x in times.items()}
    cg = H.gbps(moved, m["copy"].median)
    rows.append({"T": t, "bit_equal": same, "rounds_ms": times, "copy_gbps": cg,
                 **{f"{n}_ms": m[n].median for n in ("s29", "s30")},
                 **{f"{n}_pct_of_copy": H.pct(H.gbps(nbytes, m[n].median), cg) for n in ("s29", "s30")},
                 "s29_over_s30": H.compare(times["s30"], times["s29"]).ratio})
path = save_results("write-host-ab", {"rounds": ROUNDS, "rows": rows})
H.print_table(rows, [H.Column("T"), H.Column("bit_equal", "equal"),
                     H.Column(lambda r: 1e3 * r["s29_ms"], "s29 us", "{:.1f}"),
                     H.Column(lambda r: 1e3 * r["s30_ms"], "s30 us", "{:.1f}"),
                     H.Column("s29_over_s30", "s29/s30", "{:.2f}"),
                     H.Column("s29_pct_of_copy", "s29 % copy", "{:.1f}"),
                     H.Column("s30_pct_of_copy", "s30 % copy", "{:.1f}")],
              title="write_kv_cache eager: session 29 host path vs session 30's", console=H.make_console())
print(path)
