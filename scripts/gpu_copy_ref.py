"""Session 6: why the copy reference of `bench --graph decode` sometimes reads ~2.75 TB/s (eager: 4.2-4.3).
Suspect: under CUDA-graph capture, `dst.copy_(src)` of a contiguous buffer becomes a memcpy node, which the driver
may run on a copy engine, while an eager device-to-device copy runs as an SM kernel. Times, from graphs and eager,
the memcpy form and an SM elementwise form (int64 view, `torch.bitwise_or(src, 0, out=dst)`) at the decode
matrix's sizes. Prints a table; writes $OUT/copy_ref.json."""
import json
import os
from pathlib import Path

import torch

from tritonfp8.bench import harness as H

SIZES_MB = (34, 269, 538, 539, 1076, 2150)
rows = []
for mb in SIZES_MB:
    n = mb * 1_000_000 // 16 * 16
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 256)
    dst = torch.empty_like(src)
    s64, d64 = src.view(torch.int64), dst.view(torch.int64)
    fns = {"memcpy": lambda: dst.copy_(src), "sm_or64": lambda: torch.bitwise_or(s64, 0, out=d64)}
    for name, fn in fns.items():
        g = [H.time_graph(fn) for _ in range(3)]
        e = [H.time_events(fn) for _ in range(3)]
        r = {"mb": mb, "form": name, "graph_ms": g, "eager_ms": e,
             "graph_tbs": 2 * n / sorted(g)[1] / 1e9, "eager_tbs": 2 * n / sorted(e)[1] / 1e9}
        rows.append(r)
        print(f"{mb:5d} MB {name:8s} graph {r['graph_tbs']:.2f} TB/s  eager {r['eager_tbs']:.2f} TB/s", flush=True)
    del src, dst
Path(os.environ.get("OUT", "."), "copy_ref.json").write_text(json.dumps({"env": H.environment_info(), "rows": rows},
                                                                        indent=1))
