#!/usr/bin/env python3
"""The stall ledger of an Nsight Compute report: which SASS instructions the warps were
sampled waiting at, most first, until the rows cover --cover of all samples. Read it
before naming a kernel's bottleneck: a region the ledger prices at 1 % is not one.

It reads `ncu --import REPORT --page source --csv --print-source sass` (the report
collected with `--section SourceCounters`, as scripts/device_run's `ncu:` parts do) and
prints, per kernel in the report, the top instructions with their share of the samples,
their share of the samples where the warp could not issue, the stall reasons that
dominate them (where the page has a column per reason), and how often they ran. Then the
same samples by region: the SASS lines that ran equally often are one region (a loop's
body, a tile's code around it, the block's set-up), each with its lines, runs, share of
the samples and samples a run (a loop iteration's price against a tile's, to compare
with another kernel's at the same shape). A page this script does not understand is
printed raw (its first lines), so a device call still brings the data back.

usage: scripts/ncu_ledger.py REPORT.ncu-rep [--cover 0.8] [--rows 60] [--save PAGE.csv]
       scripts/ncu_ledger.py PAGE.csv ...   (a page saved with --save: no ncu needed, so
                                            a GPU run's page can be read where ncu is not)
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys


def number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def column(header: list[str], *needles: str) -> int | None:
    """The first column whose name contains every needle (case-insensitive)."""
    for i, name in enumerate(header):
        if all(n.lower() in name.lower() for n in needles):
            return i
    return None


def tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """The page's CSV tables: (title, header, rows), one per kernel. A header is the line
    that names the `Source` column; a line before it that is not one (the kernel's name,
    where ncu prints one) is the table's title."""
    out: list[tuple[str, list[str], list[list[str]]]] = []
    title: str = ""
    header: list[str] | None = None
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = next(csv.reader(io.StringIO(line)))
        if "Source" in fields:
            if header is not None:
                out.append((title, header, rows))
            header, rows = fields, []
        elif header is not None and len(fields) == len(header):
            rows.append(fields)
        else:  # a title: the next kernel's, if a table was open
            if header is not None:
                out.append((title, header, rows))
                header, rows = None, []
            title = " ".join(f.strip() for f in fields if f.strip())
    if header is not None:
        out.append((title, header, rows))
    return out


def stall_reasons(header: list[str], twins: bool) -> list[int]:
    """The columns of the stall reasons, where the page has them (`stall_*` names); with
    ``twins``, each reason's "(Not Issued)" column too."""
    names = [name.lower() for name in header]
    return [i for i, n in enumerate(names)
            if n.startswith("stall") and (twins or "not issued" not in n)]  # fmt: skip


def ledger(title: str, header: list[str], rows: list[list[str]], cover: float, most: int) -> bool:
    """Print the ledger of one kernel's table (`tables` keeps only rows as long as the
    header); False when the table has no sampling column to rank by."""
    at_all = column(header, "stall sampling", "all samples")
    source = column(header, "source")
    if at_all is None or source is None:
        return False

    def cell(r: list[str], i: int | None) -> str:  # a missing optional column: empty
        return r[i] if i is not None else ""

    address, executed = column(header, "address"), column(header, "instructions executed")
    not_issued = column(header, "not-issued")
    reasons = stall_reasons(header, twins=True)
    total = sum(number(r[at_all]) for r in rows)
    print(f"== {title or 'kernel'}: {len(rows)} SASS lines, {total:.0f} stall samples")
    if total <= 0:
        return True
    print(f"{'share':>6} {'cum':>6} {'no-issue':>8} {'executed':>10}  address  instruction")
    seen = 0.0
    for r in sorted(rows, key=lambda r: -number(r[at_all]))[:most]:
        samples = number(r[at_all])
        seen += samples
        top = sorted(reasons, key=lambda i: -number(r[i]))[:2]
        why = ", ".join(f"{header[i]} {number(r[i]) / samples:.0%}" for i in top if number(r[i]))
        print(
            f"{samples / total:6.1%} {seen / total:6.1%} "
            f"{number(cell(r, not_issued)) / total:8.1%} {cell(r, executed):>10}  "
            f"{cell(r, address):>7}  {r[source].strip()}{f'  [{why}]' if why else ''}"
        )
        if seen >= cover * total:
            break
    return True


def regions(title: str, header: list[str], rows: list[list[str]], most: int = 8) -> bool:
    """Print one kernel's samples by region: lines grouped by how often they ran (the
    "Instructions Executed" column), most sampled first; False without that column."""
    at_all = column(header, "stall sampling", "all samples")
    executed = column(header, "instructions executed")
    if at_all is None or executed is None:
        return False
    # each reason once: its "(Not Issued)" twin counts a subset of the same samples
    reasons = stall_reasons(header, twins=False)
    groups: dict[int, list[list[str]]] = {}
    for r in rows:
        groups.setdefault(int(number(r[executed])), []).append(r)
    print(f"-- {title or 'kernel'} by region (lines that ran equally often)")
    print(f"{'runs':>10} {'lines':>6} {'share':>6} {'per 1k runs':>11}  top stall reasons")
    sampled = {runs: sum(number(r[at_all]) for r in lines) for runs, lines in groups.items()}
    total = sum(sampled.values())
    for runs in sorted(sampled, key=lambda g: -sampled[g])[:most]:
        lines, samples = groups[runs], sampled[runs]
        by_reason = {i: sum(number(r[i]) for r in lines) for i in reasons}
        top = sorted(by_reason, key=lambda i: -by_reason[i])[:3]
        why = ", ".join(f"{header[i]} {by_reason[i] / samples:.0%}" for i in top
                        if samples and by_reason[i])  # fmt: skip
        share = samples / total if total else 0.0
        per = 1000 * samples / runs if runs else 0.0
        print(f"{runs:>10} {len(lines):>6} {share:6.1%} {per:11.2f}  {why}")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("--cover", type=float, default=0.8)
    ap.add_argument("--rows", type=int, default=60)
    ap.add_argument("--save", help="also write the whole source page (CSV) here")
    args = ap.parse_args()
    if args.report.endswith(".csv"):
        with open(args.report, encoding="utf-8") as f:
            text = f.read()
    else:
        page = subprocess.run(
            ["ncu", "--import", args.report, "--page", "source", "--csv", "--print-source", "sass"],
            capture_output=True,
            text=True,
            check=False,
        )
        if page.returncode != 0:
            print(f"ncu_ledger: ncu exited {page.returncode}: {page.stderr.strip()[:2000]}")
            return 1
        text = page.stdout
    if args.save:
        with open(args.save, "w", encoding="utf-8") as f:
            f.write(text)
    found = tables(text)
    understood = [ledger(*t, args.cover, args.rows) for t in found]
    for t in found:
        regions(*t)
    if not found or not any(understood):
        print("ncu_ledger: a source page this script does not read; its first lines:")
        print("\n".join(text.splitlines()[:40]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
