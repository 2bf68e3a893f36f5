"""The bundled kernels' PTX as a plain `cupy.RawModule`, for GPU tests that check the
PTX itself (no pyoxide runtime involved)."""

from __future__ import annotations

import functools
from pathlib import Path

from helpers.bundled import kernels_manifest, load_manifest
from pyoxide._manifest.abi import parse_arch


def _arch_number(arch: str) -> int:
    return parse_arch(arch).number


@functools.cache
def bundled_module():
    """The newest PTX in the manifest that the current device can run."""
    import cupy as cp

    cc = int(cp.cuda.Device().compute_capability)  # "90" on an H200
    usable = [a for a in load_manifest()["artifacts"] if _arch_number(a["arch"]) <= cc]
    best = max(usable, key=lambda a: _arch_number(a["arch"]))
    return cp.RawModule(path=str(Path(kernels_manifest()).parent / best["path"]))
