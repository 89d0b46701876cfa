"""End-to-end: a Llama-style decoder in BF16 eager vs tritonfp8 FP8 (eager and torch.compile).

The model is written here in plain PyTorch (RMSNorm, RoPE, GQA attention, SwiGLU MLP; ``--proj fused``, the
default: one qkv and one gate_up ``nn.Linear`` per layer in both models, as serving engines lay a Llama out;
``--proj separate``: q/k/v/o and gate/up/down as in the Llama checkpoint), with random weights — no checkpoint needed. The init is the one
transformers gives a Llama built from its config (``LlamaConfig.initializer_range`` 0.02: every linear and the
embedding N(0, 0.02), RMSNorm weights 1). It does not explode: the residual stream's RMS grows like sqrt(depth)
(8b shape: 2.5 after layer 1, 5.6 after layer 5, 14 after layer 32). But a fixed std of 0.02 is a large gain at
these widths (a projection multiplies a normed input's RMS by 0.02·sqrt(fan_in): 1.3 at 4096, 1.8 at 8192; q·k
logits of std 1.6 (8b) and 3.3 (70b)), and the network has none of a trained model's structure: every layer's
update is as large as the stream it reads and as sensitive to it, so an error made in one layer is carried into
every later one, and within a layer the attention branch's error is amplified by the MLP it feeds.

What the agreement numbers mean (2026-11-29, CPU study with the plain-PyTorch references at the 8b and 70b
*gains* — hidden 1024 with the init std scaled to 0.02·sqrt(4096/1024) or 0.02·sqrt(8192/1024), head dim 128,
MLP 3.5x, 256-512 tokens — which reproduced the H200 measurements: 8b cos(final hidden) 0.74 measured, 0.750
exact FP8 arithmetic at 32 layers; 70b-layer 0.979 measured, 0.980 exact):

- each FP8 linear on its BF16 input is at E4M3's rounding level, cos 0.9993 for q/k/v/o/gate/up/down alike (no
  module kind stands out: no misapplied scale), the FP8 attention core 0.997-0.999, a whole layer 0.9975 (8b
  gains) or 0.980 (70b gains: the attention branch's error, 0.991 at logit std 3.3, feeds the MLP);
- the final-hidden cosine falls with depth, 1 - cos growing about linearly (0.013 after layer 1, 0.06 after 6,
  0.25 after 32), and so does BF16's own distance to fp32 on the same weights (0.99994 after layer 1, 0.9980
  after 32): the network amplifies any rounding error alike; FP8's 1 - cos (E4M3, 3 mantissa bits) stays 100-200x
  BF16's (7 bits) at every depth;
- the recipes differ little (tensor/row/block within 0.001 at 70b gains): random Gaussian activations have no
  outlier channels for finer scales to help with.

So on this random model cos(final hidden) >= 0.99 is out of reach of exact FP8 arithmetic itself, whatever the
kernels do; the measure that says whether *the kernels* are right is "kernels vs reference" (each module against
the same FP8 arithmetic in plain PyTorch, on the same input) together with "exact FP8" (the whole model computed by
the references: the cosine FP8 rounding gives here) — the kernel model's cosine should equal it — and, for FP8's own
cost, the per-layer and per-module cosines (teacher-forced: no error carried in). Accuracy on a real model needs
real weights: ``--checkpoint`` (below). The agreement table therefore reports:

- ``cos(final hidden)``, ``cos(logits)``: FP8 model vs BF16 model, free running (the issue's criterion, ``ok``);
- ``exact FP8``: the same FP8 model computed by :func:`emulated` (the library's plain-PyTorch references:
  quantize_torch, gemm_torch with fp32 accumulation, attention_torch with FP8 q/k/v/P) vs BF16;
- ``BF16 vs FP32``, ``FP8 vs FP32``: the BF16 and FP8 models against the same weights in fp32 (FP16 vs FP32 and the
  free-running cosine after every layer are in the JSON: ``cos_fp16_vs_fp32``, ``cos_hidden_layers``,
  ``cos_hidden_layers_bf16_vs_fp32``);
- ``cos(update)``: each layer's own error (below); ``kernels vs reference``: the worst module's cosine against
  the reference (:func:`per_module_agreement`), and a second table with each module kind's worst cosine vs BF16
  and the norm ratio furthest from 1 (which a cosine cannot see).

- ``8b``: Llama-3-8B shapes: hidden 4096, 32 heads / 8 KV heads of 128, MLP 14336, 32 layers, vocabulary 128256.
- ``70b-layer``: one decoder layer of Llama-3-70B: hidden 8192, 64 / 8 heads of 128, MLP 28672 (hidden states in
  and out; no embedding or head).
- ``tiny``: 2 layers, hidden 128 (CPU tests of the suite's bookkeeping, in the Triton interpreter).

Variants, timed interleaved in one process (:func:`tritonfp8.bench.harness.bench_interleaved`):

- ``bf16``: the BF16 model, eager; attention by ``F.scaled_dot_product_attention`` (flash); decode reads a dense
  BF16 KV cache (B, Hkv, S, D).
- ``fp8``: :func:`tritonfp8.convert_model` (recipe ``--recipe``, lm_head kept BF16), prefill attention by
  :func:`tritonfp8.ops.attention` (BF16 in, fused per-head quantization), decode through the FP8 paged cache
  (:func:`tritonfp8.ops.write_kv_cache` + :func:`tritonfp8.ops.decode_attention`, pages of 64 tokens).
- ``fp8c``: the same FP8 model with each decoder layer under ``torch.compile(fullgraph=True)`` (inductor fuses
  RMSNorm, RoPE and SwiGLU around our custom ops; one compiled graph serves every layer).

Measured: prefill tokens/s (batch 1, S tokens; the head computes the last position's logits only, as a server
does), decode tokens/s (one step of B sequences at a context of C tokens: B / step time; the caches are filled with
random values, which costs the same as real ones), and agreement with BF16: cosine similarity of the final hidden
states (after the final norm, every position) and of the logits (last 64 positions) on one prefill, per recipe;
per layer, the cosine of the layer's own update (attention + MLP output, the hidden state out minus in) when the
FP8 layer gets the BF16 model's input to that layer (no error carried in), for the first and last layer and the
worst layer, and the accumulated cosine of the hidden state after the first layer.

Decode is timed twice: eager (each op launched from Python: on the H200's host the FP8 step is host-bound) and
under CUDA graphs (``bf16g``, ``fp8g``, ``fp8cg``), as serving engines run decode: one step is captured into a
``torch.cuda.CUDAGraph`` after a warm-up on a side stream (:func:`tritonfp8.bench.harness.capture_graph`), with
static token/position buffers and the caches updated in place at a fixed position, and the replays are timed
interleaved with the eager steps. The graphed ratio is BF16 graph / FP8 graph. FP8 steps are captured under guard
policy ``"ignore"``: the eager guard's check reads its counts on the host (a sync per call, which capture
forbids; a guarded call inside a capture raises saying so). ``--decode-only`` skips prefill and agreement;
``--no-graph`` skips the graphed variants.

Targets (H200): 70b-layer prefill at 8k tokens >= 1.6x BF16 eager; 8b prefill >= 1.4x; decode at batch 32,
context 4096 >= 1.3x; cosine >= 0.99 for every recipe.

``--checkpoint DIR`` (a local transformers causal-LM checkpoint, e.g. a small Llama) adds the same criterion on
trained weights, through :mod:`tritonfp8.integrations.transformers` (FP8 linears, lm_head kept in BF16, FP8
attention): per ``--agree-recipe``, cos(final hidden) (after the final norm) and cos(logits) vs the BF16 model,
next-token agreement, perplexity, the exact-FP8 reference (no kernel) and BF16 vs FP32, on ``--text FILE`` (default:
the checkpoint's ``eval.txt``, else a built-in paragraph). ``--checkpoint-only`` skips the random-weight shapes.
``benchmarks/checkpoints/tiny-llama-bytes`` (``benchmarks/train_tiny_llama.py``) is a tiny trained byte-level Llama
for this: ``python -m tritonfp8 bench model --checkpoint benchmarks/checkpoints/tiny-llama-bytes --checkpoint-only``.
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

DESCRIPTION = "Llama-style decoder end to end: BF16 eager vs FP8 (eager, compiled): prefill/decode tokens/s, agreement"

# Timed variants (JSON keys ``<variant>_ms``, ``_tok_s``, ``_x`` = speedup over the BF16 variant run the same way).
VARIANTS = {
    "bf16": "BF16 eager",
    "fp8": "FP8 eager",
    "fp8c": "FP8, layers under torch.compile",
    "bf16g": "BF16 decode step replayed from a CUDA graph",
    "fp8g": "FP8 eager step replayed from a CUDA graph (guard policy 'ignore')",
    "fp8cg": "FP8 compiled step replayed from a CUDA graph (guard policy 'ignore')",
}
FP8_VARIANTS = ("fp8", "fp8c", "fp8g", "fp8cg")

TARGETS = {"prefill-70b-layer": 1.6, "prefill-8b": 1.4, "decode-8b-b32-c4096": 1.3}
MIN_COSINE = 0.99
PAGE = 64
_DEVICE = "cuda"  # the CPU test of the bookkeeping sets "cpu" (tiny shapes in the interpreter, wall-clock timer)


@dataclass(frozen=True)
class Shape:
    name: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    layers: int
    vocab: int  # 0: no embedding and no head (a bare stack of layers, hidden states in and out)
    rope_theta: float = 500000.0


SHAPES = {
    "8b": Shape("8b", 4096, 32, 8, 128, 14336, 32, 128256),
    "70b-layer": Shape("70b-layer", 8192, 64, 8, 128, 28672, 1, 0),
    "tiny": Shape("tiny", 128, 2, 1, 64, 256, 2, 256),
}


# ----------------------------------------------------------------------------------------------------------------
# the model


class RMSNorm(nn.Module):
    def __init__(self, n: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        # torch's fused RMSNorm (one kernel on CUDA; fp32 statistics) for BF16 and FP8 alike. The spelled-out
        # formula (pow, mean, rsqrt, casts) cost ~19 us per norm in a B32 decode step on the H200
        # (s3-call3-decode_profile.json: 0.6 ms of the step in the mean alone), time shared by both models.
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def rope_tables(s: Shape, positions: torch.Tensor, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of shape (B, S, 1, D) for the (B, S) ``positions`` (rotate-half convention)."""
    inv = 1.0 / (s.rope_theta ** (torch.arange(0, s.head_dim, 2, device=positions.device).float() / s.head_dim))
    ang = positions.float()[..., None] * inv
    emb = torch.cat([ang, ang], dim=-1)[:, :, None, :]
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rope(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class DenseCache:
    """BF16 KV cache per layer: k, v (B, Hkv, max_len, D); ``length`` tokens cached (the same for every sequence)."""

    def __init__(self, s: Shape, batch: int, max_len: int, device, dtype=torch.bfloat16):
        shape = (s.layers, batch, s.kv_heads, max_len, s.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.length = 0


class PagedCache:
    """FP8 paged KV cache per layer: (num_blocks, PAGE, Hkv, D) E4M3, static per-tensor scales, identity block
    table (sequence b owns pages b*max_blocks ...), ``seq_lens`` (B,) int32 on the device."""

    def __init__(self, s: Shape, batch: int, max_len: int, device):
        self.max_blocks = -(-max_len // PAGE)
        nb = batch * self.max_blocks
        shape = (s.layers, nb, PAGE, s.kv_heads, s.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=torch.float8_e4m3fn)
        self.v = torch.zeros(shape, device=device, dtype=torch.float8_e4m3fn)
        self.k_scale = torch.ones(s.layers, device=device)
        self.v_scale = torch.ones(s.layers, device=device)
        self.block_table = torch.arange(nb, device=device, dtype=torch.int32).view(batch, self.max_blocks)
        self.batch = batch
        self.length = 0
        self.seq_lens = torch.zeros(batch, device=device, dtype=torch.int32)
        self.slots = torch.zeros(batch, device=device, dtype=torch.int64)

    def set_length(self, n: int) -> None:
        """Cached tokens before the next decode step; the step writes position n and attends over n + 1."""
        self.length = n
        self.seq_lens.fill_(n + 1)
        b = torch.arange(self.batch, device=self.slots.device, dtype=torch.int64)
        self.slots.copy_(b * self.max_blocks * PAGE + n)


class Attention(nn.Module):
    def __init__(self, s: Shape, idx: int):
        super().__init__()
        self.s, self.idx = s, idx
        self.q_proj = nn.Linear(s.hidden, s.heads * s.head_dim, bias=False)
        self.k_proj = nn.Linear(s.hidden, s.kv_heads * s.head_dim, bias=False)
        self.v_proj = nn.Linear(s.hidden, s.kv_heads * s.head_dim, bias=False)
        self.o_proj = nn.Linear(s.heads * s.head_dim, s.hidden, bias=False)
        self.fp8 = False  # attention backend: SDPA / dense BF16 cache (False) or tritonfp8 / paged FP8 cache (True)
        # Prefill with fp8: the kernel (False) or the plain-PyTorch reference of the same FP8 arithmetic (True; see
        # emulated()).
        self.reference = False

    def qkv(self, x, cos, sin):
        """q (B, S, Hq, D) and k (B, S, Hkv, D) after RoPE, v (B, S, Hkv, D), of the normed input x."""
        s = self.s
        b, n, _ = x.shape
        if hasattr(self, "qkv_proj"):  # fused projections (see fuse_projections)
            q, k, v = self.qkv_proj(x).split([s.heads * s.head_dim, s.kv_heads * s.head_dim,
                                              s.kv_heads * s.head_dim], dim=-1)
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = apply_rope(q.view(b, n, s.heads, s.head_dim), cos, sin)
        k = apply_rope(k.view(b, n, s.kv_heads, s.head_dim), cos, sin)
        return q, k, v.view(b, n, s.kv_heads, s.head_dim)

    def forward(self, x, cos, sin, cache=None, decode: bool = False):
        s = self.s
        b, n, _ = x.shape
        q, k, v = self.qkv(x, cos, sin)
        if self.fp8:
            o = self._fp8(q, k, v, cache, decode)
        else:
            o = self._bf16(q, k, v, cache, decode)
        return self.o_proj(o.reshape(b, n, s.heads * s.head_dim))

    def _bf16(self, q, k, v, cache, decode):
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if not decode:
            o = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=True)
        else:
            pos = cache.length
            ck, cv = cache.k[self.idx], cache.v[self.idx]
            ck[:, :, pos:pos + 1].copy_(kt)
            cv[:, :, pos:pos + 1].copy_(vt)
            o = F.scaled_dot_product_attention(qt, ck[:, :, :pos + 1], cv[:, :, :pos + 1], enable_gqa=True)
        return o.transpose(1, 2)

    def _fp8(self, q, k, v, cache, decode):
        from tritonfp8 import ops

        if not decode:
            return reference_attention(q, k, v) if self.reference else ops.attention(q, k, v, causal=True)
        i = self.idx
        b = q.shape[0]
        ks, vs = cache.k_scale[i], cache.v_scale[i]
        ops.write_kv_cache(k.view(b, *k.shape[2:]), v.view(b, *v.shape[2:]), cache.k[i], cache.v[i], cache.slots,
                           ks, vs)
        return ops.decode_attention(q, cache.k[i], cache.v[i], cache.block_table, cache.seq_lens, k_descale=ks,
                                    v_descale=vs, max_seqlen=cache.max_blocks * PAGE)


class MLP(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden, s.intermediate, bias=False)
        self.up_proj = nn.Linear(s.hidden, s.intermediate, bias=False)
        self.down_proj = nn.Linear(s.intermediate, s.hidden, bias=False)

    def forward(self, x):
        if hasattr(self, "gate_up_proj"):  # fused projections (see fuse_projections)
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(F.silu(gate) * up)


class Layer(nn.Module):
    def __init__(self, s: Shape, idx: int):
        super().__init__()
        self.input_layernorm = RMSNorm(s.hidden)
        self.self_attn = Attention(s, idx)
        self.post_attention_layernorm = RMSNorm(s.hidden)
        self.mlp = MLP(s)

    def forward(self, x, cos, sin, cache=None, decode: bool = False):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, decode)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.s = s
        self.embed_tokens = nn.Embedding(s.vocab, s.hidden) if s.vocab else None
        self.layers = nn.ModuleList(Layer(s, i) for i in range(s.layers))
        self.norm = RMSNorm(s.hidden)
        self.lm_head = nn.Linear(s.hidden, s.vocab, bias=False) if s.vocab else None
        self.run_layers: list[Callable] = list(self.layers)  # the callables forward() uses (compiled or not)

    def forward(self, inputs, positions, cache=None, decode: bool = False, logits_last: int | None = 1):
        """inputs: (B, S) token ids (or (B, S, hidden) states without an embedding); returns (final hidden
        states after the norm, logits of the last ``logits_last`` positions (None: all; 0: none))."""
        x = self.embed_tokens(inputs) if self.embed_tokens is not None else inputs
        cos, sin = rope_tables(self.s, positions, x.dtype)
        for layer in self.run_layers:
            x = layer(x, cos, sin, cache, decode)
        h = self.norm(x)
        logits = None
        if self.lm_head is not None and logits_last != 0:
            logits = self.lm_head(h if logits_last is None else h[:, -logits_last:])
        return h, logits


def build(s: Shape, device, seed: int = 0) -> Decoder:
    """A BF16 decoder with random weights (normal, std 0.02; norms 1), on ``device``."""
    torch.manual_seed(seed)
    with torch.device(device):
        m = Decoder(s)
    m = m.to(torch.bfloat16)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if not name.endswith("layernorm.weight") and not name.endswith("norm.weight"):
                p.normal_(0.0, 0.02)
    return m.eval()


def fuse_projections(model: Decoder) -> Decoder:
    """Merge each layer's q/k/v projections into one ``qkv_proj`` and gate/up into one ``gate_up_proj`` (weights
    concatenated along the output dim, in place), as serving engines lay a Llama out. Applied to the BF16 model
    before :func:`to_fp8`, both sides run the same fused structure (BF16: 4 GEMMs per layer instead of 7; FP8: 4
    activation quantizations and 4 GEMMs instead of 7 + 7). With the rowwise recipe the FP8 numerics are unchanged
    (per-row weight scales, the same activation row scales); per-tensor weight scales become one per fused weight."""
    for layer in model.layers:
        for mod, parts, fused in ((layer.self_attn, ("q_proj", "k_proj", "v_proj"), "qkv_proj"),
                                  (layer.mlp, ("gate_proj", "up_proj"), "gate_up_proj")):
            ws = [getattr(mod, p).weight for p in parts]
            lin = nn.Linear(ws[0].shape[1], sum(w.shape[0] for w in ws), bias=False, device=ws[0].device,
                            dtype=ws[0].dtype)
            with torch.no_grad():
                lin.weight.copy_(torch.cat(ws, dim=0))
            for p in parts:
                delattr(mod, p)
            setattr(mod, fused, lin)
    return model


def to_fp8(model: Decoder, recipe: str) -> Decoder:
    """A copy of ``model`` with FP8 linears (lm_head kept BF16) and FP8 attention."""
    import tritonfp8

    m = copy.deepcopy(model)
    tritonfp8.convert_model(m, recipe=recipe, skip=("lm_head",))
    for layer in m.layers:
        layer.self_attn.fp8 = True
    m.run_layers = list(m.layers)
    return m


def compiled(model: Decoder) -> Decoder:
    """``model`` (sharing its weights) with each layer under ``torch.compile(fullgraph=True)``. One compiled graph
    serves every layer: Dynamo inlines nn.Modules, so the weights are graph inputs, not constants."""
    m = copy.copy(model)
    # Each layer's index (Attention.idx: its slice of the stacked KV cache) is an int attribute, which Dynamo
    # treats as a constant by default: one recompile per layer, and fullgraph=True then fails at the recompile
    # limit (H200, 2026-11-29, 8 layers). As a symbolic int the layers share one graph (0 and 1 are still
    # specialized by Dynamo: at most three graphs).
    torch._dynamo.config.allow_unspec_int_on_nn_module = True
    m.run_layers = [torch.compile(layer, fullgraph=True) for layer in model.layers]
    return m


# ----------------------------------------------------------------------------------------------------------------
# the same FP8 arithmetic in plain PyTorch (the library's references): what exact FP8 rounding gives, kernels aside


def reference_attention(q, k, v, softmax_scale: float | None = None):
    """Causal prefill attention as :func:`tritonfp8.ops.attention` computes it from BF16 q/k/v, in plain PyTorch:
    per-(batch, KV head) E4M3 quantization (:func:`~tritonfp8.attention.quantize_per_head_torch`), fp32 softmax
    with P rounded through E4M3 (``p_fp8``), output in q's dtype."""
    from tritonfp8.attention import attention_torch, quantize_per_head_torch

    hkv = k.shape[-2]
    (qq, sq), (kq, sk), (vq, sv) = (quantize_per_head_torch(t, hkv) for t in (q, k, v))
    return attention_torch(qq, kq, vq, causal=True, softmax_scale=softmax_scale, q_descale=sq, k_descale=sk,
                           v_descale=sv, p_fp8=True).to(q.dtype)


class ReferenceFP8Linear(nn.Module):
    """An :class:`~tritonfp8.nn.FP8Linear` (sharing its FP8 weight and scales) computed by the library's
    plain-PyTorch references: activations quantized by :func:`~tritonfp8.quantize.quantize_torch` with the recipe's
    granularity, then :func:`~tritonfp8.gemm.gemm_torch` (dequantize, fp32 matmul, one rounding to x's dtype).
    fp32 accumulation: "fast" recipes' tensor-core accumulation error (~2.6e-3 relative at K=8192, see
    HOPPER-FP8-NOTES) is not modelled."""

    def __init__(self, fp8: nn.Module):
        super().__init__()
        self.fp8 = fp8

    def forward(self, x):
        from tritonfp8.gemm import gemm_torch
        from tritonfp8.quantize import quantize_torch

        f, r = self.fp8, self.fp8.recipe
        x2 = x.reshape(-1, f.in_features)
        xq, sx = quantize_torch(x2, r.activation, r.activation_dtype, f.input_scale)
        y = gemm_torch(xq, f.weight, sx, f.weight_scale, out_dtype=x.dtype, bias=f._bias_for(x.dtype))
        return y.reshape(*x.shape[:-1], f.out_features)


def with_reference_linears(fp8_model: nn.Module) -> nn.Module:
    """A copy of ``fp8_model`` sharing its weights, every FP8Linear replaced by :class:`ReferenceFP8Linear`."""
    from tritonfp8.nn import FP8Linear

    shared = {id(t): t for t in (*fp8_model.parameters(), *fp8_model.buffers())}
    m = copy.deepcopy(fp8_model, shared)
    for mod in list(m.modules()):
        for name, child in mod.named_children():
            if isinstance(child, FP8Linear):
                setattr(mod, name, ReferenceFP8Linear(child))
    return m


def emulated(fp8_model: Decoder) -> Decoder:
    """``fp8_model`` (from :func:`to_fp8`, sharing its weights) with every FP8Linear computed by
    :class:`ReferenceFP8Linear` and prefill attention by :func:`reference_attention`: the FP8 model as exact FP8
    arithmetic predicts it, with no kernel involved (prefill only; decode steps still run the kernels)."""
    m = with_reference_linears(fp8_model)
    for layer in m.layers:
        layer.self_attn.reference = True
    m.run_layers = list(m.layers)
    return m


# ----------------------------------------------------------------------------------------------------------------
# measurements


def _inputs(s: Shape, batch: int, seq: int, device, seed: int = 1):
    g = torch.Generator(device="cpu").manual_seed(seed)
    if s.vocab:
        x = torch.randint(0, s.vocab, (batch, seq), generator=g).to(device)
    else:
        x = (torch.randn(batch, seq, s.hidden, generator=g) * 0.5).to(device=device, dtype=torch.bfloat16)
    pos = torch.arange(seq, device=device).expand(batch, seq)
    return x, pos


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().flatten(), b.double().flatten()
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return float("-inf")
    return float(F.cosine_similarity(a, b, dim=0))


def fill_caches(s: Shape, dense: DenseCache, paged: PagedCache, context: int) -> None:
    """Random K/V for the first ``context`` positions: BF16 in the dense cache, the same values quantized with a
    per-layer static scale (amax / 448) in the paged FP8 cache."""
    from tritonfp8 import ops

    b = dense.k.shape[1]
    dev = dense.k.device
    slots = (torch.arange(b, device=dev)[:, None] * paged.max_blocks * PAGE
             + torch.arange(context, device=dev)[None, :]).reshape(-1)
    for i in range(s.layers):
        toks = []
        for src, scales in ((dense.k[i], paged.k_scale), (dense.v[i], paged.v_scale)):
            src[:, :, :context].normal_(0, 1.0)
            t = src[:, :, :context].transpose(1, 2).reshape(b * context, s.kv_heads, s.head_dim)
            scales[i] = t.abs().amax().float() / 448.0
            toks.append(t)
        ops.write_kv_cache(toks[0], toks[1], paged.k[i], paged.v[i], slots, paged.k_scale[i], paged.v_scale[i])
    dense.length = context
    paged.set_length(context)


def _timer_cpu(fn, warmup_ms, rep_ms, flush_l2):
    fn()
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def _bench(fns: dict, args, rep_ms: float, graphed: set = frozenset()) -> dict:
    """Interleaved rounds of ``fns`` (no L2 flush: a step streams gigabytes). Functions in ``graphed`` replay a
    CUDA graph: always timed with events around each call (:func:`~tritonfp8.bench.harness.time_events`), even
    under ``bench --graph``, which would otherwise capture the replay into another graph."""
    from tritonfp8.bench import harness as H

    if _DEVICE != "cuda":
        timer = _timer_cpu
    else:
        def timer(fn, warmup_ms, rep_ms, flush_l2):
            return (H.time_events if fn in graphed else H.time_once)(fn, warmup_ms, rep_ms, flush_l2)
    return H.bench_interleaved(fns, repeats=args.repeats, warmup_ms=rep_ms / 4, rep_ms=rep_ms, flush_l2=False,
                               timer=timer)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", choices=sorted(SHAPES), action="append", default=None,
                   help="model shapes (default: 8b and 70b-layer)")
    p.add_argument("--recipe", default="row", help="FP8 recipe timed (agreement covers tensor, row and block)")
    p.add_argument("--prefill", type=int, action="append", default=None,
                   help="prefill lengths in tokens (default 2048, 4096, 8192; quick: 8192)")
    p.add_argument("--decode-batch", type=int, action="append", default=None,
                   help="decode batch sizes (default 1, 8, 32, 64; quick: 32)")
    p.add_argument("--context", type=int, default=4096, help="decode context length (default 4096)")
    p.add_argument("--proj", choices=("fused", "separate"), default="fused",
                   help="fused: one qkv and one gate_up projection per layer in both models (as serving engines); "
                        "separate: q/k/v/gate/up as in the Llama checkpoint layout (default fused)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile variant")
    p.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph decode variants")
    p.add_argument("--decode-only", action="store_true",
                   help="decode rows only (no prefill, no agreement; default shape 8b)")
    p.add_argument("--agree-tokens", type=int, default=None, help="prefill length of the agreement check (2048)")
    p.add_argument("--agreement-only", action="store_true",
                   help="the agreement check alone (no timing; default shapes 8b and 70b-layer)")
    p.add_argument("--prefill-only", action="store_true",
                   help="prefill timing alone (no agreement check, no decode; default shapes 8b and 70b-layer)")
    p.add_argument("--agree-recipe", action="append", default=None,
                   help="recipes of the agreement check (default tensor, row, block; e.g. row-precise)")
    p.add_argument("--checkpoint", default=None,
                   help="local transformers checkpoint: BF16 vs FP8 per --agree-recipe (cos(final hidden), "
                        "next-token agreement, perplexity) and BF16 vs FP32")
    p.add_argument("--checkpoint-only", action="store_true",
                   help="with --checkpoint: the checkpoint's agreement alone (no random-weight shapes, no timing)")
    p.add_argument("--checkpoint-tokens", type=int, default=None,
                   help="tokens per sequence for --checkpoint (default: its max_position_embeddings, at most the "
                        f"text; the text is cut into up to {CHECKPOINT_MAX_SEQS} sequences)")
    p.add_argument("--text", default=None,
                   help="text file for --checkpoint (default: the checkpoint's eval.txt, else a built-in paragraph)")


def layer_inputs(model: Decoder, inputs, positions) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """The hidden state entering each layer and the last layer's output (len(layers) + 1 tensors), and the RoPE
    tables: a prefill (no cache) of ``model``, layer by layer."""
    x = model.embed_tokens(inputs) if model.embed_tokens is not None else inputs
    cos, sin = rope_tables(model.s, positions, x.dtype)
    states = [x]
    for layer in model.run_layers:
        states.append(layer(states[-1], cos, sin))
    return states, cos, sin


def per_layer_agreement(ref: list[torch.Tensor], model: Decoder, cos, sin) -> dict:
    """Each layer's own error: layer i of ``model`` gets the reference input ``ref[i]`` (no error carried in) and
    its update (output - input) is compared with the reference update ``ref[i+1] - ref[i]`` (cosine). Returns the
    first and last layer's cosines, the worst layer's, and all of them (``cos_update_layers``); and the cosine of
    the first layer's output (``cos_hidden_layer1``: the hidden state after layer 1, whose input is exact)."""
    cs = []
    for i, layer in enumerate(model.run_layers):
        out = layer(ref[i], cos, sin)
        cs.append(cosine(out.float() - ref[i].float(), ref[i + 1].float() - ref[i].float()))
        if i == 0:
            first = cosine(out, ref[1])
    worst = min(range(len(cs)), key=cs.__getitem__)
    return {"cos_update_first": cs[0], "cos_update_last": cs[-1], "cos_update_min": cs[worst],
            "worst_layer": worst, "cos_update_layers": cs, "cos_hidden_layer1": first}


# Module kinds of the separate and the fused (fuse_projections) layouts; a model reports the kinds it has.
SEPARATE_KINDS = ("q_proj", "k_proj", "v_proj", "attention", "o_proj", "gate_proj", "up_proj", "down_proj")
FUSED_KINDS = ("qkv_proj", "attention", "o_proj", "gate_up_proj", "down_proj")
MODULE_KINDS = tuple(dict.fromkeys(SEPARATE_KINDS + FUSED_KINDS))


def per_module_agreement(ref: list[torch.Tensor], bf16: Decoder, model: Decoder, cos, sin,
                         reference: Decoder | None = None) -> dict:
    """Each module's own error, teacher-forced per module: in every layer i (input ``ref[i]`` from the BF16
    model), each FP8 linear gets the BF16 linear's input and the FP8 attention core the BF16 q/k/v (after RoPE);
    their outputs are compared with the BF16 ones: cosine, and the norm ratio ``||y_fp8|| / ||y_bf16||`` (a cosine
    cannot see a wrong factor common to the whole output, e.g. a per-tensor scale applied twice; the ratio can). A
    scale applied wrongly in one kind of module (o_proj, down_proj, ...) shows as that kind far from the others.

    With ``reference`` (:func:`emulated` of ``model``) each module is also compared with the same FP8 arithmetic
    done by the library's plain-PyTorch references: that isolates the kernels (expected within BF16 output
    rounding and fast accumulation, cos >= 0.9999) from FP8's own rounding error.

    Returns ``{kind: {"cos_min", "worst_layer", "cos_median", "cos_layers", "norm_ratio_worst"[,
    "cos_vs_reference_min", "reference_worst_layer"]}}`` for the kinds of :data:`MODULE_KINDS`
    (``norm_ratio_worst``: the layer's ratio furthest from 1, in log terms).
    """
    vs_bf16: dict = {k: [] for k in MODULE_KINDS}
    ratios: dict = {k: [] for k in MODULE_KINDS}
    vs_ref: dict = {k: [] for k in MODULE_KINDS}

    def compare(kind, y8, y):
        vs_bf16[kind].append(cosine(y8, y))
        ny = float(y.double().norm())
        ratios[kind].append(float(y8.double().norm()) / ny if ny > 0 else float("nan"))
    for i, lb in enumerate(bf16.layers):
        seen: dict = {}
        hooks = [mod.register_forward_hook(lambda _m, a, o, n=name: seen.__setitem__(n, (a[0], o)))
                 for name, mod in lb.named_modules() if isinstance(mod, nn.Linear)]
        try:
            lb(ref[i], cos, sin)
        finally:
            for h in hooks:
                h.remove()
        for name, (x, y) in seen.items():
            kind = name.rsplit(".", 1)[-1]
            y8 = model.layers[i].get_submodule(name)(x)
            compare(kind, y8, y)
            if reference is not None:
                vs_ref[kind].append(cosine(y8, reference.layers[i].get_submodule(name)(x)))
        a = lb.self_attn
        q, k, v = a.qkv(lb.input_layernorm(ref[i]), cos, sin)
        o8 = model.layers[i].self_attn._fp8(q, k, v, None, False)
        compare("attention", o8, a._bf16(q, k, v, None, False))
        if reference is not None:
            vs_ref["attention"].append(cosine(o8, reference_attention(q, k, v)))
    out = {}
    for kind in (k for k in MODULE_KINDS if vs_bf16[k]):
        cs = vs_bf16[kind]
        worst = min(range(len(cs)), key=cs.__getitem__)
        out[kind] = {"cos_min": cs[worst], "worst_layer": worst, "cos_median": sorted(cs)[len(cs) // 2],
                     "cos_layers": cs,
                     "norm_ratio_worst": max(ratios[kind], key=lambda r: abs(math.log(r)) if r > 0 else math.inf)}
        if reference is not None:
            rs = vs_ref[kind]
            rw = min(range(len(rs)), key=rs.__getitem__)
            out[kind].update(cos_vs_reference_min=rs[rw], reference_worst_layer=rw)
    return out


def _final(model: Decoder, states: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Final hidden states (after the norm) from :func:`layer_inputs`' states, and the last 64 positions' logits."""
    h = model.norm(states[-1])
    return h, (model.lm_head(h[:, -64:]) if model.lm_head is not None else None)


def _agreement(s: Shape, bf16: Decoder, recipes, tokens: int) -> list[dict]:
    """One row per recipe: final-hidden/logit cosines vs BF16, the same FP8 model in exact FP8 arithmetic
    (:func:`emulated`), the precision baselines (BF16 and FP16 vs FP32 of the same weights), per-layer and
    per-module own errors, and the free-running cosine after every layer (JSON)."""
    x, pos = _inputs(s, 1, tokens, _DEVICE)
    rows = []
    with torch.no_grad():
        ref_states, cos, sin = layer_inputs(bf16, x, pos)
        h_ref, l_ref = _final(bf16, ref_states)
        # Baselines: the same weights computed in fp32 (the truth) and in fp16. How far BF16 itself is from fp32
        # says how strongly this network amplifies rounding errors with depth.
        base: dict = {}
        for name, dt in (("fp32", torch.float32), ("fp16", torch.float16)):
            m = copy.deepcopy(bf16).to(dt)
            st, c32, s32 = layer_inputs(m, x.to(dt) if x.is_floating_point() else x, pos)
            base[name] = (_final(m, st)[0], st)
            del m, st
        h32, st32 = base["fp32"]
        cos_layers_bf16 = [cosine(a, b) for a, b in zip(ref_states[1:], st32[1:])]
        baselines = {"cos_bf16_vs_fp32": cosine(h_ref, h32), "cos_fp16_vs_fp32": cosine(base["fp16"][0], h32),
                     "cos_hidden_layers_bf16_vs_fp32": cos_layers_bf16}
        del base, st32
        for r in recipes:
            m = to_fp8(bf16, r)
            em = emulated(m)
            st, _, _ = layer_inputs(m, x, pos)
            h, lg = _final(m, st)
            cos_layers = [cosine(a, b) for a, b in zip(st[1:], ref_states[1:])]
            del st
            h_em = em(x, pos, logits_last=0)[0]
            rows.append({"shape": s.name, "recipe": r, "tokens": tokens, "cos_hidden": cosine(h, h_ref),
                         "cos_logits": cosine(lg, l_ref) if lg is not None else None,
                         "cos_hidden_vs_fp32": cosine(h, h32),
                         "cos_hidden_emulated": cosine(h_em, h_ref),
                         "cos_hidden_layers": cos_layers,
                         **baselines,
                         **per_layer_agreement(ref_states, m, cos, sin),
                         "modules": per_module_agreement(ref_states, bf16, m, cos, sin, reference=em),
                         "ok": cosine(h, h_ref) >= MIN_COSINE})
            rows[-1].update(_module_summary(rows[-1]["modules"]))
            del m, em
        del ref_states
    return rows


def _module_summary(modules: dict) -> dict:
    """Table columns from :func:`per_module_agreement`: each kind's worst cosine vs BF16 (``mod_<kind>``), and
    the worst kernel-vs-reference cosine over all modules with where it is."""
    out = {f"mod_{k}": v["cos_min"] for k, v in modules.items()}
    out["norm_ratio_worst"] = max((v["norm_ratio_worst"] for v in modules.values()),
                                  key=lambda r: abs(math.log(r)) if r > 0 else math.inf)
    if all("cos_vs_reference_min" in v for v in modules.values()):
        kind = min(modules, key=lambda k: modules[k]["cos_vs_reference_min"])
        out["cos_kernel_vs_reference"] = modules[kind]["cos_vs_reference_min"]
        out["kernel_vs_reference_worst"] = f"{kind} of layer {modules[kind]['reference_worst_layer'] + 1}"
    return out


GRAPH_POLICY = "ignore"  # guard policy of the FP8 steps captured into CUDA graphs (see the module docstring)


def _capture(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` captured into a CUDA graph; returns the graph's replay (the test on CPU replaces this function)."""
    from tritonfp8.bench import harness as H

    return H.capture_graph(fn).replay


def graph_steps(steps: dict[str, Callable[[], Any]]) -> dict[str, Callable[[], Any]]:
    """``{name + "g": replay}``: each decode step captured into its own CUDA graph, FP8 ones under guard policy
    :data:`GRAPH_POLICY` (the eager guard's host-side decision cannot be captured)."""
    from tritonfp8 import guard

    out = {}
    for name, fn in steps.items():
        with guard.policy(GRAPH_POLICY):
            out[name + "g"] = _capture(fn)
    return out


def run(args: argparse.Namespace) -> int:
    import tritonfp8
    from tritonfp8.bench import harness as H

    console = H.make_console()
    env = H.environment_info()
    quick = args.quick
    decode_only = getattr(args, "decode_only", False)
    agreement_only = getattr(args, "agreement_only", False)
    prefill_only = getattr(args, "prefill_only", False)
    if decode_only + agreement_only + prefill_only > 1:
        raise ValueError("--decode-only, --agreement-only, --prefill-only: give at most one")
    ckpt = getattr(args, "checkpoint", None)
    checkpoint_only = getattr(args, "checkpoint_only", False)
    if checkpoint_only and not ckpt:
        raise ValueError("--checkpoint-only needs --checkpoint DIR")
    agree_recipes = getattr(args, "agree_recipe", None) or ["tensor", "row", "block"]
    do_graph = not getattr(args, "no_graph", False)
    shapes = [SHAPES[n] for n in (getattr(args, "shape", None) or (["8b"] if decode_only else ["8b", "70b-layer"]))]
    if checkpoint_only:
        shapes = []
    prefills = getattr(args, "prefill", None) or ([8192] if quick else [2048, 4096, 8192])
    batches = getattr(args, "decode_batch", None) or ([32] if quick else [1, 8, 32, 64])
    context = getattr(args, "context", 4096)
    do_compile = not getattr(args, "no_compile", False)
    recipe = getattr(args, "recipe", "row")
    agree_tokens = getattr(args, "agree_tokens", None) or min(2048, max(prefills))
    if decode_only or agreement_only:
        prefills = []
    if agreement_only or prefill_only or checkpoint_only:
        batches = []
    if checkpoint_only:
        prefills = []
    console.print(f"[bold]model[/]: {env.get('gpu')}, recipe {recipe!r}, {args.repeats} interleaved rounds; "
                  f"prefill {prefills} tokens, decode batch {batches} at context {context}"
                  + ("" if do_graph else "; no CUDA graphs"))
    rows: list[dict[str, Any]] = []
    agree: list[dict[str, Any]] = []
    notes: list[str] = []
    failures = 0
    proj = getattr(args, "proj", "fused")
    for s in shapes:
        bf16 = build(s, _DEVICE)
        if proj == "fused":
            fuse_projections(bf16)
        if not (decode_only or prefill_only):
            agree += _agreement(s, bf16, agree_recipes, agree_tokens)
        if agreement_only:
            del bf16
            continue
        fp8 = to_fp8(bf16, recipe)
        fp8c = compiled(fp8) if do_compile else None
        variants = {"bf16": bf16, "fp8": fp8, **({"fp8c": fp8c} if fp8c is not None else {})}
        with torch.no_grad():
            for seq in prefills:
                x, pos = _inputs(s, 1, seq, _DEVICE)
                fns = {k: (lambda m=m: m(x, pos)) for k, m in variants.items()}
                for fn in fns.values():
                    fn()  # compile / warm up outside the timed rounds
                times = _bench(fns, args, rep_ms=400)
                rows.append(_row(H, "prefill", s, seq, 1, seq, times))
            if s.vocab:  # decode: a model with a head (the 8b shape)
                for b in batches:
                    dense = DenseCache(s, b, context + 1, _DEVICE)
                    paged = PagedCache(s, b, context + 1, _DEVICE)
                    fill_caches(s, dense, paged, context)
                    tok, _ = _inputs(s, b, 1, _DEVICE)
                    pos = torch.full((b, 1), context, device=_DEVICE)
                    # Static inputs: the token ids, positions and the caches' slot/length tensors stay put, so the
                    # graphs replay the same step (position `context`) the eager calls run.
                    fns = {k: (lambda m=m, c=(dense if k == "bf16" else paged): m(tok, pos, c, decode=True))
                           for k, m in variants.items()}
                    for fn in fns.values():
                        fn()
                    graphs = graph_steps(fns) if do_graph else {}
                    times = _bench({**fns, **graphs}, args, rep_ms=200, graphed=set(graphs.values()))
                    rows.append(_row(H, "decode", s, context, b, b, times))
                    rows[-1]["graphed"] = sorted(graphs)
                    del dense, paged, fns, graphs
        del bf16, fp8, fp8c, variants
        if _DEVICE == "cuda":
            torch.cuda.empty_cache()

    for r in rows:
        key = f"{r['phase']}-{r['shape']}" + (f"-b{r['batch']}-c{r['tokens']}" if r["phase"] == "decode" else "")
        tgt = TARGETS.get(key)
        if r["phase"] == "prefill" and r["tokens"] != 8192:
            tgt = None
        r["target"] = tgt
        # The best FP8 variant against BF16 run the same way (eager vs eager, graph vs graph).
        ratios = {k: r.get(f"{k}_x") for k in FP8_VARIANTS if r.get(f"{k}_x") is not None}
        r["best_variant"] = max(ratios, key=ratios.get)
        r["meets_target"] = None if tgt is None else ratios[r["best_variant"]] >= tgt
    if rows:
        H.print_table(rows, [
            H.Column("phase", justify="left"), H.Column("shape", justify="left"), H.Column("tokens"),
            H.Column("batch"),
            H.Column("bf16_tok_s", "BF16 tok/s", "{:.0f}"), H.Column("fp8_tok_s", "FP8 tok/s", "{:.0f}"),
            H.Column("fp8c_tok_s", "FP8 compiled tok/s", "{:.0f}"),
            H.Column("fp8_x", "x BF16", "{:.2f}"), H.Column("fp8c_x", "x BF16 (compiled)", "{:.2f}"),
            H.Column("bf16g_tok_s", "BF16 graphs tok/s", "{:.0f}"),
            H.Column("fp8g_x", "x BF16 (graphs)", "{:.2f}"), H.Column("fp8cg_x", "x BF16 (compiled, graphs)", "{:.2f}"),
            H.Column("target", "target x", "{:.1f}"), H.Column("meets_target", "met"),
        ], title=f"Llama-style decoder: tritonfp8 FP8 ({recipe}) vs BF16", console=console,
            caption="prefill: batch 1, logits of the last position; decode: one step of `batch` sequences at "
                    "`tokens` context; x BF16 = BF16 time / FP8 time (interleaved medians), eager vs eager; "
                    "(graphs): decode steps captured in CUDA graphs and replayed, BF16 graph vs FP8 graph, FP8 "
                    f"captured under guard policy {GRAPH_POLICY!r} (the eager guard decides on the host: a sync per "
                    "call, not capturable); met: best FP8 variant")
    if agree:
        H.print_table(agree, [
            H.Column("shape", justify="left"), H.Column("recipe", justify="left"), H.Column("tokens"),
            H.Column("cos_hidden", "cos(final hidden)", "{:.5f}"), H.Column("cos_logits", "cos(logits)", "{:.5f}"),
            H.Column("cos_hidden_emulated", "exact FP8", "{:.5f}"),
            H.Column("cos_bf16_vs_fp32", "BF16 vs FP32", "{:.5f}"),
            H.Column("cos_hidden_vs_fp32", "FP8 vs FP32", "{:.5f}"),
            H.Column("cos_update_first", "cos(update) layer 1", "{:.5f}"),
            H.Column("cos_update_min", "cos(update) worst", "{:.5f}"),
            H.Column("cos_kernel_vs_reference", "kernels vs reference", "{:.6f}"),
            H.Column("ok", f">= {MIN_COSINE}"),
        ], title="Agreement with BF16 (random weights, random tokens)", console=console,
            caption="cos(final hidden) >= 0.99 is the criterion. exact FP8: the same FP8 model computed "
                    "by the library's plain-PyTorch references (no kernel) vs BF16: what FP8 rounding itself gives "
                    "on this network. BF16 vs FP32: the BF16 model against the same weights in fp32 (how much the "
                    "network amplifies rounding with depth). cos(update): one layer's own error, its attention + "
                    "MLP output given the BF16 model's input to it (no error carried in). kernels vs reference: "
                    "the worst FP8 module against the reference on the same input (a kernel or scale bug shows "
                    "here). "
                    "See the suite's docstring")
        H.print_table(agree, [H.Column("shape", justify="left"), H.Column("recipe", justify="left")]
                      + [H.Column(f"mod_{k}", k, "{:.5f}") for k in MODULE_KINDS
                         if any(f"mod_{k}" in a for a in agree)]
                      + [H.Column("norm_ratio_worst", "norm ratio (worst)", "{:.4f}"),
                         H.Column("kernel_vs_reference_worst", "kernels vs reference: worst at", justify="left")],
                      title="Per module: worst cosine vs BF16 over the layers (each module on the BF16 input)",
                      console=console,
                      caption="each FP8 linear on the BF16 linear's input, the FP8 attention core on the BF16 "
                              "q/k/v; a module kind far below the others would point at a wrong scale there. norm "
                              "ratio: ||FP8 out|| / ||BF16 out|| furthest from 1 over all modules (a factor common "
                              "to a whole output, invisible to the cosine)")
    failures += sum(1 for a in agree if not a["ok"])

    ck_rows = []
    if ckpt:
        ck_rows = checkpoint_agreement(ckpt, getattr(args, "text", None), agree_recipes,
                                       tokens=getattr(args, "checkpoint_tokens", None))
        b, n = ck_rows[0]["batch"], ck_rows[0]["tokens"]
        H.print_table(ck_rows, [H.Column("variant", justify="left"), H.Column("ppl", "perplexity", "{:.3f}"),
                                H.Column("next_token_agree", "next-token agreement", "{:.4f}"),
                                H.Column("cos_hidden", "cos(final hidden)", "{:.5f}"),
                                H.Column("cos_logits", "cos(logits)", "{:.5f}"),
                                H.Column("cos_hidden_vs_fp32", "cos(final hidden) vs FP32", "{:.5f}"),
                                H.Column("cos_hidden_emulated", "exact FP8", "{:.5f}"),
                                H.Column("cos_kernel_vs_exact", "kernels vs exact", "{:.6f}"),
                                H.Column("ok", f">= {MIN_COSINE}")],
                      title=f"checkpoint {ckpt}: {b} x {n} tokens, vs BF16", console=console,
                      caption="trained weights: cos(final hidden) (after the final norm) vs the BF16 model is the "
                              "criterion; the fp32 row is BF16's own rounding (BF16 vs FP32); next-token agreement: "
                              "argmax equal to BF16's at every position; exact FP8: the same FP8 model in "
                              "plain-PyTorch FP8 arithmetic (no kernel) vs BF16")
        failures += sum(1 for r in ck_rows if r.get("ok") is False)
    stats = tritonfp8.stats()
    if stats.total_fallbacks:
        notes.append(f"guard fallbacks during the run: {stats.as_dict()['fallbacks']}")
    if not args.no_save:
        w = H.ResultsWriter("model", out_dir=args.out, env=env)
        path = w.write(rows + [{"phase": "agreement", **a} for a in agree]
                       + [{"phase": "checkpoint", **c} for c in ck_rows],
                       config={"recipe": recipe, "prefill": prefills, "decode_batch": batches, "context": context,
                               "compile": do_compile, "shapes": [s.name for s in shapes],
                               "decode_only": decode_only, "agreement_only": agreement_only, "prefill_only": prefill_only,
                               "agreement_recipes": agree_recipes, "cuda_graphs": do_graph, "proj": proj,
                               "graph_guard_policy": GRAPH_POLICY if do_graph else None,
                               "variants": VARIANTS, "checkpoint": ckpt,
                               "checkpoint_only": checkpoint_only}, notes=notes)
        if rows:
            labels = [f"{r['phase']} {r['shape']} {r['tokens']}"
                      + (f" b{r['batch']}" if r["phase"] == "decode" else "") for r in rows]
            series = {"FP8 eager": [r.get("fp8_x") for r in rows]}
            if do_compile:
                series["FP8 compiled"] = [r.get("fp8c_x") for r in rows]
            if do_graph and any(r.get("fp8g_x") is not None for r in rows):
                series["FP8 (graphs)"] = [r.get("fp8g_x") for r in rows]
                if do_compile:
                    series["FP8 compiled (graphs)"] = [r.get("fp8cg_x") for r in rows]
            H.plot_bars(w.png_path, labels, series, ylabel="speedup over BF16 (x; graphs: over BF16 graphs)",
                        title=f"tritonfp8 FP8 ({recipe}) vs BF16", hline=(1.0, "BF16"))
        console.print(f"results: {path}")
    return 1 if failures else 0


def _row(H, phase: str, s: Shape, tokens: int, batch: int, new_tokens: int, times: dict) -> dict:
    t = {k: H.summarize(v) for k, v in times.items()}
    row = {"phase": phase, "shape": s.name, "tokens": tokens, "batch": batch,
           "rounds_ms": {k: list(v) for k, v in times.items()}}
    for k, tk in t.items():
        row[f"{k}_ms"] = tk.median
        row[f"{k}_tok_s"] = new_tokens / (tk.median * 1e-3)
        row[f"{k}_spread"] = tk.spread
    for k in FP8_VARIANTS:
        base = "bf16g" if k.endswith("g") else "bf16"
        if k in times and base in times:
            c = H.compare(times[k], times[base])
            row[f"{k}_x"], row[f"{k}_x_lo"], row[f"{k}_x_hi"], row[f"{k}_verdict"] = c.ratio, c.lo, c.hi, c.verdict
    return row


_DEFAULT_TEXT = (
    "The transistor was invented at Bell Labs in 1947. Over the following decades engineers learned to place "
    "ever more of them on a single chip of silicon, and the cost of computation fell by many orders of magnitude. "
    "Modern accelerators multiply matrices in low precision formats, trading a little accuracy for a large gain "
    "in throughput, and careful scaling keeps the results close to those computed in higher precision."
)


CHECKPOINT_MAX_SEQS = 8


def checkpoint_inputs(tok, text: str, tokens: int | None, max_positions: int, seqs: int = CHECKPOINT_MAX_SEQS,
                      device=None) -> torch.Tensor:
    """Token ids (B, S) for :func:`checkpoint_agreement`: ``text`` tokenized and cut into up to ``seqs``
    consecutive sequences of ``tokens`` (default: the checkpoint's ``max_positions``, at most the text's length);
    no padding, so the FP8 attention runs its dense causal path."""
    ids = tok(text, return_tensors="pt").input_ids[0]
    n = min(tokens or max_positions, max_positions, ids.numel())
    if n < 2:
        raise ValueError(f"text: {ids.numel()} tokens, need at least 2")
    b = max(1, min(seqs, ids.numel() // n))
    return ids[: b * n].view(b, n).to(device or _DEVICE)


def _reference_attention_hf(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """transformers attention interface (query (B, Hq, S, D)) computed by :func:`reference_attention`: exact FP8
    arithmetic for the causal prefill of :func:`checkpoint_agreement` (unpadded, Sq = Sk)."""
    if attention_mask is not None or query.shape[2] != key.shape[2]:
        raise ValueError("attention_mask: the exact-FP8 reference covers unpadded causal prefill only")
    q, k, v = query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2)
    return reference_attention(q, k, v, softmax_scale=scaling), None


def _emulated_hf(fp8_model: nn.Module) -> nn.Module:
    """A converted transformers model (sharing its weights) with every FP8Linear computed by
    :class:`ReferenceFP8Linear` and attention by :func:`reference_attention`: exact FP8 arithmetic, no kernel."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, flash_attention_mask

    AttentionInterface.register("tritonfp8-reference", _reference_attention_hf)
    AttentionMaskInterface.register("tritonfp8-reference", flash_attention_mask)
    m = with_reference_linears(fp8_model)
    m.set_attn_implementation("tritonfp8-reference")
    return m


def checkpoint_agreement(path: str, text_file: str | None, recipes, tokens: int | None = None,
                         seqs: int = CHECKPOINT_MAX_SEQS, device=None, exact: bool = True) -> list[dict]:
    """A local transformers causal-LM checkpoint in BF16 (SDPA), FP32 (the same weights) and FP8 per recipe
    (:func:`tritonfp8.integrations.transformers.convert`: FP8 linears, lm_head kept in BF16, FP8 attention), on
    ``text_file`` (default: the checkpoint's ``eval.txt`` if it has one, else a built-in paragraph).

    One row per variant: perplexity, next-token agreement with BF16 (argmax at every position), cosine with BF16
    of the final hidden states (after the final norm: what lm_head sees; the issue's criterion, ``ok``) and of the
    logits, and the final-hidden cosine with FP32. The FP32 row's ``cos_hidden`` is BF16 vs FP32 (the rounding
    scale of BF16 itself). With ``exact``, FP8 rows also carry ``cos_hidden_emulated``: the same FP8 model in
    plain-PyTorch FP8 arithmetic vs BF16 (kernels aside), and ``cos_kernel_vs_exact``."""
    import os

    from transformers import AutoModelForCausalLM, AutoTokenizer

    import tritonfp8.integrations.transformers as tfp8

    device = device or _DEVICE
    if text_file is None and os.path.exists(os.path.join(path, "eval.txt")):
        text_file = os.path.join(path, "eval.txt")
    text = open(text_file, encoding="utf-8").read() if text_file else _DEFAULT_TEXT
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    ref = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.bfloat16,
                                               attn_implementation="sdpa").to(device).eval()
    ids = checkpoint_inputs(tok, text, tokens, getattr(ref.config, "max_position_embeddings", 2048), seqs, device)

    def run_model(m):
        out = m(ids, output_hidden_states=True)
        return out.hidden_states[-1].float(), out.logits.float()

    def row(variant, h, lg, **extra):
        nll = F.cross_entropy(lg[:, :-1].reshape(-1, lg.shape[-1]), ids[:, 1:].reshape(-1))
        return {"variant": variant, "checkpoint": path, "batch": ids.shape[0], "tokens": ids.shape[1],
                "ppl": math.exp(float(nll)),
                "next_token_agree": float((lg.argmax(-1) == l_ref.argmax(-1)).float().mean()),
                "cos_hidden": cosine(h, h_ref), "cos_logits": cosine(lg, l_ref),
                "cos_hidden_vs_fp32": cosine(h, h32), **extra}

    out = []
    with torch.no_grad():
        h_ref, l_ref = run_model(ref)
        m32 = copy.deepcopy(ref).float()
        h32, l32 = run_model(m32)
        del m32
        out.append(row("bf16", h_ref, l_ref))
        out.append(row("fp32", h32, l32))
        for r in recipes:
            m = tfp8.convert(copy.deepcopy(ref), recipe=r)
            h, lg = run_model(m)
            extra = {}
            if exact:
                h_em, _ = run_model(_emulated_hf(m))
                extra = {"cos_hidden_emulated": cosine(h_em, h_ref), "cos_kernel_vs_exact": cosine(h, h_em)}
            out.append(row(f"fp8 {r}", h, lg, recipe=r, **extra))
            out[-1]["ok"] = out[-1]["cos_hidden"] >= MIN_COSINE
            del m
    return out


def profile_case(args: argparse.Namespace):
    """One FP8 decoder layer of the 70B shape on 8192 tokens (for ``--profile``)."""
    s = SHAPES["70b-layer"]
    m = to_fp8(build(s, _DEVICE), getattr(args, "recipe", "row"))
    x, pos = _inputs(s, 1, 8192, _DEVICE)

    def fn():
        with torch.no_grad():
            m(x, pos)

    return fn, f"70b-layer FP8 prefill, 8192 tokens, recipe {getattr(args, 'recipe', 'row')}"
