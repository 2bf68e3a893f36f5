"""`pyoxide.load` on a real kernel crate with the real cargo-oxide (no fakes): it builds,
returns typed launchers, serves the cached build while nothing changed, and rebuilds
when a source file changes. The crate is cargo-oxide's hand-written fixture, copied."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.bundled import REPO

import pyoxide
from pyoxide.errors import ArgumentTypeError

FIXTURE = REPO / "crates" / "cargo-oxide" / "tests" / "fixtures" / "handmade"


@pytest.fixture
def crate(tmp_path: Path) -> Path:
    """The fixture crate, copied; built in the test's own cache (conftest), whose `core`
    sysroot is the run's one (helpers/caches.py)."""
    dst = tmp_path / "handmade"
    (dst / "src").mkdir(parents=True)
    for f in ("Cargo.toml", "src/lib.rs"):
        shutil.copy(FIXTURE / f, dst / f)
    return dst


def test_load_builds_caches_and_rebuilds_on_change(crate: Path) -> None:
    mod = pyoxide.load(crate)
    assert sorted(mod) == ["exp_reverse", "fill", "fill_u32", "rotate"]  # fill: generic
    first = mod.manifest.path
    ptx = {a.arch: a.sha256 for a in mod.manifest.artifacts}
    assert set(ptx) == {"sm_80", "sm_90"}

    again = pyoxide.load(crate)
    assert again.manifest.path == first
    assert {a.arch: a.sha256 for a in again.manifest.artifacts} == ptx

    lib = crate / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace("*out.add(i) = v;", "*out.add(i) = v ^ 7;"))
    rebuilt = pyoxide.load(crate)
    changed = {a.arch: a.sha256 for a in rebuilt.manifest.artifacts}
    assert changed.keys() == ptx.keys() and all(changed[k] != ptx[k] for k in ptx)


def test_launchers_check_arguments_against_the_real_manifest(crate: Path) -> None:
    mod = pyoxide.load(crate)
    with pytest.raises(ArgumentTypeError, match=r"exp_reverse.*2 argument"):
        mod.exp_reverse(1.0)
