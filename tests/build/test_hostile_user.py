"""Issue 16's smaller findings, each seen by a new user trying to break pyoxide: a quiet
failing build that hid its cause, a cache path that is a file, artifacts unreadable to
other users whatever the umask."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import fake_cargo_oxide
from helpers.bundled import REPO, workspace_cargo_oxide
from helpers.fixtures import make_crate

import pyoxide
from pyoxide.cli import cli
from pyoxide.cli._exit import ExitCode
from pyoxide.errors import ConfigError

HOSTILE = REPO / "tests" / "fixtures" / "hostile_kernels" / "Cargo.toml"


@pytest.fixture
def crate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_cargo_oxide.install(tmp_path, monkeypatch)
    return make_crate(tmp_path / "kcrate")


def test_a_quiet_failing_build_still_shows_the_cause(
    crate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OXIDE_MODE", "fail")
    r = CliRunner().invoke(cli, ["build", str(crate), "-q"])
    assert r.exit_code == ExitCode.BUILD_FAILED, r.output
    assert "error[E0308]: mismatched types" in r.stderr


@pytest.mark.parametrize("kind", ["file", "file-in-path"])
def test_a_cache_path_that_is_a_file_is_a_clear_error(
    crate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    cache = blocker if kind == "file" else blocker / "cache"
    monkeypatch.setenv("PYOXIDE_CACHE_DIR", str(cache))
    with pytest.raises(
        ConfigError, match=r"expected a writable folder.*\(is a file|Fix: set PYOXIDE_CACHE_DIR"
    ):
        pyoxide.load(crate)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_the_cache_and_its_files_follow_the_umask(
    crate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mask: int
) -> None:
    cache = tmp_path / f"cache-{mask:o}"
    monkeypatch.setenv("PYOXIDE_CACHE_DIR", str(cache))
    old = os.umask(mask)
    try:
        manifest = pyoxide.load(crate).manifest.path
    finally:
        os.umask(old)
    index = next((cache / "index").iterdir())
    # ... and are never writable by others: a build in the cache is loaded into processes.
    for path, mode in [(manifest.parent, 0o777), (index, 0o666)]:
        want = mode & ~mask & ~0o022
        assert path.stat().st_mode & 0o777 == want, (path, oct(path.stat().st_mode))


def test_a_build_is_not_reused_under_another_ptxas(
    crate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build made without the user's OXIDE_PTXAS (unverified, or verified by another)
    is not served once it is set: the ptxas is part of the cache key."""
    first = pyoxide.load(crate).manifest.path
    monkeypatch.setenv("OXIDE_PTXAS", str(tmp_path / "ptxas"))
    second = pyoxide.load(crate).manifest.path
    assert second != first and second.is_file()


def test_a_broken_oxide_ptxas_is_an_error_not_unverified_ptx() -> None:
    exe = workspace_cargo_oxide()
    assert exe is not None
    p = subprocess.run(
        [exe, "oxide", "build", "--manifest-path", str(HOSTILE), "--json"],
        env=dict(os.environ, OXIDE_PTXAS="/bin/false"), capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 3, p.stderr  # the toolchain is incomplete
    assert "OXIDE_PTXAS=/bin/false is not a working ptxas" in p.stderr
    assert not p.stdout.strip()  # no build report: nothing was built
