"""Benchmark tables as the bench scripts print them and docs/performance.md shows them.

A script builds a :class:`Table` (columns, then rows of cells), prints it, and with
``--report DIR`` saves it as JSON together with what makes a number meaningful: the date,
the device, the host and the command that produced it. ``scripts/perf_docs`` turns the
saved reports in docs/reports/ into docs/performance.md, so the docs show the tables of
the last run and nothing else (the history is in git).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TABLE_REPORT_VERSION = 1


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 10 else f"{value:.0f}"
    return str(value)


def gpu_name() -> str:
    """The current CUDA device's name, or "no GPU" where CuPy sees none."""
    from .. import backends

    try:
        gpu = backends.gpu()
        return str(gpu.devices()[gpu.current_device()]["name"])
    except Exception:  # no CuPy, no driver, no device: a CPU-only benchmark
        return "no GPU"


def require_gpu(script: str) -> str:
    """The current CUDA device's name; where CuPy is missing or sees no device, exit
    with a message that says so (a GPU benchmark's first step after its arguments)."""
    from .. import backends

    try:
        count = len(backends.gpu().devices())
    except Exception as e:  # no CuPy, no driver: the message says which
        reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    else:
        if count > 0:
            return gpu_name()
        reason = "no CUDA device visible"
    raise SystemExit(
        f"{script} times kernels on a CUDA GPU through CuPy, and there is none here "
        f"({reason}). Run it on a machine with a GPU; `{script} --help` says what it measures."
    )


@dataclass
class Table:
    """One benchmark table. ``name`` is the report's file name (``bench_launch``, or
    ``bench_gemm-sustained`` for a script that prints several tables)."""

    name: str
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    device: str | None = None

    def add(self, *cells: Any) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.name}: {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([_cell(c) for c in cells])

    def note(self, text: str) -> None:
        self.notes.append(text)

    def markdown(self) -> str:
        lines = [
            "| " + " | ".join(self.columns) + " |",
            "|" + "|".join("---" for _ in self.columns) + "|",
            *("| " + " | ".join(r) + " |" for r in self.rows),
        ]
        return "\n".join(lines)

    def show(self) -> None:
        print(f"\n{self.title}\n\n{self.markdown()}")
        for n in self.notes:
            print(f"\n{n}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": TABLE_REPORT_VERSION,
            "name": self.name,
            "title": self.title,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "device": self.device or gpu_name(),
            "host": f"{platform.node() or 'unknown'} ({os.cpu_count()} CPUs)",
            "command": " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]]),
            "columns": self.columns,
            "rows": self.rows,
            "notes": self.notes,
        }

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``folder/<name>.json`` (atomically: a reader never sees half of it)."""
        path = Path(folder) / f"{self.name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.as_dict(), indent=1) + "\n")
        os.replace(tmp, path)
        return path


def render(report: dict[str, Any]) -> str:
    """A saved report as a section of docs/performance.md."""
    if report.get("version") != TABLE_REPORT_VERSION:
        raise ValueError(f"{report.get('name')}: report version {report.get('version')}")
    t = Table(report["name"], report["title"], report["columns"], report["rows"])
    parts = [
        f"## {report['title']}",
        f"{report['date']} · {report['device']} · `{report['command']}`",
        t.markdown(),
        *report["notes"],
    ]
    return "\n\n".join(parts) + "\n"
