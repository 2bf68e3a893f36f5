"""Issue 16's smaller findings, each seen by a new user trying to break pyoxide: a quiet
failing build that hid its cause, a cache path that is a file, artifacts unreadable to
other users whatever the umask."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import fake_cargo_oxide
from helpers.fixtures import make_crate

import pyoxide
from pyoxide.cli import cli
from pyoxide.cli._exit import ExitCode


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
