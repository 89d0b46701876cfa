"""Train a tiny byte-level Llama (transformers ``LlamaForCausalLM``, vocab 256) on CPU, for evaluating FP8 on
*trained* weights (``python -m tritonfp8 bench model --checkpoint benchmarks/checkpoints/tiny-llama-bytes``).

Corpus: the ``.py`` sources of the installed ``triton`` package (sorted by path, concatenated; triton 3.6.0 is
what the project pins, ~1.1 MB), the last ``--val-frac`` of the bytes held out for validation. Tokens are raw
UTF-8 bytes (id == byte value); a byte-level tokenizer with that mapping is saved with the checkpoint so
``AutoTokenizer.from_pretrained`` works, plus ``eval.txt`` (held-out text, so evaluation on another machine does
not need the corpus).

The shape is chosen so that tritonfp8's kernels apply: hidden 256, 4 heads of 64 (2 KV heads: GQA),
intermediate 768 (a multiple of 16), 4 layers. Training is fp32 AdamW on CPU, deterministic for a given seed
and thread count; the checkpoint is saved in BF16 safetensors with a README.md and ``train_log.json``
(the loss curve).

    PYTHONPATH=src python benchmarks/train_tiny_llama.py            # ~15 min on one CPU thread
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

DEFAULT_OUT = Path(__file__).resolve().parent / "checkpoints" / "tiny-llama-bytes"
EVAL_HEADING = "## FP8 agreement"  # README section kept when the README is rewritten


def corpus_files(package: str = "triton") -> tuple[Path, list[Path]]:
    """The package's directory and its ``.py`` files, sorted by relative path (a fixed order for a given version)."""
    mod = __import__(package)
    root = Path(mod.__file__).resolve().parent
    files = sorted((p for p in root.rglob("*.py") if "__pycache__" not in p.parts),
                   key=lambda p: p.relative_to(root).as_posix())
    return root, files


def load_corpus(package: str = "triton") -> tuple[bytes, dict]:
    """All ``.py`` files of ``package`` joined by newlines, and a description (package, version, files, bytes)."""
    root, files = corpus_files(package)
    data = b"\n".join(p.read_bytes() for p in files)
    mod = sys.modules[package]
    return data, {"package": package, "version": getattr(mod, "__version__", "?"), "files": len(files),
                  "bytes": len(data), "root": str(root)}


def byte_tokenizer():
    """A ``PreTrainedTokenizerFast`` mapping each UTF-8 byte to the id equal to its value (vocab 256, no merges,
    no special tokens)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    # ByteLevel pre-tokenization maps each byte to a printable character (GPT-2's table); the vocab puts that
    # character at the byte's own value, so ids are the raw bytes.
    table = _bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    if set(vocab) != set(pre_tokenizers.ByteLevel.alphabet()):
        raise RuntimeError("byte table differs from tokenizers' ByteLevel alphabet")
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tk, clean_up_tokenization_spaces=False)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table (the one ``tokenizers``' ByteLevel uses)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


def make_config(args):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=256, hidden_size=args.hidden, intermediate_size=args.intermediate,
                       num_hidden_layers=args.layers, num_attention_heads=args.heads,
                       num_key_value_heads=args.kv_heads, head_dim=args.hidden // args.heads,
                       max_position_embeddings=args.seq, rope_theta=10000.0, rms_norm_eps=1e-5,
                       tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=None,
                       attention_bias=False, mlp_bias=False)


def batches(data: torch.Tensor, batch: int, seq: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    starts = torch.randint(0, data.numel() - seq - 1, (batch,), generator=gen)
    x = torch.stack([data[s:s + seq + 1] for s in starts.tolist()]).long()
    return x[:, :-1], x[:, 1:]


@torch.no_grad()
def evaluate(model, data: torch.Tensor, seq: int, n: int = 8, dtype=torch.float32) -> float:
    """Mean loss (nats/byte) over ``n`` fixed, evenly spaced windows of ``data``."""
    starts = torch.linspace(0, data.numel() - seq - 2, n).long().tolist()
    x = torch.stack([data[s:s + seq + 1] for s in starts]).long()
    was = model.training
    model.eval()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
        logits = model(x[:, :-1]).logits.float()
    model.train(was)
    return float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1)))


def lr_at(step: int, args) -> float:
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    t = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--corpus", default="triton", help="package whose .py files are the corpus (default triton)")
    p.add_argument("--steps", type=int, default=280)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--intermediate", type=int, default=768)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--val-frac", type=float, default=0.05)
    p.add_argument("--eval-every", type=int, default=40)
    p.add_argument("--eval-bytes", type=int, default=4096, help="held-out bytes written to eval.txt")
    args = p.parse_args(argv)
    if args.hidden % args.heads or args.heads % args.kv_heads or args.intermediate % 16:
        raise ValueError("--hidden must divide by --heads, --heads by --kv-heads, --intermediate by 16")

    from tqdm import tqdm
    from transformers import LlamaForCausalLM

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)

    raw, corpus = load_corpus(args.corpus)
    split = int(len(raw) * (1 - args.val_frac))
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    train, val = data[:split], data[split:]
    cfg = make_config(args)
    model = LlamaForCausalLM(cfg)  # initialized under the seed above
    model.config._attn_implementation = "sdpa"
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(args.seed)
    print(f"corpus: {corpus['package']} {corpus['version']} .py files: {corpus['files']} files, "
          f"{corpus['bytes']} bytes ({split} train / {len(raw) - split} val); model {n_params / 1e6:.2f} M params; "
          f"{args.steps} steps x {args.batch} x {args.seq} bytes", flush=True)

    log = []
    t0 = time.time()
    ema = None
    bar = tqdm(range(args.steps), desc="train", mininterval=5.0, file=sys.stdout)
    for step in bar:
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args)
        x, y = batches(train, args.batch, args.seq, gen)
        logits = model(x).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        lv = loss.item()
        ema = lv if ema is None else 0.95 * ema + 0.05 * lv
        entry = {"step": step + 1, "loss": lv, "bits_per_byte": lv / math.log(2),
                 "bits_per_byte_ema": ema / math.log(2), "time_s": time.time() - t0}
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            entry["val_loss"] = evaluate(model, val, args.seq)
            entry["val_bits_per_byte"] = entry["val_loss"] / math.log(2)
            tqdm.write(f"step {step + 1}: train {ema / math.log(2):.3f} bits/byte (ema), "
                       f"val {entry['val_bits_per_byte']:.3f} bits/byte, {entry['time_s']:.0f} s", file=sys.stdout)
        log.append(entry)
        bar.set_postfix(bpb=f"{ema / math.log(2):.3f}", lr=f"{lr_at(step, args):.1e}")
    train_s = time.time() - t0

    val_fp32 = evaluate(model, val, args.seq)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = model.to(torch.bfloat16)
    model.generation_config.pad_token_id = None
    model.save_pretrained(out, safe_serialization=True)
    byte_tokenizer().save_pretrained(out)
    val_bf16 = evaluate(model, val, args.seq)
    eval_text = bytes(val[: args.eval_bytes].tolist()).decode("utf-8", errors="replace")
    (out / "eval.txt").write_text(eval_text)
    cmd = "PYTHONPATH=src python benchmarks/train_tiny_llama.py " + " ".join(argv if argv is not None else sys.argv[1:])
    summary = {"corpus": {k: v for k, v in corpus.items() if k != "root"}, "config": cfg.to_diff_dict(),
               "params": n_params, "args": vars(args), "train_seconds": train_s,
               "torch": torch.__version__, "threads": args.threads,
               "final_train_bits_per_byte_ema": ema / math.log(2),
               "val_bits_per_byte_fp32": val_fp32 / math.log(2), "val_bits_per_byte_bf16": val_bf16 / math.log(2),
               "command": cmd.strip(), "log": log}
    (out / "train_log.json").write_text(json.dumps(summary, indent=1))
    write_readme(out, summary)
    print(f"saved {out}: val {val_fp32 / math.log(2):.3f} bits/byte (fp32), {val_bf16 / math.log(2):.3f} (bf16), "
          f"{train_s:.0f} s", flush=True)
    return 0


def write_readme(out: Path, s: dict) -> None:
    c, a = s["corpus"], s["args"]
    curve = [e for e in s["log"] if "val_bits_per_byte" in e]
    rows = "\n".join(f"| {e['step']} | {e['bits_per_byte_ema']:.3f} | {e['val_bits_per_byte']:.3f} | "
                     f"{e['time_s']:.0f} |" for e in curve)
    size = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    text = f"""# tiny-llama-bytes

A tiny byte-level Llama (transformers `LlamaForCausalLM`, vocab 256: token id = UTF-8 byte value), trained on
CPU so that tritonfp8's FP8 accuracy can be checked on *trained* weights (random-weight deep networks amplify
any rounding; see `src/tritonfp8/bench/suites/model.py`). A test fixture, not a useful language model.

- corpus: the `.py` files of the `{c['package']}` package, version {c['version']} ({c['files']} files,
  {c['bytes']} bytes, sorted by path, joined by newlines); the last {a['val_frac']:.0%} held out for validation.
  `eval.txt`: the first {a['eval_bytes']} held-out bytes (the default text of `bench model --checkpoint`).
- model: hidden {a['hidden']}, {a['layers']} layers, {a['heads']} heads x {a['hidden'] // a['heads']}
  ({a['kv_heads']} KV heads), intermediate {a['intermediate']}, RoPE theta 10000, untied embeddings;
  {s['params'] / 1e6:.2f} M parameters, saved in BF16 (safetensors).
- training: {a['steps']} steps of {a['batch']} x {a['seq']} bytes, AdamW (lr {a['lr']}, warmup {a['warmup']},
  cosine to 10%, weight decay {a['weight_decay']}, betas 0.9/0.95, grad clip 1.0), fp32, seed {a['seed']},
  {s['threads']} CPU thread(s), torch {s['torch']}: {s['train_seconds'] / 60:.1f} min.
- result: validation {s['val_bits_per_byte_fp32']:.3f} bits/byte in fp32, {s['val_bits_per_byte_bf16']:.3f} in
  BF16 (uniform: 8); train {s['final_train_bits_per_byte_ema']:.3f} (moving average).
- command (from the repository root): `{s['command']}`

| step | train bits/byte (moving average) | val bits/byte | time (s) |
|---:|---:|---:|---:|
{rows}

Full curve (every step's batch loss): `train_log.json`. Size of this directory: {size / 1e6:.1f} MB.
"""
    readme = out / "README.md"
    if readme.exists() and EVAL_HEADING in readme.read_text():  # keep the evaluation added by hand
        text += "\n" + EVAL_HEADING + readme.read_text().split(EVAL_HEADING, 1)[1]
    readme.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())
