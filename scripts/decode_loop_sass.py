"""Offline SASS of the decode kernel's main loop: warp-instructions per cache token (no GPU needed).

    python scripts/decode_loop_sass.py [--json] decode_e4m3_gqa8_page16 [more codegen spec names ...]

Compiles each ``codegen_specs()`` entry for sm_90 under the cutlass_ name, finds the loops (a backward ``BRA``:
the body runs from the branch target to the branch; not the retry branches of mbarrier waits, placed after EXIT),
and prints, per loop with tensor-core instructions, its instruction count, HMMA / QGMMA / LDS / BAR / LDG / LDGSTS
counts and instructions x warps / BLOCK_N (warp-instructions per cache token); kernel-wide, the UTMALDG (TMA
loads) and LDGSTS (cp.async) counts. The loops are listed in address order (a split loop has the full-step loop
first, then the tail).
"""

from __future__ import annotations

import json
import re
import sys

from tritonfp8.codegen import compile_spec, disassemble, registry, sass_facts

_LINE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);", re.M)


def loops(sass: str):
    ins = [(int(m.group(1), 16), m.group(3), m.group(4)) for m in _LINE.finditer(sass)]
    addr_idx = {a: i for i, (a, _, _) in enumerate(ins)}
    out = []
    for i, (a, op, rest) in enumerate(ins):
        if op.startswith("BRA"):
            t = re.search(r"0x([0-9a-f]+)", rest)
            if t and int(t.group(1), 16) < a and int(t.group(1), 16) in addr_idx:
                j = addr_idx[int(t.group(1), 16)]
                body = ins[j:i + 1]
                # Not a loop: the retry branch of an mbarrier wait (TMA), placed after the kernel's EXIT, jumps
                # back into the middle of the code.
                if not any(op.startswith("EXIT") for _, op, _ in body):
                    out.append(body)
    return out


def global_stores(sass: str, opcode: str = "STG") -> dict:
    """Global store opcodes of the whole kernel (width suffixes kept: STG.E, STG.E.64, STG.E.128, ...) and counts;
    ``opcode`` "ATOMG": the global atomics (ATOMG.E.ADD.STRONG.GPU, ...)."""
    hist = {}
    for op in re.findall(rf"\b({opcode}(?:\.[A-Z0-9]+)*)\b", sass):
        hist[op] = hist.get(op, 0) + 1
    return hist


def loop_report(name: str) -> dict:
    """Registers, spills and, per loop holding tensor-core instructions (address order), its instruction count,
    warp-instructions per cache token and an opcode histogram of ``codegen_specs()`` entry ``name`` (sm_90)."""
    spec = registry()[name]
    ck = compile_spec(spec, 90, "cutlass")
    sass, res = disassemble(ck.asm["cubin"])
    f = sass_facts(sass, res)
    bn = spec.constexprs.get("BLOCK_N", spec.constexprs.get("STEP"))  # Triton kernels' step / the Gluon kernel's
    out = {"name": name, "registers": f["registers"], "spill_stores": f["spill_stores"],
           "spill_loads": f["spill_loads"], "instructions": f["instructions"], "shared": ck.metadata.shared,
           "warps": spec.num_warps, "block_n": bn, "utmaldg": sass.count("UTMALDG"),
           "ldgsts": sass.count("LDGSTS"), "stores": global_stores(sass),
           "atomics": global_stores(sass, "ATOMG"),
           "launch_dependents": ck.asm["ptx"].count("griddepcontrol.launch_dependents"), "loops": []}
    for body in loops(sass):
        ops = [op.split(".")[0] for _, op, _ in body]
        if not ops.count("HMMA") + ops.count("HGMMA") + ops.count("QGMMA"):
            continue
        hist = {}
        for op in ops:
            hist[op] = hist.get(op, 0) + 1
        out["loops"].append({"instructions": len(body), "per_token": len(body) * spec.num_warps / bn,
                             "ops": dict(sorted(hist.items(), key=lambda kv: -kv[1])),
                             "lds128": sum(op == "LDS.128" for _, op, _ in body)})
    return out


def main(argv):
    as_json = "--json" in argv
    reports = [loop_report(n) for n in argv if n != "--json"]
    if as_json:
        print(json.dumps(reports))
        return
    for r in reports:
        print(f"{r['name']}: regs {r['registers']} spills {r['spill_stores']}/{r['spill_loads']} total "
              f"{r['instructions']} shared {r['shared']} UTMALDG {r['utmaldg']} LDGSTS {r['ldgsts']}")
        for lp in r["loops"]:
            top = " ".join(f"{k} {v}" for k, v in list(lp["ops"].items())[:16])
            print(f"  loop: {lp['instructions']} instr, {lp['per_token']:.1f} warp-instr/token "
                  f"({r['warps']} warps x {r['block_n']} tokens); {top}")


if __name__ == "__main__":
    main(sys.argv[1:])
