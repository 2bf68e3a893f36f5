"""Running cargo-oxide (a fake that follows its contract: tests/helpers/fake_cargo_oxide.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import fake_cargo_oxide
from helpers.bundled import REPO, workspace_cargo_oxide
from helpers.fixtures import make_crate

import pyoxide
from pyoxide._build import cargo as _build
from pyoxide._build.cargo import build, find_cargo_oxide


@pytest.fixture
def tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return fake_cargo_oxide.install(tmp_path, monkeypatch)


@pytest.fixture
def crate(tmp_path: Path) -> Path:
    return make_crate(tmp_path / "kcrate")


def test_build_returns_the_report_and_streams_progress(tool: Path, crate: Path) -> None:
    lines: list[str] = []
    result = build(crate, echo=lines.append)
    assert (
        result.manifest == crate / "target" / "oxide" / "release" / "oxide_fixtures.manifest.json"
    )
    assert result.crate == "oxide_fixtures" and len(result.artifacts) == 2
    assert any("Compiling kcrate" in line for line in lines)
    assert "Finished" in result.log
    assert pyoxide.read_manifest(result.manifest).crate_manifest_path == str(crate / "Cargo.toml")


def test_build_passes_the_options(
    tool: Path, crate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_OXIDE_LOG", str(log))
    out = tmp_path / "out"
    result = build(crate / "Cargo.toml", arch=["sm_80", "sm_90a"], profile="debug", out_dir=out)
    (argv,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert argv[:2] == ["oxide", "build"]
    assert argv[argv.index("--manifest-path") + 1] == str(crate / "Cargo.toml")
    assert "--json" in argv and "--debug" in argv
    assert argv[argv.index("--arch") + 1] == "sm_80,sm_90a"
    assert argv[argv.index("--out-dir") + 1] == str(out.resolve())
    assert "--no-fmad" not in argv and "--no-emu" not in argv
    assert result.manifest.parent == out.resolve()
    build(crate / "Cargo.toml", fmad=False, emulator=False)
    argv = json.loads(log.read_text().splitlines()[-1])
    assert "--no-fmad" in argv and "--no-emu" in argv


@pytest.mark.parametrize(
    ("mode", "error", "fragment"),
    [
        ("fail", pyoxide.BuildError, "build failed for kcrate (exit 1)"),
        ("usage", pyoxide.ToolchainError, "it is from another pyoxide release"),
        ("toolchain", pyoxide.ToolchainError, "toolchain piece is missing"),
        ("nojson", pyoxide.BuildError, "did not print its JSON build report"),
    ],
)
def test_build_failures(
    tool: Path,
    crate: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    error: type[pyoxide.BuildError],
    fragment: str,
) -> None:
    monkeypatch.setenv("FAKE_OXIDE_MODE", mode)
    with pytest.raises(error) as info:
        build(crate)
    e = info.value
    assert fragment in str(e) and "Fix:" in str(e)
    assert e.command[:3] == ["cargo", "oxide", "build"]
    if mode == "fail":
        assert e.returncode == 1
        assert "error[E0308]: mismatched types" in e.log  # the full log travels with the error
        assert "mismatched types" in str(e)  # and its tail is in the message


def test_tool_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYOXIDE_CARGO_OXIDE", str(tmp_path / "nope"))
    with pytest.raises(pyoxide.ToolchainError, match="does not exist"):
        find_cargo_oxide()
    monkeypatch.delenv("PYOXIDE_CARGO_OXIDE")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    packaged = tmp_path / "site" / "pyoxide" / "_bin" / "cargo-oxide"
    monkeypatch.setattr(_build, "PACKAGED_CARGO_OXIDE", packaged)
    with pytest.raises(pyoxide.ToolchainError, match="cargo install --path crates/cargo-oxide"):
        find_cargo_oxide()
    packaged.parent.mkdir(parents=True)
    packaged.write_text("")  # the one a pyoxide wheel ships: the last resort
    assert find_cargo_oxide() == packaged
    home_tool = tmp_path / ".cargo" / "bin" / "cargo-oxide"
    home_tool.parent.mkdir(parents=True)
    home_tool.write_text("")
    assert find_cargo_oxide() == home_tool
    on_path = tmp_path / "cargo-oxide"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    assert find_cargo_oxide() == on_path


def test_not_a_crate(tool: Path, tmp_path: Path) -> None:
    with pytest.raises(pyoxide.BuildError, match="not a Rust crate"):
        build(tmp_path)


def test_cargo_oxide_refuses_a_cache_others_can_write(tmp_path: Path) -> None:
    """Issue 27.7: the `core` cargo-oxide builds and reuses from its cache is linked into
    every kernel, so a cache folder another user could write to is refused before anything
    is built or read there."""
    hostile = REPO / "tests" / "fixtures" / "hostile_kernels" / "Cargo.toml"
    exe = workspace_cargo_oxide()
    assert exe is not None
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(0o777)
    p = subprocess.run(
        [exe, "oxide", "build", "--manifest-path", str(hostile), "--no-emu"],
        env=dict(os.environ, PYOXIDE_CACHE_DIR=str(cache)), capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode != 0 and "refusing the cache folder" in p.stderr, p.stderr
    assert "chmod go-w" in p.stderr and list(cache.iterdir()) == []
