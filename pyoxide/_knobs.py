"""Every environment variable pyoxide reads, declared once.

This is the only module that reads ``os.environ``. Values are read when asked for
(not at import), so a test or a long-running process can change them.

=====================  ================================================================
PYOXIDE_CACHE_DIR      where ``load`` keeps built artifacts (default:
                       ``$XDG_CACHE_HOME/pyoxide`` or ``~/.cache/pyoxide``)
PYOXIDE_BACKEND        ``auto`` (default: GPU arrays → cupy, NumPy arrays → emu),
                       ``cupy`` or ``emu`` (force one backend; other arrays are refused)
PYOXIDE_ARCH           comma-separated architectures ``load`` builds for
                       (``sm_80,sm_90``); default: cargo-oxide's default
PYOXIDE_VERBOSE        ``0`` (default) quiet builds, ``1`` stream build progress,
                       ``2`` also print cache decisions
PYOXIDE_CARGO_OXIDE    path of the cargo-oxide binary; default: ``cargo-oxide`` on
                       PATH, then ``~/.cargo/bin/cargo-oxide``
PYOXIDE_SYNC           ``1``: synchronize after every launch, so a trap is reported
                       by the kernel that caused it (slow; for debugging)
PYOXIDE_RUSTC          the rustc whose version is part of the cache key
                       (default: ``$RUSTC`` or ``rustc`` on PATH)
CUDA_HOME, CUDA_PATH   where ``pyoxide verify --sanitize`` looks for compute-sanitizer
                       (``bin/``) when it is not on PATH
=====================  ================================================================
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from .errors import ConfigError

Backend = Literal["auto", "cupy", "emu"]

_ARCH_RE = re.compile(r"^sm_\d{2,3}[af]?$")


def _get(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else None


def cache_dir() -> Path:
    value = _get("PYOXIDE_CACHE_DIR")
    if value is not None:
        return Path(value).expanduser()
    xdg = _get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "pyoxide"


def backend() -> Backend:
    value = (_get("PYOXIDE_BACKEND") or "auto").lower()
    if value == "auto":
        return "auto"
    if value == "cupy":
        return "cupy"
    if value == "emu":
        return "emu"
    raise ConfigError("PYOXIDE_BACKEND", value, "auto, cupy or emu")


def arch() -> list[str] | None:
    value = _get("PYOXIDE_ARCH")
    if value is None:
        return None
    archs = [a.strip() for a in value.split(",") if a.strip()]
    if not archs or not all(_ARCH_RE.match(a) for a in archs):
        raise ConfigError("PYOXIDE_ARCH", value, "comma-separated names like sm_80,sm_90")
    return archs


def verbose() -> int:
    value = _get("PYOXIDE_VERBOSE")
    if value is None:
        return 0
    if value not in ("0", "1", "2"):
        raise ConfigError("PYOXIDE_VERBOSE", value, "0, 1 or 2")
    return int(value)


def cargo_oxide() -> Path | None:
    """The configured cargo-oxide path, or None to search PATH and ~/.cargo/bin."""
    value = _get("PYOXIDE_CARGO_OXIDE")
    return Path(value).expanduser() if value is not None else None


def sync_launches() -> bool:
    value = _get("PYOXIDE_SYNC")
    if value is None or value == "0":
        return False
    if value == "1":
        return True
    raise ConfigError("PYOXIDE_SYNC", value, "0 or 1")


def ptxas() -> str | None:
    """cargo-oxide's OXIDE_PTXAS: the ptxas that verifies the PTX (a build fails when it
    does not work)."""
    return _get("OXIDE_PTXAS")


def launch_knobs() -> tuple[str | None, str | None]:
    """The raw values of the variables that decide how a launch goes, beyond building:
    PYOXIDE_SYNC and PYOXIDE_BACKEND."""
    return os.environ.get("PYOXIDE_SYNC"), os.environ.get("PYOXIDE_BACKEND")


_launch_seen: tuple[str | None, str | None] | None = None
_launch_generation = 0


def launch_generation() -> int:
    """How many different values of :func:`launch_knobs` this process has seen (read now).
    A compiled launcher is built for one generation and declines calls in any other, so
    the general launch path, which reads the knobs itself, applies a change; pyoxide's
    launch path asks before every launch it makes (crates/pyoxide-native/src/generation.rs)."""
    global _launch_seen, _launch_generation
    now = launch_knobs()
    if now != _launch_seen:
        _launch_seen = now
        _launch_generation += 1
    return _launch_generation


def rustc() -> str:
    return _get("PYOXIDE_RUSTC") or _get("RUSTC") or "rustc"


def path_env() -> str:
    """PATH, for finding tools (shutil.which is given it explicitly)."""
    return os.environ.get("PATH", os.defpath)


def cuda_homes() -> list[str]:
    """CUDA toolkit folders named by CUDA_HOME and CUDA_PATH (set ones, in that order)."""
    return [v for v in (_get("CUDA_HOME"), _get("CUDA_PATH")) if v]
