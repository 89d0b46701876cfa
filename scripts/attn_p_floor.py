"""The E4M3-P error floor of the attention bench's data (CPU, no kernel): the relative Frobenius error of the fp32
reference with P rounded through E4M3 as the kernels do (``attention_torch(p_fp8=True)``) vs the exact one, on the
bench's inputs (``bench.suites.attention._make_inputs``: N(0,1) bf16, per-tensor E4M3; CPU generator, so other
samples of the same distribution), batch 0, the first and last query heads, bf16 output rounding included.
Any kernel whose P·V product takes an E4M3 P sits near this error. Writes benchmarks/results/attn-p-floor-<stamp>.json."""
import json
import math
import time
from pathlib import Path

import torch

from tritonfp8.attention import attention_torch
from tritonfp8.bench import harness as H
from tritonfp8.bench.suites.attention import _make_inputs

CASES = ((8, 16, 16, 2048, 128), (2, 16, 16, 8192, 128), (2, 32, 32, 8192, 64), (4, 8, 8, 8192, 256))
rows = []
for b, hq, hkv, s, d in CASES:
    _, (q8, k8, v8), (qd, kd, vd) = _make_inputs(1, hq, hkv, s, d, "cpu")
    heads = [0, hq - 1]
    q, k, v = (x[:, :, heads].float() * ds for x, ds in ((q8, qd), (k8, kd), (v8, vd)))
    for causal in (False, True):
        ref = attention_torch(q, k, v, causal=causal)
        pt = attention_torch(q, k, v, causal=causal, p_fp8=True).bfloat16().float()
        rows.append(dict(case=f"S{s} D{d}" + (" causal" if causal else ""), seqlen=s, head_dim=d, causal=causal,
                         p_fp8_bf16_out_err=H.rel_error(pt, ref)))
        print(rows[-1], flush=True)
env = H.environment_info()
out = Path("benchmarks/results") / f"attn-p-floor-{time.strftime('%Y%m%d-%H%M%S')}.json"
out.write_text(json.dumps(dict(command="python scripts/attn_p_floor.py", env=env, rows=rows), indent=1))
print(out)
