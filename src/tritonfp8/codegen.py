"""Offline code generation: compile a library kernel for a target arch on any machine and read its SASS.

No GPU is needed: ``triton.compile`` lowers to PTX and runs the ptxas bundled with Triton; ``cuobjdump`` (also
bundled) disassembles the cubin. What we report per kernel:

- instruction count, tensor-core instructions (``QGMMA`` = FP8 wgmma, ``HGMMA`` = 16-bit wgmma, ``HMMA``/``IMMA`` = mma.sync),
- registers per thread, spill stores/loads (``STL``/``LDL``) and stack frame bytes, static shared memory,
- whether compiling the same config under the "cutlass" name changes the SASS versus the plain name
  (ptxas keys optimisations on names containing "cutlass"; on sm_90 we measured identical SASS, on sm_100 not).

Each kernel module exposes ``codegen_specs() -> dict[str, CodegenSpec]``; :data:`KERNEL_MODULES` lists the modules.
``python -m tritonfp8 codegen KERNEL --arch 90`` and the codegen tests use :func:`inspect_kernel`.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

# Modules that contribute kernels to the codegen registry (imported lazily; a missing one is skipped).
KERNEL_MODULES = (
    "tritonfp8._kernels.quantize",
    "tritonfp8._kernels.gemm",
    "tritonfp8._kernels.attention",
    "tritonfp8._kernels.decode",
    "tritonfp8._kernels.decode_gluon",
    "tritonfp8._kernels.gemm_gluon",
    "tritonfp8._kernels.attention_gluon",
)


@dataclass(frozen=True)
class CodegenSpec:
    """One compilable kernel configuration.

    ``fn`` is a ``named_jit`` kernel; ``signature`` maps every runtime argument to a Triton type string
    (``*fp8e4nv``, ``i32``, ``tensordesc<fp8e4nv[128, 128]>``) and constexprs to ``"constexpr"``;
    ``constexprs`` gives their values *except* ``KERNEL_NAME``, which is built from ``name`` (a
    :class:`tritonfp8.naming.KernelName` or a callable ``arch -> KernelName``).
    """

    fn: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    name: Any
    num_warps: int = 4
    num_stages: int = 3
    description: str = ""
    min_arch: int = 80
    options: dict[str, Any] = field(default_factory=dict)
    # Arguments (pointers or ints) that the launcher's specialization sees as divisible by 16, as Triton marks
    # 16-byte-aligned pointers and multiples of 16 at run time; without it offline loads are not vectorized.
    divisible: tuple[str, ...] = ()

    def kernel_name(self, arch: int, mode: str) -> str:
        kn = self.name(arch) if callable(self.name) else self.name.evolve(arch=arch)
        return kn.build(mode)


@dataclass
class SassReport:
    kernel: str
    name: str
    arch: int
    instructions: int
    qgmma: int
    hgmma: int
    hmma: int
    imma: int
    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    shared_bytes: int
    sass_sha1: str
    cutlass_name_changes_sass: bool | None = None
    plain_name: str | None = None
    gmma_waited: int = 0
    mufu_ex2: int = 0
    mufu_in_flight: int = 0
    gmma_loop: int = 0
    loop_spills: int = 0  # STL / LDL inside a loop (:func:`loop_spills`)
    sass: str = field(default="", repr=False)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d.pop("sass", None)
        return d


def _tool(name: str) -> str:
    import triton

    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    return path if os.path.exists(path) else name


def registry() -> dict[str, CodegenSpec]:
    """All kernel configs the library can compile offline, by name."""
    specs: dict[str, CodegenSpec] = {}
    for mod_name in KERNEL_MODULES:
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as e:
            if e.name == mod_name:
                continue
            raise
        fn: Callable[[], dict[str, CodegenSpec]] | None = getattr(mod, "codegen_specs", None)
        if fn is not None:
            specs.update(fn())
    return specs


def compile_spec(spec: CodegenSpec, arch: int = 90, mode: str = "cutlass"):
    """Compile ``spec`` for ``sm_<arch>`` under the ``mode`` name; returns Triton's CompiledKernel."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    constexprs = dict(spec.constexprs)
    constexprs["KERNEL_NAME"] = spec.kernel_name(arch, mode)
    signature = dict(spec.signature)
    signature["KERNEL_NAME"] = "constexpr"
    arg_names = spec.fn.arg_names
    attrs = {(arg_names.index(n),): [["tt.divisibility", 16]] for n in spec.divisible}
    if getattr(spec.fn, "is_gluon", lambda: False)():
        from triton.experimental.gluon._runtime import GluonASTSource

        src = GluonASTSource(fn=spec.fn, signature=signature, constexprs=constexprs, attrs=attrs)
    else:
        src = ASTSource(fn=spec.fn, signature=signature, constexprs=constexprs, attrs=attrs)
    options = {"num_warps": spec.num_warps, "num_stages": spec.num_stages, **spec.options}
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)


def disassemble(cubin: bytes) -> tuple[str, str]:
    """(SASS text, resource-usage text) of a cubin, using the cuobjdump bundled with Triton."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        sass = subprocess.run([_tool("cuobjdump"), "-sass", path], capture_output=True, text=True, check=True).stdout
        res = subprocess.run(
            [_tool("cuobjdump"), "-res-usage", path], capture_output=True, text=True, check=True
        ).stdout
    return sass, res


_INSTR = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", re.M)


def _normalized_sass(sass: str, name: str) -> str:
    """SASS with the function name removed, so two names can be compared instruction for instruction."""
    return sass.replace(name, "KERNEL")


def _gmma_overlap_facts(sass: str) -> tuple[int, int]:
    """(wgmma instructions tagged ``gsb0``, MUFU.EX2 issued while a wgmma group is in flight).

    A chain of wgmma instructions into one accumulator normally carries ``gsb0`` on its last instruction only, and
    the warp waits for the group at a later ``WARPGROUP.DEPBAR``; when ptxas serializes the wgmmas (it does so
    silently, e.g. when an in-flight accumulator would have to be copied, or registers are short) every
    instruction carries ``gsb0`` and is followed by its own wait. MUFU.EX2 between a wgmma and the next
    WARPGROUP.DEPBAR runs on the SFU while the tensor core works (the softmax/GEMM overlap). Groups are counted:
    ``DEPBAR.LE gsb0, N`` leaves the N newest in flight (a MUFU.EX2 after ``LE 1`` still overlaps the last one).
    Straight-line count: a loop's back edge is not followed."""
    waited = in_flight = 0
    open_group = False  # wgmmas issued since the last gsb0 (a group not yet committed)
    outstanding = 0  # committed groups not yet waited for
    for line in sass.splitlines():
        m = _INSTR.match(line)
        if not m:
            continue
        op = m.group(2)
        if op.startswith(("QGMMA", "HGMMA")):
            open_group = "gsb0" not in line
            outstanding += "gsb0" in line
            waited += "gsb0" in line
        elif op.startswith("WARPGROUP.DEPBAR"):
            n = re.search(r"gsb0,\s*(0x[0-9a-f]+|\d+)", line)
            outstanding = min(outstanding, int(n.group(1), 0)) if n else 0
            open_group = open_group and outstanding > 0
        elif op.startswith("MUFU.EX2") and (open_group or outstanding > 0):
            in_flight += 1
    return waited, in_flight


_ADDR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*)$", re.M)
_BACK = re.compile(r"\bBRA\s+(?:\S+,\s*)?0x([0-9a-f]+)")


def _sass_rows(sass: str) -> list[tuple[int, str]]:
    """(address, instruction text) of each SASS line."""
    return [(int(m.group(1), 16), m.group(2)) for m in _ADDR.finditer(sass)]


def _back_edges(rows: list[tuple[int, str]], predicated_only: bool = False):
    """(index of the branch in ``rows``, target address, branch address) of each backward branch."""
    for i, (addr, text) in enumerate(rows):
        m = _BACK.search(text)
        if m and int(m.group(1), 16) < addr and (text.startswith("@") or not predicated_only):
            yield i, int(m.group(1), 16), addr


def gmma_loop_size(sass: str) -> int:
    """Instructions in the innermost loop that issues tensor-core MMAs (the smallest span from a backward branch's
    target to the branch that contains a QGMMA or HGMMA); 0 when no loop does. The steady-state cost per K block
    beside the MMAs themselves: two kernels with the same MMAs per iteration and different loop sizes differ in
    address arithmetic, waits or uniform-register use (session 14: the grouped schedule's G_PAD)."""
    rows = _sass_rows(sass)
    best = 0
    for i, target, _ in _back_edges(rows):
        body = [t for a, t in rows[:i + 1] if a >= target]
        if any("QGMMA" in t or "HGMMA" in t for t in body) and (best == 0 or len(body) < best):
            best = len(body)
    return best


def loop_spills(sass: str) -> int:
    """Spill instructions (STL / LDL) inside some loop (between a predicated backward branch's target and the
    branch): the spills that cost every iteration, as against those in a prologue or epilogue. Unpredicated
    backward branches are not loops: ptxas places the retry paths of mbarrier waits after the function's body and
    returns from them with a plain ``BRA`` to the wait."""
    rows = _sass_rows(sass)
    spans = [(target, addr) for _, target, addr in _back_edges(rows, predicated_only=True)]
    return sum(1 for addr, text in rows if text.startswith(("STL", "LDL")) and any(a <= addr <= b for a, b in spans))


def sass_facts(sass: str, res_usage: str) -> dict:
    ops = [m.group(2) for m in _INSTR.finditer(sass)]
    waited, in_flight = _gmma_overlap_facts(sass)
    base = [op.split(".")[0] for op in ops]
    reg = re.search(r"REG:(\d+)", res_usage)
    stack = re.search(r"STACK:(\d+)", res_usage)
    shared = re.search(r"SHARED:(\d+)", res_usage)
    return {
        "instructions": len(ops),
        "qgmma": base.count("QGMMA"),
        "hgmma": base.count("HGMMA"),
        "hmma": base.count("HMMA"),
        "imma": base.count("IMMA"),
        "spill_stores": base.count("STL"),
        "spill_loads": base.count("LDL"),
        "registers": int(reg.group(1)) if reg else -1,
        "stack_bytes": int(stack.group(1)) if stack else -1,
        "shared_bytes": int(shared.group(1)) if shared else -1,
        "gmma_waited": waited,
        "mufu_ex2": ops.count("MUFU.EX2"),
        "mufu_in_flight": in_flight,
        "gmma_loop": gmma_loop_size(sass),
        "loop_spills": loop_spills(sass),
    }


def inspect_kernel(kernel: str, arch: int = 90, compare_names: bool = True) -> SassReport:
    """Compile registry kernel ``kernel`` for ``sm_<arch>`` and report its SASS facts.

    With ``compare_names`` the same config is compiled a second time under the plain name, and the report says
    whether the two SASS listings differ (names themselves removed before comparing).
    """
    specs = registry()
    if kernel not in specs:
        raise ValueError(f"kernel: unknown kernel {kernel!r}; known: {', '.join(sorted(specs)) or '(none)'}")
    spec = specs[kernel]
    ck = compile_spec(spec, arch, "cutlass")
    name = ck.metadata.name
    sass, res = disassemble(ck.asm["cubin"])
    facts = sass_facts(sass, res)
    # Static shared memory is 0 for Triton kernels: they use dynamic shared memory, reported in the metadata.
    facts["shared_bytes"] = max(facts["shared_bytes"], int(getattr(ck.metadata, "shared", 0)))
    norm = _normalized_sass(sass, name)
    report = SassReport(
        kernel=kernel,
        name=name,
        arch=arch,
        sass_sha1=hashlib.sha1(norm.encode()).hexdigest(),
        sass=sass,
        **facts,
    )
    if compare_names:
        ck2 = compile_spec(spec, arch, "plain")
        sass2, _ = disassemble(ck2.asm["cubin"])
        report.plain_name = ck2.metadata.name
        report.cutlass_name_changes_sass = _normalized_sass(sass2, ck2.metadata.name) != norm
    return report
