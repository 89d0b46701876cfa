"""The L2 evict-first PTX pass (``tritonfp8._kernels.l2hint``) on PTX text, its Triton hook, and the decode
option that asks for it. The compiled kernels' PTX and SASS are checked in tests/test_codegen_decode.py."""

from __future__ import annotations

import pytest

from tritonfp8 import DecodeConfig
from tritonfp8._kernels import l2hint
from tritonfp8._kernels.decode import decode_kernel_name

PTX = """//
.version 8.7
.target sm_90a
.address_size 64

.visible .entry cutlass_sm90_decode_x_l2ef(
\t.param .u64 .ptr .global .align 1 cutlass_param_0
)
.reqntid 32
{
\t.reg .pred \t%p<9>;
\t.reg .b32 \t%r<300>;
\t.reg .b64 \t%rd<90>;
// %bb.0:
\t@%p7 cp.async.ca.shared.global [ %r213 + 0 ], [ %rd92 + 0 ], 0x4, %r214;
\t@%p9 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1687], [%rd90, {%r30, %r212}], [%r205];
\tcp.async.cg.shared.global [ %r4 + 0 ], [ %rd5 + 0 ], 0x10, %r6;
\tcp.async.ca.shared.global [ %r7 + 0 ], [ %rd6 + 0 ], 0x8, %r8;
\tld.global.b32 { %r204 }, [ %rd87 + 0 ];
\tret;
}
"""


def test_hints_the_tma_loads_only():
    out, n = l2hint.add_l2_evict_first(PTX)
    assert n == 1
    lines = out.splitlines()
    tma = next(x for x in lines if "cp.async.bulk.tensor" in x)
    assert tma.strip() == ("@%p9 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                           ".L2::cache_hint [%r1687], [%rd90, {%r30, %r212}], [%r205], %tfp8_l2ef;")
    # cp.async (ptxas 12.8 miscompiles its fractional policies) and plain loads keep the default policy
    for line in ("@%p7 cp.async.ca.shared.global [ %r213 + 0 ], [ %rd92 + 0 ], 0x4, %r214;",
                 "cp.async.cg.shared.global [ %r4 + 0 ], [ %rd5 + 0 ], 0x10, %r6;",
                 "cp.async.ca.shared.global [ %r7 + 0 ], [ %rd6 + 0 ], 0x8, %r8;",
                 "ld.global.b32 { %r204 }, [ %rd87 + 0 ];"):
        assert ("\t" + line) in lines
    # the policy register is declared and created right after the body opens, before any use
    body = lines.index("{")
    assert lines[body + 1] == "\t.reg .b64 \t%tfp8_l2ef;"
    assert lines[body + 2] == "\tcreatepolicy.fractional.L2::evict_first.b64 \t%tfp8_l2ef, 1.0;"
    first_use = next(i for i, x in enumerate(lines) if "%tfp8_l2ef" in x and i > body + 2)
    assert first_use > body + 2
    assert out.count("createpolicy") == 1


def test_ptx_without_copies_is_unchanged():
    ptx = PTX.replace("cp.async.bulk", "nop.async.bulk")
    assert l2hint.add_l2_evict_first(ptx) == (ptx, 0)


def test_rejects_ptx_it_cannot_edit_safely():
    with pytest.raises(ValueError, match="exactly one .entry"):
        l2hint.add_l2_evict_first(PTX + PTX.split(".address_size 64")[1])
    once, _ = l2hint.add_l2_evict_first(PTX)
    with pytest.raises(ValueError, match="already declares"):
        l2hint.add_l2_evict_first(once)


def test_tag_is_a_whole_name_field():
    assert l2hint.tagged("cutlass_sm90_decode_e4m3_bf16_f32_bf16_16x64x128_w1s4_pagedsplitkv_page64_l2ef")
    assert not l2hint.tagged("cutlass_sm90_decode_l2eff")
    assert not l2hint.tagged("tfp8_sm90_decode_e4m3")


def test_kernel_name_field():
    args = (90, "e4m3", "bf16", "bf16", 16, 64, 128, 1, 4, 64, True, True)
    assert l2hint.tagged(decode_kernel_name(*args, l2ef=True).build("cutlass"))
    assert not l2hint.tagged(decode_kernel_name(*args).build("cutlass"))


def test_hook_patches_tagged_kernels_and_chains(monkeypatch):
    """install() wraps whatever hook is set (one set before the import, or one that replaced ours since: decode
    plans call install() again before compiling), once."""
    from triton import knobs

    seen = []

    def previous(backend, stages, options, language, capability):
        seen.append(language)

    monkeypatch.setattr(knobs.runtime, "add_stages_inspection_hook", previous)
    l2hint.install()
    hook = knobs.runtime.add_stages_inspection_hook
    l2hint.install()  # idempotent: no second wrapper
    assert knobs.runtime.add_stages_inspection_hook is hook
    stages = {"ptx": lambda src, md: src, "cubin": lambda src, md: src}
    hook(None, stages, None, "triton", 90)
    assert seen == ["triton"]
    patched = stages["ptx"](PTX, {"name": "cutlass_sm90_decode_x_l2ef"})
    assert "L2::cache_hint" in patched
    untagged = PTX.replace("_l2ef(", "(")
    assert stages["ptx"](untagged, {"name": "cutlass_sm90_decode_x"}) == untagged


def test_check_warns_once_for_a_tagged_kernel_without_hints(recwarn):
    class K:
        def __init__(self, name, ptx):
            self.metadata = type("M", (), {"name": name})()
            self.asm = {"ptx": ptx}

    l2hint.check(K("cutlass_sm90_decode_x_l2ef", l2hint.add_l2_evict_first(PTX)[0]))
    l2hint.check(K("cutlass_sm90_decode_x", PTX))
    assert not recwarn.list
    l2hint._WARNED.discard("cutlass_sm90_decode_y_l2ef")
    with pytest.warns(RuntimeWarning, match="evict-first hints but its PTX has none"):
        l2hint.check(K("cutlass_sm90_decode_y_l2ef", PTX))
    l2hint.check(K("cutlass_sm90_decode_y_l2ef", PTX))  # once per kernel: no second warning
    assert not recwarn.list


def test_config_validation():
    assert DecodeConfig(l2_evict_first=True).l2_evict_first
    with pytest.raises(TypeError, match="l2_evict_first: expected a bool"):
        DecodeConfig(l2_evict_first=1)
