"""Where the generated parts of the pyoxide package live: the one place that names them.

The wheel's bundling step (scripts/packaging/pyoxide_backend.py, which the wheel build
calls before maturin) and ``pyoxide build --bundled`` write them; the runtime reads them.
In a source checkout they are build outputs, ignored by git.

================  ====================================================================
``_prebuilt/``    the bundled kernels, built: PTX per architecture, manifests, stubs,
                  emulator libraries, and the kernels' specs (``specs/``)
``kernels.pyi``   the stubs of ``pyoxide.kernels``, for editors and type checkers
``_rust/``        the kernel author's kit (wheels only): pyoxide's Rust crates, a
                  workspace of their own (``crates/``), and the crates.io sources they
                  need (``vendor/``), so a ``pyoxide new`` project builds offline
``_bin/``         the kernel author's kit (wheels only): the cargo-oxide binary
================  ====================================================================
"""

from __future__ import annotations

from pathlib import Path

#: The pyoxide package (this module is pyoxide/_build/layout.py).
PACKAGE = Path(__file__).resolve().parent.parent
PREBUILT = PACKAGE / "_prebuilt"
KERNELS_STUB = PACKAGE / "kernels.pyi"
KIT = PACKAGE / "_rust"
KIT_CRATES_DIR = KIT / "crates"
KIT_VENDOR = KIT / "vendor"
BIN = PACKAGE / "_bin"
CARGO_OXIDE = BIN / "cargo-oxide"

#: pyoxide's Rust crates a kernel crate builds against (its own dependencies and theirs).
KIT_CRATES = ("oxide-abi", "oxide-macros", "oxide-device", "oxide-build")
#: The ones a ``pyoxide new`` project names in its Cargo.toml.
PROJECT_CRATES = ("oxide-device", "oxide-build")
#: What the wheel's generated folders hold, relative to the package (for maturin's include
#: list, which pyproject.toml spells out; a test keeps the two in step).
WHEEL_PARTS = ("_prebuilt/**/*", "kernels.pyi", "_rust/**/*", "_bin/*")
