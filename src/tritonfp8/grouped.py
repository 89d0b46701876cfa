"""Grouped FP8 GEMM for mixture-of-experts layers: G independent products in one persistent launch.

Contiguous groups (:func:`grouped_gemm`, prefill / training): ``a`` (total_M, K) FP8 holds the rows (tokens) of all
groups one after another, sorted by group; ``b`` (G, N, K) FP8 holds one ``nn.Linear``-layout weight per group
(expert). Group g owns rows ``offsets[g] .. offsets[g+1]-1`` of ``a`` and of the result::

    out[offsets[g]:offsets[g+1]] = (a[offsets[g]:offsets[g+1]] · scale_a) @ (b[g] · scale_b[g])ᵀ

The groups are given as ``group_offsets`` (G+1,) (offsets[0] = 0, non-decreasing, offsets[G] = total_M) or as
``m_sizes`` (G,) (rows per group, summing to total_M), integer tensors on a's device. Empty groups are allowed.

Masked groups (:func:`grouped_gemm_masked`, decode): ``a`` (G, M_max, K) is a fixed-capacity buffer and
``masked_m`` (G,) the number of valid rows of each group; ``out`` (G, M_max, N) gets rows ``0 .. masked_m[g]-1`` of
each group; the rows past them are **not written** (they keep whatever ``out`` held: uninitialized memory when
``out`` is not given).

No host sync: the kernel reads the group sizes on the device and builds its tile schedule there (per-group tile
counts, their prefix sum, each tile's group by one vector compare); the launch only uses shapes. So the group
sizes are not validated on the hot path: ``check=True`` reads them on the host (one device sync) and raises a
ValueError for offsets that do not start at 0, decrease, or do not end at total_M (sizes negative or not summing to
total_M; masked counts outside [0, M_max]). ``check=None`` (default) checks only when the sizes already live on the
CPU (no sync); ``check=False`` never. Unchecked malformed sizes give wrong rows but no out-of-bounds access: the
kernel clamps every group's row window to [0, total_M].

Scales are fp32 *dequantization* factors (``x ≈ x_fp8.float() * scale``), Kb = ceil(K/128), Nb = ceil(N/128):

- ``scale_a``: ``()``/``(1,)`` one per tensor; ``(G,)`` one per group; ``(total_M, 1)`` per row (masked:
  ``(G, M_max, 1)``); block ``(total_M, Kb)`` (masked ``(G, M_max, Kb)``): one per 1×128 group of a row.
- ``scale_b``: ``(G,)``/``(G, 1)``/``(G, 1, 1)`` one per group; ``(G, N)``/``(G, N, 1)`` per output channel; block
  ``(G, Nb, Kb)`` (128×128 blocks) or ``(G, N, Kb)`` (1×128 groups), together with block ``scale_a``.
- ``bias``: ``(G, N)`` (one per expert and output channel), out_dtype or fp32.

Block scales are applied per 128-wide K step in fp32 (precise accumulation), as in :func:`tritonfp8.gemm`.
Requirements: K and N multiples of 16 (TMA; a ValueError otherwise: unlike :func:`tritonfp8.gemm`, K is not padded
here: pad the expert weights once); b is read as the (G*N, K) view (copied when not contiguous). The kernel is the one GEMM kernel (``tritonfp8/_kernels/gemm.py``, ``GROUPED`` switch).
"""

from __future__ import annotations

import torch

from tritonfp8 import _backend
from tritonfp8._kernels.gemm_configs import gluon_config
from tritonfp8.gemm import (
    ACCUMULATE, ACTIVATIONS, OUT_DTYPES, SCALE_BLOCK, GemmConfig, _activation_torch, _check_operands, _check_tensor,
    _tma_ready, error_bound, gemm_torch,
)

__all__ = ["grouped_gemm", "grouped_gemm_masked", "grouped_gemm_torch", "grouped_gemm_masked_torch",
           "grouped_config", "error_bound"]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------------------------------------------------------
# Reference


def _group_scale_a(scale_a: torch.Tensor, kind: str, g: int, lo: int, hi: int) -> torch.Tensor:
    if kind == "tensor":
        return scale_a.reshape(1)
    if kind == "group":
        return scale_a.reshape(-1)[g:g + 1]
    return scale_a.reshape(-1, scale_a.shape[-1])[lo:hi]  # (rows, 1) or (rows, Kb)


def _group_scale_b(scale_b: torch.Tensor, kind: str, g: int) -> torch.Tensor:
    if kind == "group":
        return scale_b.reshape(-1)[g:g + 1]
    if kind == "row":
        return scale_b.reshape(scale_b.shape[0], -1)[g].reshape(-1, 1)
    return scale_b[g]


def grouped_gemm_torch(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
    group_offsets: torch.Tensor | None = None, m_sizes: torch.Tensor | None = None,
    out_dtype: torch.dtype = torch.bfloat16, bias: torch.Tensor | None = None, activation: str | None = None,
    compute_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Plain-PyTorch reference of :func:`grouped_gemm`: a loop over the groups, each :func:`tritonfp8.gemm_torch`
    (dequantize, matmul in ``compute_dtype``, bias, activation, one rounding). Same arguments and scale shapes."""
    offsets = _offsets_list(group_offsets, m_sizes)
    G = b.shape[0]
    M, K = a.shape
    N = b.shape[1]
    a_kind, b_kind, _ = _scale_kinds(scale_a, scale_b, M, G, N, K, masked=False)
    out = torch.zeros((M, N), dtype=out_dtype, device=a.device)
    for g in range(G):
        lo, hi = offsets[g], offsets[g + 1]
        if hi <= lo:
            continue
        out[lo:hi] = gemm_torch(
            a[lo:hi], b[g], _group_scale_a(scale_a, a_kind, g, lo, hi), _group_scale_b(scale_b, b_kind, g),
            out_dtype=out_dtype, bias=None if bias is None else bias[g], activation=activation,
            compute_dtype=compute_dtype,
        )
    return out


def grouped_gemm_masked_torch(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *, masked_m: torch.Tensor,
    out_dtype: torch.dtype = torch.bfloat16, bias: torch.Tensor | None = None, activation: str | None = None,
    compute_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Reference of :func:`grouped_gemm_masked`: the contiguous reference on the (G*M_max, K) view with group g at
    rows g*M_max .. g*M_max+masked_m[g]-1; the rows past masked_m[g] are zero here (the kernel leaves them)."""
    G, cap, K = a.shape
    N = b.shape[1]
    counts = [int(c) for c in masked_m.tolist()]
    a2 = a.reshape(G * cap, K)
    sa = _flat_masked_scale_a(scale_a, G, cap, K)
    a_kind, b_kind, _ = _scale_kinds(scale_a, scale_b, G * cap, G, N, K, masked=True, cap=cap)
    out = torch.zeros((G, cap, N), dtype=out_dtype, device=a.device)
    for g in range(G):
        lo, hi = g * cap, g * cap + counts[g]
        if hi <= lo:
            continue
        out[g, :counts[g]] = gemm_torch(
            a2[lo:hi], b[g], _group_scale_a(sa, a_kind, g, lo, hi), _group_scale_b(scale_b, b_kind, g),
            out_dtype=out_dtype, bias=None if bias is None else bias[g], activation=activation,
            compute_dtype=compute_dtype,
        )
    return out


def _flat_masked_scale_a(scale_a: torch.Tensor, G: int, cap: int, K: int) -> torch.Tensor:
    """Masked scale_a as the contiguous-mode shapes: (G, cap, 1|Kb) -> (G*cap, 1|Kb); others unchanged."""
    if scale_a.dim() == 3 and tuple(scale_a.shape[:2]) == (G, cap):
        return scale_a.reshape(G * cap, scale_a.shape[2])
    return scale_a


def _offsets_list(group_offsets, m_sizes) -> list[int]:
    if group_offsets is not None:
        return [int(v) for v in group_offsets.tolist()]
    sizes = [int(v) for v in m_sizes.tolist()]
    return [0] + [sum(sizes[:i + 1]) for i in range(len(sizes))]


# ------------------------------------------------------------------------------------------------------------------
# Validation


def _scale_kinds(scale_a: torch.Tensor, scale_b: torch.Tensor, M: int, G: int, N: int, K: int, *,
                 masked: bool, cap: int = 0) -> tuple[str, str, int | None]:
    """(a kind, b kind, b block rows): a in {"tensor", "group", "row", "block"}, b in {"group", "row", "block"};
    ValueError/TypeError naming the argument otherwise. ``M`` counts all rows (masked: G * cap)."""
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s.dtype != torch.float32:
            raise TypeError(f"{name}: expected a torch.float32 dequantization scale, got {s.dtype}")
    kb, nb = _cdiv(K, SCALE_BLOCK), _cdiv(N, SCALE_BLOCK)
    sa, sb = tuple(scale_a.shape), tuple(scale_b.shape)
    rows = (G, cap) if masked else (M,)
    a_rows_txt = "(G, M_max, 1)" if masked else "(total_M, 1)"
    a_blk_txt = "(G, M_max, Kb)" if masked else "(total_M, Kb)"
    if sb in ((G,), (G, 1), (G, 1, 1)) or (G == 1 and scale_b.numel() == 1):
        b_kind, b_rows = "group", None
    elif sb in ((G, N), (G, N, 1)):
        b_kind, b_rows = "row", None
    elif sb in ((G, nb, kb), (G, N, kb)):
        b_kind, b_rows = "block", (SCALE_BLOCK if sb[1] == nb else 1)
    else:
        raise ValueError(
            f"scale_b: expected ({G},) one per group, ({G}, {N}) per output channel, or block scales ({G}, {nb}, "
            f"{kb}) / ({G}, {N}, {kb}) (G, ceil(N/128) or N, ceil(K/128)), got {sb}"
        )
    if b_kind == "block":
        if sa == rows + (kb,):
            return "block", b_kind, b_rows
        raise ValueError(f"scale_a: with block scales for b ({sb}), expected {rows + (kb,)} {a_blk_txt}: one per "
                         f"1x128 group of a row, got {sa}")
    if scale_a.numel() == 1 and len(sa) <= 2:
        return "tensor", b_kind, None
    if sa == (G,):
        return "group", b_kind, None
    if sa == rows + (1,):
        return "row", b_kind, None
    raise ValueError(
        f"scale_a: expected () or (1,) per tensor, ({G},) per group, {rows + (1,)} {a_rows_txt} per row, or "
        f"{rows + (kb,)} {a_blk_txt} block scales with block scale_b, got {sa}"
    )


def _check_common(a, b, scale_a, scale_b, bias, out_dtype, activation, accumulate, config):
    _check_operands(a, b, scale_a, scale_b)
    if b.dim() != 3:
        raise ValueError(f"b: expected (G, N, K) (one nn.Linear weight per group), got shape {tuple(b.shape)}")
    G, N, K = b.shape
    if a.shape[-1] != K:
        raise ValueError(f"b: expected (G, N, K) with K = {a.shape[-1]} (a's last dim), got shape {tuple(b.shape)}")
    if K % 16:
        raise ValueError(f"a: K = {K} must be a multiple of 16 (TMA needs 16-byte aligned rows); pad with zeros")
    if N % 16:
        raise ValueError(f"b: N = {N} must be a multiple of 16 (16-byte aligned output rows); pad with zero rows")
    if not isinstance(out_dtype, torch.dtype) or out_dtype not in OUT_DTYPES:
        raise TypeError(f"out_dtype: expected torch.bfloat16, torch.float16 or torch.float32, got {out_dtype}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: expected one of {ACTIVATIONS}, got {activation!r}")
    if accumulate not in ACCUMULATE:
        raise ValueError(f"accumulate: expected 'fast' or 'precise', got {accumulate!r}")
    if bias is not None:
        _check_tensor("bias", bias)
        if bias.dtype not in (out_dtype, torch.float32):
            raise TypeError(f"bias: expected dtype {out_dtype} (out_dtype) or torch.float32, got {bias.dtype}")
        if tuple(bias.shape) != (G, N):
            raise ValueError(f"bias: expected shape ({G}, {N}) (G, N): one per group and output column, got "
                             f"{tuple(bias.shape)}")
    if config is not None and not isinstance(config, GemmConfig):
        raise TypeError(f"config: expected a GemmConfig or None, got {type(config).__name__}")
    return G, N, K


def _check_index_tensor(name: str, t, length: int, what: str) -> None:
    _check_tensor(name, t)
    if t.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{name}: expected an integer tensor (torch.int32 or torch.int64), got {t.dtype}")
    if tuple(t.shape) != (length,):
        raise ValueError(f"{name}: expected shape ({length},) ({what}), got {tuple(t.shape)}")


def _want_check(check: bool | None, t: torch.Tensor) -> bool:
    if check is None:
        return t.device.type == "cpu"  # reading it costs no device sync
    return bool(check)


def grouped_config(rows_per_group: int, N: int, K: int, *, block: bool, precise: bool, total_rows: int = 0,
                   gluon: bool = False, num_sms: int = 132, out_size: int = 2) -> GemmConfig:
    """Kernel config of the grouped GEMM: a pure function of the host-known shapes (rows_per_group: M_max for
    the masked variant, total_M / G for contiguous groups, an estimate: the sizes are not read on the host).

    ``gluon`` (an sm_90 CUDA device; contiguous groups, E4M3, 16-byte aligned output, b not in 1x128 groups):
    precise and block-scaled problems of groups above 64 rows with enough tiles take the Gluon warp-specialized
    kernel, with the dense GEMM's tile choice for ``total_rows`` x N (:func:`gluon_config`): the Triton kernel
    waits for each wgmma before its promotion (0.64-0.70x our dense block GEMM, session 11).
    Otherwise the Triton persistent TMA schedule (one launch over all groups), pointer stores (see the kernel).
    128x256x128 with 8 warps and 4 stages is the dense GEMM's main fast tile (its SASS: no spills); precise and
    block modes keep an fp32 accumulator beside each fresh dot and use 128x128 with 5 stages, as the dense GEMM
    does. Groups of at most 64 rows (decode) take 64-row tiles, wgmma's smallest M.
    """
    if gluon and (block or precise) and rows_per_group > 64:
        g = gluon_config(total_rows, N, num_sms, out_size)
        if g is not None:
            return g
    bm = 64 if rows_per_group <= 64 else 128
    if block or precise:
        return GemmConfig(bm, 128, 128, num_warps=4 if bm == 64 else 8, num_stages=5, schedule="tmapersistent")
    if bm == 64:
        return GemmConfig(64, 256, 128, num_warps=4, num_stages=4, schedule="tmapersistent", epilogue_subtile=2)
    return GemmConfig(128, 256, 128, num_warps=8, num_stages=4, schedule="tmapersistent", epilogue_subtile=2)


# ------------------------------------------------------------------------------------------------------------------
# Public ops


def grouped_gemm(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
    group_offsets: torch.Tensor | None = None, m_sizes: torch.Tensor | None = None,
    out_dtype: torch.dtype = torch.bfloat16, bias: torch.Tensor | None = None, activation: str | None = None,
    accumulate: str = "fast", out: torch.Tensor | None = None, config: GemmConfig | None = None,
    check: bool | None = None,
) -> torch.Tensor:
    """Per group g: ``act((a[rows of g]·scale_a) @ (b[g]·scale_b[g])ᵀ + bias[g])``, written to the same rows.

    a: (total_M, K) FP8, rows sorted by group, K contiguous. b: (G, N, K) FP8, K contiguous. Exactly one of
    group_offsets (G+1,) / m_sizes (G,), integer tensors on a's device. Scales, bias and ``check``: see the module
    doc. accumulate: "fast" or "precise" (as :func:`tritonfp8.gemm`). out: optional contiguous (total_M, N) of
    out_dtype. config: pin a kernel config (persistent schedule). Returns (total_M, N) out_dtype.
    """
    G, N, K = _check_common(a, b, scale_a, scale_b, bias, out_dtype, activation, accumulate, config)
    if a.dim() != 2:
        raise ValueError(f"a: expected (total_M, K) rows of all groups, got shape {tuple(a.shape)}")
    M = a.shape[0]
    if (group_offsets is None) == (m_sizes is None):
        raise ValueError("group_offsets, m_sizes: expected exactly one of them")
    if group_offsets is not None:
        _check_index_tensor("group_offsets", group_offsets, G + 1, f"G + 1 with G = {G} groups of b")
        idx, idx_name = group_offsets, "group_offsets"
    else:
        _check_index_tensor("m_sizes", m_sizes, G, f"G = {G} groups of b")
        idx, idx_name = m_sizes, "m_sizes"
    if M >= 2**31:
        raise ValueError(f"a: total_M = {M} rows must be < 2^31 (int32 group offsets, 32-bit TMA coordinates)")
    if _want_check(check, idx):
        vals = [int(v) for v in idx.tolist()]
        if group_offsets is not None:
            if vals[0] != 0 or vals[-1] != M:
                raise ValueError(f"group_offsets: expected offsets[0] = 0 and offsets[G] = total_M = {M}, got "
                                 f"{vals[0]} and {vals[-1]}")
            bad = next((i for i in range(G) if vals[i + 1] < vals[i]), None)
            if bad is not None:
                raise ValueError(f"group_offsets: expected non-decreasing offsets, got offsets[{bad}] = {vals[bad]} > "
                                 f"offsets[{bad + 1}] = {vals[bad + 1]}")
        else:
            if any(v < 0 for v in vals):
                raise ValueError(f"m_sizes: expected sizes >= 0, got {min(vals)}")
            if sum(vals) != M:
                raise ValueError(f"m_sizes: expected sizes summing to total_M = {M}, got {sum(vals)}")
    a_kind, b_kind, b_rows = _scale_kinds(scale_a, scale_b, M, G, N, K, masked=False)
    device = _backend.check_device(
        "grouped_gemm", (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias),
                         ("out", out), (idx_name, idx)))
    if out is None:
        out = torch.empty((M, N), device=device, dtype=out_dtype)
    else:
        _check_out(out, (M, N), out_dtype)
    if M == 0 or N == 0:
        return out
    # int32 tensors pass as they are (no conversion launch); the kernel takes the prefix sum of m_sizes itself.
    rows = idx.to(torch.int32).contiguous()
    return _run(a, b, scale_a, scale_b, a_kind, b_kind, b_rows, bias, activation, accumulate, out, config,
                mode="offsets" if group_offsets is not None else "sizes", rows=rows, cap=0,
                rows_per_group=max(1, M // max(G, 1)), device=device)


def grouped_gemm_masked(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *, masked_m: torch.Tensor,
    out_dtype: torch.dtype = torch.bfloat16, bias: torch.Tensor | None = None, activation: str | None = None,
    accumulate: str = "fast", out: torch.Tensor | None = None, config: GemmConfig | None = None,
    check: bool | None = None,
) -> torch.Tensor:
    """Decode variant: a (G, M_max, K) FP8 fixed-capacity buffer, masked_m (G,) valid rows per group (integer,
    on a's device). Returns (G, M_max, N) out_dtype; rows past masked_m[g] are not written (module doc)."""
    G, N, K = _check_common(a, b, scale_a, scale_b, bias, out_dtype, activation, accumulate, config)
    if a.dim() != 3 or a.shape[0] != G:
        raise ValueError(f"a: expected (G, M_max, K) with G = {G} (b's groups), got shape {tuple(a.shape)}")
    cap = a.shape[1]
    _check_index_tensor("masked_m", masked_m, G, f"G = {G} valid row counts")
    if G * cap >= 2**31:
        raise ValueError(f"a: G * M_max = {G * cap} rows must be < 2^31 (32-bit TMA coordinates)")
    if _want_check(check, masked_m):
        vals = [int(v) for v in masked_m.tolist()]
        bad = next((i for i, v in enumerate(vals) if not 0 <= v <= cap), None)
        if bad is not None:
            raise ValueError(f"masked_m: expected counts in [0, M_max = {cap}], got masked_m[{bad}] = {vals[bad]}")
    a_kind, b_kind, b_rows = _scale_kinds(scale_a, scale_b, G * cap, G, N, K, masked=True, cap=cap)
    device = _backend.check_device(
        "grouped_gemm_masked", (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias),
                                ("out", out), ("masked_m", masked_m)))
    if out is None:
        out = torch.empty((G, cap, N), device=device, dtype=out_dtype)
    else:
        _check_out(out, (G, cap, N), out_dtype)
    if G * cap == 0 or N == 0:
        return out
    sa = _flat_masked_scale_a(scale_a, G, cap, K)
    _run(a.reshape(G * cap, K), b, sa, scale_b, a_kind, b_kind, b_rows, bias, activation, accumulate,
         out.view(G * cap, N), config, mode="masked", rows=masked_m.to(torch.int32).contiguous(), cap=cap,
         rows_per_group=cap, device=device)
    return out


def _check_out(out, shape: tuple, out_dtype) -> None:
    _check_tensor("out", out)
    if out.dtype != out_dtype:
        raise TypeError(f"out: expected dtype {out_dtype} (out_dtype), got {out.dtype}")
    if tuple(out.shape) != shape:
        raise ValueError(f"out: expected shape {shape}, got {tuple(out.shape)}")
    if not out.is_contiguous():
        raise ValueError("out: expected a contiguous tensor")


def _run(a2, b, scale_a, scale_b, a_kind, b_kind, b_rows, bias, activation, accumulate, out2, config, *, mode,
         rows, cap, rows_per_group, device):
    G, N, K = b.shape
    M = a2.shape[0]
    if K == 0:
        c = torch.zeros((M, N), device=device, dtype=torch.float32)
        if bias is not None:
            c = c + _expand_bias(bias, rows, mode, cap, M)
        out2.copy_(_activation_torch(c, activation))
        return out2
    if not _tma_ready(a2):
        a2 = a2.contiguous()
    if not b.is_contiguous() or b.data_ptr() % 16:
        b = b.contiguous()
    block = b_kind == "block"
    if block:
        sa = scale_a
        sb = scale_b
        a_stride, b_stride = 0, scale_b.stride(0)
    else:
        sa = scale_a.reshape(-1).contiguous()
        a_stride = 1 if a_kind == "group" else 0
        if b_kind == "row":
            sb = scale_b.reshape(G, N).contiguous()
            b_stride = N
        else:
            sb = scale_b.reshape(G).contiguous()
            b_stride = 1 if G > 1 else 0
    if bias is not None:
        bias = bias.contiguous()
    from tritonfp8._kernels import gemm as kernels

    arch = _backend.arch_of(device)
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        sms = kernels.num_sms(idx)
    else:
        sms = kernels.INTERPRETER_SMS
    precise = accumulate == "precise" or block
    if config is None:
        gluon = (device.type == "cuda" and not _backend.interpreting() and arch == 90 and mode != "masked"
                 and b_rows != 1 and a2.dtype == b.dtype == torch.float8_e4m3fn and out2.data_ptr() % 16 == 0)
        config = grouped_config(rows_per_group, N, K, block=block, precise=precise, total_rows=M, gluon=gluon,
                                num_sms=sms, out_size=out2.element_size())
    elif config.schedule == "glws" and out2.data_ptr() % 16:
        raise ValueError("out: schedule 'glws' stores through TMA and needs a 16-byte aligned base; pass an "
                         "aligned out or another config")
    if arch < 90:
        raise NotImplementedError(f"grouped_gemm: the grouped kernel needs TMA (sm_90+); this device is sm_{arch}: "
                                  "use grouped_gemm_torch")
    kernels.launch_grouped(
        a2, b, sa, sb, bias, activation, out2, config,
        mode={"offsets": kernels.GROUPED_CONTIGUOUS, "sizes": kernels.GROUPED_SIZES,
              "masked": kernels.GROUPED_MASKED}[mode],
        group_rows=rows, group_cap=cap, a_vec=a_kind == "row", a_group_stride=a_stride, b_vec=b_kind == "row",
        b_group_stride=b_stride, precise=precise, arch=arch, sms=sms, b_block_rows=b_rows,
    )
    return out2


def _expand_bias(bias, rows, mode, cap, M):
    """K = 0: each row's result is its group's bias (computed on the device, no sync)."""
    G = bias.shape[0]
    r = torch.arange(M, device=bias.device)
    if mode != "masked":
        ends = rows[1:] if mode == "offsets" else torch.cumsum(rows, 0)
        gid = torch.searchsorted(ends.to(torch.int64), r, right=True).clamp(max=G - 1)
    else:
        gid = r // cap
    return bias.float().index_select(0, gid)

