"""Prefill time of a transformers Llama (random weights, Llama-3-8B layer shapes): FP8 unfused (convert_model +
attn_implementation="tritonfp8") vs FP8 with :func:`tritonfp8.fuse_qkv`, interleaved, eager or compiled.

    python -m tritonfp8.bench.fuse_llama --layers 4 --seq 2048,8192 --reps 20 [--compile]
"""

from __future__ import annotations

import argparse
import statistics

import torch


def _models(layers: int):
    import transformers

    import tritonfp8
    import tritonfp8.integrations.transformers as tfp8

    cfg = dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=layers,
               num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=16384)
    torch.manual_seed(0)
    unfused = tfp8.from_config(transformers.LlamaConfig(**cfg), recipe="row").cuda().eval()
    fused = tfp8.from_config(transformers.LlamaConfig(**cfg), recipe="row").cuda().eval()
    fused.load_state_dict(unfused.state_dict())
    ids = torch.randint(0, 32000, (1, 512), device="cuda")
    tritonfp8.fuse_qkv(fused, calibration_batches=[ids])
    return unfused, fused


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--seq", default="2048,8192")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--compile", action="store_true", help="torch.compile(fullgraph=True) both models")
    a = p.parse_args(argv)
    unfused, fused = _models(a.layers)
    run = {"unfused": unfused.model, "fused": fused.model}
    if a.compile:
        run = {k: torch.compile(m, fullgraph=True) for k, m in run.items()}
    for s in (int(x) for x in a.seq.split(",")):
        ids = torch.randint(0, 32000, (1, s), device="cuda")
        times = {k: [] for k in run}
        with torch.no_grad():
            for name, m in run.items():  # warm-up (and compile)
                m(ids, use_cache=False)
            for _ in range(a.reps):
                for name, m in run.items():  # interleaved
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    m(ids, use_cache=False)
                    e1.record()
                    torch.cuda.synchronize()
                    times[name].append(e0.elapsed_time(e1))
            h = {k: m(ids, use_cache=False).last_hidden_state.double() for k, m in run.items()}
        med = {k: statistics.median(v) for k, v in times.items()}
        rel = float((h["fused"] - h["unfused"]).norm() / h["unfused"].norm())
        print(f"seq {s}: unfused {med['unfused']:.3f} ms, fused {med['fused']:.3f} ms, "
              f"speedup {med['unfused'] / med['fused']:.3f}x, rel. diff of hidden states {rel:.4f}")


if __name__ == "__main__":
    main()
