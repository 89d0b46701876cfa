"""Session 40, offline (no GPU): what a Gluon program launched as a thread-block cluster compiles to for sm_90
(Triton 3.6), for a merge of the decode splits inside a cluster (benchmarks/NOTES.md, open leads).

The probe kernel has every CTA of a 2-CTA cluster load its own [32, 128] E4M3 box by TMA (its row from the cluster
id and %cluster_ctarank), wait on its own mbarrier, reduce the rows and store them; then a cluster barrier by inline
PTX. Every layout carries ``cga_layout`` with zero bases (the tensor replicated on each CTA): without it Gluon
refuses a layout of one CTA in a program of two. Printed: the PTX lines that show the cluster launch, the TMA, the
barrier and how the store is predicated.

What it showed (session 40): it compiles (``.reqnctapercluster 2``); each CTA issues its own TMA copy and waits on
its own mbarrier; program_id(0) is ``%clusterid.x``; but a store of a replicated tensor is predicated on
``%cluster_ctarank == 0``: Triton takes replicated values as equal on every CTA and stores them once. So a merge in
a cluster must send the other CTAs' partials by something Triton does not predicate (an inline-PTX store, or a
tensor split across the CTAs by a non-zero cga basis), then meet at the cluster barrier, and let CTA 0 merge and
store. Usage: ``python scripts/gluon_cluster_probe.py``.
"""
from __future__ import annotations

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

NC = 2  # CTAs per cluster (num_ctas)


@gluon.jit
def _probe(desc, out_ptr):
    sh: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2, cga_layout=[[0, 0]])
    tile: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [1, 1], [1, 0], cga_layout=[[0, 0]])
    rows: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0], cga_layout=[[0]])
    buf = gl.allocate_shared_memory(gl.float8e4nv, [32, 128], sh)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout(cga_layout=[[0]]))
    mbarrier.init(bar, count=1)
    r = gl.arange(0, 32, rows)
    rank = gl.inline_asm_elementwise("mov.u32 $0, %cluster_ctarank;", "=r,r", [r], dtype=gl.int32, is_pure=True,
                                     pack=1)
    box = gl.program_id(0) * 2 + gl.max(rank, axis=0)
    mbarrier.expect(bar, 32 * 128)
    tma.async_copy_global_to_shared(desc, [box * 32, 0], bar, buf)
    mbarrier.wait(bar, 0)
    s = gl.convert_layout(gl.sum(buf.load(tile).to(gl.float32), axis=1), rows)
    gl.store(out_ptr + box * 32 + r, s)
    gl.inline_asm_elementwise("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned; "
                              "mov.u32 $0, 0;", "=r,r", [r], dtype=gl.int32, is_pure=False, pack=1)


def main() -> None:
    desc = ("tensordesc<fp8e4nv[32, 128],NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2, "
            "cga_layout=[[0, 0]])>")
    src = GluonASTSource(fn=_probe, signature={"desc": desc, "out_ptr": "*fp32"}, constexprs={})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 1, "num_ctas": NC})
    lines = [x.strip() for x in k.asm["ptx"].splitlines()]
    keys = ("reqnctapercluster", "clusterid", "cluster_ctarank", "cp.async.bulk", "mbarrier.try_wait",
            "barrier.cluster", "st.global", "setp.ne.b32")
    for i, x in enumerate(lines):
        if any(key in x for key in keys):
            print(f"{i:5d}  {x}")


if __name__ == "__main__":
    main()
