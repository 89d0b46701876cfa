"""Integrations with model libraries. Each submodule imports its library lazily and only when imported itself:

- :mod:`tritonfp8.integrations.transformers`: the ``"tritonfp8"`` attention implementation for Hugging Face
  transformers models (Llama-style), and a one-line FP8 conversion of such a model.
- :mod:`tritonfp8.integrations.fused_qkv`: :func:`tritonfp8.fuse_qkv`, the fused FP8 QKV projection in such models
  (imports nothing from transformers until a model is fused).
"""
