#!/usr/bin/env python3
"""Decide the FP8 GEMM schedules/tiles in one short GPU call: every candidate config of a few representative shapes,
timed interleaved with cuBLAS, correctness-checked, one line per candidate, the winners last.

    python scripts/gpu_gemm_explore.py [--shapes "MxNxK;..."] [--modes fast,precise] [--repeats 2] [--write-table]

Warp-specialized candidates run only after the child-process canary passed (see tritonfp8.tune.Canary). JSON with
every round median goes to $OUT/gemm_explore.json when $OUT is set (else ./gemm_explore.json). --write-table also
merges the winners into this GPU's table (src/tritonfp8/configs/gemm_<gpu>.json, and a copy in $OUT).
Budget: about 1-2 minutes for the default shapes on an H200 (compiles run in parallel first).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

DEFAULT_SHAPES = "16x8192x8192;64x57344x8192;128x8192x8192;1024x10240x8192;8192x8192x8192;4096x57344x8192"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--modes", default="fast,precise")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="fewer candidates")
    ap.add_argument("--write-table", action="store_true")
    args = ap.parse_args()

    import torch

    from tritonfp8 import tune
    from tritonfp8.bench import harness as H

    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    env = H.environment_info()
    t0 = time.time()
    shapes = tune.parse_shapes(args.shapes)
    modes = tuple(m for m in args.modes.split(",") if m)
    entries = tune.tune(shapes, modes=modes, quick=args.quick, repeats=args.repeats, progress=False)
    print(f"\n# every candidate (TFLOPS; ratio = cuBLAS ms / candidate ms), {time.time() - t0:.0f} s")
    for e in entries:
        M, N, K = e["shape"]
        flops = 2.0 * M * N * K
        print(f"{M}x{N}x{K} {e['accumulate']}: {e['peer']} {e['peer_tflops']:.0f} TFLOPS "
              f"(err {e['peer_rel_error']:.2e})")
        for c in e["candidates"]:
            tf = flops / (c["ms"] * 1e-3) / 1e12
            ratio = e["peer_ms"] / c["ms"]
            print(f"    {c['config']:48s} {tf:6.0f} TFLOPS  ratio {ratio:.3f}  err {c['rel_error']:.2e}")
        for label, why in e["failed"].items():
            print(f"    {label:48s} FAILED {why}")
    tune.print_summary(entries)
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "gemm_explore.json").write_text(json.dumps({"env": env, "entries": entries}, indent=1, default=str))
    print(f"wrote {out_dir / 'gemm_explore.json'}")
    if args.write_table:
        from tritonfp8._kernels.gemm_configs import table_path

        path = tune.write_table(entries, table_path(env["gpu"]), env)
        tune.write_table(entries, out_dir / path.name, env)
        print(f"merged winners into {path} (copy in {out_dir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
