"""The `pyoxide` command: its exit codes, doctor and inspect (`pyoxide build` is tested in
tests/build/test_build.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import fake_cargo_oxide
from helpers.fixtures import make_crate, write_manifest

from pyoxide._manifest.abi import EXIT_MEANINGS, MANIFEST_SCHEMA_VERSION
from pyoxide.cli import cli
from pyoxide.cli._exit import ExitCode


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_exit_codes_are_one_table_in_help_and_the_guide() -> None:
    assert [int(c) for c in ExitCode] == list(range(9))
    shown = " ".join((cli.epilog or "").split())
    guide = (Path(__file__).parents[2] / "docs" / "guide" / "cli.md").read_text()
    for code, meaning in EXIT_MEANINGS.items():
        assert f"{code} {meaning}" in shown
        assert f"| {code} | {meaning} |" in guide


def test_toolchain_missing(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYOXIDE_CARGO_OXIDE", str(tmp_path / "missing"))
    r = runner.invoke(cli, ["build", str(make_crate(tmp_path / "c"))])
    assert r.exit_code == ExitCode.TOOLCHAIN_MISSING
    r = runner.invoke(cli, ["doctor"])
    assert r.exit_code == ExitCode.TOOLCHAIN_MISSING
    assert "cargo-oxide: MISSING" in r.stdout and "numpy:" in r.stdout


def test_doctor(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cargo_oxide.install(tmp_path, monkeypatch)
    r = runner.invoke(cli, ["doctor"])
    assert r.exit_code == 0, r.output
    assert "cupy:" in r.stdout and "all good" in r.stdout
    r = runner.invoke(cli, ["doctor", "--json"])
    report = json.loads(r.stdout)
    assert r.exit_code == 0 and report["cargo_oxide"]["report"]["ok"] is True
    assert set(report) >= {"pyoxide", "python", "numpy", "cupy", "cargo_oxide"}
    monkeypatch.setenv("FAKE_OXIDE_MODE", "toolchain")
    r = runner.invoke(cli, ["doctor"])
    assert r.exit_code == ExitCode.TOOLCHAIN_MISSING and "MISSING" in r.output


def test_inspect(runner: CliRunner, tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    r = runner.invoke(cli, ["inspect", "saxpy", str(manifest)])
    assert r.exit_code == 0, r.output
    assert "fn saxpy(a: f32, x: &[f32], y: &[f32], out: DisjointSlice<f32>)" in r.stdout
    assert "ABI: pointer, length (u64)" in r.stdout and "12 registers" in r.stdout
    r = runner.invoke(cli, ["inspect", "scale", str(manifest), "--arch", "sm_90", "--ptx"])
    assert r.exit_code == 0, r.output
    assert ".entry scale_f32(" in r.stdout and ".entry scale_f64(" in r.stdout
    assert ".entry saxpy(" not in r.stdout and "sm_80" not in r.stdout
    r = runner.invoke(cli, ["inspect", "sxapy", str(manifest)])
    assert r.exit_code == ExitCode.NOT_FOUND and "kernels: accumulate" in r.stderr
    r = runner.invoke(cli, ["inspect", "saxpy", str(manifest), "--arch", "sm_70"])
    assert r.exit_code == ExitCode.NOT_FOUND
    manifest.write_text(f'{{"schema": {MANIFEST_SCHEMA_VERSION + 1}}}')
    r = runner.invoke(cli, ["inspect", "saxpy", str(manifest)])
    assert r.exit_code == ExitCode.LOAD_FAILED and "newer" in r.stderr


@pytest.mark.parametrize("path", ["absolute", "../outside.ptx"])
def test_inspect_ptx_reads_only_files_inside_the_manifests_folder(
    runner: CliRunner, tmp_path: Path, path: str
) -> None:
    """Issue 27.8: `inspect --ptx` read (and printed) an absolute PTX path."""
    secret = tmp_path / "outside.ptx"
    secret.write_text("// .entry saxpy( a secret\n")
    manifest = write_manifest(tmp_path / "m")
    m = json.loads(manifest.read_text())
    m["artifacts"][0]["path"] = str(secret) if path == "absolute" else path
    manifest.write_text(json.dumps(m))
    r = runner.invoke(cli, ["inspect", "saxpy", str(manifest), "--ptx"])
    assert r.exit_code == ExitCode.LOAD_FAILED, r.output
    assert "inside the manifest's folder" in r.stderr and "a secret" not in r.output


def test_python_dash_m_and_console_script() -> None:
    r = subprocess.run([sys.executable, "-m", "pyoxide", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "doctor" in r.stdout and "Exit codes" in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "pyoxide", "nonsense"], capture_output=True, text=True
    )
    assert r.returncode == ExitCode.USAGE


@pytest.mark.parametrize("command", ["build", "new", "doctor", "inspect"])
def test_commands_that_need_no_numpy_run_without_it(command: str) -> None:
    """The wheel's bundling step runs `pyoxide build` where NumPy is not installed: the
    command line imports a command's module only when it runs (verify, bench and tune
    need NumPy; the others do not)."""
    code = (
        "import sys; sys.modules['numpy'] = None  # an import of NumPy fails\n"
        f"sys.argv = ['pyoxide', {command!r}, '--help']\n"
        "from pyoxide.cli import main; main()"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"Usage: pyoxide {command}" in r.stdout
