"""Every fixture crate the GPU suite loads, built on this machine: a GPU machine has no
Rust toolchain, so ``scripts/device_run collect`` builds them all with
:func:`build_all` and carries the artifacts (each builder falls back to what was carried
when cargo is absent). A new ``*_manifest`` builder in tests/helpers belongs in
:data:`BUILDERS` (tests/test_layout.py checks it), or the GPU machine misses its crate.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from helpers import bundled, hostile

#: Each builder returns its crate's manifest, building it first where cargo is present.
BUILDERS: tuple[Callable[[], Path], ...] = (
    bundled.kernels_manifest,
    bundled.emu_kernels_manifest,
    bundled.sm90a_kernels_manifest,
    bundled.cuda_oxide_ports_manifest,
    bundled.readme_manifest,
    bundled.natural_manifest,
    bundled.wrong_kernels_manifest,
    bundled.cluster_kernels_manifest,
    bundled.cluster_tma_kernels_manifest,
    bundled.half_kernels_manifest,
    bundled.tuned_kernels_manifest,
    bundled.hostile_verify_manifest,
    bundled.gallery_manifest,
    hostile.hostile_manifest,
)


def build_all() -> list[Path]:
    """Every fixture crate's manifest, each built (or found) once."""
    return [build() for build in BUILDERS]
