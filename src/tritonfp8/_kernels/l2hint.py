"""L2 evict-first hints on a kernel's streamed global -> shared copies (a PTX pass; private).

Why: a decode step reads the whole KV cache once. Every line it brings into L2 displaces another; when L2 holds
dirty lines (the previous kernel's writes; ``do_bench``'s flush leaves 50 MB of them), each displaced dirty line
costs a write-back to HBM that competes with the stream. Session 19 measured it at B 32 ctx 4096: 80.2 us after a
write flush, 70.7 us after a read flush (benchmarks/results/decode-l2-20261203-202702.json). Loads marked
``evict_first`` are the first candidates for eviction, so the stream recycles its own lines instead of the dirty
ones.

Triton 3.6 attaches an L2 cache policy only to ``ld.global`` (``eviction_policy=``); its ``cp.async`` and TMA copies
(the decode kernels' K/V stream) drop it, and Gluon's ``async_copy_global_to_shared`` as well (checked in the PTX).
So this module edits the PTX of the kernels that ask for it, between Triton's "ptx" and "cubin" stages:

- one ``createpolicy.fractional.L2::evict_first.b64`` at the top of the kernel body (fraction 1.0);
- ``.L2::cache_hint`` plus that policy operand on every TMA tile load (``cp.async.bulk.tensor.*.shared::cluster.
  global...mbarrier::complete_tx::bytes``): the K/V pages of the ``kv_load="tma"`` / ``"tmab"`` kernels. The
  block-table ``cp.async`` copies and the ``ld.global``s keep the default policy.

Not on ``cp.async`` (the gather kernels' K/V rows): session 22 hinted their 8/16-byte copies as well, and the
4-warp gather kernel died with "illegal instruction" on the H200 (s22-call1-log.txt) while the TMA kernels gave
the unhinted bits. ptxas miscompiles fractional L2 policies on ``cp.async`` (Triton stopped emitting them for that
reason: triton-lang/triton PR 11660, re-enabled with PTX 9.4 / a fixed ptxas in PR 11848); Triton 3.6 bundles
ptxas 12.8.

Which kernels: those whose symbol (the CUTLASS-style kernel name, :mod:`tritonfp8.naming`) has the field
:data:`TAG` (``DecodeConfig(l2_evict_first=True)`` adds it). The name is part of Triton's cache key, so a tagged
kernel is never served from a cache entry compiled without the pass, and :data:`VERSION` (the kernel's
``L2_HINT`` constexpr) keys the pass's own revisions. The pass is installed through
``triton.knobs.runtime.add_stages_inspection_hook`` (chaining a hook set before it) when the decode kernels are
imported and again when a decode plan asks for the hints (so a hook set in between is chained, not lost);
:func:`check` warns if a tagged kernel's PTX came out without hints.
"""

from __future__ import annotations

import re

TAG = "l2ef"
# Bumped whenever the pass's output changes: the decode kernel takes it as a constexpr (L2_HINT), so Triton's cache
# never serves a kernel edited by an older pass.
VERSION = 2
POLICY_REG = "%tfp8_l2ef"

# TMA tile loads: [dst], [tensorMap, {coords}], [mbar]; (the tile / im2col mode and multicast forms are not emitted)
_TMA_LOAD = re.compile(
    r"(cp\.async\.bulk\.tensor\.[1-5]d\.shared::cluster\.global(?:\.tile)?\.mbarrier::complete_tx::bytes)"
    r"(\s+\[[^\]]*\],\s*\[[^\]]*\],\s*\[[^\]]*\])\s*;"
)
_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(")


def tagged(name: str) -> bool:
    """Whether a kernel symbol asks for the hints (its ``_``-separated fields include :data:`TAG`)."""
    return TAG in name.split("_")


def add_l2_evict_first(ptx: str) -> tuple[str, int]:
    """(ptx with the hints, number of TMA loads hinted). Raises ValueError on PTX without exactly one kernel entry or
    with a policy register of that name already."""
    entries = _ENTRY.findall(ptx)
    if len(entries) != 1:
        raise ValueError(f"ptx: expected exactly one .entry, found {len(entries)}")
    if POLICY_REG in ptx:
        raise ValueError(f"ptx: already declares {POLICY_REG}")
    ptx, n = _TMA_LOAD.subn(rf"\1.L2::cache_hint\2, {POLICY_REG};", ptx)
    if n == 0:
        return ptx, 0
    # The body opens with the first "{" line after the entry's parameter list; the policy is created before any
    # instruction (declarations may precede it: PTX allows .reg anywhere in a block before its use).
    lines = ptx.split("\n")
    start = next(i for i, line in enumerate(lines) if _ENTRY.search(line))
    body = next(i for i in range(start, len(lines)) if lines[i].strip() == "{")
    lines[body + 1:body + 1] = [
        f"\t.reg .b64 \t{POLICY_REG};",
        f"\tcreatepolicy.fractional.L2::evict_first.b64 \t{POLICY_REG}, 1.0;",
    ]
    return "\n".join(lines), n


def _patch_stage(ptx: str, metadata: dict) -> str:
    if tagged(metadata.get("name", "")):
        ptx, _ = add_l2_evict_first(ptx)
    return ptx


def _hook(backend, stages, options, language, capability, _previous=None):
    if _previous is not None:
        _previous(backend, stages, options, language, capability)
    make_ptx = stages.get("ptx")
    if make_ptx is not None:
        stages["ptx"] = lambda src, metadata: _patch_stage(make_ptx(src, metadata), metadata)


def install() -> None:
    """Put the pass into Triton's stage pipeline (once; a hook set before is called first)."""
    from triton import knobs

    current = knobs.runtime.add_stages_inspection_hook
    if getattr(current, "_tfp8_l2hint", False):
        return

    def hook(backend, stages, options, language, capability):
        _hook(backend, stages, options, language, capability, current)

    hook._tfp8_l2hint = True
    knobs.runtime.add_stages_inspection_hook = hook


_WARNED: set[str] = set()


def check(kernel) -> None:
    """Warn (once per kernel) when a compiled kernel whose name carries :data:`TAG` has no hinted copy in its PTX:
    its results are the same, only the hints (and what they were measured to gain) are missing."""
    asm = getattr(kernel, "asm", None) or {}
    name = getattr(getattr(kernel, "metadata", None), "name", "")
    ptx = asm.get("ptx") if hasattr(asm, "get") else None
    if ptx is not None and tagged(name) and "L2::cache_hint" not in ptx and name not in _WARNED:
        import warnings

        _WARNED.add(name)
        warnings.warn(
            f"kernel {name}: asked for L2 evict-first hints but its PTX has none (compiled while another "
            "triton.knobs.runtime.add_stages_inspection_hook replaced tritonfp8's, or served from a cache filled "
            "that way); results are unaffected", RuntimeWarning, stacklevel=2)
