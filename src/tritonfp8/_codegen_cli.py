"""``python -m tritonfp8 codegen``: print a kernel's SASS facts as a rich table (or JSON)."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from tritonfp8 import codegen


def run(args) -> int:
    console = Console()
    if args.list or not args.kernel:
        table = Table(title="kernel configs (python -m tritonfp8 codegen NAME --arch 90)")
        table.add_column("name")
        table.add_column("warps/stages")
        table.add_column("description")
        for name, spec in sorted(codegen.registry().items()):
            table.add_row(name, f"{spec.num_warps}/{spec.num_stages}", spec.description)
        console.print(table)
        return 0
    report = codegen.inspect_kernel(args.kernel, arch=args.arch, compare_names=not args.no_compare)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0
    table = Table(title=f"{args.kernel} for sm_{args.arch}")
    table.add_column("fact")
    table.add_column("value", justify="right")
    rows = [
        ("compiled name", report.name),
        ("instructions", report.instructions),
        ("QGMMA (fp8 wgmma)", report.qgmma),
        ("HGMMA (16-bit wgmma)", report.hgmma),
        ("HMMA / IMMA (mma.sync)", f"{report.hmma} / {report.imma}"),
        ("registers / thread", report.registers),
        ("spill stores / loads (STL/LDL)", f"{report.spill_stores} / {report.spill_loads}"),
        ("stack frame bytes", report.stack_bytes),
        ("shared memory bytes", report.shared_bytes),
        ("SASS sha1 (name removed)", report.sass_sha1[:16]),
    ]
    if report.cutlass_name_changes_sass is not None:
        rows.append(("plain name", report.plain_name))
        rows.append(("'cutlass' name changes SASS", "yes" if report.cutlass_name_changes_sass else "no (identical)"))
    for k, v in rows:
        table.add_row(k, str(v))
    console.print(table)
    if args.sass:
        console.print(report.sass, markup=False, highlight=False)
    return 0
