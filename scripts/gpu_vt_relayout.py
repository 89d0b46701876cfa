"""The E4M3 V -> Vᵀ relayout of ``tritonfp8.attention`` (copy + transpose, the public call's pass before the
forward kernel) at several sequence rows per program: bit-equal outputs, then time (do_bench median, interleaved
rounds) and the bandwidth of its read + write. Writes JSON to $OUT/results (or benchmarks/results)."""

from __future__ import annotations

import json
import os
import time

import torch
import triton.testing

from tritonfp8.attention import _quantize_heads


def main() -> None:
    cases = [(4, 8192, 8, 256), (2, 8192, 16, 128), (1, 16384, 16, 128), (2, 8192, 32, 64)]
    blocks = (32, 64, 128)
    rows = []
    for b, s, h, d in cases:
        v = torch.randn(b, s, h, d, device="cuda").to(torch.float8_e4m3fn)
        fns, outs = {}, {}
        for perm in (False, True):
            for bs in blocks:
                key = f"bs{bs}{'p' if perm else ''}"
                fn = (lambda bs=bs, perm=perm: _quantize_heads(v, h, None, b, s, quantize=False, transpose=True,
                                                               permute_keys=perm, block_s=bs)[0])
                fns[key], outs[key] = fn, fn()
        for perm in ("", "p"):
            ref = outs[f"bs64{perm}"]
            for bs in blocks:
                assert torch.equal(outs[f"bs{bs}{perm}"].view(torch.uint8), ref.view(torch.uint8)), (b, s, h, d, bs)
        times = {k: [] for k in fns}
        for _ in range(5):
            for k, fn in fns.items():
                times[k].append(triton.testing.do_bench(fn, warmup=25, rep=100))
        nbytes = 2 * v.numel()
        row = dict(case=f"B{b} S{s} H{h} D{d}", bytes=nbytes)
        for k, t in times.items():
            t.sort()
            row[f"{k}_ms"] = t[len(t) // 2]
            row[f"{k}_rounds_ms"] = t
            row[f"{k}_gbs"] = nbytes / (t[len(t) // 2] * 1e-3) / 1e9
        rows.append(row)
        print(row["case"], " ".join(f"{k}={row[k + '_gbs']:.0f}GB/s" for k in fns))
    out = os.path.join(os.environ.get("OUT", "benchmarks"), "results")
    os.makedirs(out, exist_ok=True)
    env = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
               cuda=torch.version.cuda, date=time.strftime("%Y-%m-%d %H:%M:%S"),
               command="python scripts/gpu_vt_relayout.py")
    path = os.path.join(out, f"vt-relayout-{time.strftime('%Y%m%d-%H%M%S')}.json")
    with open(path, "w") as f:
        json.dump(dict(env=env, rows=rows), f, indent=1)
    print("results:", path)


if __name__ == "__main__":
    main()
