"""Running cargo-oxide (a fake that follows its contract: tests/helpers/fake_cargo_oxide.py),
through the API and through `pyoxide build`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import fake_cargo_oxide
from helpers.bundled import REPO, workspace_cargo_oxide
from helpers.fixtures import make_crate

import pyoxide
from pyoxide._build import cargo as _build
from pyoxide._build.cargo import build, find_cargo_oxide
from pyoxide.cli import cli
from pyoxide.cli._exit import ExitCode


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


def test_build_writes_artifacts_and_stubs(tool: Path, crate: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(cli, ["build", str(crate), "--arch", "sm_80", "--arch", "sm_90"])
    assert r.exit_code == ExitCode.OK, r.output
    out = crate / "target" / "oxide" / "release"
    assert "built oxide_fixtures 0.1.0: 9 kernel(s)" in r.stdout
    assert "Compiling kcrate" in r.stderr  # cargo-oxide's progress is streamed
    stub = out / "oxide_fixtures.pyi"
    assert stub.is_file() and "def __call__(self, a: Float, x: Array" in stub.read_text()


def test_build_options(tool: Path, crate: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "o"
    r = runner.invoke(
        cli, ["build", str(crate), "--debug", "--out-dir", str(out), "--no-stubs", "-q"]
    )
    assert r.exit_code == 0, r.output
    assert (out / "oxide_fixtures.manifest.json").is_file()
    assert not (out / "oxide_fixtures.pyi").exists()
    assert "Compiling" not in r.stderr


def test_build_usage_errors(tool: Path, crate: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["build", str(crate), "--arch", "volta"]).exit_code == ExitCode.USAGE
    assert runner.invoke(cli, ["build", "--frobnicate"]).exit_code == ExitCode.USAGE
    r = runner.invoke(cli, ["build", str(crate), "--bundled"])
    assert r.exit_code == ExitCode.USAGE and "not both" in r.stderr
    r = runner.invoke(cli, ["build", str(tmp_path)])
    assert r.exit_code == ExitCode.USAGE and "not a Rust crate" in r.stderr
    r = runner.invoke(cli, ["build", str(crate), "--arch", "sm_70"])  # ptxas refuses it
    assert r.exit_code == ExitCode.USAGE and "sm_NN with NN ≥ 75" in r.stderr


@pytest.mark.parametrize(
    ("mode", "error", "code", "fragment"),
    [
        ("fail", pyoxide.BuildError, ExitCode.BUILD_FAILED, "build failed for kcrate (exit 1)"),
        ("usage", pyoxide.ToolchainError, ExitCode.TOOLCHAIN_MISSING, "another pyoxide release"),
        ("toolchain", pyoxide.ToolchainError, ExitCode.TOOLCHAIN_MISSING, "piece is missing"),
        ("nojson", pyoxide.BuildError, ExitCode.BUILD_FAILED, "did not print its JSON build"),
        ("newer-schema", pyoxide.ManifestError, ExitCode.LOAD_FAILED, "upgrade pyoxide"),
    ],
)
def test_build_failures(
    tool: Path,
    crate: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    error: type[pyoxide.PyoxideError],
    code: int,
    fragment: str,
) -> None:
    """Each way a build fails: building and reading the manifest raises the error, with
    what to do; `pyoxide build` prints the same message and exits with the error's code."""
    monkeypatch.setenv("FAKE_OXIDE_MODE", mode)
    with pytest.raises(error) as info:
        pyoxide.read_manifest(build(crate).manifest)
    e = info.value
    assert fragment in str(e) and "Fix:" in str(e)
    if isinstance(e, pyoxide.BuildError):
        assert e.command[:3] == ["cargo", "oxide", "build"]
    if mode == "fail":
        assert e.returncode == 1
        assert "error[E0308]: mismatched types" in e.log  # the full log travels with the error
        assert "mismatched types" in str(e)  # and its tail is in the message
    r = CliRunner().invoke(cli, ["build", str(crate)])
    assert r.exit_code == code, r.output
    assert fragment in r.stderr


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
