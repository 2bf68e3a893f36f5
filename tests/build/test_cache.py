"""pyoxide.load(crate): rebuild only when sources or toolchain change; safe across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import fake_cargo_oxide
from helpers.fixtures import TESTS_DIR, make_crate

import pyoxide
from pyoxide._build import cache as _cache
from pyoxide.errors import BuildError


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_cargo_oxide.install(tmp_path, monkeypatch)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_OXIDE_LOG", str(log))
    return log


def builds(log: Path) -> int:
    if not log.exists():
        return 0
    return sum(json.loads(line)[1] == "build" for line in log.read_text().splitlines())


@pytest.fixture
def crate(tmp_path: Path) -> Path:
    return make_crate(tmp_path / "kcrate")


def test_second_load_reuses_the_build(calls: Path, crate: Path) -> None:
    a = pyoxide.load(crate)
    b = pyoxide.load(crate)
    assert builds(calls) == 1
    assert a.manifest.path == b.manifest.path
    cache = Path(os.environ["PYOXIDE_CACHE_DIR"])
    assert a.manifest.path.parent.parent == cache / "builds"
    assert not list((cache / "tmp").iterdir())  # no leftovers


def test_source_change_rebuilds(calls: Path, crate: Path) -> None:
    first = pyoxide.load(crate).manifest.path
    (crate / "src" / "lib.rs").write_text("#![no_std]\n// changed\n")
    second = pyoxide.load(crate).manifest.path
    assert builds(calls) == 2 and first != second
    assert first.exists()  # finished builds are never modified


def test_a_new_module_is_tracked_once_listed(calls: Path, crate: Path) -> None:
    pyoxide.load(crate)
    (crate / "src" / "more.rs").write_text("// new module\n")
    (crate / "src" / "lib.rs").write_text("#![no_std]\nmod more;\n")
    pyoxide.load(crate)  # lib.rs changed; the new manifest lists more.rs
    (crate / "src" / "more.rs").write_text("// edited\n")
    pyoxide.load(crate)
    pyoxide.load(crate)
    assert builds(calls) == 3


def test_cargo_toml_and_lock_changes_rebuild(calls: Path, crate: Path) -> None:
    pyoxide.load(crate)
    (crate / "Cargo.toml").write_text((crate / "Cargo.toml").read_text() + "\n[features]\n")
    pyoxide.load(crate)
    (crate / "Cargo.lock").write_text("# lock\n")
    pyoxide.load(crate)
    assert builds(calls) == 3


def test_toolchain_change_rebuilds(
    calls: Path, crate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyoxide.load(crate)
    tool = Path(os.environ["PYOXIDE_CARGO_OXIDE"])
    tool.write_text(tool.read_text() + "# rebuilt cargo-oxide\n")
    pyoxide.load(crate)
    assert builds(calls) == 2


@pytest.mark.parametrize(
    "variable, value",
    [
        ("OXIDE_NO_FMAD", "1"),
        ("CUDA_OXIDE_NO_FMA", "1"),
        ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1"),
        ("OXIDE_LLVM_BIN", "/opt/other-llvm/bin"),
        ("OXIDE_LIBDEVICE", "/opt/cuda/nvvm/libdevice/libdevice.10.bc"),
        ("OXIDE_RUSTC", "/opt/other-rust/bin/rustc"),  # the rustc cargo-oxide compiles with
    ],
)
def test_what_cargo_oxide_builds_with_is_part_of_the_key(
    calls: Path, crate: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    """Issue 27.5: the key missed these, so a build made without them was served with
    them set (tests/build/test_build_inputs.py walks the whole table)."""
    first = pyoxide.load(crate).manifest.path
    monkeypatch.setenv(variable, value)
    second = pyoxide.load(crate).manifest.path
    assert builds(calls) == 2 and first != second
    monkeypatch.delenv(variable)
    assert pyoxide.load(crate).manifest.path == first and builds(calls) == 2


def test_fmad_is_an_option_of_load(calls: Path, crate: Path) -> None:
    """Issue 27.5: load() had no fmad=, so after `pyoxide build --no-fmad` it still served
    the fused build."""
    fused = pyoxide.load(crate)
    apart = pyoxide.load(crate, fmad=False)
    assert fused.manifest.fmad and not apart.manifest.fmad and builds(calls) == 2
    assert pyoxide.load(crate, fmad=True).manifest.path == fused.manifest.path
    with pytest.raises(pyoxide.LoadError, match=r"load\(fmad=True\) asks the other"):
        pyoxide.load(apart.manifest.path, fmad=True)


def test_rebuild_replaces_the_cached_build(calls: Path, crate: Path) -> None:
    """Issue 27.5: rebuild=True built, then threw the new build away as "same inputs"."""
    first = pyoxide.load(crate).manifest.path
    before = (first.parent.stat().st_ino, first.read_text())
    again = pyoxide.load(crate, rebuild=True).manifest.path
    assert builds(calls) == 2 and again == first
    assert first.parent.stat().st_ino != before[0]  # the new build, not the old folder
    assert not list((Path(os.environ["PYOXIDE_CACHE_DIR"]) / "tmp").iterdir())


def test_corrupt_cache_entry_rebuilds(calls: Path, crate: Path) -> None:
    path = pyoxide.load(crate).manifest.path
    path.write_text("{broken")
    pyoxide.load(crate)
    assert builds(calls) == 2


def test_failed_build_leaves_no_entry(
    calls: Path, crate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OXIDE_MODE", "fail")
    with pytest.raises(pyoxide.BuildError):
        pyoxide.load(crate)
    cache = Path(os.environ["PYOXIDE_CACHE_DIR"])
    assert not list((cache / "tmp").iterdir())
    assert not (cache / "index").exists() or not list((cache / "index").iterdir())
    monkeypatch.setenv("FAKE_OXIDE_MODE", "newer-schema")
    with pytest.raises(pyoxide.ManifestError, match="upgrade pyoxide"):
        pyoxide.load(crate)


def test_verbose_streams_progress(
    calls: Path, crate: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PYOXIDE_VERBOSE", "2")
    pyoxide.load(crate)
    pyoxide.load(crate)
    err = capsys.readouterr().err
    assert "building kcrate" in err and "Compiling kcrate" in err and "is fresh" in err


_CHILD = """
import sys
sys.path.insert(0, {tests!r})
import pyoxide
m = pyoxide.load({crate!r})
print(m.manifest.path)
"""


def test_two_processes_loading_at_once_both_succeed(calls: Path, crate: Path) -> None:
    env = {**os.environ, "FAKE_OXIDE_SLEEP": "0.5"}
    code = _CHILD.format(tests=str(TESTS_DIR), crate=str(crate))
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    paths = {out.strip() for out, _ in results}
    assert len(paths) == 1 and Path(paths.pop()).is_file()
    assert builds(calls) == 1  # the lock made the second wait and reuse the first's build


@pytest.mark.parametrize("edits", [1, 2, 3])
def test_an_edit_during_the_build_is_never_cached_as_the_new_source(
    calls: Path, crate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edits: int
) -> None:
    """Issue 16: cargo-oxide hashes sources after compiling them, so an edit while it
    runs used to cache the old build under the new source's hash, for good."""
    counter = tmp_path / "edits"
    counter.write_text("edit\n" * edits)
    monkeypatch.setenv("FAKE_OXIDE_EDIT", str(counter))
    lib = crate / "src" / "lib.rs"
    if edits >= _cache.BUILD_ATTEMPTS:
        with pytest.raises(BuildError, match="changed during each of 3 builds"):
            pyoxide.load(crate)
        assert not list((Path(os.environ["PYOXIDE_CACHE_DIR"]) / "index").iterdir())
    else:
        mod = pyoxide.load(crate)
        assert builds(calls) == edits + 1  # rebuilt until a build saw no edit
        assert (mod.manifest.path.parent / "compiled.rs").read_text() == lib.read_text()
    # Either way the next load serves a build of what is on disk now.
    again = pyoxide.load(crate)
    assert (again.manifest.path.parent / "compiled.rs").read_text() == lib.read_text()
