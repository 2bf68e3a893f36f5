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
from pyoxide import _cache
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
    rustc = tmp_path / "rustc"
    rustc.write_text("#!/bin/sh\necho 'rustc 9.9.9-fake'\n")
    rustc.chmod(0o755)
    monkeypatch.setenv("PYOXIDE_RUSTC", str(rustc))
    pyoxide.load(crate)
    assert builds(calls) == 3


def test_arch_profile_and_rebuild_flag(
    calls: Path, crate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyoxide.load(crate)
    m = pyoxide.load(crate, arch="sm_90")
    assert m.manifest.archs == ["sm_90"]
    monkeypatch.setenv("PYOXIDE_ARCH", "sm_80,sm_90")
    pyoxide.load(crate)
    pyoxide.load(crate, profile="debug")
    pyoxide.load(crate, profile="debug", rebuild=True)
    assert builds(calls) == 5
    monkeypatch.setenv("PYOXIDE_ARCH", "volta")
    with pytest.raises(pyoxide.ConfigError, match="PYOXIDE_ARCH"):
        pyoxide.load(crate)


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
        assert not (Path(os.environ["PYOXIDE_CACHE_DIR"]) / "index").exists()
    else:
        mod = pyoxide.load(crate)
        assert builds(calls) == edits + 1  # rebuilt until a build saw no edit
        assert (mod.manifest.path.parent / "compiled.rs").read_text() == lib.read_text()
    # Either way the next load serves a build of what is on disk now.
    again = pyoxide.load(crate)
    assert (again.manifest.path.parent / "compiled.rs").read_text() == lib.read_text()
