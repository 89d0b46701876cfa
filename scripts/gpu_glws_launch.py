"""Session 7 diagnostic: does the Gluon GEMM's cached launch take the direct launcher, do its outputs equal Triton's
own dispatch bit for bit, and what host time does each path cost per call (median of 200 calls, host clock)?"""
import json, os, statistics, time

import torch

from tritonfp8 import _direct, _launch
from tritonfp8._kernels.gemm_configs import GemmConfig
from tritonfp8.gemm import gemm

cfg = GemmConfig(128, 128, 128, group_m=8, num_warps=4, num_stages=4, schedule="glws", epilogue_subtile=1)
g = torch.Generator(device="cuda").manual_seed(0)
res = {}
for M, N, K in [(512, 1024, 2048), (4096, 4096, 4096)]:
    a = torch.randn(M, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    sa = torch.rand(M, 1, device="cuda", generator=g) + 0.5
    sb = torch.rand(N, 1, device="cuda", generator=g) + 0.5
    with_fast = {}
    for mode in ("stock", "cached"):
        _launch.set_enabled(mode == "cached")
        o = gemm(a, b, sa, sb, accumulate="precise", config=cfg)
        s0 = dict(_direct.stats)
        ts = []
        for _ in range(200):
            torch.cuda.synchronize()
            t = time.perf_counter()
            o2 = gemm(a, b, sa, sb, accumulate="precise", config=cfg)
            ts.append(time.perf_counter() - t)
        torch.cuda.synchronize()
        with_fast[mode] = {"host_us_median": 1e6 * statistics.median(ts), "equal_first_vs_repeat": bool(torch.equal(o, o2)),
                           "direct_reused": _direct.stats["reused"] - s0["reused"],
                           "direct_encoded": _direct.stats["encoded"] - s0["encoded"], "out": o2}
    same = bool(torch.equal(with_fast["stock"].pop("out"), with_fast["cached"].pop("out")))
    kern = next((k for k, v in _launch._CACHE.items() if k[0].__name__ == "fp8_gemm_promote_kernel"), None)
    runner = _direct.runner(_launch._CACHE[kern][0], len(kern[2]) + len(_launch._CACHE[kern][1])) if kern else "no entry"
    res[f"{M}x{N}x{K}"] = {**with_fast, "stock_equals_cached": same, "direct_runner": repr(runner)[:80]}
_launch.set_enabled(True)
print(json.dumps(res, indent=1))
out = os.environ.get("OUT")
if out:
    json.dump(res, open(os.path.join(out, "glws_launch.json"), "w"), indent=1)
