"""pyoxide's wheel build: the one bundling step, then maturin.

A PEP 517 backend (pyproject.toml's ``build-backend``) around maturin's. Before maturin
compiles the native launcher and packs the wheel, :func:`bundle` writes what the wheel
carries beyond the Python sources, where pyoxide/_build/layout.py says:

- the bundled kernels, built (``pyoxide build --bundled``: PTX, manifests, stubs,
  emulator libraries, specs);
- for a wheel (an editable install runs from this checkout, which has them): the kernel
  author's kit, so that ``pyoxide new`` and ``pyoxide build`` work from the installed
  wheel with no checkout and no registry: pyoxide's Rust crates, the crates.io sources
  they need (``cargo vendor``; a crate that neither this platform nor the GPU target
  uses is kept as an empty stub, so a project's lock still resolves without shipping,
  say, windows-sys), and the cargo-oxide binary.

The build runs one way, Python to Rust (cargo, cargo-oxide); no build script calls back.
``python -m pip wheel .`` or ``pip install .`` builds the wheel; ``maturin build`` alone
makes one without the bundle.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import maturin
from maturin import (
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pyproject.toml's build requirements bring it
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from pyoxide._build import layout as _layout  # noqa: E402  (the checkout's, whatever is installed)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "bundle",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

#: The GPU target, whose dependencies the kit keeps besides the host's.
DEVICE_TARGET = "nvptx64-nvidia-cuda"


#: The config setting (``pip wheel . -C tuned=true``) that builds the bundled kernels with
#: ``pyoxide build --bundled --tuned``: the choices ``pyoxide tune`` kept for this build in
#: this machine's cache go into the wheel's manifest, so the installed wheel launches them
#: with no tuning at the user's site.
TUNED_SETTING = "tuned"


def tuned_setting(config_settings: dict[str, Any] | None) -> tuple[bool, dict[str, Any] | None]:
    """Whether the build asks for the tuned choices, and the settings left for maturin."""
    if not config_settings or TUNED_SETTING not in config_settings:
        return False, config_settings
    rest = {k: v for k, v in config_settings.items() if k != TUNED_SETTING}
    value = str(config_settings[TUNED_SETTING]).strip().lower()
    if value not in ("true", "1", "yes", "false", "0", "no"):
        raise ValueError(
            f"config setting {TUNED_SETTING}={config_settings[TUNED_SETTING]!r}: expected "
            f"true or false (pip wheel . -C {TUNED_SETTING}=true)"
        )
    return value in ("true", "1", "yes"), rest or None


def _bundling_first(maturin_hook: Callable[..., Any], *, kit: bool) -> Callable[..., str]:
    """The PEP 517 hook that runs :func:`bundle` (with the kit or not), then maturin's."""

    def hook(
        wheel_directory: str,
        config_settings: dict[str, Any] | None = None,
        metadata_directory: str | None = None,
    ) -> str:
        tuned, rest = tuned_setting(config_settings)
        bundle(kit=kit, tuned=tuned)
        return str(maturin_hook(wheel_directory, rest, metadata_directory))

    hook.__name__ = maturin_hook.__name__
    return hook


build_wheel = _bundling_first(maturin.build_wheel, kit=True)
build_editable = _bundling_first(maturin.build_editable, kit=False)


def say(text: str) -> None:
    print(f"[pyoxide wheel] {text}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def bundle(*, kit: bool, tuned: bool = False) -> None:
    """Write the bundled kernels (with ``tuned``, with the tuned choices in their
    manifest) and, with ``kit``, the kernel author's kit."""
    cargo_oxide = build_cargo_oxide()
    flags = ["--bundled", "--quiet", *(["--tuned"] if tuned else [])]
    say(f"building the bundled kernels (pyoxide build {' '.join(flags)})")
    pyoxide = "import runpy; runpy.run_module('pyoxide', run_name='__main__', alter_sys=True)"
    run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {pyoxide}",
         "build", *flags],
        env={**os.environ, "PYOXIDE_CARGO_OXIDE": str(cargo_oxide)},
    )  # fmt: skip
    if kit:
        write_kit(cargo_oxide)


def build_cargo_oxide() -> Path:
    """This checkout's cargo-oxide (the target dir is scripts/setup's: each reuses the
    other's build)."""
    target = ROOT / "target" / "install"
    say("building cargo-oxide")
    run([os.environ.get("CARGO", "cargo"), "build", "--quiet", "--release", "--locked",
         "-p", "cargo-oxide", "--manifest-path", str(ROOT / "Cargo.toml"),
         "--target-dir", str(target)])  # fmt: skip
    return target / "release" / "cargo-oxide"


def without_test_targets(manifest: str) -> str:
    """A crate's Cargo.toml without its declared test, bench and example targets: the kit
    carries `src/` only, and cargo refuses a manifest that names a missing target file."""
    kept, skipping = [], False
    for line in manifest.splitlines(keepends=True):
        if line.startswith("["):
            skipping = line.strip() in ("[[test]]", "[[bench]]", "[[example]]")
        if not skipping:
            kept.append(line)
    return "".join(kept)


def write_kit(cargo_oxide: Path) -> None:
    """The kit's folders, each staged beside its place and renamed into it."""
    staging = _layout.PACKAGE / ".kit-staging"
    shutil.rmtree(staging, ignore_errors=True)
    assemble_kit(staging / _layout.KIT.name)
    bin_dir = staging / _layout.BIN.name
    bin_dir.mkdir(parents=True)
    shutil.copy2(cargo_oxide, bin_dir / _layout.CARGO_OXIDE.name)
    for part in (_layout.KIT, _layout.BIN):
        shutil.rmtree(part, ignore_errors=True)
        os.replace(staging / part.name, part)
    shutil.rmtree(staging)


def assemble_kit(kit: Path) -> None:
    """The kit's Rust side in ``kit`` (a new folder): the crates, their workspace and lock,
    and the vendored crates.io sources (scripts/chaos --verify builds offline from one)."""
    for name in _layout.KIT_CRATES:
        src, dest = ROOT / "crates" / name, kit / "crates" / name
        shutil.copytree(src / "src", dest / "src")
        manifest = without_test_targets((src / "Cargo.toml").read_text())
        (dest / "Cargo.toml").write_text(manifest)
    (kit / "Cargo.toml").write_text(kit_workspace_manifest())
    shutil.copy2(ROOT / "Cargo.lock", kit / "Cargo.lock")  # the versions this checkout tests
    say("vendoring the crates.io sources of the kit (cargo vendor)")
    run(["cargo", "vendor", "--quiet", "--manifest-path", str(kit / "Cargo.toml"),
         str(kit / "vendor")], cwd=kit)  # fmt: skip
    stub_unused(kit)


def kit_workspace_manifest() -> str:
    """The checkout's workspace manifest with only the kit's crates as members: they
    inherit their version, edition and shared dependencies from it."""
    members = ", ".join(f'"crates/{c}"' for c in _layout.KIT_CRATES)
    lines = (ROOT / "Cargo.toml").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("members"))
    lines[at] = f"members = [{members}]"
    head = "# Written by pyoxide's wheel build: the crates a kernel crate depends on."
    return "\n".join([head, *lines]) + "\n"


def used_packages(kit: Path) -> set[tuple[str, str]]:
    """(name, version) of every package the kit's crates build with, for this platform and
    for the GPU, with their default features."""
    host = run(["rustc", "-vV"]).stdout.split("host: ")[1].split()[0]
    used = set()
    for target in (host, DEVICE_TARGET):
        tree = run(["cargo", "tree", "--offline", "--workspace", "-e", "normal,build",
                    "--target", target, "--prefix", "none", "--format", "{p}"],
                   cwd=kit).stdout  # fmt: skip
        for line in tree.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[1].startswith("v"):
                used.add((parts[0], parts[1][1:]))
    return used


def stub_unused(kit: Path) -> None:
    """Replace each vendored crate that nothing here builds with an empty stub of the same
    name, version, features and package checksum: a project's lock file still resolves
    (cargo resolves every platform's dependencies), and nothing compiles it."""
    used = used_packages(kit)
    for folder in sorted((kit / "vendor").iterdir()):
        manifest = tomllib.loads((folder / "Cargo.toml").read_text())
        package = manifest["package"]
        if (package["name"], package["version"]) in used:
            continue
        features = manifest.get("features", {})
        kept = {f: [x for x in v if x in features] for f, v in features.items()}
        checksum = json.loads((folder / ".cargo-checksum.json").read_text())["package"]
        shutil.rmtree(folder)
        (folder / "src").mkdir(parents=True)
        (folder / "src" / "lib.rs").write_text("")
        text = [
            "# An empty stub written by pyoxide's wheel build: no platform this wheel runs on",
            "# builds this crate (its sources are on crates.io).",
            "[package]",
            f"name = {json.dumps(package['name'])}",
            f"version = {json.dumps(package['version'])}",
            f"edition = {json.dumps(package.get('edition', '2015'))}",
            "",
            "[features]",
            *(f"{json.dumps(f)} = {json.dumps(v)}" for f, v in sorted(kept.items())),
        ]
        (folder / "Cargo.toml").write_text("\n".join(text) + "\n")
        (folder / ".cargo-checksum.json").write_text(json.dumps({"files": {}, "package": checksum}))
