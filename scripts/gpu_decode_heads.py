"""Does reading a page's KV heads together read faster than one head per program? (session 28)

The cache layout the issue fixes is (num_blocks, page, Hkv, D): a token's row holds every KV head, 128 bytes each,
so one head of one page is PAGE runs of 128 bytes at a 1 KB stride (Hkv 8). Every decode kernel of the library runs
one program per (split, KV head, sequence), so a page's 8 heads are read by 8 programs, each at its own time. The
session-24 floors (scripts/gpu_decode_floor.py) found a paged reader of that form 3-6 points of the copy below a
flat reader of the same bytes (B 8 ctx 4096: 74.5-79.3% vs 80-86%; B 32: 87-89% vs 91-94%); SDPA's BF16 peer
reads a (B, Hkv, ctx, D) cache, each head contiguous. Hypothesis: DRAM rows opened for one head's 128 bytes are
closed before the other heads' programs ask for theirs; a program that reads all (or HW) heads of a page at once
keeps each row's bytes together.

Readers timed under the bench protocol (harness.bench_interleaved: do_bench medians after the write flush, eager,
interleaved rounds), all moving the same bytes (no products, no softmax):

- ``head``: gpu_decode_floor's paged reader: grid (splits, Hkv, B), one head's [BOX, 128] boxes per program.
- ``heads{HW}``: grid (splits, Hkv / HW, B); each step one [BOX, 128] box per head (HW of them, issued back to
  back by one thread) from the same page ids; HW times the ring bytes per program, 1 / HW the programs.
- ``heads{HW}t3``: the same with one 3-D box [HW, BOX, 128] per page (a TMA view [Hkv, rows, D], strides
  [D, Hkv D, 1]: the copy engine walks the HW heads of each row itself; shared memory [HW, BOX, 128], each head's
  tile contiguous as in the decode kernel's ring).
- ``flat``, ``copy`` and the library's heuristic call, as references.

The ``heads`` forms' splits are chosen so that the ring bytes resident per SM match the ``head`` form's (see
CASES). If ``heads8`` beats ``head`` beyond the spread, a decode kernel with one
warp per KV head over a shared page ring is worth building (docs/decode.md, session 28); if not, the per-head
split is not what the floor loses to.
Prints a table; writes $OUT/results/decode-heads-<stamp>.json (benchmarks/results when $OUT is unset).
Usage on the device: ``python scripts/gpu_decode_heads.py``; offline sm_90 compile of the readers (no GPU):
``python scripts/gpu_decode_heads.py --offline``.
"""
from __future__ import annotations

import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from tritonfp8._kernels import decode_gluon as kg
from tritonfp8.naming import _repr_from_constexpr


@gluon.jit(repr=_repr_from_constexpr)
def heads_read_kernel(k_desc, v_desc, block_table_ptr, seq_lens_ptr, sink_ptr, num_blocks, max_blocks, num_splits,
                      stride_btb, PAGE: gl.constexpr, BOX: gl.constexpr, STEP: gl.constexpr, STAGES: gl.constexpr,
                      HW: gl.constexpr, T3: gl.constexpr, KERNEL_NAME: gl.constexpr = "heads_read"):
    """Grid (splits, Hkv / HW, B), one warp: the reads of HW heads' decode programs that share page ids. T3: one
    3-D box [HW, BOX, 128] per page box (descriptors over the [Hkv, rows, D] view), else HW 2-D boxes [BOX, 128]
    (descriptors over [rows, Hkv D]). Writes its step count to ``sink``. KERNEL_NAME "heads_read_l2ef": l2hint's
    pass adds evict-first hints to its TMA loads (session 32)."""
    split = gl.program_id(0)
    g = gl.program_id(1)
    b = gl.program_id(2).to(gl.int64)
    seq_len, start, end = kg._split_range(seq_lens_ptr, b, split, num_splits, max_blocks, PAGE, STEP)
    n_steps = gl.maximum(gl.cdiv(end - start, STEP), 0)
    bt_row = block_table_ptr + b * stride_btb
    NB: gl.constexpr = STEP // BOX  # boxes per step
    if T3:
        SH3: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=3)
        k_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES * NB, HW, BOX, 128], SH3)
        v_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES * NB, HW, BOX, 128], SH3)
    else:
        SH: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
        k_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, HW * STEP, 128], SH)
        v_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, HW * STEP, 128], SH)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
    fence_async_shared()
    for i in gl.static_range(STAGES):
        if i < n_steps:
            pages = kg._step_pages(bt_row, 1, i, (start,), (end,), PAGE, BOX, STEP, 1)
            _issue_heads(k_desc, v_desc, k_ring, v_ring, i, ready.index(i), pages, i, start, num_blocks, g, PAGE, BOX,
                         STEP, HW, T3)
    for i in range(0, n_steps):
        s = i % STAGES
        ahead = kg._step_pages(bt_row, 1, i + STAGES, (start,), (end,), PAGE, BOX, STEP, 1)
        mbarrier.wait(ready.index(s), (i // STAGES) & 1)
        if i + STAGES < n_steps:
            _issue_heads(k_desc, v_desc, k_ring, v_ring, s, ready.index(s), ahead, i + STAGES, start, num_blocks, g,
                         PAGE, BOX, STEP, HW, T3)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))
    pid = (b * gl.num_programs(1) + g) * gl.num_programs(0) + split
    gl.store(sink_ptr + pid, n_steps)


@gluon.jit
def _issue_heads(k_desc, v_desc, k_ring, v_ring, slot, bar, pages, i, start, num_blocks, g, PAGE: gl.constexpr,
                 BOX: gl.constexpr, STEP: gl.constexpr, HW: gl.constexpr, T3: gl.constexpr):
    """Step ``i``'s boxes of heads [g HW, (g + 1) HW) into ring slot ``slot`` (a page outside [0, num_blocks) reads
    past the view's end: zeros)."""
    mbarrier.expect(bar, HW * 2 * STEP * 128)
    n0 = start + i * STEP
    for j in gl.static_range(STEP // BOX):
        page = pages[j]
        ok = (page >= 0) & (page < num_blocks)
        row = gl.where(ok, page * PAGE + (n0 + j * BOX) % PAGE, num_blocks * PAGE)
        if T3:
            buf = slot * (STEP // BOX) + j
            tma.async_copy_global_to_shared(k_desc, [g * HW, row, 0], bar, k_ring.index(buf))
            tma.async_copy_global_to_shared(v_desc, [g * HW, row, 0], bar, v_ring.index(buf))
        else:
            for h in gl.static_range(HW):
                tma.async_copy_global_to_shared(k_desc, [row, (g * HW + h) * 128], bar,
                                                k_ring.index(slot).slice(h * STEP + j * BOX, BOX))
                tma.async_copy_global_to_shared(v_desc, [row, (g * HW + h) * 128], bar,
                                                v_ring.index(slot).slice(h * STEP + j * BOX, BOX))


def _descriptor3(view, shape, strides, block):
    """Host TMA descriptor of the 3-D [Hkv, rows, D] view (the 2-D forms use the kernel's own ``kg.descriptor``)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=3)
    return TensorDescriptor(view, shape, strides, block, layout)


def heads_fn(pc, splits: int, step: int, stages: int, hw: int, t3: bool, l2ef: bool = False):
    """A call of the heads reader on bench decode's cache ``pc`` (``l2ef``: its TMA loads hinted evict-first; the
    PTX pass is installed by the decode kernels' import)."""
    nb, page, hkv, d = pc.k.shape
    box = kg.box_tokens(page, step)
    if t3:  # [Hkv, rows, D] view of the (rows, Hkv, D) cache: head stride D, row stride Hkv D
        descs = [_descriptor3(c.view(nb * page, hkv, d).permute(1, 0, 2), [hkv, nb * page, d], [d, hkv * d, 1],
                              [hw, box, d]) for c in (pc.k, pc.v)]
    else:
        descs = [kg.descriptor(c.view(nb * page, hkv * d), [nb * page, hkv * d], [hkv * d, 1], box)
                 for c in (pc.k, pc.v)]
    b = pc.table.shape[0]
    grid = (splits, hkv // hw, b)
    sink = torch.empty(grid[0] * grid[1] * grid[2], dtype=torch.int32, device=pc.k.device)
    return lambda: heads_read_kernel[grid](descs[0], descs[1], pc.table, pc.lens, sink, nb, pc.table.shape[1], splits,
                                           pc.table.stride(0), PAGE=page, BOX=box, STEP=step, STAGES=stages, HW=hw,
                                           T3=t3, KERNEL_NAME="heads_read_l2ef" if l2ef else "heads_read",
                                           num_warps=1)


# (B, ctx, Hq, page), the head reader's (splits, step, stages) and the heads forms' (splits, step, stages, HW, T3).
# Ring bytes per SM: the head reader at (s, 32, 2) has s x Hkv x B programs of 16 KB; heads8 at (s, 32, 2) has
# s x B programs of 128 KB (shared memory then holds one per SM): the same bytes in flight at one wave.
CASES = (
    ((8, 4096, 32, 64), ((16, 32, 2), (16, 32, 3)),
     ((16, 32, 2, 8, False), (16, 32, 2, 8, True), (32, 32, 2, 4, False), (32, 32, 2, 4, True), (16, 32, 2, 2, True))),
    ((8, 4096, 32, 16), ((16, 32, 2),),
     ((16, 32, 2, 8, False), (16, 32, 2, 8, True), (32, 32, 2, 4, True), (16, 32, 2, 2, True))),
    ((32, 4096, 32, 64), ((1, 32, 2), (4, 32, 2)),
     ((4, 32, 2, 8, False), (4, 32, 2, 8, True), (2, 32, 2, 4, True), (1, 32, 2, 2, True), (1, 32, 3, 2, True))),
    ((32, 4096, 32, 16), ((1, 32, 2), (4, 32, 2)),
     ((4, 32, 2, 8, False), (4, 32, 2, 8, True), (2, 32, 2, 4, True), (1, 32, 2, 2, True))),
)
ROUNDS = 3


def offline() -> None:
    """Compile every reader form of CASES for sm_90 (no GPU) and print registers and shared memory."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from tritonfp8.codegen import disassemble, sass_facts

    forms = {(page, st, sg, hw, t3) for (_, _, _, page), _, heads in CASES for _, st, sg, hw, t3 in heads}
    for page, step, stages, hw, t3 in sorted(forms):
        box = kg.box_tokens(page, step)
        block = f"[{hw}, {box}, 128]" if t3 else f"[{box}, 128]"
        desc = (f"tensordesc<fp8e4nv{block},NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, "
                f"rank={3 if t3 else 2}, transposed=False, fp4_padded=False, cga_layout=[])>")
        sig = {"k_desc": desc, "v_desc": desc, "block_table_ptr": "*i32", "seq_lens_ptr": "*i32", "sink_ptr": "*i32",
               "num_blocks": "i32", "max_blocks": "i32", "num_splits": "i32", "stride_btb": "i32"}
        const = dict(PAGE=page, BOX=box, STEP=step, STAGES=stages, HW=hw, T3=t3, KERNEL_NAME="heads_read")
        sig.update({k: "constexpr" for k in const})
        src = GluonASTSource(fn=heads_read_kernel, signature=sig, constexprs=const, attrs={})
        ck = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 1})
        sass, res = disassemble(ck.asm["cubin"])
        f = sass_facts(sass, res)
        print(f"page {page} step {step} s{stages} HW {hw} {'3-D' if t3 else '2-D'} boxes: {f['registers']} registers, "
              f"{f['spill_stores']} spill stores, {ck.metadata.shared} B shared, {sass.count('UTMALDG')} UTMALDG",
              flush=True)


def main() -> None:
    from decode_case import case_inputs, heuristic_config, pinned_call, time_rows, write_report
    from gpu_decode_floor import flat_fn, paged_fn

    from tritonfp8 import decode as dec
    from tritonfp8.bench.suites import decode as S

    sms = dec.num_sms(torch.device("cuda"))
    rows = []
    for (b, ctx, hq, page), head_forms, heads_forms in CASES:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        cfg = heuristic_config(b, ctx, hq, page)
        fns = {"copy": copy_fn, "heuristic": pinned_call(q, pc, cfg)}
        for sp, st, sg in head_forms:
            fns[f"head x{sp} step{st} s{sg}"] = paged_fn(pc, sp, st, sg)
        for sp, st, sg, hw, t3 in heads_forms:
            name = f"heads{hw}{'t3' if t3 else ''} x{sp} step{st} s{sg}"
            try:  # a form the driver refuses (e.g. the 3-D view's strides) is reported, not fatal
                fn = heads_fn(pc, sp, st, sg, hw, t3)
                fn()
                torch.cuda.synchronize()
                fns[name] = fn
            except Exception as e:  # noqa: BLE001
                print(f"B{b} ctx{ctx} p{page} {name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                rows.append({"B": b, "ctx": ctx, "Hq": hq, "page": page, "form": name, "us": float("nan"),
                             "pct_of_copy": float("nan"), "error": str(e)[:500]})
        fns["flat 4w"] = flat_fn(S.cache_bytes(b, ctx, 1), sms * 4 * 4)
        rows += time_rows(fns, (b, ctx, hq, page), moved, nbytes, ROUNDS, cfg)
        del pc, fns
        torch.cuda.empty_cache()
    write_report("decode-heads", "paged reads: one KV head per program vs a page's heads together (eager)", rows,
                 ROUNDS)


if __name__ == "__main__":
    if "--offline" in sys.argv:
        offline()
    else:
        main()
