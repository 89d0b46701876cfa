"""How fast can anything read a decode step's paged cache? (session 24)

Issue 6's unmet cells are the short steps (B 8 / 32 at ctx 4096: 60-68% / 76-79% of the same-size copy eager).
The kernels there lose to the copy by a roughly constant 7-15 us; session 19 found B 8 bound by its own latency
chain (19.8 us with every page in L2). This script times, under the bench's protocol (harness.bench_interleaved:
do_bench median after the write flush, eager, interleaved rounds), kernels that read the same bytes and do nothing
else:

- ``paged``: the Gluon decode kernel's memory side alone (_kernels/decode_gluon.py): grid (splits, Hkv, B), one
  warp, a ring of STAGES slots of STEP tokens filled by TMA page boxes from the block table, each slot refilled
  as soon as its barrier completes (no products, no softmax, no partials, no merge). Since session 26 the refill's
  table entries are loaded before the wait, as the kernel does (session 24 measured the form that loaded each
  entry just before its copy). Its time bounds any kernel
  that reads the cache this way with that many programs.
- ``flat``: one Triton kernel reading the same number of bytes from one contiguous buffer (16-byte loads, a sum
  per program): the floor of any single kernel reading that many bytes.

next to the decode heuristic's call and the same-size copy (bench decode's reference). If ``paged`` at its best
decomposition is under 85% of the copy, the issue's target is out of reach of a TMA-paged kernel at that shape;
the gap between ``paged`` and the heuristic is what the products, the softmax and the merge cost.
Prints a table; writes $OUT/results/decode-floor-<stamp>.json (benchmarks/results when $OUT is unset).
Usage on the device: ``python scripts/gpu_decode_floor.py``.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier

from decode_case import case_inputs, heuristic_config, pinned_call, time_rows, write_report
from tritonfp8 import decode as dec
from tritonfp8._kernels import decode_gluon as kg
from tritonfp8.naming import _repr_from_constexpr
from tritonfp8.bench.suites import decode as S


@gluon.jit(repr=_repr_from_constexpr)
def paged_read_kernel(k_desc, v_desc, block_table_ptr, seq_lens_ptr, sink_ptr, num_blocks, max_blocks, num_splits,
                      stride_btb, PAGE: gl.constexpr, BOX: gl.constexpr, STEP: gl.constexpr,
                      STAGES: gl.constexpr, KERNEL_NAME: gl.constexpr = "paged_read"):
    """The Gluon decode kernel's reads only: grid (splits, Hkv, B), one warp; writes its step count to ``sink``.
    KERNEL_NAME "paged_read_l2ef": l2hint's pass adds evict-first hints to its TMA loads (session 32)."""
    split = gl.program_id(0)
    kvh = gl.program_id(1)
    b = gl.program_id(2).to(gl.int64)
    seq_len, start, end = kg._split_range(seq_lens_ptr, b, split, num_splits, max_blocks, PAGE, STEP)
    n_steps = gl.maximum(gl.cdiv(end - start, STEP), 0)
    bt_row = block_table_ptr + b * stride_btb
    col = kvh * 128
    SH: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    k_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, STEP, 128], SH)
    v_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, STEP, 128], SH)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
    fence_async_shared()
    for i in gl.static_range(STAGES):
        if i < n_steps:
            pages = kg._step_pages(bt_row, 1, i, (start,), (end,), PAGE, BOX, STEP, 1)
            kg._issue(k_desc, v_desc, k_ring, v_ring, i, ready.index(i), pages, i, (start,), num_blocks, col, PAGE, BOX,
                      STEP, 1)
    for i in range(0, n_steps):
        s = i % STAGES
        ahead = kg._step_pages(bt_row, 1, i + STAGES, (start,), (end,), PAGE, BOX, STEP, 1)
        mbarrier.wait(ready.index(s), (i // STAGES) & 1)
        if i + STAGES < n_steps:
            kg._issue(k_desc, v_desc, k_ring, v_ring, s, ready.index(s), ahead, i + STAGES, (start,), num_blocks, col,
                      PAGE, BOX, STEP, 1)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))
    pid = (b * gl.num_programs(1) + kvh) * gl.num_programs(0) + split
    gl.store(sink_ptr + pid, n_steps)


@triton.jit
def flat_read_kernel(x_ptr, sink_ptr, n, BLOCK: tl.constexpr, EVICT: tl.constexpr = ""):
    """Grid-stride read of ``n`` int32 words (BLOCK per iteration), one sum per program. EVICT "evict_first": the
    loads carry Triton's L2 evict-first policy (session 32)."""
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for off in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
        idx = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + idx, mask=idx < n, other=0, eviction_policy=EVICT)
    tl.store(sink_ptr + pid, tl.sum(acc, axis=0))


def paged_fn(pc, splits: int, step: int, stages: int, l2ef: bool = False):
    """A call of the paged reader on bench decode's cache ``pc`` (``l2ef``: its TMA loads hinted evict-first; the
    PTX pass is installed by the decode kernels' import)."""
    nb, page, hkv, d = pc.k.shape
    box = kg.box_tokens(page, step)
    shape, strides = [nb * page, hkv * d], [hkv * d, 1]
    kd, vd = (kg.descriptor(c.view(nb * page, hkv * d), shape, strides, box) for c in (pc.k, pc.v))
    b = pc.table.shape[0]
    sink = torch.empty(splits * hkv * b, dtype=torch.int32, device=pc.k.device)
    grid = (splits, hkv, b)
    return lambda: paged_read_kernel[grid](kd, vd, pc.table, pc.lens, sink, nb, pc.table.shape[1], splits,
                                           pc.table.stride(0), PAGE=page, BOX=box, STEP=step, STAGES=stages,
                                           KERNEL_NAME="paged_read_l2ef" if l2ef else "paged_read", num_warps=1)


def flat_fn(nbytes: int, programs: int, block: int = 4096, warps: int = 8, evict: str = ""):
    x = torch.empty(nbytes // 4, dtype=torch.int32, device="cuda").random_(0, 1 << 20)
    sink = torch.empty(programs, dtype=torch.int32, device="cuda")
    return lambda: flat_read_kernel[(programs,)](x, sink, x.numel(), BLOCK=block, EVICT=evict, num_warps=warps)


# (B, ctx, Hq, page) and the paged reader's (splits, step, stages)
CASES = (
    ((8, 4096, 32, 64), ((8, 32, 3), (16, 32, 3), (16, 32, 2), (32, 32, 2), (16, 64, 2), (8, 64, 3))),
    ((8, 4096, 32, 16), ((8, 32, 3), (16, 32, 3), (16, 32, 2), (32, 32, 2))),
    ((32, 4096, 32, 64), ((2, 32, 3), (4, 32, 3), (4, 32, 2), (4, 64, 2), (8, 32, 2))),
    ((128, 4096, 32, 16), ((1, 32, 3), (2, 32, 2))),
    ((8, 32768, 32, 16), ((8, 32, 3), (16, 32, 3))),
)
ROUNDS = 3


def main() -> None:
    sms = dec.num_sms(torch.device("cuda"))
    rows = []
    for (b, ctx, hq, page), forms in CASES:
        pc, q, nbytes, copy_fn, moved = case_inputs(b, ctx, hq, page, "cuda")
        cfg = heuristic_config(b, ctx, hq, page)
        fns = {"copy": copy_fn, "heuristic": pinned_call(q, pc, cfg)}
        for sp, st, sg in forms:
            fns[f"paged x{sp} step{st} s{sg}"] = paged_fn(pc, sp, st, sg)
        for waves in (1, 4):
            fns[f"flat {waves}w"] = flat_fn(S.cache_bytes(b, ctx, 1), sms * 4 * waves)
        rows += time_rows(fns, (b, ctx, hq, page), moved, nbytes, ROUNDS, cfg)
        del pc, fns
        torch.cuda.empty_cache()
    write_report("decode-floor", "decode step read floors (eager, after the write flush)", rows, ROUNDS)


if __name__ == "__main__":
    main()
