"""Every environment variable pyoxide's Python side reads, typed.

This is the only module that reads ``os.environ``, and it reads only variables of
oxide-abi's one table (``_abi.VARIABLES``, generated from crates/oxide-abi/src/inputs.rs),
which says of each who reads it and what it does to a build's artifacts: the build
cache's key is derived from that table, not from this module. Values are read when asked
for (not at import), so a test or a long-running process can change them.

The build cache's folder is cargo-oxide's to decide (``cargo oxide key`` reports it), so
the Python side and cargo-oxide follow one rule. :func:`cache_dir` follows that rule
where cargo-oxide may be absent: the tuned choices a plain call of an installed wheel
reads (pyoxide/_launch/tune_store.py); tests/build/test_build_inputs.py checks the two agree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, cast, get_args

from ..errors import ConfigError
from . import abi as _abi

Backend = Literal["auto", "cupy", "emu"]


def _get(var: _abi.Variable) -> str | None:
    """A variable of the table that Python reads; unset and empty are the same."""
    if var.prefix or var.reader not in ("python", "both"):
        raise AssertionError(f"{var.name} is not a variable pyoxide's Python side reads")
    value = os.environ.get(var.name)
    return value if value not in (None, "") else None


def keyed() -> dict[str, str]:
    """The variables only Python reads whose value is part of the build key (cargo-oxide
    keys the ones that reach it), unset ones as ""."""
    return {
        v.name: os.environ.get(v.name, "")
        for v in _abi.VARIABLES
        if v.reader == "python" and v.effect == "key"
    }


def backend() -> Backend:
    value = (_get(_abi.PYOXIDE_BACKEND) or "auto").lower()
    if value in get_args(Backend):
        return cast(Backend, value)
    raise ConfigError("PYOXIDE_BACKEND", value, "auto, cupy or emu")


def arch() -> list[str] | None:
    value = _get(_abi.PYOXIDE_ARCH)
    if value is None:
        return None
    archs = [a.strip() for a in value.split(",") if a.strip()]
    try:
        for a in archs:
            _abi.parse_arch(a)
    except ValueError as e:
        expected = f"comma-separated names like sm_80,sm_90 ({e})"
        raise ConfigError("PYOXIDE_ARCH", value, expected) from None
    if not archs:
        raise ConfigError("PYOXIDE_ARCH", value, "comma-separated names like sm_80,sm_90")
    return archs


def verbose() -> int:
    value = _get(_abi.PYOXIDE_VERBOSE)
    if value is None:
        return 0
    if value not in ("0", "1", "2"):
        raise ConfigError("PYOXIDE_VERBOSE", value, "0, 1 or 2")
    return int(value)


def cargo_oxide() -> Path | None:
    """The configured cargo-oxide path, or None to search PATH and ~/.cargo/bin."""
    value = _get(_abi.PYOXIDE_CARGO_OXIDE)
    return Path(value).expanduser() if value is not None else None


def _switch(var: _abi.Variable, default: bool = False) -> bool:
    """A 0/1 variable; unset is `default`."""
    value = _get(var)
    if value is None:
        return default
    if value in ("0", "1"):
        return value == "1"
    raise ConfigError(var.name, value, "0 or 1")


def sync_launches() -> bool:
    return _switch(_abi.PYOXIDE_SYNC)


def emu_strict() -> bool:
    return _switch(_abi.PYOXIDE_EMU_STRICT)


def emu_seed() -> int:
    value = _get(_abi.PYOXIDE_EMU_SEED)
    if value is None:
        return 0
    if not (value.isascii() and value.isdigit()) or int(value) >= 2**64:
        raise ConfigError("PYOXIDE_EMU_SEED", value, "an integer from 0 to 2**64 - 1")
    return int(value)


def tuned_fallback() -> bool:
    """Whether a GPU model without a tuned choice of its own runs the choice another
    model of its architecture made (pyoxide/_launch/tuned.py); on unless set to 0."""
    return _switch(_abi.PYOXIDE_TUNED_FALLBACK, default=True)


def dependent_launch() -> bool:
    """Whether the compiled launcher starts `#[dependent_launch]` kernels with programmatic
    stream serialisation (pyoxide/backends/cupy/_native.py); on unless set to 0."""
    return _switch(_abi.PYOXIDE_DEPENDENT_LAUNCH, default=True)


def launch_knobs() -> tuple[str | None, ...]:
    """The raw values of the variables that decide how a launch goes, beyond building:
    PYOXIDE_SYNC, PYOXIDE_BACKEND, PYOXIDE_TUNED_FALLBACK (which tuned choice runs) and
    PYOXIDE_DEPENDENT_LAUNCH."""
    names = (_abi.PYOXIDE_SYNC, _abi.PYOXIDE_BACKEND, _abi.PYOXIDE_TUNED_FALLBACK,
             _abi.PYOXIDE_DEPENDENT_LAUNCH)  # fmt: skip
    return tuple(os.environ.get(v.name) for v in names)


_launch_seen: tuple[str | None, ...] | None = None
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


def home() -> Path:
    """The home folder: HOME, else (unset or empty) the user database's, as cargo-oxide
    takes it."""
    value = _get(_abi.HOME)
    if value is not None:
        return Path(value)
    import pwd

    return Path(pwd.getpwuid(os.geteuid()).pw_dir)


def cache_dir() -> Path:
    """cargo-oxide's cache folder rule (crates/cargo-oxide/src/env.rs): PYOXIDE_CACHE_DIR,
    else $XDG_CACHE_HOME/pyoxide, else <home>/.cache/pyoxide; neither created nor checked."""
    value = _get(_abi.PYOXIDE_CACHE_DIR)
    if value is not None:
        return Path(value).absolute()
    xdg = _get(_abi.XDG_CACHE_HOME)
    return (Path(xdg) / "pyoxide" if xdg else home() / ".cache" / "pyoxide").absolute()


def environment_with(extra: dict[str, str]) -> dict[str, str]:
    """The environment for a child process: this one's, plus `extra` (verify's worker)."""
    return {**os.environ, **extra}


def path_env() -> str:
    """PATH, for finding tools (shutil.which is given it explicitly)."""
    return os.environ.get(_abi.PATH.name, os.defpath)


def cuda_homes() -> list[str]:
    """CUDA toolkit folders named by CUDA_HOME and CUDA_PATH (set ones, in that order)."""
    return [v for v in (_get(_abi.CUDA_HOME), _get(_abi.CUDA_PATH)) if v]
