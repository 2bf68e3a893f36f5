"""Stage 1: run ``cargo oxide`` (the cargo-oxide binary).

cargo-oxide's contract: ``cargo-oxide oxide build … --json`` prints exactly one
JSON object on stdout (``{"manifest", "crate", "artifacts"}``) and human progress
on stderr, which is streamed through here; its exit codes are 0 ok, 1 build
failed, 2 usage, 3 toolchain missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from .._manifest import abi as _abi, knobs as _knobs
from . import layout as _layout
from ..errors import BuildError, ToolchainError

Profile = Literal["release", "debug"]
Echo = Callable[[str], None]
T = TypeVar("T")

#: cargo-oxide's exit codes (oxide-abi's table, shared with the pyoxide command).
EXIT_BUILD_FAILED = _abi.ExitCode.BUILD_FAILED
EXIT_USAGE = _abi.ExitCode.USAGE
EXIT_TOOLCHAIN_MISSING = _abi.ExitCode.TOOLCHAIN_MISSING

_INSTALL_HINT = (
    "install it with `cargo install --path crates/cargo-oxide` from the pyoxide "
    "repository, or point PYOXIDE_CARGO_OXIDE at the binary"
)


@dataclass(frozen=True)
class BuildResult:
    manifest: Path
    crate: str
    artifacts: tuple[Path, ...]
    log: str
    emulator: Path | None = None  # the CPU emulator library, when built


#: The cargo-oxide that a pyoxide wheel ships (its kit: pyoxide/_build/layout.py).
PACKAGED_CARGO_OXIDE = _layout.CARGO_OXIDE


def find_cargo_oxide() -> Path:
    """The cargo-oxide binary: PYOXIDE_CARGO_OXIDE, then PATH, then ~/.cargo/bin, then
    the one shipped in the pyoxide wheel."""
    configured = _knobs.cargo_oxide()
    if configured is not None:
        if configured.is_file():
            return configured
        raise ToolchainError(
            f"PYOXIDE_CARGO_OXIDE points at {configured}, which does not exist. "
            f"Fix: {_INSTALL_HINT}."
        )
    found = shutil.which("cargo-oxide", path=_knobs.path_env())
    if found:
        return Path(found)
    for fallback in (_knobs.home() / ".cargo" / "bin" / "cargo-oxide", PACKAGED_CARGO_OXIDE):
        if fallback.is_file():
            return fallback
    raise ToolchainError(
        f"cargo-oxide was not found on PATH or in ~/.cargo/bin. Fix: {_INSTALL_HINT}."
    )


def _other_release(cmd: Sequence[str], err: str, rc: int) -> ToolchainError:
    """cargo-oxide refused a command line that pyoxide wrote (exit 2): it is from another
    pyoxide release, a toolchain problem like a missing one (so a checkout carried to a
    machine with a stale copy falls back to its prebuilt kernels, as with none)."""
    try:
        exe: Path | str = find_cargo_oxide()
    except ToolchainError:
        exe = "cargo-oxide"
    return ToolchainError(
        f"the cargo-oxide at {exe} refused `{' '.join(cmd)}` (exit {rc}): it is from "
        "another pyoxide release. Fix: install the cargo-oxide from the same pyoxide "
        "release (`scripts/setup` in a checkout), or remove that copy.",
        log=err, returncode=rc, command=list(cmd),
    )  # fmt: skip


def crate_manifest(path: str | Path) -> Path:
    """The Cargo.toml of a crate given as a folder or as the Cargo.toml itself."""
    p = Path(path).resolve()
    toml = p if p.name == "Cargo.toml" else p / "Cargo.toml"
    if not toml.is_file():
        raise BuildError(
            f"{p} is not a Rust crate (no Cargo.toml). Fix: pass the folder of a kernel "
            "crate, or its Cargo.toml."
        )
    return toml


def run_tool(args: Sequence[str], echo: Echo | None = None) -> tuple[int, str, str]:
    """Run ``cargo-oxide oxide ARGS``; stream stderr lines to ``echo``.

    Returns (exit code, stdout, stderr).
    """
    exe = find_cargo_oxide()
    cmd = [str(exe), "oxide", *args]
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except OSError as e:
        raise ToolchainError(
            f"cannot run {exe}: {e.strerror}. Fix: {_INSTALL_HINT}.", command=cmd
        ) from None
    err_lines: list[str] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err_lines.append(line)
            if echo is not None:
                echo(line.rstrip("\n"))

    with proc:  # closes both pipes (left open, each is a ResourceWarning)
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        assert proc.stdout is not None
        out = proc.stdout.read()
        rc = proc.wait()
        reader.join()
    return rc, out, "".join(err_lines)


def cargo_args(
    toml: Path,
    *,
    arch: Sequence[str] | None = None,
    profile: Profile = "release",
    emulator: bool = True,
    fmad: bool = True,
) -> list[str]:
    """The options of ``cargo oxide build`` (and ``cargo oxide key``) for these choices."""
    args = ["--manifest-path", str(toml), f"--{profile}"]
    if arch:
        args += ["--arch", ",".join(arch)]
    if not emulator:
        args.append("--no-emu")
    if not fmad:
        args.append("--no-fmad")
    return args


@dataclass(frozen=True)
class BuildKey:
    """What ``cargo oxide key`` answers: the key of everything that changes what a build
    with the same options writes here, and the cache folder (both cargo-oxide's to decide,
    so pyoxide's cache and cargo-oxide's agree)."""

    key: str
    cache_dir: Path
    cache_error: str | None  # why the cache folder cannot be used (not the user's, …)
    inputs: dict[str, str]


def build_key(options: Sequence[str]) -> BuildKey:
    """Ask cargo-oxide for the key of ``cargo oxide build OPTIONS`` (see :func:`cargo_args`).
    Raises ToolchainError (none, or one of another release) / BuildError (a refused
    cache folder among them)."""
    rc, out, err = run_tool(["key", *options])
    cmd = ["cargo", "oxide", "key", *options]
    if rc == EXIT_USAGE:
        raise _other_release(cmd, err, rc)
    if rc != 0:
        cause = next((x for x in err.splitlines() if x.startswith("error:")), err.strip())
        cause = cause.removeprefix("error: ")
        if "Fix:" not in cause:
            cause += ". Fix: install the cargo-oxide from the same pyoxide release"
        raise BuildError(
            f"cargo oxide key failed (exit {rc}): {cause}",
            log=err, returncode=rc, command=cmd,
        )  # fmt: skip
    key = _read_report(out, _abi.KEY_REPORT_KEYS, _build_key)
    if key is None:
        raise BuildError(
            f"cargo-oxide printed no key report for `{' '.join(cmd)}` (got {out[:200]!r}). "
            "Fix: install the cargo-oxide from the same pyoxide release.",
            log=err, returncode=rc, command=cmd,
        )  # fmt: skip
    return key


def _build_key(report: dict[str, Any]) -> BuildKey:
    error = report["cache_error"]
    return BuildKey(
        str(report["key"]), Path(report["cache_dir"]), None if error is None else str(error),
        {str(k): str(v) for k, v in report["inputs"].items()},
    )  # fmt: skip


def _read_report(out: str, keys: Sequence[str], read: Callable[[dict[str, Any]], T]) -> T | None:
    """`read` of the JSON report cargo-oxide printed on stdout; None where stdout is not
    a report of exactly `keys`, or a field is not what `read` takes."""
    try:
        report = json.loads(out)
        if sorted(report) != sorted(keys):
            return None
        return read(report)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def build(
    crate: str | Path,
    *,
    arch: Sequence[str] | None = None,
    profile: Profile = "release",
    out_dir: str | Path | None = None,
    emulator: bool = True,
    fmad: bool = True,
    echo: Echo | None = None,
) -> BuildResult:
    """Build a kernel crate to PTX + manifest (and, with `emulator`, the CPU emulator
    library). `fmad=False` builds with ``--no-fmad``: no multiply and add contracted into
    one fused multiply-add, so the GPU rounds as the emulator does. Raises BuildError /
    ToolchainError."""
    toml = crate_manifest(crate)
    args = ["build", *cargo_args(toml, arch=arch, profile=profile, emulator=emulator, fmad=fmad)]
    args.append("--json")
    if out_dir is not None:
        args += ["--out-dir", str(Path(out_dir).resolve())]
    rc, out, err = run_tool(args, echo)
    cmd = ["cargo", "oxide", *args]
    if rc == EXIT_TOOLCHAIN_MISSING:
        raise ToolchainError(
            f"cargo oxide build for {toml.parent.name}: a toolchain piece is missing. "
            "Fix: run `pyoxide doctor` and install what it reports missing.",
            log=err, returncode=rc, command=cmd,
        )  # fmt: skip
    if rc == EXIT_USAGE:
        raise _other_release(cmd, err, rc)
    if rc != 0:
        raise BuildError(
            f"cargo oxide build failed for {toml.parent.name} (exit {rc}). Fix: correct "
            "the errors in the log above (rustc, the link step or ptxas).",
            log=err, returncode=rc, command=cmd,
        )  # fmt: skip
    result = _read_report(out, _abi.BUILD_REPORT_KEYS, lambda r: _build_result(r, err))
    if result is None:
        raise BuildError(
            "cargo-oxide succeeded but did not print its JSON build report on stdout "
            f"(got {out[:200]!r}). Fix: install the cargo-oxide from the same pyoxide release.",
            log=err, returncode=rc, command=cmd,
        )  # fmt: skip
    return result


def _build_result(report: dict[str, Any], log: str) -> BuildResult:
    emu = report["emulator"]
    return BuildResult(
        manifest=Path(report["manifest"]), crate=str(report["crate"]),
        artifacts=tuple(Path(a) for a in report["artifacts"]), log=log,
        emulator=None if emu is None else Path(emu),
    )  # fmt: skip
