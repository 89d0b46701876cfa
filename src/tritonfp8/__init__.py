"""tritonfp8: FP8 tensor-core kernels (GEMM, attention, quantization) for NVIDIA Hopper, written in Triton.

Scales everywhere are fp32 *dequantization* factors, as in ``torch._scaled_mm``: ``x ≈ x_fp8.float() * scale``.
Every op has a plain-PyTorch reference beside it (``*_torch``), used by the tests and the fallbacks.
"""

from tritonfp8._formats import E4M3, E5M2, FP8Format
from tritonfp8.naming import kernel_names, set_kernel_names

# --- quantization (issue: foundation) ---
# --- gemm ---
# --- attention ---
# --- decode ---

__version__ = "0.1.0"
