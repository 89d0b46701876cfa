"""The shipped tuned GEMM tables (``src/tritonfp8/configs/gemm_<gpu>.json``), read on the CPU: each file is named for
the GPU it was measured on, every entry's key is the key the library looks up for its own shape and mode, every config
is a valid one that fits sm_90 shared memory, each entry says when and how it was timed, and the fast mode covers
issue 3's shape set. (On a GPU, tests/test_gemm_gpu.py::test_tuned_table_for_this_gpu runs this GPU's entries.)"""

import json

import pytest
import torch

from tritonfp8._kernels import gemm_configs as C
from tritonfp8.gemm import error_bound
from tritonfp8.tune import SHAPE_SET

TABLES = sorted(C.CONFIG_DIR.glob("gemm_*.json"))


def test_tables_for_both_hopper_parts_are_shipped():
    """Issue 3 ships a table for the H200 and one for the H100 (SXM, 80 GB HBM3: the part it was tuned on)."""
    names = {p.name for p in TABLES}
    assert "gemm_h200.json" in names
    assert "gemm_h100_80gb_hbm3.json" in names
    # the H100 SXM finds its own table; other H100 parts (PCIe, NVL: other SM counts and clocks) fall back to the
    # heuristic instead of a table tuned on another part
    assert C.load_table("NVIDIA H100 80GB HBM3")
    assert C.load_table("NVIDIA H100 PCIe") == {}


@pytest.mark.parametrize("path", TABLES, ids=[p.stem for p in TABLES])
def test_shipped_table_is_consistent(path):
    data = json.loads(path.read_text())
    assert path.name == C.table_path(data["gpu"]).name, "a table is named for the GPU it was measured on"
    entries = data["entries"]
    assert entries, "empty table"
    keys = [e["key"] for e in entries]
    assert len(keys) == len(set(keys)), "duplicate keys"
    for e in entries:
        M, N, K = e["shape"]
        block = e["accumulate"] == "block"
        assert e["accumulate"] in ("fast", "precise", "block"), e["key"]
        assert e["key"] == C.table_key(M, N, K, e["accumulate"] == "precise", block), e["key"]
        cfg = C.GemmConfig.from_dict(e["config"])  # validates the fields
        assert C.GemmConfig.from_dict(cfg.as_dict()) == cfg
        assert cfg.num_stages >= 2, e["key"]
        # bf16 output (the tuner's and the bench's), the kernel's own spare bytes included
        assert C.smem_bytes(cfg, 2) + C.smem_spare(cfg) <= C.SMEM_BYTES_SM90, e["key"]
        assert e["measured"]["date"] and e["measured"]["timer"] in ("events", "eager", "graph"), e["key"]
        assert e["rel_error"] is not None and e["rel_error"] == e["rel_error"], e["key"]  # measured, not NaN
        if not block:  # the tuner keeps only candidates within the format's bound (bf16 output, tensor-core sums)
            assert e["rel_error"] <= error_bound(torch.bfloat16, K, e["accumulate"], tensor_core=True), e["key"]


@pytest.mark.parametrize("path", TABLES, ids=[p.stem for p in TABLES])
def test_shipped_table_covers_the_fast_shape_set(path):
    keys = {e["key"] for e in json.loads(path.read_text())["entries"]}
    missing = [s for s in SHAPE_SET if C.table_key(*s, precise=False) not in keys]
    assert not missing, missing
