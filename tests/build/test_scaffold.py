"""`pyoxide new`: what it writes, and what it refuses (before writing anything). The
project it makes is built, installed and run for real in tests/test_wheels.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tomllib
from click.testing import CliRunner
from helpers.bundled import REPO

from pyoxide._build import scaffold as _scaffold
from pyoxide.cli import cli
from pyoxide.cli._exit import ExitCode
from pyoxide.errors import PyoxideError

CRATES = REPO / "crates"


def test_new_writes_a_kernel_crate_and_a_maturin_project(tmp_path: Path) -> None:
    project = _scaffold.create("my_kernels", tmp_path / "my_kernels", CRATES)
    rel = sorted(str(f.relative_to(project.path)) for f in project.files)
    assert rel == [
        ".gitignore", "Cargo.toml", "README.md", "build.rs", "pyproject.toml",
        "python/my_kernels/__init__.py", "python/my_kernels/kernels.py", "specs/saxpy.py",
        "src/lib.rs", "tests/test_my_kernels.py",
    ]  # fmt: skip
    cargo = tomllib.loads((project.path / "Cargo.toml").read_text())
    assert cargo["package"]["name"] == "my_kernels"
    assert Path(cargo["dependencies"]["oxide-device"]["path"]) == CRATES / "oxide-device"
    assert Path(cargo["build-dependencies"]["oxide-build"]["path"]) == CRATES / "oxide-build"
    assert "cdylib" in cargo["lib"]["crate-type"] and "wheel" in cargo["features"]
    maturin = tomllib.loads((project.path / "pyproject.toml").read_text())["tool"]["maturin"]
    assert maturin["module-name"] == "my_kernels._emu" and maturin["features"] == ["wheel"]
    for f in project.files:
        text = f.read_text()
        assert "$" not in text and "__name__" not in str(f), f  # every placeholder filled
        if f.suffix == ".py":
            compile(text, str(f), "exec")
    lib = (project.path / "src/lib.rs").read_text()
    assert "#[kernel]" in lib and "#[tune(block = [128, 256, 512])]" in lib  # one tunable
    # `pyoxide verify` finds the project's spec of its one kernel.
    from pyoxide.verify import find_specs, load_specs

    folder = find_specs(project.path)
    assert folder is not None and [s.kernel for s in load_specs(folder)] == ["saxpy"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_new_from_a_kit_with_vendored_sources_builds_offline(tmp_path: Path) -> None:
    """A wheel's kit carries the crates.io sources its crates need (vendor/ beside
    crates/): the project gets the source replacement that uses them (issue 27.11; the
    offline build itself: tests/test_wheels.py). A checkout's crates/ has none, and the
    project uses the registry (the test above: no .cargo/)."""
    kit = tmp_path / "kit"
    shutil.copytree(CRATES, kit / "crates", ignore=shutil.ignore_patterns("target", "tests"))
    (kit / "vendor").mkdir()
    project = _scaffold.create("offline_kernels", tmp_path / "p", kit / "crates")
    config = tomllib.loads((project.path / ".cargo" / "config.toml").read_text())
    assert config["source"]["crates-io"]["replace-with"] == "pyoxide-vendored"
    assert Path(config["source"]["pyoxide-vendored"]["directory"]) == kit / "vendor"
    assert project.path / ".cargo" / "config.toml" in project.files


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("My-Kernels", "not a usable project name"),
        ("2fast", "not a usable project name"),
        ("", "not a usable project name"),
        ("json", "shadow a Python module"),
        ("class", "shadow a Python module"),
        ("pyoxide", "shadow a Python module"),
        ("numpy", "installed or widely used Python package"),  # issue 16
        ("cupy", "installed or widely used Python package"),
        ("pytest", "installed or widely used Python package"),
        ("cffi", "installed or widely used Python package"),
    ],
)
def test_new_refuses_bad_names(tmp_path: Path, name: str, why: str) -> None:
    with pytest.raises(_scaffold.ScaffoldError, match=why) as e:
        _scaffold.create(name, tmp_path / "p", CRATES)
    assert "Fix:" in str(e.value) and isinstance(e.value, PyoxideError | ValueError)
    assert not list(tmp_path.iterdir())


def test_new_refuses_a_folder_in_the_way_and_missing_crates(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(_scaffold.ScaffoldError, match="already exists"):
        _scaffold.create("taken", tmp_path / "taken", CRATES)
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    with pytest.raises(_scaffold.ScaffoldError, match="no oxide-device, oxide-build crate"):
        _scaffold.create("fresh", tmp_path / "fresh", tmp_path)
    assert not (tmp_path / "fresh").exists()


def test_default_crates_are_this_checkouts() -> None:
    assert _scaffold.default_crates_dir() == CRATES


def test_cli_new_and_its_usage_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(cli, ["new", "demo_k", "--path", str(tmp_path / "d")])
    assert ok.exit_code == 0, ok.output
    assert "created" in ok.output and "maturin build" in ok.output
    assert (tmp_path / "d" / "python" / "demo_k" / "kernels.py").is_file()
    bad = runner.invoke(cli, ["new", "Bad-Name", "--path", str(tmp_path / "e")])
    assert bad.exit_code == ExitCode.USAGE and "not a usable project name" in bad.output
