"""The bundled kernels' PTX as a plain `cupy.RawModule`, for GPU tests that check the
PTX itself (no pyoxide runtime involved), and the error measure they share."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

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


def rel_err(got, ref) -> float:
    """‖got − ref‖ / ‖ref‖ in float64; fails if any output was left NaN (unwritten)."""
    got = np.asarray(got, dtype=np.float64)
    assert np.isfinite(got).all(), "an output element was not written (NaN poison left)"
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))
