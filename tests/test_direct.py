"""Direct launches (tritonfp8/_direct.py): on CPU, against Triton 3.6's real launcher wrapper
(``wrap_handle_tensordesc`` / ``make_tensordesc_arg``) around a recording stand-in for the C launcher and a stand-in
``fill_tma_descriptor``; on the GPU, bit-exact GEMM results against the stock launcher path."""

import importlib
import types

import pytest
import torch
from triton import knobs
from triton.compiler.compiler import CompiledKernel, LazyDict
from triton.runtime import driver as rt_driver
from triton.tools.tensor_descriptor import TensorDescriptor

from tests.conftest import requires_gpu
from tritonfp8 import _direct as D
from tritonfp8 import _launch as L

nv = pytest.importorskip("triton.backends.nvidia.driver")
pytestmark = pytest.mark.skipif(not D._supported_version(), reason="direct launches know Triton 3.6.0 only")

_SIG = {"x": "tensordesc<fp8e4nv[64, 128]>", "n": "i32", "p": "*fp32", "c": "tensordesc<bf16[64, 64]>",
        "B": "constexpr"}
_META = [dict(swizzle=3, elem_size=1, elem_type=11, block_size=[64, 128], fp4_padded=False),
         dict(swizzle=3, elem_size=2, elem_type=6, block_size=[64, 64], fp4_padded=False)]


class _Fill:
    """Stand-in for ``fill_tma_descriptor``: counts encodings; the 'map' is the tuple of its inputs."""

    def __init__(self):
        self.calls = 0

    def __call__(self, ptr, swizzle, elem_size, elem_type, block, shape, strides, padding):
        self.calls += 1
        return ("map", ptr, swizzle, elem_size, elem_type, tuple(block), tuple(shape), tuple(strides), padding)


class _Kernel:
    """The parts of a CompiledKernel that run_compiled and _direct read (launch_metadata is Triton's own)."""

    launch_metadata = CompiledKernel.launch_metadata

    def __init__(self, launcher, signature):
        self.run, self.function, self.packed_metadata, self.name = launcher, 0xF00, (4, 1, 1024), "k"
        self.src = types.SimpleNamespace(signature=signature, fn=None)
        self.module = object()  # handles 'loaded': _init_handles returns at once

    def _init_handles(self):
        pass


@pytest.fixture
def fake_cuda(monkeypatch):
    """A Triton 3.6 CudaLauncher (built without compiling C) whose C entry point records its arguments."""
    fill, calls = _Fill(), []
    drv = types.SimpleNamespace(utils=types.SimpleNamespace(fill_tma_descriptor=fill),
                                get_current_device=lambda: 0, get_current_stream=lambda dev: 0x5717)
    monkeypatch.setattr(rt_driver, "_active", drv)

    def make(signature=_SIG, meta=_META, scratch=0):
        launcher = object.__new__(nv.CudaLauncher)
        launcher.num_ctas, launcher.launch_cooperative_grid, launcher.launch_pdl = 1, False, False
        launcher.global_scratch_size = launcher.profile_scratch_size = scratch
        launcher.global_scratch_align = launcher.profile_scratch_align = 1
        launcher.launch = nv.wrap_handle_tensordesc(lambda *a: calls.append(a), signature, meta)
        return _Kernel(launcher, signature)

    D.cache_clear()
    prev = D.set_enabled(True)
    yield types.SimpleNamespace(make=make, fill=fill, calls=calls)
    D.set_enabled(prev)
    D.cache_clear()


_P = torch.zeros(4)


def _vals(x, c, n=7):
    return (TensorDescriptor.from_tensor(x, [64, 128]), n, _P, TensorDescriptor.from_tensor(c, [64, 64]), 4)


def _launch(kernel, vals, direct: bool):
    prev = D.set_enabled(direct)
    try:
        L.run_compiled(kernel, (3, 1, 1), vals)
    finally:
        D.set_enabled(prev)


def test_direct_passes_what_the_stock_wrapper_passes(fake_cuda):
    k = fake_cuda.make()
    x, c = torch.zeros(256, 512, dtype=torch.uint8), torch.zeros(256, 128, dtype=torch.bfloat16)
    vals = _vals(x, c)
    _launch(k, vals, direct=False)
    _launch(k, vals, direct=True)
    stock, direct = fake_cuda.calls
    assert isinstance(stock[10], LazyDict) and stock[11] is knobs.runtime.launch_enter_hook
    assert direct[10:13] == (None, None, None)  # no hooks registered: the C launcher skips them
    assert direct[:10] == stock[:10] and direct[13:] == stock[13:]
    # the descriptors' expansion: [map, *shape, *strides] in place of each descriptor
    assert direct[13:13 + 5] == (fake_cuda.fill(x.data_ptr(), 3, 1, 11, [64, 128], [256, 512], [512, 1], 0),
                                 256, 512, 512, 1)
    assert D.runner(k, len(vals)) is not None


def test_descriptor_encoded_once_per_address_and_geometry(fake_cuda):
    k = fake_cuda.make()
    buf, c = torch.zeros(512 * 512, dtype=torch.uint8), torch.zeros(256, 128, dtype=torch.bfloat16)
    x = buf[:256 * 512].view(256, 512)
    _launch(k, _vals(x, c), direct=True)
    assert fake_cuda.fill.calls == 2
    _launch(k, _vals(x, c, n=9), direct=True)  # new descriptor objects, same geometry: nothing re-encoded
    assert fake_cuda.fill.calls == 2 and D.stats["reused"] == 2
    x2 = torch.zeros(256, 512, dtype=torch.uint8)  # another address, same shape: x re-encoded, c reused
    _launch(k, _vals(x2, c), direct=True)
    assert fake_cuda.fill.calls == 3 and fake_cuda.calls[-1][13][1] == x2.data_ptr()
    # the same address with another shape (as after a free and a re-allocation there): a new encoding, never the
    # descriptor of the old shape
    x3 = buf[:128 * 512].view(128, 512)
    assert x3.data_ptr() == x.data_ptr()
    _launch(k, _vals(x3, c), direct=True)
    assert fake_cuda.fill.calls == 4
    got = fake_cuda.calls[-1]
    _launch(k, _vals(x3, c), direct=False)
    assert got[13:] == fake_cuda.calls[-1][13:] and got[13][6] == (128, 512) and got[14] == 128
    x4 = buf[:256 * 256].view(256, 256)  # same address, other strides
    _launch(k, _vals(x4, c), direct=True)
    assert fake_cuda.fill.calls == 4 + 2 + 1 and fake_cuda.calls[-1][13][7] == (256, 1)  # (the stock call: 2)
    n = fake_cuda.fill.calls
    for _ in range(2):  # descriptors built with lists (not hashable): reused too, through the tuple key
        listed = TensorDescriptor(x4, [256, 256], [256, 1], [64, 128])
        L.run_compiled(k, (3, 1, 1), (listed, 7, _P, TensorDescriptor.from_tensor(c, [64, 64]), 4))
    assert fake_cuda.fill.calls == n and fake_cuda.calls[-1][13][6:8] == ((256, 256), (256, 1))


def test_unchecked_descriptors_on_tensors_or_addresses_launch_alike(fake_cuda):
    """_direct.descriptor (no constructor checks; shape and strides as given) on the tensor or on its Address: the
    same C-launcher arguments as TensorDescriptor.from_tensor, one encoding for all three (the fast key finds the
    tuples), the same launch key on the tensor (an Address goes to compiled launches only), and an Address keeps no
    reference to the tensor."""
    k = fake_cuda.make()
    x, c = torch.zeros(256, 512, dtype=torch.uint8), torch.zeros(256, 128, dtype=torch.bfloat16)
    cd = TensorDescriptor.from_tensor(c, [64, 64])
    made = [TensorDescriptor.from_tensor(x, [64, 128]), D.descriptor(x, (256, 512), (512, 1), [64, 128]),
            D.descriptor(D.Address(x.data_ptr(), x.dtype), (256, 512), (512, 1), [64, 128])]
    assert L.arg_spec(made[0]) == L.arg_spec(made[1])
    for d in made:
        _launch(k, (d, 7, _P, cd, 4), direct=True)
    assert fake_cuda.fill.calls == 2 and D.stats["reused"] == 4
    assert fake_cuda.calls[0][13:18] == fake_cuda.calls[1][13:18] == fake_cuda.calls[2][13:18]
    assert not any(isinstance(getattr(made[2].base, s), torch.Tensor) for s in D.Address.__slots__)


@pytest.mark.parametrize("case", ["version", "scratch", "wrapper", "disabled", "hook"])
def test_unknown_structure_or_hooks_take_the_stock_path(fake_cuda, monkeypatch, case):
    k = fake_cuda.make(scratch=128 if case == "scratch" else 0)
    if case == "version":
        monkeypatch.setattr(D, "_VERSIONS", ("9.9.9",))
    if case == "wrapper":
        k.run.launch = lambda *a: fake_cuda.calls.append(a)  # not 3.6's wrap_handle_tensordesc closure
    if case == "scratch":  # the stock __call__ would allocate; the stand-in allocator records the request
        for name in ("_allocator", "_profile_allocator"):
            monkeypatch.setattr(nv._allocation, name, types.SimpleNamespace(get=lambda: lambda *a: None))
    hook_calls = []
    if case == "hook":
        knobs.runtime.launch_enter_hook.add(hook_calls.append)
    try:
        x, c = torch.zeros(256, 512, dtype=torch.uint8), torch.zeros(256, 128, dtype=torch.bfloat16)
        _launch(k, _vals(x, c), direct=case != "disabled")
    finally:
        if case == "hook":
            knobs.runtime.launch_enter_hook.remove(hook_calls.append)
    assert isinstance(fake_cuda.calls[-1][10], LazyDict)  # Triton's own launch path ran
    if case == "hook":
        assert D.runner(k, 5) is not None  # the runner exists; the hook only routes this call to the stock path
    elif case != "disabled":
        assert D.runner(k, 5) is None


def test_kernel_without_descriptors_calls_the_c_launcher_directly(fake_cuda):
    sig = {"p": "*fp32", "n": "i32", "B": "constexpr"}
    k = fake_cuda.make(signature=sig, meta=None)
    assert k.run.launch is not None
    vals = (torch.zeros(4), 5, 2)
    _launch(k, vals, direct=False)
    _launch(k, vals, direct=True)
    stock, direct = fake_cuda.calls
    assert direct[:10] == stock[:10] and direct[13:] == stock[13:] and fake_cuda.fill.calls == 0


def test_environment_switches(monkeypatch):
    """TRITONFP8_DIRECT_LAUNCH=0 turns direct launches off alone; TRITONFP8_FAST_LAUNCH=0 turns off the cached path
    (the only caller of run_compiled). Both are read at import: the modules are reloaded, then restored."""
    got = {}
    try:
        for var in ("TRITONFP8_DIRECT_LAUNCH", "TRITONFP8_FAST_LAUNCH"):
            monkeypatch.delenv("TRITONFP8_DIRECT_LAUNCH", raising=False)
            monkeypatch.delenv("TRITONFP8_FAST_LAUNCH", raising=False)
            monkeypatch.setenv(var, "0")
            importlib.reload(D)
            importlib.reload(L)
            got[var] = (D.enabled(), L.enabled())
    finally:
        monkeypatch.undo()
        importlib.reload(D)
        importlib.reload(L)
    assert got == {"TRITONFP8_DIRECT_LAUNCH": (False, True), "TRITONFP8_FAST_LAUNCH": (True, False)}


@requires_gpu
def test_direct_launches_bit_exact_gpu():
    """The GEMM through direct launches equals the stock launcher path bit for bit: repeat calls, a new pointer of
    the same shape, the same address with a larger shape and with other strides (a stale descriptor there would read
    zeros past the old shape, or the wrong rows), and a buffer freed and re-allocated at the same address."""
    from tritonfp8._kernels import gemm as K_
    from tritonfp8._kernels.gemm_configs import GemmConfig

    G = importlib.import_module("tritonfp8.gemm")
    N, K = 1024, 512
    cfg = GemmConfig(block_m=64, block_n=128, block_k=128, group_m=8, num_warps=4, num_stages=4,
                     schedule="tmapersistent")
    one = torch.ones((), device="cuda")

    outs = {}  # fixed outputs per row count (stock, direct): the output descriptor's address stays put

    def check(a, b, new_encodings: bool):
        o_stock, o_direct = outs.setdefault(a.shape[0], tuple(
            torch.full((a.shape[0], N), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in range(2)))
        prev = D.set_enabled(False)
        try:
            G.gemm(a, b, one, one, config=cfg, out=o_stock)
        finally:
            D.set_enabled(prev)
        enc = D.stats["encoded"]
        o_direct.fill_(float("nan"))
        G.gemm(a, b, one, one, config=cfg, out=o_direct)
        assert torch.equal(o_stock, o_direct)
        assert (D.stats["encoded"] > enc) == new_encodings

    def fp8(rows):
        return torch.randn(rows, K, device="cuda").to(torch.float8_e4m3fn)

    D.cache_clear()
    L.cache_clear()
    K_._TEMPLATES.clear()
    G._PLANS.clear()
    b = fp8(N)
    nbytes = 26 << 20  # a size (> 10 MiB: its own allocator segment) that no temporary here has
    buf = torch.empty(nbytes, device="cuda", dtype=torch.float8_e4m3fn)
    buf[:512 * K].view(512, K).copy_(fp8(512))
    a64 = buf[:64 * K].view(64, K)
    check(a64, b, new_encodings=True)  # the first direct launch encodes
    for _ in range(2):
        check(a64, b, new_encodings=False)  # repeats
    assert D.stats["reused"] > 0  # the direct path ran (and reused descriptors) on this Triton
    check(a64, fp8(N), new_encodings=True)  # a new pointer, same shape
    check(buf[:128 * K].view(128, K), b, new_encodings=True)  # same address, larger shape
    check(buf[:128 * K].view(64, 2 * K)[:, :K], b, new_encodings=True)  # same address and shape, other strides
    # freed and re-allocated at the same address: same geometry (a reuse that is right), then a larger one
    ptr = buf.data_ptr()
    del a64, buf
    held = [torch.empty(nbytes, device="cuda", dtype=torch.float8_e4m3fn)]
    while held[-1].data_ptr() != ptr and len(held) < 8:
        held.append(torch.empty(nbytes, device="cuda", dtype=torch.float8_e4m3fn))
    assert held[-1].data_ptr() == ptr, "the caching allocator did not hand the freed block back"
    buf = held[-1]
    buf[:512 * K].view(512, K).copy_(fp8(512))
    check(buf[:64 * K].view(64, K), b, new_encodings=False)
    check(buf[:192 * K].view(192, K), b, new_encodings=True)
