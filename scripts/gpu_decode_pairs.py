"""Session 40: the decode heuristic under GLUON_MIN_PAIRS (64) (batch x KV head) pairs, where it gives the Triton
kernels. `bench decode --hkv 4` on an H100 (decode-nvidia-h100-80gb-hbm3-20261207-223106.json) ran B 8 Hkv 4
(32 pairs) there at 53-55% of the copy at ctx 4096 and 76-80% at ctx 32768 (1.29-1.61x SDPA), while 64 pairs on
the Gluon heads form reach 94-96% at ctx 32768. This times, per case, the Gluon rules with GLUON_MIN_PAIRS lowered
to the case's pairs against the library:

- ``library``: the heuristic's config as it is;
- ``heads``: the heuristic with the pair bounds at 1 (the heads form where Hkv is a multiple of 4: about
  GLUON_HEADS_PROGRAMS programs of 4 KV heads, at most MAX_SPLITS splits);
- ``one-warp``: the same with the heads rule off (one-warp Gluon programs, about GLUON_PROGRAMS of them);
- ``copy`` and ``sdpa``, the bench's references.

Every form is compared with the Triton heuristic's output before timing (max |diff| <= 1e-2, bf16 output). Eager,
do_bench medians after the write flush, PAIRS_ROUNDS interleaved rounds (default 4). Cases: PAIRS_CASES =
"B:Hkv:ctx:Hq:page,..." (default: B 8 Hkv 4 and B 1 Hkv 8, ctx 4096 and 32768, Hq 32 / 64, pages of 16 and 64).
Writes $OUT/results/decode-pairs-<stamp>.json (benchmarks/results when $OUT is unset).
Session 41 ran it (call 2, decode-pairs-20261208-011012.json) and lowered the bounds (decode.GLUON_MIN_PAIRS 32,
GLUON_LONG_MIN_PAIRS 8): since then ``library`` is the Gluon rule on the default cases.
Usage on the device: ``python scripts/gpu_decode_pairs.py``.
"""
from __future__ import annotations

import os

from decode_case import ab_cases, heuristic_config, heuristic_with

DEFAULT_CASES = "8:4:4096:32:64,8:4:4096:32:16,8:4:32768:32:64,8:4:32768:32:16,1:8:32768:64:64,1:8:32768:64:16"
CASES = [tuple(int(x) for x in c.split(":")) for c in os.environ.get("PAIRS_CASES", DEFAULT_CASES).split(",") if c]
ROUNDS = int(os.environ.get("PAIRS_ROUNDS", "4"))
# The Gluon rules' pair bounds lowered to one pair (session 41 split the bound: GLUON_LONG_MIN_PAIRS from
# GLUON_MIN_CONTEXT, GLUON_MIN_PAIRS under it)
ANY_PAIRS = dict(GLUON_MIN_PAIRS=1, GLUON_LONG_MIN_PAIRS=1)


def configs(case: tuple, hkv: int) -> dict:
    return {"triton": heuristic_config(*case, hkv=hkv, gluon=False),
            "library": heuristic_with(*case, hkv=hkv),
            "heads": heuristic_with(*case, hkv=hkv, **ANY_PAIRS),
            "one-warp": heuristic_with(*case, hkv=hkv, **ANY_PAIRS, GLUON_HEADS_MAX_PAIRS=0)}


def main() -> None:
    ab_cases("decode-pairs", "Decode under 64 pairs: the Gluon rules vs the library", CASES, ROUNDS, configs)


if __name__ == "__main__":
    main()
