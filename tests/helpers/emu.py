"""A hand-written emulator library (tests/fixtures/emu_fixtures.c, plus the kernel
descriptors `#[kernel]` would compile in) and a manifest that names it, so the emu backend
is tested without the Rust side."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from helpers.fixtures import KERNELS, TESTS_DIR, kernel, param, write_manifest
from helpers.probes import c_compiler
from pyoxide._manifest import abi as _abi

C_SOURCE = TESTS_DIR / "fixtures" / "emu_fixtures.c"
LIBRARY = "oxide_fixtures.emu.so"

#: Every scalar type, in the order the echo entry receives them.
ECHO_TYPES = (
    "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize", "f32", "f64", "bool",
)  # fmt: skip


def _failing(name: str) -> dict[str, Any]:
    return kernel(name, [param("out", "disjoint_slice", "f32")])


EMU_KERNELS: list[dict[str, Any]] = [
    next(k for k in KERNELS if k["name"] == "vecadd"),
    kernel(
        "echo",
        [param(f"s_{t}", "scalar", t) for t in ECHO_TYPES]
        + [param("out", "disjoint_slice", "u64")],
    ),
    kernel("nap", [param("ms", "scalar", "u32"), param("out", "disjoint_slice", "f32")]),
    _failing("trap"),
    _failing("diverge"),
    _failing("refuse"),
    _failing("weird"),
    _failing("absent"),  # in the manifest, not in the library
]


def build_library(out_dir: Path) -> Path:
    """Compile the C emulator fixture into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / LIBRARY
    descriptors = out_dir / "emu_fixture_descriptors.c"
    descriptors.write_text(descriptor_source(EMU_KERNELS))
    subprocess.run(
        [c_compiler(), "-shared", "-fPIC", "-O1", "-o", str(lib), str(C_SOURCE), str(descriptors)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return lib


def descriptor_source(kernels: list[dict[str, Any]]) -> str:
    """C that puts each kernel's descriptor (JSON) in the descriptor section, as
    `#[kernel]` does: the backend checks them before it opens the library."""
    lines = []
    for i, k in enumerate(kernels):
        text = json.dumps(k).replace("\\", "\\\\").replace('"', '\\"')
        lines.append(
            f'__attribute__((used, section("{_abi.DESCRIPTOR_SECTION}"))) '
            f'static const char descriptor_{i}[] = "{text}";'
        )
    return "\n".join(lines) + "\n"


def write_emu_manifest(out_dir: Path, *, library: Path | None = None) -> Path:
    """A fixture manifest whose emulator is the C library (compiled unless given)."""
    lib = library if library is not None else build_library(out_dir)
    return write_manifest(out_dir, kernels=EMU_KERNELS, emulator=lib)


_CONSTRUCTOR = """
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("ran", f); fclose(f); }
}
"""


def planted_library(folder: Path, marker: Path) -> Path:
    """A shared library whose constructor writes ``marker``: what dlopen would run (a
    manifest must never make pyoxide open it; scripts/chaos --verify plants it too)."""
    folder.mkdir(parents=True, exist_ok=True)
    source, lib = folder / "planted.c", folder / "planted.emu.so"
    source.write_text(_CONSTRUCTOR % marker)
    subprocess.run([c_compiler(), "-shared", "-fPIC", "-o", str(lib), str(source)], check=True)
    return lib
