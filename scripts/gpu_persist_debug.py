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
b, sq, sk, hq, hkv, bn, st, causal, progs, regs, variant = json.loads(sys.argv[1])
sys.path.insert(0, "scripts")
import persist_dbg
persist_dbg.apply(variant)
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

# (b, sq, sk, hq, hkv, block_n, stages, causal, programs: 0 one-tile kernel / -1 one per SM / n, regs or None,
# helper variant of scripts/persist_dbg.py)
CASES = {
    "dense_noTail_1tile": (1, 256, 512, 2, 1, 256, 2, False, -1, None, "base"),
    "dense_noTail_multi": (1, 256, 512, 2, 1, 256, 2, False, 1, None, "base"),
    "dense_tail_1tile": (1, 256, 300, 2, 1, 256, 2, False, -1, None, "base"),
    "dense_tail_multi": (1, 256, 300, 2, 1, 256, 2, False, 1, None, "base"),
    "dense_tail_1tile_r232": (1, 256, 300, 2, 1, 256, 2, False, -1, (232, 40), "base"),
    "causal_1tile": (1, 512, 512, 2, 1, 256, 2, True, -1, None, "base"),
    "causal_multi": (1, 512, 512, 2, 1, 256, 2, True, 1, None, "base"),
    "causal_1tile_r232": (1, 512, 512, 2, 1, 256, 2, True, -1, (232, 40), "base"),
    "causal_onetile_kernel": (1, 512, 512, 2, 1, 256, 2, True, 0, None, "base"),
    "causal_bn128_1tile": (1, 512, 512, 2, 1, 128, 2, True, -1, None, "base"),
    "dense_tail_bn128_1tile": (1, 256, 300, 2, 1, 128, 2, False, -1, None, "base"),
}
# session 21: which part of the causal path goes wrong (the tile order, the static masked steps)
for var in ("noorder", "glorder", "loopmask", "noorder_loopmask", "guardloop", "noorder_guardloop"):
    CASES[f"causal_1tile_{var}"] = (1, 512, 512, 2, 1, 256, 2, True, -1, None, var)
    CASES[f"causal_multi_{var}"] = (1, 512, 512, 2, 1, 256, 2, True, 1, None, var)
# a dense tile with no whole key block (Sk < block_n: the unmasked loop runs zero times), as causal's first blocks
CASES["dense_short_1tile"] = (1, 256, 200, 2, 1, 256, 2, False, -1, None, "base")
CASES["dense_short_multi"] = (1, 256, 200, 2, 1, 256, 2, False, 1, None, "base")
CASES["dense_short_1tile_guardloop"] = (1, 256, 200, 2, 1, 256, 2, False, -1, None, "guardloop")
CASES["dense_short_onetile_kernel"] = (1, 256, 200, 2, 1, 256, 2, False, 0, None, "base")
# causal with every tile's unmasked loop non-empty (Sk - Sq = 512: each group has >= 2 whole blocks)
CASES["causal_off512_1tile"] = (1, 256, 768, 2, 1, 256, 2, True, -1, None, "base")
CASES["causal_off512_multi"] = (1, 256, 768, 2, 1, 256, 2, True, 1, None, "base")
env = dict(os.environ, PYTHONPATH=os.pathsep.join(["src", os.environ.get("PYTHONPATH", "")]))
procs = {k: subprocess.Popen([sys.executable, "-c", CASE, json.dumps(v)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env) for k, v in CASES.items()}
res = {}
for k, p in procs.items():
    o, e = p.communicate(timeout=300)
    res[k] = o.strip().splitlines()[-1] if p.returncode == 0 and o.strip() else "ERR " + ([ln for ln in e.splitlines() if "Error" in ln] or e.strip().splitlines() or ["?"])[-1][:150]
    print(f"{k:26s} {res[k]}", flush=True)
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], "persist-debug.json"), "w") as f:
        json.dump(res, f, indent=1)
