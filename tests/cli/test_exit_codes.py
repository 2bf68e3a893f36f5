"""The one exit-code table (crates/oxide-abi/src/exit.rs), case by case with the real
`pyoxide` command and this checkout's real `cargo oxide`: each failure a user meets
exits with the code the table (and `--help`, and the README) gives it. Also `pyoxide
inspect` on every bundled kernel, every parameter kind included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.bundled import KERNELS_CRATE, emu_kernels_manifest, workspace_cargo_oxide

from pyoxide._manifest.abi import EXIT_MEANINGS, PARAM_KINDS, ExitCode
from pyoxide._manifest.reader import read_manifest
from pyoxide.cli import cli


def cargo_oxide(*args: str) -> subprocess.CompletedProcess[str]:
    exe = workspace_cargo_oxide()
    assert exe is not None, "the exit-code cases need cargo (scripts/setup installs it)"
    return subprocess.run([exe, "oxide", *args], capture_output=True, text=True, check=False)


def pyoxide_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyoxide", *args], capture_output=True, text=True, check=False
    )


def test_both_commands_print_the_table_in_help() -> None:
    for r in (cargo_oxide("--help"), pyoxide_cmd("--help")):
        assert r.returncode == 0
        shown = " ".join(r.stdout.split())
        for code, meaning in EXIT_MEANINGS.items():
            assert f"{code} {meaning}" in shown


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["build", "--arch", "volta"], ExitCode.USAGE, "not a GPU architecture"),
        (["build", "--arch", "sm_70"], ExitCode.USAGE, "NN ≥ 75"),
        (["build", "--manifest-path", "/nonexistent/Cargo.toml"], ExitCode.USAGE, "does not exist"),
        (["build", "--frobnicate"], ExitCode.USAGE, "unexpected argument"),
        (["inspect", "nosuchkernel"], ExitCode.NOT_FOUND, "no kernel `nosuchkernel`"),
        (["inspect", "vecadd", "--arch", "sm_75"], ExitCode.NOT_FOUND, "no PTX for sm_75"),
    ],
)
def test_cargo_oxide_cases(args: list[str], code: int, fragment: str) -> None:
    emu_kernels_manifest()  # kernels_rs built, so `inspect` has a manifest to read
    if args[0] == "inspect":
        args = [*args, "--manifest-path", str(KERNELS_CRATE)]
    r = cargo_oxide(*args)
    assert r.returncode == code, r.stderr
    assert fragment in r.stderr


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["inspect", "nosuchkernel", "{manifest}"], ExitCode.NOT_FOUND, "no kernel 'nosuchkernel'"),
        (["inspect", "vecadd", "{manifest}", "--arch", "sm_75"], ExitCode.NOT_FOUND, "no sm_75"),
        (["build", "{tmp}", "--arch", "volta"], ExitCode.USAGE, "not a GPU architecture"),
        (["build", "{tmp}", "--arch", "sm_70"], ExitCode.USAGE, "NN ≥ 75"),
        (["build", "{tmp}"], ExitCode.USAGE, "not a Rust crate"),
        (["inspect", "vecadd", "{bad_manifest}"], ExitCode.LOAD_FAILED, "newer"),
        (["nonsense"], ExitCode.USAGE, "No such command"),
    ],
)
def test_pyoxide_cases(tmp_path: Path, args: list[str], code: int, fragment: str) -> None:
    bad = tmp_path / "x.manifest.json"
    bad.write_text('{"schema": 99}')
    values = {"manifest": str(emu_kernels_manifest()), "tmp": str(tmp_path),
              "bad_manifest": str(bad)}  # fmt: skip
    r = CliRunner().invoke(cli, [a.format(**values) for a in args])
    assert r.exit_code == code, r.output
    assert fragment in r.stderr


def test_inspect_shows_every_bundled_kernel() -> None:
    manifest = read_manifest(emu_kernels_manifest())
    kinds = {p.kind for k in manifest.kernels for p in k.params}
    assert "atomic_slice" in kinds  # reduce_sum_f32, the histograms
    runner = CliRunner()
    for k in manifest.kernels:
        r = runner.invoke(cli, ["inspect", k.entry, str(manifest.path)])
        assert r.exit_code == 0, (k.entry, r.output)
        assert k.signature in r.stdout
        for p in k.params:
            assert f"ABI: {PARAM_KINDS[p.kind].abi}" in r.stdout
