"""Session 30: write_kv_cache eager, the session-29 host path (.ab/decode_s29.py: Triton's dispatch, the kernel name
and next_power_of_2 per call) against this tree's (_launch's cached launcher, constexprs cached per geometry), in
the same run, interleaved rounds, plus a device copy of the same bytes. Writes JSON under $OUT."""
import importlib.util
import json
import os
import sys

import torch

from tritonfp8 import decode as new
from tritonfp8.bench import harness as H

spec = importlib.util.spec_from_file_location("decode_s29", ".ab/decode_s29.py")
old = importlib.util.module_from_spec(spec)
sys.modules["decode_s29"] = old  # dataclasses look the module up while the class is built
spec.loader.exec_module(old)
HKV, D, PAGE = 8, 128, 16
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
                                repeats=5)
    m = {n: H.summarize(x) for n, x in times.items()}
    cg = H.gbps(moved, m["copy"].median)
    rows.append({"T": t, "bit_equal": same, "rounds_ms": times, "copy_gbps": cg,
                 **{f"{n}_ms": m[n].median for n in ("s29", "s30")},
                 **{f"{n}_pct_of_copy": H.pct(H.gbps(nbytes, m[n].median), cg) for n in ("s29", "s30")},
                 "s29_over_s30": H.compare(times["s30"], times["s29"]).ratio})
out = {"env": H.environment_info(), "command": H.command_line(sys.argv), "rows": rows}
os.makedirs(os.path.join(os.environ.get("OUT", "."), "results"), exist_ok=True)
with open(os.path.join(os.environ.get("OUT", "."), "results", "write-host-ab.json"), "w") as f:
    json.dump(H._jsonable(out), f, indent=1)
print(f"{'T':>6} {'equal':>5} {'s29 us':>8} {'s30 us':>8} {'s29/s30':>7} {'s29 %copy':>9} {'s30 %copy':>9}")
for r in rows:
    print(f"{r['T']:>6} {str(r['bit_equal']):>5} {r['s29_ms'] * 1e3:8.1f} {r['s30_ms'] * 1e3:8.1f} "
          f"{r['s29_over_s30']:7.2f} {r['s29_pct_of_copy']:9.1f} {r['s30_pct_of_copy']:9.1f}")
