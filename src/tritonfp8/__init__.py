"""tritonfp8: FP8 tensor-core kernels (GEMM, attention, quantization) for NVIDIA Hopper, written in Triton.

Scales everywhere are fp32 *dequantization* factors, as in ``torch._scaled_mm``: ``x ≈ x_fp8.float() * scale``.
Every op has a plain-PyTorch reference beside it (``*_torch``), used by the tests, the benchmarks' error columns,
the quantize / gemm fallbacks and (``attention_torch``) the attention calibration.
"""

from tritonfp8._formats import E4M3, E5M2, FP8Format
from tritonfp8.naming import kernel_names, set_kernel_names

# --- quantization (issue: foundation) ---
# The functions shadow the submodule attribute: reach the module with importlib.import_module("tritonfp8.quantize").
from tritonfp8.quantize import dequantize, dequantize_torch, quantize, quantize_torch  # noqa: E402
# --- gemm ---
# The function shadows the submodule attribute: reach the module with importlib.import_module("tritonfp8.gemm").
from tritonfp8.gemm import GemmConfig, gemm, gemm_torch  # noqa: E402
# --- grouped gemm (issue 4: MoE; contiguous groups and the masked decode variant) ---
from tritonfp8.grouped import (  # noqa: E402
    grouped_gemm, grouped_gemm_masked, grouped_gemm_masked_torch, grouped_gemm_torch,
)
# --- attention ---
# The function shadows the submodule attribute: reach the module with importlib.import_module("tritonfp8.attention").
from tritonfp8.attention import AttnConfig, attention, attention_torch  # noqa: E402
# --- decode ---
from tritonfp8.decode import DecodeConfig, decode_attention, decode_attention_torch, write_kv_cache  # noqa: E402
# --- fused QKV projection (issue 7 item 3) ---
from tritonfp8.qkv import FP8QKV, QKVProjection, qkv_projection, qkv_projection_torch  # noqa: E402
# --- integration (issue 7: custom ops, FP8Linear, precision guard) ---
from tritonfp8 import guard, nn, ops  # noqa: E402
from tritonfp8.guard import reset_stats, stats  # noqa: E402
from tritonfp8.nn import RECIPES, FP8Linear, Recipe, calibrate, convert_model  # noqa: E402
# The public ops resolve to their torch.library wrappers (tritonfp8/ops.py): the same signatures and, in eager
# calls, the same code (the wrappers call the implementations above directly); under torch.compile(fullgraph=True)
# they are single graph nodes (the plain implementations graph-break: Dynamo skips their host-side launch code).
# The op modules are imported first: importing a submodule later would rebind its name here to the module.
ops._import_implementations()
from tritonfp8.ops import attention, decode_attention, dequantize, gemm, quantize, write_kv_cache  # noqa: E402
# grouped gemm: the traceable wrappers (eager calls go straight to tritonfp8.grouped)
from tritonfp8.ops import grouped_gemm, grouped_gemm_masked  # noqa: E402
from tritonfp8.ops import qkv_projection  # noqa: E402,F811
# Fused QKV in transformers Llama-style models (imports transformers only when a model is fused)
from tritonfp8.integrations.fused_qkv import calibrate_qkv, fuse_qkv  # noqa: E402

__version__ = "0.1.0"
