"""The tuned choices a crate ships in its source tree (its ``tuned.json``,
pyoxide/_launch/tune_store.py), written from what a GPU run brought back: copies of a
cache's tuned/ folder, its files, or tune reports. scripts/ship_tuned is the command."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._launch import tune_store as _tune_store
from .._launch import tuned as _tuned
from .._manifest import abi as _abi
from .._manifest.reader import KernelSpec
from .._manifest.tune_spec import TunedChoice, merged, read_choices
from .tune import choice_of

if sys.version_info >= (3, 11):
    import tomllib
else:  # a dependency below 3.11 (pyproject.toml)
    import tomli as tomllib


class Gathered:
    """One crate's choices from the sources: the newest key, the choices in order, and
    the places a report measured (where its choice, or none, replaces the file's)."""

    def __init__(self) -> None:
        self.key = ""
        self.choices: tuple[TunedChoice, ...] = ()
        self.measured: set[tuple[Any, ...]] = set()

    def add(self, key: str, choices: Sequence[TunedChoice], measured: Sequence[Any] = ()) -> None:
        places = set(measured)
        self.key = key
        self.measured |= places
        kept = tuple(c for c in self.choices if c.place not in places)
        self.choices = merged(kept, tuple(choices))


def gather(sources: Sequence[Path], emulator: bool = False) -> dict[str, Gathered]:
    """Every crate's choices in ``sources`` (folders, cache files, reports)."""
    found: dict[str, Gathered] = {}
    for source in sources:
        files = sorted(source.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for path in files if source.is_dir() else [source]:
            value = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(value, dict) and "choices" in value:  # a cache file
                c, v = _tune_store.file_fields(path, value)
                if v["version"] != _abi.TUNED_FILE_VERSION:
                    raise SystemExit(f"{path}: tuned-choices version {v['version']}, "
                                     f"expected {_abi.TUNED_FILE_VERSION}")  # fmt: skip
                choices = read_choices(c, v["choices"], "choices")
                got = found.setdefault(v["crate"], Gathered())
                got.add(v["key"], [x for x in choices if emulator or not _on_emulator(x)])
                continue
            for report in value if isinstance(value, list) else [value]:
                if report.get("backend") == "emu" and not emulator:
                    continue
                device, arch = report["device"], report["arch"]
                made = [choice_of(k, device, arch) for k in report["kernels"]]
                measured = [(k["kernel"], device, arch, tuple(k["bucket"]))
                            for k in report["kernels"] if k["bucket"]]  # fmt: skip
                got = found.setdefault(report["crate"], Gathered())
                got.add(report["key"], [x for x in made if x is not None], measured)
    return found


def _on_emulator(choice: TunedChoice) -> bool:
    return choice.arch == _abi.EMULATOR_ARCH


def ship(crate_dir: Path, crate: str, got: Gathered, fresh: bool = False,
         check: bool = False, build: Sequence[KernelSpec] | None = None,
         ) -> tuple[Path, int, bool]:  # fmt: skip
    """Write ``crate_dir``'s tuned.json with ``got`` over what it holds: (the file, how
    many choices it holds, whether it changed). With ``build`` (the kernels of the
    crate's current build), the file's choices that build would not run go (the loader's
    rule, tuned.py's ``placement``: an instance renamed or gone, say), instead of staying
    in the file for good."""
    path = _tune_store.shipped_file(crate_dir)
    before = path.read_text(encoding="utf-8") if path.is_file() else None
    old = () if fresh else _tune_store.read_shipped(crate_dir, crate)
    by_entry = None if build is None else {k.entry: k for k in build}
    kept = tuple(c for c in old if c.place not in got.measured
                 and (by_entry is None or _tuned.placement(c, by_entry) is not None))  # fmt: skip
    choices = merged(kept, got.choices)
    differs = _tune_store.shipped_text(crate, got.key, choices) != before
    if differs and not check:
        _tune_store.write_shipped(crate_dir, crate, got.key, choices)
    return path, len(choices), differs


def crate_name(crate_dir: Path) -> str:
    """The crate name of the Cargo.toml in ``crate_dir`` (as a manifest spells it)."""
    path = crate_dir / "Cargo.toml"
    try:
        name = tomllib.loads(path.read_text(encoding="utf-8"))["package"]["name"]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as e:
        raise SystemExit(f"{path}: no [package] name ({e})") from e
    return str(name).replace("-", "_")
