"""Read the per-SASS page that scripts/gpu_profile_pairs.py exports (ncu --page source --csv --print-source sass,
gzipped): per kernel, the instructions with the most warp-stall samples and their dominant reasons, or the
whole listing of the hottest loop (instructions executed as often as the most frequent wgmma).

    python scripts/ncu_source.py profile-source.csv.gz                 # every kernel, top 25 lines each
    python scripts/ncu_source.py profile-source.csv.gz --kernel blockwise --loop
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io


def kernels(path):
    text = gzip.open(path, "rt").read() if path.endswith(".gz") else open(path).read()
    out, name, rows, header = [], None, [], None
    for rec in csv.reader(io.StringIO(text)):
        if not rec:
            continue
        if rec[0] == "Kernel Name":
            if name:
                out.append((name, header, rows))
            name, rows, header = rec[1], [], None
        elif rec[0] == "Address":
            header = rec
        elif header and len(rec) >= len(header) - 1:
            rows.append(dict(zip(header, rec)))
    if name:
        out.append((name, header, rows))
    return out


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return 0.0


def stall_cols(header):
    return [h for h in header if h.startswith("stall_") and "Not Issued" not in h]


def describe(r, cols, k=3):
    st = sorted(((num(r[c]), c[6:]) for c in cols), reverse=True)[:k]
    return ", ".join(f"{c} {int(v)}" for v, c in st if v > 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("path")
    p.add_argument("--kernel", default="", help="substring of the kernel name")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--loop", action="store_true", help="list the hot loop (instructions run as often as its wgmma)")
    a = p.parse_args()
    for name, header, rows in kernels(a.path):
        if a.kernel not in name:
            continue
        cols = stall_cols(header)
        tot = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rows)
        print(f"## {name}: {len(rows)} SASS lines, {int(tot)} samples")
        if not tot:  # a kernel too short to be sampled (the fills between launches)
            continue
        if a.loop:
            gm = [num(r["Instructions Executed"]) for r in rows if "WGMMA" in r["Source"] or "HGMMA" in r["Source"]
                  or "QGMMA" in r["Source"]]
            hot = max(gm) if gm else max(num(r["Instructions Executed"]) for r in rows)
            sel = [r for r in rows if num(r["Instructions Executed"]) >= 0.5 * hot]
            print(f"   hot loop: {len(sel)} instructions executed >= half of the wgmma count {int(hot)}")
            for r in sel:
                s = num(r["Warp Stall Sampling (All Samples)"])
                print(f"   {r['Address'][-5:]} {int(num(r['Instructions Executed'])):>9} {int(s):>6} "
                      f"{100 * s / tot:5.1f}%  {r['Source'].strip()[:60]:60s} {describe(r, cols)}")
            continue
        top = sorted(rows, key=lambda r: -num(r["Warp Stall Sampling (All Samples)"]))[: a.top]
        for r in top:
            s = num(r["Warp Stall Sampling (All Samples)"])
            print(f"   {r['Address'][-5:]} {int(num(r['Instructions Executed'])):>9} {int(s):>6} {100 * s / tot:5.1f}%  "
                  f"{r['Source'].strip()[:60]:60s} {describe(r, cols)}")


if __name__ == "__main__":
    main()
