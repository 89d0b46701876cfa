"""Session 41: fp16 split partials (decode.partials_f16: O / l without v_descale, where the combine kernel merges
into a bf16 output) against the fp32 partials of the form before (DecodeConfig.partials="fp32"), on the heuristic's
configs where the combine kernel runs: B 8 ctx 4096 (Hkv 8, 16 splits: 2.1 / 4.2 MB of fp32 partials at Hq 32 / 64,
written by the split kernel and read by the combine kernel, against the cache's 67 MB), Hkv 4 B 32 ctx 4096 (the
heads form at 8 splits) and B 8 ctx 32768.

Forms per case: ``fp16`` (the library's heuristic config with partials="fp16"; call 2 ran it as the default
"auto"), ``fp32`` (the heuristic's config: fp32 partials); with PART16_SPLIT=1 also each Gluon split kernel alone
(``*-split``: the replay without the combine launch; timed, not checked); ``copy`` and ``sdpa``, the bench's
references. Both forms are compared with the Triton heuristic's output first (max |diff| <= 1e-2, bf16). Eager,
do_bench medians after the write flush, PART16_ROUNDS interleaved rounds (default 5); PART16_ORDER=aa (prepared for
session 41's later calls, not run) times fp32, fp16 and fp32 again. Cases: PART16_CASES = "B:Hkv:ctx:Hq:page,...".
Writes $OUT/results/decode-part16-<stamp>.json (benchmarks/results when $OUT is unset).
Usage on the device: ``python scripts/gpu_decode_part16.py``.
"""
from __future__ import annotations

import dataclasses
import os

from decode_case import ab_cases, heuristic_config, variant_call

DEFAULT_CASES = "8:8:4096:64:64,8:8:4096:32:64,8:8:4096:64:16,8:8:4096:32:16,32:4:4096:32:64,8:8:32768:64:64"
CASES = [tuple(int(x) for x in c.split(":")) for c in os.environ.get("PART16_CASES", DEFAULT_CASES).split(",") if c]
ROUNDS = int(os.environ.get("PART16_ROUNDS", "5"))
SPLIT = os.environ.get("PART16_SPLIT") == "1"
ORDER = os.environ.get("PART16_ORDER", "")


def configs(case: tuple, hkv: int) -> dict:
    lib = heuristic_config(*case, hkv=hkv)
    fp16 = dataclasses.replace(lib, partials="fp16")
    # PART16_ORDER=aa: fp32 first, then fp16, then fp32 again under another name (an A/A pair: the position in the
    # round, not the partials, would show there)
    forms = {"fp32": lib, "fp16": fp16, "fp32-again": lib} if ORDER == "aa" else {"fp16": fp16, "fp32": lib}
    return {"triton": heuristic_config(*case, hkv=hkv, gluon=False), **forms}


def split_kernels(q, pc, cfgs: dict) -> dict:
    """With PART16_SPLIT=1, each Gluon split kernel alone (timed, not checked)."""
    if not SPLIT or cfgs["fp32"].kernel != "gluon" or cfgs["fp32"].num_splits < 2:
        return {}
    return {f"{n}-split": variant_call(q, pc, cfgs[n], True, False, split_only=True) for n in ("fp16", "fp32")}


def main() -> None:
    ab_cases("decode-part16", "Decode: fp16 vs fp32 split partials", CASES, ROUNDS, configs, split_kernels)


if __name__ == "__main__":
    main()
