"""``pyoxide new``: a kernel crate plus a maturin project around it.

The files come from pyoxide/_build/templates/new (``$name`` and the paths of pyoxide's Rust
crates substituted; a ``__name__`` path part becomes the name). From an installed wheel,
whose kit carries the crates.io sources those crates need, templates/offline adds the
cargo source replacement that makes the project build offline. The project is written
to a temporary folder beside the destination and renamed into place, so a failure leaves
nothing half-made.
"""

from __future__ import annotations

import importlib.metadata
import keyword
import os
import re
import shutil
import string
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import layout as _layout
from ..errors import ScaffoldError

_TEMPLATES = Path(__file__).resolve().parent / "templates" / "new"
_OFFLINE_TEMPLATES = _TEMPLATES.parent / "offline"
_SUFFIX = ".tmpl"
# Files whose template name differs from the file's (a dotfile would be ignored by tools
# that walk the package).
_RENAMED = {"gitignore": ".gitignore", "dot-cargo": ".cargo"}
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
#: Packages a kernel project's users likely have, installed here or not.
_COMMON_PACKAGES = frozenset(
    [
        "numpy",
        "cupy",
        "torch",
        "scipy",
        "pandas",
        "jax",
        "jaxlib",
        "triton",
        "numba",
        "cffi",
        "maturin",
        "tensorflow",
        "matplotlib",
        "pytest",
        "setuptools",
        "pip",
        "wheel",
        "sklearn",
        "cuda",
        "nvidia",
    ]
)
#: pyoxide's crates a kernel project depends on, by path (they are not on crates.io).
RUST_CRATES = _layout.PROJECT_CRATES


@dataclass(frozen=True)
class Project:
    name: str
    path: Path
    files: tuple[Path, ...]


def default_crates_dir() -> Path | None:
    """The ``crates/`` folder of the pyoxide checkout this package runs from, else the
    copy an installed pyoxide wheel ships in its kit, if any."""
    for crates in (_layout.PACKAGE.parent / "crates", _layout.KIT_CRATES_DIR):
        if all((crates / c / "Cargo.toml").is_file() for c in RUST_CRATES):
            return crates
    return None


def check_name(name: str) -> None:
    if not _NAME.match(name):
        raise ScaffoldError(
            f"pyoxide new: {name!r} is not a usable project name: it names the Rust crate and "
            "the Python package, so it must be lowercase letters, digits and underscores, "
            "starting with a letter. Fix: e.g. `pyoxide new my_kernels`."
        )
    if keyword.iskeyword(name) or name in sys.stdlib_module_names or name in {"pyoxide", "test"}:
        raise ScaffoldError(
            f"pyoxide new: {name!r} would shadow a Python module of that name. "
            f"Fix: choose another name, e.g. {name}_kernels."
        )
    if name in _COMMON_PACKAGES or name in importlib.metadata.packages_distributions():
        raise ScaffoldError(
            f"pyoxide new: {name!r} is the name of an installed or widely used Python "
            f"package; the project's `import {name}` would clash with it (and its "
            f"generated `from {name} import kernels` would load the wrong one). "
            f"Fix: choose another name, e.g. {name}_kernels."
        )


def create(name: str, dest: Path | None = None, crates_dir: Path | None = None) -> Project:
    """Create project ``name`` at ``dest`` (default ./name). Raises ScaffoldError."""
    check_name(name)
    dest = (dest if dest is not None else Path.cwd() / name).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ScaffoldError(
            f"pyoxide new: {dest} already exists and is not an empty folder. "
            "Fix: choose another name or --path, or remove it."
        )
    crates = crates_dir if crates_dir is not None else default_crates_dir()
    if crates is None:
        raise ScaffoldError(
            "pyoxide new: the project depends on pyoxide's Rust crates "
            f"({', '.join(RUST_CRATES)}), which this installation does not include "
            "(a wheel built with `maturin build` in the pyoxide repository ships them). "
            "Fix: pass --crates PATH/TO/pyoxide/crates (a pyoxide source checkout)."
        )
    crates = crates.resolve()
    missing = [c for c in RUST_CRATES if not (crates / c / "Cargo.toml").is_file()]
    if missing:
        raise ScaffoldError(
            f"pyoxide new: {crates} has no {', '.join(missing)} crate. "
            "Fix: pass the crates/ folder of a pyoxide source checkout."
        )
    values = {
        "name": name,
        "oxide_device": (crates / "oxide-device").as_posix(),
        "oxide_build": (crates / "oxide-build").as_posix(),
    }
    # A kit's crates come with the crates.io sources they need (a wheel's; a checkout's
    # crates/ has none and uses the registry).
    vendor = crates.parent / _layout.KIT_VENDOR.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest.parent))
    try:
        files = _render(staging, values, _TEMPLATES)
        if vendor.is_dir():
            files += _render(staging, {**values, "vendor": vendor.as_posix()}, _OFFLINE_TEMPLATES)
        if dest.exists():
            dest.rmdir()  # empty (checked above)
        os.replace(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Project(name, dest, tuple(dest / f.relative_to(staging) for f in files))


def _render(root: Path, values: dict[str, str], templates: Path) -> list[Path]:
    written = []
    for template in sorted(templates.rglob(f"*{_SUFFIX}")):
        rel = template.relative_to(templates)
        parts = [_RENAMED.get(p, p).replace("__name__", values["name"]) for p in rel.parts]
        parts[-1] = parts[-1][: -len(_SUFFIX)]
        parts[-1] = _RENAMED.get(parts[-1], parts[-1])
        out = root.joinpath(*parts)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(string.Template(template.read_text()).substitute(values))
        written.append(out)
    return written
