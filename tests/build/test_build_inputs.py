"""The one table of build inputs (oxide-abi's src/inputs.rs, generated into _abi.py):
flipping any variable or option that changes artifacts changes the key that
``pyoxide.load``'s cache files a build under, through the real cargo-oxide (which decides
the key: ``cargo oxide key``). A variable added to the table is walked here without a
word; a variable of the "resolved" kind needs a recipe below, or the walk fails."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.fixtures import make_crate

from pyoxide._build import cache as _cache
from pyoxide._build import cargo as _build
from pyoxide._manifest import abi as _abi
from pyoxide._manifest import knobs as _knobs

KEYED = [v for v in _abi.VARIABLES if v.effect == "key"]
RESOLVED = [v for v in _abi.VARIABLES if v.effect == "resolved"]
OPTIONS = [o for o in _abi.BUILD_OPTIONS if o.effect == "key"]


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def toml(tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # One cache for the module: cargo-oxide's memo of the toolchain it found is reused.
    monkeypatch.setenv("PYOXIDE_CACHE_DIR", str(shared_cache))
    return make_crate(tmp_path / "kcrate") / "Cargo.toml"


def lookup(toml: Path) -> str:
    return _cache.lookup_key(toml, arch=None, profile="release", fmad=True)[0]


def test_every_keyed_variable_reaches_a_reader_that_keys_it() -> None:
    assert len(KEYED) > 15 and OPTIONS
    for v in KEYED:
        assert v.reader in ("python", "both", "cargo-oxide", "cargo"), v


@pytest.mark.parametrize("var", KEYED, ids=lambda v: v.name)
def test_flipping_a_keyed_variable_changes_the_key(
    var: _abi.Variable, toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = var.name + "FLIPPED" if var.prefix else var.name
    monkeypatch.delenv(name, raising=False)
    before = lookup(toml)
    value = "sm_75" if var is _abi.PYOXIDE_ARCH else str(tmp_path / "flipped")
    monkeypatch.setenv(name, value)
    assert lookup(toml) != before
    monkeypatch.delenv(name)
    assert lookup(toml) == before  # and back: the key is a function of the inputs


def _other_ptxas_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OXIDE_PTXAS", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(name, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ptxas = bin_dir / "ptxas"
    ptxas.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 99.9, V99.9.1'\n")
    ptxas.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def _home_with_a_cargo_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CARGO_HOME", raising=False)
    home = tmp_path / "home"
    (home / ".cargo").mkdir(parents=True)
    (home / ".cargo" / "config.toml").write_text("[profile.release]\nopt-level = 1\n")
    monkeypatch.setenv("HOME", str(home))


def _another_cargo_oxide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "cargo-oxide"
    shutil.copy2(_build.find_cargo_oxide(), copy)
    monkeypatch.setenv("PYOXIDE_CARGO_OXIDE", str(copy))


#: How to change what each "resolved" variable resolves to.
RECIPES: dict[str, Callable[[Path, pytest.MonkeyPatch], None]] = {
    "PATH": _other_ptxas_on_path,
    "HOME": _home_with_a_cargo_config,
    "PYOXIDE_CARGO_OXIDE": _another_cargo_oxide,
}


def test_every_resolved_variable_has_a_recipe() -> None:
    assert sorted(RECIPES) == sorted(v.name for v in RESOLVED)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_changing_what_a_variable_resolves_to_changes_the_key(
    name: str, toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "HOME":  # the baseline: a home without a cargo config
        monkeypatch.delenv("CARGO_HOME", raising=False)
        (tmp_path / "bare").mkdir()
        monkeypatch.setenv("HOME", str(tmp_path / "bare"))
    before = lookup(toml)
    RECIPES[name](tmp_path, monkeypatch)
    assert lookup(toml) != before


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.flag)
def test_flipping_a_keyed_option_changes_the_key(option: _abi.BuildOption, toml: Path) -> None:
    base = ["--manifest-path", str(toml)]
    flipped = list(option.example)
    if option.flag == "--manifest-path":
        base = []
    assert _build.build_key([*base, *flipped]).key != _build.build_key(base).key


def test_a_cargo_config_beside_the_crate_changes_the_key(toml: Path) -> None:
    before = lookup(toml)
    (toml.parent / ".cargo").mkdir()
    (toml.parent / ".cargo" / "config.toml").write_text("[build]\nrustflags = ['-Cdebuginfo=1']\n")
    assert lookup(toml) != before


def test_python_and_cargo_oxide_agree_on_the_cache_folder(
    toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27.7: with HOME unset (cron, `env -i`) cargo-oxide kept its sysroot under the
    temp folder while Python used the user database's home. Now cargo-oxide decides, from
    the user database, and Python asks it."""
    import pwd

    monkeypatch.delenv("PYOXIDE_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)
    home = Path(pwd.getpwuid(os.geteuid()).pw_dir)
    assert _cache.lookup_key(toml, arch=None, profile="release", fmad=True)[1] == (
        home / ".cache" / "pyoxide"
    )
    assert _knobs.cache_dir() == home / ".cache" / "pyoxide"  # the tuned choices' (no cargo)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert (
        _build.build_key(["--manifest-path", str(toml)]).cache_dir == tmp_path / "xdg" / "pyoxide"
    )
    assert _knobs.cache_dir() == tmp_path / "xdg" / "pyoxide"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.parametrize("kind", ["writable by others", "another user's"])
def test_a_cache_folder_others_could_plant_in_is_refused(
    kind: str, toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27.7: a `core` planted in the cache ends up in every kernel built with it."""
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    if kind == "writable by others":
        cache.chmod(0o777)
    elif os.geteuid() == 0:
        os.chown(cache, 65534, 65534)  # nobody
    else:
        cache = Path("/")  # root's, not ours
    monkeypatch.setenv("PYOXIDE_CACHE_DIR", str(cache))
    with pytest.raises(Exception, match="refusing the cache folder") as info:
        lookup(toml)
    assert type(info.value).__name__ == "ConfigError" and "Fix:" in str(info.value)


GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "build.md"


def inputs_table() -> str:
    """The guide's tables of every variable and option, as _abi.py has them."""
    rows = [
        "| variable | read by | effect on a build | what it does |",
        "|---|---|---|---|",
        *(
            f"| `{v.name}{'*' if v.prefix else ''}` | {v.reader} | {v.effect} | {v.doc} |"
            for v in _abi.VARIABLES
        ),
        "",
        "| `cargo oxide build` option | effect on a build | what it does |",
        "|---|---|---|",
        *(f"| `{o.flag}` | {o.effect} | {o.doc} |" for o in _abi.BUILD_OPTIONS),
    ]
    return "\n".join(rows) + "\n"


def test_the_guides_table_is_the_generated_one() -> None:
    text = GUIDE.read_text()
    start = text.index("<!-- inputs:")
    start = text.index("-->\n", start) + len("-->\n")
    end = text.index("<!-- end of inputs -->")
    if os.environ.get("OXIDE_BLESS"):
        GUIDE.write_text(text[:start] + inputs_table() + text[end:])
        text = GUIDE.read_text()
        end = text.index("<!-- end of inputs -->")
    assert text[start:end] == inputs_table(), (
        "docs/guide/build.md's table is out of date with crates/oxide-abi/src/inputs.rs; "
        "regenerate it with `OXIDE_BLESS=1 pytest tests/build/test_build_inputs.py -k guide`"
    )
