"""Issue 4, session 14: the grouped schedule's vector width (``gemm.group_pad``). ncu (call 1) showed the G 8 x 1024
grouped call executing 28% more instructions than the dense GEMM of the same total shape on the same Gluon kernel
(R2UR and IMAD before every wgmma: the K loop's addresses in vector registers); offline, 8-wide group vectors give
a 240-instruction K loop, >= 32-wide ones the dense kernel's 188. This times, interleaved over rounds, the grouped
call with the new padding (``pad32``), with the old one (``pad_old``: the next power of two >= G, restored by
replacing ``gemm.group_pad``) and our dense GEMM of the same total shape (one b), from CUDA graphs (GPU time) and
eager (do_bench), and checks that both paddings give bit-identical outputs. Prints a table, writes
benchmarks/results/grouped-pad-<stamp>.json."""

from __future__ import annotations

import json
import statistics
import time

import torch
import triton

import tritonfp8
from tritonfp8.bench import harness as H
from tritonfp8._kernels import gemm as kgemm
from tritonfp8.bench.suites import grouped as suite

ROUNDS = 3
NEW_PAD = kgemm.group_pad


def old_pad(G: int) -> int:
    return max(1, triton.next_power_of_2(G))


def main():
    rows = []
    cases = [("block", "precise", 8, 1024), ("tensor", "precise", 8, 1024), ("tensor", "fast", 8, 1024),
             ("row", "fast", 8, 1024), ("block", "precise", 16, 512)]
    for scaling, acc, G, m in cases:
        for N, K in ((4096, 7168), (7168, 2048)):
            x = suite.make_inputs(G, N, K, [m] * G, scaling, "cuda")
            outs = {k: torch.empty(x.M, N, device="cuda", dtype=torch.bfloat16) for k in ("pad32", "pad_old", "dense")}
            if scaling == "block":
                od = (x.sa, x.sb[0])
            elif scaling == "row":
                od = (x.sa, x.sb[0].view(N, 1))
            else:
                od = (torch.ones((), device="cuda"), torch.ones((), device="cuda"))

            def grouped(key, pad):
                def fn():
                    kgemm.group_pad = pad
                    try:
                        tritonfp8.grouped_gemm(x.a, x.b, x.sa, x.sb, m_sizes=x.m_sizes, out=outs[key],
                                               accumulate=acc, check=False)
                    finally:
                        kgemm.group_pad = NEW_PAD
                return fn

            fns = {"pad32": grouped("pad32", NEW_PAD), "pad_old": grouped("pad_old", old_pad),
                   "dense": lambda: tritonfp8.gemm(x.a, x.b[0], *od, out=outs["dense"], accumulate=acc)}
            for fn in fns.values():
                fn()
            torch.cuda.synchronize()
            same = torch.equal(outs["pad32"], outs["pad_old"]) and not outs["pad32"].isnan().any().item()
            res = {k: {"eager": [], "graph": []} for k in fns}
            for _ in range(ROUNDS):
                for k, fn in fns.items():
                    res[k]["graph"].append(triton.testing.do_bench_cudagraph(fn))
                    res[k]["eager"].append(triton.testing.do_bench(fn))
            flops = 2.0 * x.M * N * K
            row = {"case": f"G{G}x{m} {N}x{K} {scaling} {acc}", "bit_identical": same}
            for k in fns:
                for mode in ("graph", "eager"):
                    row[f"{k}_{mode}_ms"] = statistics.median(res[k][mode])
                row[f"{k}_graph_tflops"] = flops / row[f"{k}_graph_ms"] / 1e9
                row[f"{k}_rounds"] = res[k]
            row["old_over_new_graph"] = row["pad_old_graph_ms"] / row["pad32_graph_ms"]
            row["new_vs_dense_graph"] = row["dense_graph_ms"] / row["pad32_graph_ms"]
            rows.append(row)
            print(f"{row['case']:34s} same={same} graph ms new {row['pad32_graph_ms']:.4f} old "
                  f"{row['pad_old_graph_ms']:.4f} dense {row['dense_graph_ms']:.4f}  old/new "
                  f"{row['old_over_new_graph']:.3f} dense/new {row['new_vs_dense_graph']:.3f}", flush=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    env = {**H.environment_info(), "command": H.command_line()}  # GPU, versions, date
    with open(f"benchmarks/results/grouped-pad-{stamp}.json", "w") as f:
        json.dump({"env": env, "rows": rows}, f, indent=1)
    print(f"{'case':34s} {'new TF':>7s} {'old TF':>7s} {'dense TF':>8s} {'old/new':>7s} {'new/dense':>9s} eager new/old ms")
    for r in rows:
        print(f"{r['case']:34s} {r['pad32_graph_tflops']:7.0f} {r['pad_old_graph_tflops']:7.0f} "
              f"{r['dense_graph_tflops']:8.0f} {r['old_over_new_graph']:7.3f} {1 / r['new_vs_dense_graph']:9.3f} "
              f"{r['pad32_eager_ms']:.4f}/{r['pad_old_eager_ms']:.4f}")


if __name__ == "__main__":
    main()
