"""``pyoxide verify --sanitize``: the GPU cases again under NVIDIA's compute-sanitizer,
one run per tool (memcheck: out-of-bounds and misaligned accesses; racecheck:
shared-memory hazards; synccheck: barriers not reached by the whole block). Each run is
``pyoxide verify --backend cupy`` in a child process; its errors are counted from the
sanitizer's log and attributed to the kernel entry its report names."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._manifest import knobs as _knobs
from ._limits import SANITIZE_CASES

__all__ = ["SANITIZE_CASES", "TOOLS", "find_sanitizer", "missing_message", "parse_log", "run_tools"]

TOOLS = ("memcheck", "racecheck", "synccheck")

_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
# racecheck reports hazards in a summary of its own (its ERROR SUMMARY can say 0).
_RACES = re.compile(r"RACECHECK SUMMARY:\s*\d+\s+hazards? displayed \((\d+) error")


def find_sanitizer() -> Path | None:
    """compute-sanitizer on PATH, under $CUDA_HOME/bin, or in /usr/local/cuda/bin."""
    found = shutil.which("compute-sanitizer", path=_knobs.path_env())
    if found:
        return Path(found)
    for home in [*_knobs.cuda_homes(), "/usr/local/cuda"]:
        if (Path(home) / "bin" / "compute-sanitizer").is_file():
            return Path(home) / "bin" / "compute-sanitizer"
    return None


def missing_message() -> str:
    return (
        "compute-sanitizer was not found (looked on PATH, in $CUDA_HOME/bin and "
        "/usr/local/cuda/bin): it ships with the CUDA toolkit (apt-get install "
        "cuda-sanitizer-12-x, or the full toolkit); --sanitize needs it and a GPU"
    )


def parse_log(text: str, entries: Sequence[str]) -> dict[str, Any]:
    """Errors in a sanitizer log: the larger of its summaries' counts and the error
    blocks shown, per-kernel counts (an error block is attributed to the first kernel
    entry it names) and the first block's text."""
    counted = [int(m.group(1)) for r in (_SUMMARY, _RACES) for m in r.finditer(text)]
    names = sorted(entries, key=len, reverse=True)  # longest first: scale_f32 before scale
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b") if names else None
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("========="):
            continue
        body = line.removeprefix("=========").removeprefix(" ").rstrip()
        if "SUMMARY" in body:
            continue
        header = body and not body.startswith(" ") and "SUMMARY" not in body
        if header and ("Invalid" in body or "Race" in body or "Error" in body
                       or "Barrier" in body or "error" in body):  # fmt: skip
            blocks.append([body.strip()])
        elif blocks and body.strip():
            blocks[-1].append(body.strip())
    by_kernel: dict[str, int] = {}
    for block in blocks:
        hit = pattern.search("\n".join(block)) if pattern else None
        if hit:
            by_kernel[hit.group(1)] = by_kernel.get(hit.group(1), 0) + 1
    first = "\n".join(blocks[0][:6]) if blocks else None
    errors = max([len(blocks), *counted])
    return {"errors": errors, "by_kernel": by_kernel, "first_error": first}


def run_tools(
    sanitizer: Path,
    verify_args: Sequence[str],
    entries: Sequence[str],
    timeout: float | None = None,
) -> list[dict[str, Any]]:
    """One child ``pyoxide verify`` per tool under `sanitizer`, the three at once (each
    is mostly host work); a child past `timeout` seconds is stopped and its log so far
    counted."""
    from concurrent.futures import ThreadPoolExecutor

    def one(tool: str) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="pyoxide-sanitize-") as tmp:
            log = Path(tmp) / f"{tool}.log"
            cmd = [str(sanitizer), "--tool", tool, "--log-file", str(log), "--print-limit", "50"]
            cmd += ["--target-processes", "all"]  # verify runs the kernels in a worker
            if tool == "racecheck":
                cmd += ["--racecheck-report", "hazard"]
            cmd += [sys.executable, "-m", "pyoxide", "verify", *verify_args]
            note = ""
            try:
                subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                note = f" (stopped after {timeout} s: partial)"
            text = log.read_text(errors="replace") if log.is_file() else ""
        return {"tool": tool + note, **parse_log(text, entries)}

    with ThreadPoolExecutor(len(TOOLS)) as pool:
        return list(pool.map(one, TOOLS))
