"""Session 20: which persistent Gluon attention cases go wrong (each case in its own process: an illegal address
ends only that case). Prints one line per case: the max |out - ref| / max |ref| against attention_torch, NaN count,
or the error."""
import json
import math
import os
import subprocess
import sys

CASE = r"""
import math, sys, json, torch
sys.path.insert(0, "tests")
from test_attention import fp8_inputs
from tritonfp8._kernels import attention_gluon as ag
from tritonfp8.attention import attention_torch
b, sq, sk, hq, hkv, bn, st, causal, progs, regs = json.loads(sys.argv[1])
if regs:
    ag.PERSISTENT_CONSUMER_REGS, ag.PERSISTENT_LOADER_REGS = regs
gen = torch.Generator().manual_seed(1)
(q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, 128), (b, sk, hkv, 128), hkv, b, True, gen, "cuda")
out = torch.full((b, sq, hq, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
ag.launch(q8, k8, ag.vt_layout(v8), out, qd.contiguous(), kd.contiguous(), vd.contiguous(), 1 / math.sqrt(128),
          block_n=bn, stages=st, causal=causal, persistent=progs != 0, num_programs=progs if progs > 0 else None)
torch.cuda.synchronize()
ref = attention_torch(q8, k8, v8, causal=causal, q_descale=qd, k_descale=kd, v_descale=vd).cuda()
o = out.float()
print(json.dumps(dict(nan=int(o.isnan().sum()), rel=float((o - ref).abs().nan_to_num(9e9).max() / ref.abs().max()))))
"""

# (b, sq, sk, hq, hkv, block_n, stages, causal, programs: 0 one-tile kernel / -1 one per SM / n, regs or None)
CASES = {
    "dense_noTail_1tile": (1, 256, 512, 2, 1, 256, 2, False, -1, None),
    "dense_noTail_multi": (1, 256, 512, 2, 1, 256, 2, False, 1, None),
    "dense_tail_1tile": (1, 256, 300, 2, 1, 256, 2, False, -1, None),
    "dense_tail_multi": (1, 256, 300, 2, 1, 256, 2, False, 1, None),
    "dense_tail_1tile_r232": (1, 256, 300, 2, 1, 256, 2, False, -1, (232, 40)),
    "causal_1tile": (1, 512, 512, 2, 1, 256, 2, True, -1, None),
    "causal_multi": (1, 512, 512, 2, 1, 256, 2, True, 1, None),
    "causal_1tile_r232": (1, 512, 512, 2, 1, 256, 2, True, -1, (232, 40)),
    "causal_onetile_kernel": (1, 512, 512, 2, 1, 256, 2, True, 0, None),
    "causal_bn128_1tile": (1, 512, 512, 2, 1, 128, 2, True, -1, None),
    "dense_tail_bn128_1tile": (1, 256, 300, 2, 1, 128, 2, False, -1, None),
}
env = dict(os.environ, PYTHONPATH=os.pathsep.join(["src", os.environ.get("PYTHONPATH", "")]))
procs = {k: subprocess.Popen([sys.executable, "-c", CASE, json.dumps(v)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env) for k, v in CASES.items()}
res = {}
for k, p in procs.items():
    o, e = p.communicate(timeout=300)
    res[k] = o.strip().splitlines()[-1] if p.returncode == 0 and o.strip() else "ERR " + (e.strip().splitlines() or ["?"])[-1][:150]
    print(f"{k:26s} {res[k]}", flush=True)
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], "persist-debug.json"), "w") as f:
        json.dump(res, f, indent=1)
