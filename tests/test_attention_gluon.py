"""The Gluon FP8 attention forward (``tritonfp8/_kernels/attention_gluon.py``: loader warp + two consumer warp
groups; on sm_90 ``tritonfp8.attention``'s default at hd256 and for dense non-causal hd128 problems).

Offline sm_90 compile (CI): QGMMA in both consumers, no spills, each wgmma chain waited once. GPU (skipped without
one): against ``attention_torch`` with the rule of ``test_attention.py`` (imported: stated once there): element
error no worse than the FP8-P emulation's plus the bf16 rounding, Frobenius error no worse than the emulation's plus
two bf16 units; partial query and key tiles, GQA, per-(batch, KV head) descales, poisoned output.
"""

from __future__ import annotations

import math

import pytest
import torch

from conftest import requires_gpu


_SASS_SCRIPT = r"""
import json, sys
from tritonfp8 import codegen
out = {}
for key in sys.argv[1:]:
    r = codegen.inspect_kernel(key, arch=90, compare_names=False)
    out[key] = dict(r.as_dict(), usetmaxreg="USETMAXREG" in r.sass, shfl_idx=r.sass.count("SHFL.IDX"),
                    prmt=r.sass.count("PRMT"))
print(json.dumps(out))
"""


@pytest.mark.codegen
def test_attn_glws_sass():
    """Per consumer and key-block step (unmasked and masked tail): S = Q·Kᵀ (D/32 QGMMA) and P·V (BLOCK_N/32);
    two consumers: 2 x 2 x (D + 128) / 32; the overlapped form adds block 0's S and the last P·V per consumer. No spills, registers re-split, each wgmma chain waited once; with the
    key permutation P's operand conversion is thread-local (no SHFL.IDX). In a subprocess with the interpreter
    off (``conftest.codegen_env``): Gluon's reductions cannot reference interpreter functions."""
    import json
    import subprocess
    import sys

    from conftest import codegen_env

    expect = {"attn_glws_hd128": 32, "attn_glws_hd64": 24, "attn_glws_hd128_perm": 32, "attn_glws_hd128_ovl": 48,
              "attn_glws_hd64_ovl": 36, "attn_glws_hd128_ovlpp": 48, "attn_glws_hd128_ovlpc1": 48,
              "attn_glws_hd128_ovlpc1_causal_lse": 48,
              # causal serial (session 18): per consumer the unmasked step and two guarded masked steps
              # (MAX_MASKED), each S + P·V: 2 x 3 x 2 x 128 / 32
              "attn_glws_hd128_causal": 48,
              "attn_glws_hd128_ovlpc1_varlen_causal": 48, "attn_glws_hd128_ovlpc1_varlen": 48,
              "attn_glws_hd128_ovlpc1_e4m3out": 48,
              # session 17: 128 x 256 tiles (the hd128 dense default): 2 x 2 x (128 + 256) / 32; with the row sums
              # on the tensor core + 2 x 2 x 256 / 32 (m64n16k32); serial ping-pong: per consumer S_0, then per
              # step (unmasked, masked) P·V + the next S, and the last block's P·V alone: 2 x 6 x 4
              "attn_glws_hd128_bn256": 48, "attn_glws_hd128_bn256_lse": 48, "attn_glws_hd128_bn256_rsmma": 80,
              "attn_glws_hd128_pp": 48, "attn_glws_hd256_bn128": 48,
              # causal with the masked steps unrolled (session 18; in a loop: 158-160 spill stores)
              "attn_glws_hd256_bn128_causal": 72, "attn_glws_hd128_bn256_causal": 72}
    # wgmma chains closed by a wait (offline sm_90, session 17): one more per consumer and step for the row-sum
    # chain; 12 for the ping-pong loop (its steps issue P·V and the next S as two chains before one wait)
    waited = {"attn_glws_hd128_bn256_rsmma": 12, "attn_glws_hd128_pp": 12, "attn_glws_hd128_causal": 12,
              "attn_glws_hd256_bn128_causal": 12, "attn_glws_hd128_bn256_causal": 12}
    # Spills outside every loop, (stores, loads): since session 18's causal launch order (the (query block, head)
    # of a program is computed by divisions, no longer a function of the block index that ptxas recomputes where
    # needed), this non-default form keeps two causal row indices of each consumer on the stack from the prologue
    # to the masked tail: 3 stores and 3 loads per program, none in a key loop (checked for every form above).
    edge_spills = {"attn_glws_hd128_ovlpc1_causal_lse": (3, 3)}
    res = subprocess.run([sys.executable, "-c", _SASS_SCRIPT, *expect], capture_output=True, text=True,
                         env=codegen_env(), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    facts = json.loads(res.stdout)
    for kernel, qgmma in expect.items():
        r = facts[kernel]
        assert r["qgmma"] == qgmma, r
        assert r["loop_spills"] == 0, r
        stores, loads = edge_spills.get(kernel, (0, 0))
        assert r["spill_stores"] == stores and r["spill_loads"] == loads, r
        assert r["usetmaxreg"], r
        if "_ovl" in kernel:
            # 2 consumers x (S_0; loop and tail: S_j, P_{j-1}·V; the last P·V): 12 chains, each waited once, and
            # the softmax of the loop and the tail (2 x 66 MUFU.EX2 per consumer) under P_{j-1}·V.
            assert r["gmma_waited"] == 12 and r["mufu_in_flight"] == 264, r
        else:  # 2 consumers x 2 steps x (S, P·V), the forms above as noted
            assert r["gmma_waited"] == waited.get(kernel, 8) and r["mufu_in_flight"] == 0, r
    assert facts["attn_glws_hd128_perm"]["shfl_idx"] == 0 < facts["attn_glws_hd128"]["shfl_idx"]
    # An E4M3 P carried across the back edge is repacked byte by byte (PRMT) at the next P·V; fp32 P is not.
    assert facts["attn_glws_hd128_ovlpc1"]["prmt"] * 2 < facts["attn_glws_hd128_ovl"]["prmt"]


def test_vt_layout():
    from tritonfp8._kernels.attention_gluon import vt_layout

    v = torch.randn(2, 45, 3, 16).to(torch.float8_e4m3fn)
    vt = vt_layout(v)
    assert vt.shape == (2, 3, 16, 64)
    assert torch.equal(vt[..., :45].float(), v.permute(0, 2, 3, 1).float())
    assert (vt[..., 45:].float() == 0).all()


def test_vt_layout_permuted_matches_the_relayout_pass(device):
    """vt_layout(permute_keys=True) is what the library's relayout pass writes for the Triton kernel's PERMUTE_P
    (on CPU that pass runs in the interpreter)."""
    from tritonfp8._kernels.attention_gluon import vt_layout
    from tritonfp8.attention import _quantize_heads

    v = torch.randn(2, 70, 2, 64).to(torch.float8_e4m3fn).to(device)
    y, _, _ = _quantize_heads(v, 2, None, 2, 70, quantize=False, transpose=True, permute_keys=True)
    assert torch.equal(vt_layout(v, permute_keys=True).float(), y.float())
    assert not torch.equal(vt_layout(v).float(), y.float())


_GPU_VARIANTS = {"plain": {}, "permp": dict(permute_p=True), "ovl": dict(overlap=True),
                 "ovlperm": dict(overlap=True, permute_p=True), "ovls4": dict(overlap=True, stages=4),
                 "ovlpp": dict(overlap=True, pingpong=True), "ovlpc1": dict(overlap=True, p_carry=1),
                 "ovlpc1perm": dict(overlap=True, p_carry=1, permute_p=True)}


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("variant", list(_GPU_VARIANTS))
@pytest.mark.parametrize("b,sq,sk,hq,hkv,d", [(2, 300, 333, 8, 2, 128), (1, 1024, 1024, 4, 4, 128),
                                             (2, 257, 129, 4, 1, 64), (1, 128, 1, 2, 2, 128),
                                             (1, 200, 128, 2, 2, 128), (1, 130, 256, 2, 1, 128),
                                             (1, 333, 300, 4, 2, 256)],
                         ids=["partial_gqa4", "full", "hd64_gqa4", "one_key", "one_block", "two_blocks", "hd256"])
def test_attn_glws_matches_reference(b, sq, sk, hq, hkv, d, variant):
    """Key counts cover every path of the overlapped loop: one key, exactly one / two full blocks (no tail),
    partial tails after one and several full blocks."""
    from test_attention import U_OUT, check_out, fp8_inputs, rel_error
    from tritonfp8._kernels.attention_gluon import launch, vt_layout
    from tritonfp8.attention import attention_torch

    opts = dict(_GPU_VARIANTS[variant])
    if d == 256:
        if not opts.get("overlap") or opts.get("stages"):
            pytest.skip("hd256 runs the overlapped form on 128 x 64 tiles, 3 stages (shared memory)")
        opts.update(block_n=64, stages=3)
    permute_p = opts.get("permute_p", False)
    gen = torch.Generator().manual_seed(sq + sk + d)
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, True, gen, "cuda")
    out = torch.full((b, sq, hq, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    scale = 1 / math.sqrt(d)
    launch(q8, k8, vt_layout(v8, permute_keys=permute_p), out, qd.contiguous(), kd.contiguous(), vd.contiguous(),
           scale, **opts)
    torch.cuda.synchronize()
    kw = dict(q_descale=qd, k_descale=kd, v_descale=vd)
    ref = attention_torch(q8, k8, v8, **kw)
    ref_pt = attention_torch(q8, k8, v8, p_fp8=True, **kw)
    check_out(out, ref, ref_pt)
    assert rel_error(out.float(), ref) <= rel_error(ref_pt, ref) + 2 * U_OUT[torch.bfloat16]


_CAUSAL_VARIANTS = {"plain": {}, "ovl": dict(overlap=True), "ovlpc1": dict(overlap=True, p_carry=1),
                    "ovlpc1pp": dict(overlap=True, p_carry=1, pingpong=True),
                    # the serial loop's masked steps are unrolled (MAX_MASKED: 2 at >= 128 keys, 3 at 64)
                    "bn256": dict(block_n=256, stages=2), "bn64": dict(block_n=64)}


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("variant", list(_CAUSAL_VARIANTS))
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
@pytest.mark.parametrize("b,sq,sk,hq,hkv", [(2, 300, 333, 8, 2), (1, 257, 100, 2, 1), (1, 384, 256, 2, 2),
                                           (1, 128, 1, 2, 2), (1, 1, 300, 2, 1), (1, 256, 512, 4, 1),
                                           (1, 700, 1001, 2, 1), (1, 1001, 700, 2, 2)],
                         ids=["sq_lt_sk", "sq_gt_sk", "sq_gt_sk_full", "one_key", "one_query", "aligned",
                              "long_offset", "long_negative_offset"])
def test_attn_glws_causal_and_lse(b, sq, sk, hq, hkv, causal, variant):
    """Causal bottom-right masking and the lse output (hd128): Sq > Sk leaves early rows with no visible key (0
    and -inf), whole programs with none (Sq - Sk >= 128 rows); block-boundary and single-row cases. Tolerances as
    test_attention.py (imported)."""
    from test_attention import check_lse, check_out, fp8_inputs, score_bound
    from tritonfp8._kernels.attention_gluon import launch, vt_layout
    from tritonfp8.attention import attention_torch

    d = 128
    opts = _CAUSAL_VARIANTS[variant]
    gen = torch.Generator().manual_seed(sq * 7 + sk + causal)
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, True, gen, "cuda")
    out = torch.full((b, sq, hq, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    lse = torch.full((b, hq, sq), float("nan"), device="cuda")
    scale = 1 / math.sqrt(d)
    launch(q8, k8, vt_layout(v8, permute_keys=opts.get("permute_p", False)), out, qd.contiguous(), kd.contiguous(),
           vd.contiguous(), scale, causal=causal, lse=lse, **opts)
    torch.cuda.synchronize()
    kw = dict(causal=causal, q_descale=qd, k_descale=kd, v_descale=vd)
    ref, lse_ref = attention_torch(q8, k8, v8, return_lse=True, **kw)
    ref_pt = attention_torch(q8, k8, v8, p_fp8=True, **kw)
    check_out(out, ref, ref_pt)
    check_lse(lse, lse_ref, d, sk, score_bound(q8, k8, qd, kd, scale))


# -- through tritonfp8.attention(config=AttnConfig(kernel="glws")) ------------------------------------------------


def test_glws_config_validation():
    """AttnConfig(kernel="glws") takes only the options its kernel has; each misuse names what is wrong."""
    from tritonfp8.attention import AttnConfig

    AttnConfig(kernel="glws", overlap=2, num_stages=3, p_carry=1, pingpong=True)  # valid
    cases = [
        (dict(kernel="cutlass"), "kernel must be 'triton' or 'glws'"),
        (dict(kernel="glws", block_m=64), "block_m=128"),
        (dict(kernel="glws", block_n=32), "block_n 64, 128 or 256"),
        (dict(kernel="glws", v_transposed=False), "v_transposed=True"),
        (dict(kernel="glws", maxnreg=168), "options of the Triton kernel"),
        (dict(kernel="glws", overlap=2, num_stages=2), "num_stages >= 3"),
        (dict(kernel="glws", p_carry=1), "applies to kernel='glws' with overlap"),
        (dict(kernel="glws", overlap=2, num_stages=3, p_carry=2), "p_carry must be 0 or 1"),
        (dict(pingpong=True), "options of kernel='glws'"),
    ]
    for kw, match in cases:
        with pytest.raises(ValueError, match=match):
            AttnConfig(**kw)


def test_glws_config_refuses_what_it_cannot_run():
    """On CPU tensors (the interpreter cannot run Gluon: dense, varlen, E4M3 output alike): a ValueError naming the
    config, never a silent switch to the Triton kernel."""
    from tritonfp8.attention import AttnConfig, attention

    from tritonfp8._backend import interpreting

    cfg = AttnConfig(kernel="glws")
    # Without the interpreter (a GPU machine) CPU tensors are refused before any config is read.
    why = ("config: kernel='glws' does not support CPU tensors" if interpreting()
           else "attention: q is a CPU tensor; the Triton kernels need a CUDA tensor")
    q = torch.randn(1, 8, 2, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=why):
        attention(q, q, q, config=cfg)
    qv = torch.randn(8, 2, 64, dtype=torch.bfloat16)
    cu = torch.tensor([0, 3, 8], dtype=torch.int32)
    with pytest.raises(ValueError, match=why):
        attention(qv, qv, qv, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=5, max_seqlen_k=5, config=cfg)
    with pytest.raises(ValueError, match=why):
        attention(q, q, q, out_dtype=torch.float8_e4m3fn, out_scale=torch.tensor(1.0), config=cfg)


_API_CONFIGS = {"serial": dict(kernel="glws"), "ovlpc1": dict(kernel="glws", overlap=2, num_stages=3, p_carry=1),
                # session 17: 256-key blocks (hd <= 128; the tests give hd256 64-key blocks) and the serial
                # ping-pong loop, both with the tensor-core row sums (FADD sums on calls returning the lse)
                "bn256": dict(kernel="glws", block_n=256, row_sum_mma=True),
                "pp": dict(kernel="glws", num_stages=3, pingpong=True, row_sum_mma=True),
                "bn256pp": dict(kernel="glws", block_n=256, pingpong=True, row_sum_mma=True),
                "ppfadd": dict(kernel="glws", num_stages=3, pingpong=True),
                "bn256fadd": dict(kernel="glws", block_n=256),  # GLWS_DENSE_DEFAULTS[128]
                "bn256perm": dict(kernel="glws", block_n=256, permute_p=True)}


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cfg", list(_API_CONFIGS))
@pytest.mark.parametrize("inputs", ["fp8_head", "fp8_tensor", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
@pytest.mark.parametrize("b,sq,sk,hq,hkv,d", [(2, 300, 333, 8, 2, 128), (1, 257, 129, 4, 1, 64),
                                             (1, 200, 190, 2, 1, 256), (1, 160, 90, 2, 2, 80)],
                         ids=["hd128_gqa4", "hd64_gqa4", "hd256", "hd80_padded"])
def test_attention_api_with_glws(b, sq, sk, hq, hkv, d, causal, inputs, cfg):
    """attention(config=AttnConfig(kernel="glws", ...)): the library's input preparation (per-head quantization
    of bf16 inputs, Vᵀ relayout, head-dim padding, per-tensor / per-head descales) feeding the Gluon kernel;
    out and lse against attention_torch with test_attention.py's rule."""
    from test_attention import check_lse, check_out, fp8_inputs, score_bound
    from tritonfp8.attention import AttnConfig, attention, attention_torch, quantize_per_head_torch

    kw_cfg = dict(_API_CONFIGS[cfg])
    if d > 128:
        kw_cfg["block_n"] = 64
    config = AttnConfig(**kw_cfg)
    gen = torch.Generator().manual_seed(sq + sk + d + causal)
    if inputs == "bf16":
        q, k, v = (torch.randn(b, s, h, d, generator=gen).to("cuda", torch.bfloat16)
                   for s, h in ((sq, hq), (sk, hkv), (sk, hkv)))
        out, lse = attention(q, k, v, causal=causal, return_lse=True, config=config)
        (q8, qd), (k8, kd), (v8, vd) = (quantize_per_head_torch(t, hkv) for t in (q, k, v))
    else:
        (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, inputs == "fp8_head", gen,
                                                "cuda")
        out, lse = attention(q8, k8, v8, causal=causal, q_descale=qd, k_descale=kd, v_descale=vd, return_lse=True,
                             config=config)
    kw = dict(causal=causal, q_descale=qd, k_descale=kd, v_descale=vd)
    ref, lse_ref = attention_torch(q8, k8, v8, return_lse=True, **kw)
    ref_pt = attention_torch(q8, k8, v8, p_fp8=True, **kw)
    assert out.shape == (b, sq, hq, d) and out.dtype == torch.bfloat16
    check_out(out, ref, ref_pt)
    check_lse(lse, lse_ref, d, sk, score_bound(q8, k8, qd, kd, 1 / math.sqrt(d)))


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["bn256", "pp", "bn256pp", "ppfadd"])
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
@pytest.mark.parametrize("b,sq,sk,hq,hkv,d", [(2, 300, 333, 8, 2, 128), (1, 257, 129, 4, 1, 64),
                                             (1, 700, 4100, 2, 1, 128), (1, 4100, 2300, 2, 2, 128)],
                         ids=["hd128_gqa4", "hd64_gqa4", "hd128_17blocks", "hd128_sq_gt_sk"])
def test_attention_api_with_glws_row_sums(b, sq, sk, hq, hkv, d, causal, cfg):
    """The tensor-core row sums of the Gluon forward (calls without the lse: the other API tests return it, which
    runs FADD sums): per-head descales, GQA, up to 17 key blocks of 256 (each block's sum from a fresh wgmma
    accumulator, added in fp32: summed across blocks on the tensor core the error grew with the key length)."""
    from test_attention import check_out, fp8_inputs
    from tritonfp8.attention import AttnConfig, attention, attention_torch

    gen = torch.Generator().manual_seed(sq + sk + d + causal)
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, True, gen, "cuda")
    kw = dict(causal=causal, q_descale=qd, k_descale=kd, v_descale=vd)
    out = attention(q8, k8, v8, config=AttnConfig(**_API_CONFIGS[cfg]), **kw)
    assert out.shape == (b, sq, hq, d) and out.dtype == torch.bfloat16
    check_out(out, attention_torch(q8, k8, v8, **kw), attention_torch(q8, k8, v8, p_fp8=True, **kw))


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["serial", "ovlpc1", "bn256", "pp"])
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_attention_api_with_glws_varlen(causal, cfg):
    """Varlen through attention(config=AttnConfig(kernel="glws", ...)): 5 sequences of uneven lengths (one key
    sequence empty, one query sequence longer than its keys), the packed layouts, Vᵀ columns per sequence, lse
    (Hq, total_q); against attention_torch's varlen reference."""
    from test_attention import check_lse, check_out, score_bound
    from tritonfp8.attention import AttnConfig, attention, attention_torch

    lq, lk = [130, 1, 300, 64, 257], [200, 0, 129, 64, 100]
    hq, hkv, d = 4, 2, 128
    gen = torch.Generator().manual_seed(11 + causal)
    cu_q = torch.tensor([0, *torch.tensor(lq).cumsum(0).tolist()], dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0, *torch.tensor(lk).cumsum(0).tolist()], dtype=torch.int32, device="cuda")
    q8 = torch.randn(sum(lq), hq, d, generator=gen).to("cuda", torch.float8_e4m3fn)
    k8, v8 = (torch.randn(sum(lk), hkv, d, generator=gen).to("cuda", torch.float8_e4m3fn) for _ in range(2))
    qd, kd, vd = ((2 - 2 * torch.rand(len(lq), hkv, generator=gen)).clamp_min(2.0**-6).cuda() for _ in range(3))
    kw = dict(causal=causal, q_descale=qd, k_descale=kd, v_descale=vd, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
              max_seqlen_q=max(lq), max_seqlen_k=max(lk))
    out, lse = attention(q8, k8, v8, return_lse=True, config=AttnConfig(**_API_CONFIGS[cfg]), **kw)
    ref, lse_ref = attention_torch(q8, k8, v8, return_lse=True, **kw)
    ref_pt = attention_torch(q8, k8, v8, p_fp8=True, **kw)
    assert out.shape == q8.shape and lse.shape == (hq, sum(lq))
    check_out(out, ref, ref_pt)
    check_lse(lse, lse_ref, d, max(lk), score_bound(q8, k8, qd, kd, 1 / math.sqrt(d)))


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_attention_api_with_glws_hd256_bn128(causal, stages):
    """hd256 on 128 x 128 tiles of the Gluon forward (serial loop, 2 or 3 stages; prepared in session 17): out and
    lse against attention_torch with test_attention.py's rule, GQA and per-head descales."""
    from test_attention import check_lse, check_out, fp8_inputs, score_bound
    from tritonfp8.attention import AttnConfig, attention, attention_torch

    b, sq, sk, hq, hkv, d = 2, 300, 333, 4, 2, 256
    gen = torch.Generator().manual_seed(23 + causal)
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, True, gen, "cuda")
    kw = dict(causal=causal, q_descale=qd, k_descale=kd, v_descale=vd)
    out, lse = attention(q8, k8, v8, return_lse=True,
                         config=AttnConfig(kernel="glws", block_n=128, num_stages=stages), **kw)
    ref, lse_ref = attention_torch(q8, k8, v8, return_lse=True, **kw)
    check_out(out, ref, attention_torch(q8, k8, v8, p_fp8=True, **kw))
    check_lse(lse, lse_ref, d, sk, score_bound(q8, k8, qd, kd, 1 / math.sqrt(d)))


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["serial", "ovlpc1", "bn256", "pp", "bn256fadd", "bn256perm"])
@pytest.mark.parametrize("per_head_scale", [False, True], ids=["tensor_scale", "head_scale"])
def test_attention_api_with_glws_e4m3_out(per_head_scale, cfg):
    """E4M3 output through attention(config=AttnConfig(kernel="glws", ...)): out ≈ out_fp8 * out_scale, () or
    (B, Hq), with test_attention.py's FP8-output rule (relative u for normals, the subnormal step below)."""
    from test_attention import check_out, fp8_inputs
    from tritonfp8.attention import AttnConfig, attention, attention_torch

    b, sq, sk, hq, hkv, d = 2, 300, 333, 4, 2, 128
    gen = torch.Generator().manual_seed(5 + per_head_scale)
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, True, gen, "cuda")
    kw = dict(q_descale=qd, k_descale=kd, v_descale=vd)
    ref = attention_torch(q8, k8, v8, **kw)
    ref_pt = attention_torch(q8, k8, v8, p_fp8=True, **kw)
    amax = ref.abs().amax(dim=(1, 3)) if per_head_scale else ref.abs().amax()  # (B, Hq) or ()
    out_scale = (amax / 448).float().cuda()
    out = attention(q8, k8, v8, out_dtype=torch.float8_e4m3fn, out_scale=out_scale,
                    config=AttnConfig(**_API_CONFIGS[cfg]), **kw)
    assert out.dtype == torch.float8_e4m3fn and out.shape == (b, sq, hq, d)
    os_ = out_scale[:, None, :, None] if per_head_scale else out_scale
    check_out(out.float() * os_, ref, ref_pt, torch.float8_e4m3fn, float(out_scale.max()))


def _wgmma_probe_kernel():
    """A one-warp-group Gluon kernel (built lazily: Gluon imports need triton) for the row-sum question below:
    A (64 x K, E4M3) from registers, B ([N, K] E4M3, K-major in shared memory) -> out (64 x N fp32); with DUAL the
    same register A first feeds a 64 x 128 product (as P feeds P·V before P·1 in the kernel): out2."""
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, warpgroup_mma,
                                                                  warpgroup_mma_wait)

    @gluon.jit
    def probe(a_ptr, b_ptr, b2_ptr, out_ptr, out2_ptr, N: gl.constexpr, K: gl.constexpr, DUAL: gl.constexpr):
        blocked: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [4, 1], [1, 0])
        acc_l: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, N, 32])
        acc2_l: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, 128, 32])
        rows = gl.arange(0, 64, layout=gl.SliceLayout(1, blocked))
        cols = gl.arange(0, K, layout=gl.SliceLayout(0, blocked))
        a = gl.load(a_ptr + rows[:, None] * K + cols[None, :])
        b_rows = gl.arange(0, N, layout=gl.SliceLayout(1, blocked))
        b_smem = gl.allocate_shared_memory(gl.float8e4nv, [N, K],
                                           gl.NVMMASharedLayout.get_default_for([N, K], gl.float8e4nv))
        b_smem.store(gl.load(b_ptr + b_rows[:, None] * K + cols[None, :]))
        r2 = gl.arange(0, 128, layout=gl.SliceLayout(1, blocked))
        b2_smem = gl.allocate_shared_memory(gl.float8e4nv, [128, K],
                                            gl.NVMMASharedLayout.get_default_for([128, K], gl.float8e4nv))
        if DUAL:
            b2_smem.store(gl.load(b2_ptr + r2[:, None] * K + cols[None, :]))
        fence_async_shared()
        if DUAL:
            a2 = gl.convert_layout(a, gl.DotOperandLayout(operand_index=0, parent=acc2_l, k_width=4))
            acc2 = warpgroup_mma(a2, b2_smem.permute((1, 0)), gl.zeros([64, 128], gl.float32, acc2_l),
                                 is_async=True)
            acc = warpgroup_mma(a2, b_smem.permute((1, 0)), gl.zeros([64, N], gl.float32, acc_l), is_async=True)
            acc2, acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc2, acc))
            c2 = gl.arange(0, 128, layout=gl.SliceLayout(0, acc2_l))
            o2r = gl.arange(0, 64, layout=gl.SliceLayout(1, acc2_l))
            gl.store(out2_ptr + o2r[:, None] * 128 + c2[None, :], acc2)
        else:
            a1 = gl.convert_layout(a, gl.DotOperandLayout(operand_index=0, parent=acc_l, k_width=4))
            acc = warpgroup_mma(a1, b_smem.permute((1, 0)), gl.zeros([64, N], gl.float32, acc_l), is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        c = gl.arange(0, N, layout=gl.SliceLayout(0, acc_l))
        orow = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_l))
        gl.store(out_ptr + orow[:, None] * N + c[None, :], acc)

    return probe


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dual", [False, True], ids=["alone", "after_pv"])
@pytest.mark.parametrize("b_kind", ["ones", "random"])
@pytest.mark.parametrize("n", [8, 16])
def test_wgmma_small_n_register_a(n, b_kind, dual):
    """The row-sum question (the attention kernel's row sums by P times a block of ones failed on the H200 in
    session 10 while the PTX and SASS read right; removed): does a register-A E4M3 wgmma with N = 8 / 16 (alone, or after the same A fed an N = 128 product)
    compute A·B? Exact: small integers (E4M3 products of small integers sum exactly in fp32 at K = 128)."""
    k = 128
    gen = torch.Generator().manual_seed(n + dual)
    a = torch.randint(-4, 5, (64, k), generator=gen).float()
    b = torch.ones(n, k) if b_kind == "ones" else torch.randint(-3, 4, (n, k), generator=gen).float()
    b2 = torch.randint(-3, 4, (128, k), generator=gen).float()
    f8 = torch.float8_e4m3fn
    a8, b8, b28 = (x.to(f8).cuda() for x in (a, b, b2))
    out = torch.full((64, n), float("nan"), device="cuda")
    out2 = torch.full((64, 128), float("nan"), device="cuda")
    _wgmma_probe_kernel()[(1,)](a8, b8, b28, out, out2, N=n, K=k, DUAL=dual, num_warps=4)
    torch.cuda.synchronize()
    torch.testing.assert_close(out.cpu(), a @ b.T, rtol=0, atol=0)
    if dual:
        torch.testing.assert_close(out2.cpu(), a @ b2.T, rtol=0, atol=0)


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("return_lse", [False, True], ids=["out", "lse"])
def test_default_hd128_dense_is_the_gluon_forward(return_lse):
    """On sm_90 attention() of a dense non-causal hd128 (and hd80, padded) problem runs GLWS_DENSE_DEFAULTS[128]:
    bit-equal to the explicit config, within test_attention.py's rule of the reference, the lse within
    check_lse's bound."""
    from test_attention import check_lse, check_out, fp8_inputs, score_bound
    from tritonfp8._backend import arch_of
    from tritonfp8.attention import GLWS_DENSE_DEFAULTS, _default_config_for, attention, attention_torch

    dev = torch.device("cuda")
    if arch_of(dev) != 90:
        pytest.skip("the Gluon default applies to sm_90")
    assert _default_config_for(dev, 128) == GLWS_DENSE_DEFAULTS[128] == _default_config_for(dev, 80)
    b, sq, sk, hq, hkv, d = 2, 333, 600, 8, 2, 128
    gen = torch.Generator().manual_seed(17 + return_lse)
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, True, gen, "cuda")
    kw = dict(q_descale=qd, k_descale=kd, v_descale=vd, return_lse=return_lse)
    res = attention(q8, k8, v8, **kw)
    pinned = attention(q8, k8, v8, config=GLWS_DENSE_DEFAULTS[128], **kw)
    ref = attention_torch(q8, k8, v8, **kw)
    if return_lse:
        (out, lse), (out_p, lse_p), (ref, lse_ref) = res, pinned, ref
        assert torch.equal(lse, lse_p)
        check_lse(lse, lse_ref, d, sk, score_bound(q8, k8, qd, kd, 1 / math.sqrt(d)))
    else:
        out, out_p = res, pinned
    assert torch.equal(out, out_p)
    check_out(out, ref, attention_torch(q8, k8, v8, p_fp8=True, q_descale=qd, k_descale=kd, v_descale=vd))


def test_default_config_choice_cpu():
    """Without a compiled sm_90 run the default stays the Triton kernel (the interpreter's tiles on CPU)."""
    from tritonfp8.attention import GLWS_DEFAULTS, _default_config_for, _INTERPRETER_CONFIG, default_config
    from tritonfp8._backend import interpreting

    assert GLWS_DEFAULTS[256].kernel == "glws" and GLWS_DEFAULTS[256].block_n == 128
    for d in (64, 100, 128, 200, 256):
        cfg = _default_config_for(torch.device("cpu"), d)
        assert cfg.kernel == "triton"
        if interpreting():
            assert cfg == _INTERPRETER_CONFIG
    assert default_config(256).kernel == "triton"


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_default_hd256_is_the_gluon_forward(causal):
    """On sm_90 attention() at hd256 (and a padded D in (128, 256)) runs GLWS_DEFAULTS[256]: bit-equal to the
    explicit config, and within test_attention.py's rule of the reference; causal / varlen hd128 stays on the
    Triton kernel."""
    from test_attention import check_out, fp8_inputs
    from tritonfp8._backend import arch_of
    from tritonfp8.attention import GLWS_DEFAULTS, _default_config_for, attention, attention_torch

    dev = torch.device("cuda")
    if arch_of(dev) != 90:
        pytest.skip("the Gluon default applies to sm_90")
    assert _default_config_for(dev, 256) == GLWS_DEFAULTS[256] == _default_config_for(dev, 160)
    assert _default_config_for(dev, 256, causal=True) == GLWS_DEFAULTS[256]
    assert _default_config_for(dev, 128, causal=True).kernel == "triton"
    assert _default_config_for(dev, 128, varlen=True).kernel == "triton"
    b, sq, sk, hq, hkv, d = 2, 333, 300, 4, 2, 256
    gen = torch.Generator().manual_seed(11 + causal)
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, True, gen, "cuda")
    kw = dict(causal=causal, q_descale=qd, k_descale=kd, v_descale=vd)
    out = attention(q8, k8, v8, **kw)
    assert torch.equal(out, attention(q8, k8, v8, config=GLWS_DEFAULTS[256], **kw))
    check_out(out, attention_torch(q8, k8, v8, **kw), attention_torch(q8, k8, v8, p_fp8=True, **kw))
    # varlen (the default at hd256 too): an empty key sequence, a query sequence longer than its keys
    lq, lk = [200, 3, 129], [150, 0, 300]
    cu_q, cu_k = (torch.tensor([0, *torch.tensor(x).cumsum(0).tolist()], dtype=torch.int32, device="cuda")
                  for x in (lq, lk))
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((sum(lq), hq, d), (sum(lk), hkv, d), hkv, len(lq), True, gen, "cuda")
    kw = dict(causal=causal, q_descale=qd, k_descale=kd, v_descale=vd, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
              max_seqlen_q=max(lq), max_seqlen_k=max(lk))
    out = attention(q8, k8, v8, **kw)
    assert torch.equal(out, attention(q8, k8, v8, config=GLWS_DEFAULTS[256], **kw))
    check_out(out, attention_torch(q8, k8, v8, **kw), attention_torch(q8, k8, v8, p_fp8=True, **kw))


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["serial", "bn256", "pp", "ovlpc1"])
@pytest.mark.parametrize("group", [4, 0], ids=["groups_of_4", "auto"])
def test_glws_causal_head_groups_give_the_same_output(cfg, group):
    """The Gluon forward's causal launch order (``AttnConfig.head_group``, session 18) moves work between programs,
    not arithmetic: out and lse equal the per-head order's (head_group=1) bit for bit; 3 x 4 = 12 heads in groups of
    4, or one group (auto at these lengths); Sq != Sk, GQA 2:1, per-head descales; and the rule against the
    reference."""
    from test_attention import check_lse, check_out, fp8_inputs, score_bound
    from tritonfp8.attention import AttnConfig, attention, attention_torch

    b, sq, sk, hq, hkv, d = 3, 700, 900, 4, 2, 128
    gen = torch.Generator().manual_seed(61)
    (q8, k8, v8), (qd, kd, vd) = fp8_inputs((b, sq, hq, d), (b, sk, hkv, d), hkv, b, True, gen, "cuda")
    kw = dict(causal=True, q_descale=qd, k_descale=kd, v_descale=vd, return_lse=True)
    base = AttnConfig(**_API_CONFIGS[cfg])
    out, lse = attention(q8, k8, v8, config=base.evolve(head_group=group), **kw)
    out1, lse1 = attention(q8, k8, v8, config=base.evolve(head_group=1), **kw)
    assert torch.equal(out, out1) and torch.equal(lse, lse1)
    kw.pop("return_lse")
    ref, lse_ref = attention_torch(q8, k8, v8, return_lse=True, **kw)
    check_out(out, ref, attention_torch(q8, k8, v8, p_fp8=True, **kw))
    check_lse(lse, lse_ref, d, sk, score_bound(q8, k8, qd, kd, 1 / math.sqrt(d)))
