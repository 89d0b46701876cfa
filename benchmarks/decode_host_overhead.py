"""Python cost of ``tritonfp8.decode_attention`` per call, with the Triton launches replaced by no-ops.

Runs on CPU tensors (no GPU needed): ``TRITON_INTERPRET=1 python benchmarks/decode_host_overhead.py``. The number is
everything the op does on the host before Triton's own launch path (validation, plan lookup, allocations).
"""

import os
import time

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

from tritonfp8 import decode  # noqa: E402
from tritonfp8._kernels import decode as kern  # noqa: E402


class _NoLaunch:
    def __getitem__(self, grid):
        return lambda *a, **k: None


for _name in ("_decode_kernel", "_combine_kernel"):
    setattr(kern, _name, _NoLaunch())


def per_call_us(b, hq, hkv, ctx, page, sq=1, n=3000):
    nb = b * ctx // page + 1
    kc = torch.zeros(nb, page, hkv, 128, dtype=torch.float8_e4m3fn)
    vc = torch.zeros_like(kc)
    bt = torch.arange(b * (ctx // page), dtype=torch.int32).reshape(b, -1)
    sl = torch.full((b,), ctx, dtype=torch.int32)
    q = torch.randn(b, sq, hq, 128).bfloat16()
    ks = torch.full((hkv,), 0.02)
    vs = torch.full((hkv,), 0.02)

    def f():
        return decode.decode_attention(q, kc, vc, bt, sl, k_descale=ks, v_descale=vs)

    for _ in range(200):
        f()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


if __name__ == "__main__":
    for case in [(1, 32, 8, 1024, 16), (8, 32, 8, 4096, 16), (128, 64, 8, 4096, 64)]:
        print(f"B={case[0]} Hq/Hkv={case[1]}/{case[2]} ctx={case[3]} page={case[4]}: {per_call_us(*case):.1f} us")
