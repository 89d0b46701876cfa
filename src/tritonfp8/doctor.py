"""``python -m tritonfp8 doctor``: what this machine has and which code path each op will take on it.

Prints three rich tables: the GPU (name, compute capability, SMs, memory, FP8 tensor cores, TMA/wgmma, driver,
datasheet peaks), the software (torch, triton, CUDA, cuDNN, the ptxas Triton uses, numpy, Nsight Compute,
``TRITON_INTERPRET``, the kernel-naming mode), and per op whether its module is present and which path a call
would take here. Exit status 0, or 1 when an op module exists but fails to import.

An op module may define ``backend_path(device: torch.device) -> str`` to describe its own path; otherwise the
library-wide rule of :mod:`tritonfp8._backend` is shown.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import torch

# (op, module) whose path is reported.
OPS: tuple[tuple[str, str], ...] = (
    ("quantize", "tritonfp8.quantize"),
    ("gemm", "tritonfp8.gemm"),
    ("attention", "tritonfp8.attention"),
    ("decode", "tritonfp8.decode"),
)


def library_path(capability: tuple[int, int] | None, interpreting: bool) -> str:
    """The path a call takes under :mod:`tritonfp8._backend`'s rules, for a GPU of ``capability`` (None: no GPU)."""
    if capability is None:
        if interpreting:
            return "Triton interpreter on CPU tensors (TRITON_INTERPRET=1): correct, slow; for tests and demos"
        return "none for CPU tensors (they raise); set TRITON_INTERPRET=1 to run the kernels in the interpreter"
    major, minor = capability
    if major == 9:
        return "Hopper: TMA descriptors + wgmma (QGMMA) kernels"
    if (major, minor) >= (8, 9):
        return "FP8 tensor cores without TMA/wgmma: pointer-based kernels (mma.sync)"
    return "no FP8 tensor cores: BF16 fallback (warns once)"


def quantize_path(capability: tuple[int, int] | None, interpreting: bool) -> str:
    """Quantization needs FP8 conversion instructions (sm_89+), not tensor cores; older GPUs use the torch path."""
    if capability is None:
        return library_path(None, interpreting)
    if capability >= (8, 9):
        return "Triton elementwise kernels (FP8 conversion instructions, sm_89+)"
    return "PyTorch reference path (no FP8 conversion before sm_89; warns once)"


# Ops whose path differs from the library-wide rule, when their module has no backend_path().
_OP_PATHS = {"quantize": quantize_path}


def _ver(mod_name: str) -> str:
    try:
        return importlib.import_module(mod_name).__version__
    except Exception:
        return "not installed"


def gather() -> dict[str, Any]:
    """Everything the doctor prints, as a dict (also handy in bug reports)."""
    from tritonfp8 import _backend, naming
    from tritonfp8.bench import harness

    info: dict[str, Any] = {"env": harness.environment_info()}
    cap = None
    if torch.cuda.is_available():
        cap = torch.cuda.get_device_capability()
    info["capability"] = cap
    info["interpreting"] = _backend.interpreting()
    info["ncu"] = harness.find_ncu()
    try:
        info["naming"] = naming.naming_mode()
    except ValueError as e:
        info["naming"] = f"invalid: {e}"
    info["numpy"] = _ver("numpy")
    ops = []
    device = torch.device("cuda") if cap is not None else torch.device("cpu")
    for op, mod_name in OPS:
        entry = {"op": op, "module": mod_name}
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as e:
            if e.name == mod_name:
                entry.update(status="not written yet", path="-")
                ops.append(entry)
                continue
            entry.update(status="import FAILED", path=f"{type(e).__name__}: {e}", failed=True)
            ops.append(entry)
            continue
        except Exception as e:
            entry.update(status="import FAILED", path=f"{type(e).__name__}: {e}", failed=True)
            ops.append(entry)
            continue
        path = _OP_PATHS.get(op, library_path)(cap, info["interpreting"])
        own = getattr(mod, "backend_path", None)
        if callable(own):
            try:
                path = str(own(device))
            except Exception as e:
                path = f"{path} (backend_path failed: {type(e).__name__}: {e})"
        entry.update(status="available", path=path)
        ops.append(entry)
    info["ops"] = ops
    return info


def run(args: Any = None) -> int:
    from rich.table import Table

    from tritonfp8.bench import harness

    console = harness.make_console()
    info = gather()
    env, cap = info["env"], info["capability"]

    gpu = Table(title="GPU", show_header=False)
    gpu.add_column("fact")
    gpu.add_column("value")
    if cap is None:
        gpu.add_row("GPU", "[bold yellow]no CUDA GPU found[/] (torch.cuda.is_available() is False)")
        gpu.add_row("FP8 tensor cores", "n/a here: kernels run only in the Triton interpreter (CPU)")
    else:
        fp8 = cap >= (8, 9)
        gpu.add_row("GPU", f"{env['gpu']} ({env['sm_count']} SMs, {env['gpu_memory_gib']} GiB)")
        gpu.add_row("compute capability", f"{cap[0]}.{cap[1]} (sm_{cap[0]}{cap[1]})")
        gpu.add_row("FP8 tensor cores", "yes (e4m3, e5m2)" if fp8 else "no (needs sm_89 or newer)")
        gpu.add_row("TMA + wgmma", "yes (Hopper)" if cap[0] == 9 else "no (Hopper sm_90 only)")
        gpu.add_row("driver", str(env["driver"]))
        fp8_peak, bf16_peak, hbm = (harness.peak(k, env["gpu"]) for k in ("fp8", "bf16", "hbm_tbps"))
        if fp8_peak is not None:
            gpu.add_row("datasheet peaks", f"FP8 {fp8_peak:.0f} / BF16 {bf16_peak:.0f} TFLOPS dense, HBM {hbm} TB/s")
        else:
            gpu.add_row("datasheet peaks", "unknown GPU: not in tritonfp8.bench.harness.GPU_PEAKS")
    console.print(gpu)

    sw = Table(title="software", show_header=False)
    sw.add_column("fact")
    sw.add_column("value")
    sw.add_row("tritonfp8", env["tritonfp8"])
    sw.add_row("torch", f"{env['torch']} (CUDA {env['cuda']})" if env["cuda"] else f"{env['torch']} (CPU build)")
    sw.add_row("triton", env["triton"])
    sw.add_row("cuDNN", str(env["cudnn"]) if env["cudnn"] else "n/a")
    sw.add_row("ptxas (used by Triton)", f"{env['ptxas'] or 'unknown version'} at {env['ptxas_path']}")
    numpy_note = ""
    try:
        major, minor = (int(x) for x in info["numpy"].split(".")[:2])
        if (major, minor) >= (2, 3):
            numpy_note = " [yellow](the interpreter of triton 3.6 breaks on numpy >= 2.3)[/]"
    except ValueError:
        pass
    sw.add_row("numpy", info["numpy"] + numpy_note)
    sw.add_row("Nsight Compute (ncu)", info["ncu"] or "not found (bench --profile needs it)")
    interp = os.environ.get("TRITON_INTERPRET")
    if info["interpreting"]:
        sw.add_row("TRITON_INTERPRET", f"set ({interp}): kernels run in the interpreter" +
                   (" [yellow]even though a GPU is present[/]" if cap is not None else ""))
    else:
        sw.add_row("TRITON_INTERPRET", "not set" if interp is None else f"{interp!r} (off)")
    sw.add_row("kernel names", f"{info['naming']} (TRITONFP8_KERNEL_NAMES={os.environ.get('TRITONFP8_KERNEL_NAMES', 'unset')})")
    console.print(sw)

    ops = Table(title="paths per op on this machine")
    ops.add_column("op")
    ops.add_column("module")
    ops.add_column("status")
    ops.add_column("path")
    failed = False
    for e in info["ops"]:
        status = e["status"]
        if e.get("failed"):
            failed = True
            status = f"[bold red]{status}[/]"
        ops.add_row(e["op"], e["module"], status, e["path"])
    console.print(ops)
    if cap is None:
        console.print("no CUDA GPU: `python -m tritonfp8 bench --quick` runs the interpreter correctness demo; "
                      "`python -m tritonfp8 codegen NAME --arch 90` compiles kernels for Hopper offline.")
    return 1 if failed else 0
