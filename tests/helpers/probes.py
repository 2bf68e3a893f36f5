"""Capability probes for skip markers: a test skips only when a narrow probe says the
capability is absent, and the marker says why the test needs it."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def _cuda_device_present() -> bool:
    try:
        import cupy
    except ImportError:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except cupy.cuda.runtime.CUDARuntimeError:
        return False


def requires_gpu(reason: str) -> pytest.MarkDecorator:
    """Skip unless CuPy imports and sees at least one CUDA device."""
    return pytest.mark.skipif(not _cuda_device_present(), reason=f"no CUDA device: {reason}")


@functools.cache
def sm90_device_present() -> bool:
    """Whether CuPy's current CUDA device is an sm_90 one (H100/H200)."""
    if not _cuda_device_present():
        return False
    import cupy

    return str(cupy.cuda.Device().compute_capability) == "90"


def requires_sm90(reason: str) -> pytest.MarkDecorator:
    """Skip unless the current CUDA device is an sm_90 one (H100/H200): `sm_90a` code,
    wgmma and TMA, loads there only."""
    return pytest.mark.skipif(not sm90_device_present(), reason=f"no sm_90 GPU: {reason}")


@functools.cache
def _cuda_device_count() -> int:
    if not _cuda_device_present():
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def requires_gpus(n: int, reason: str) -> pytest.MarkDecorator:
    """Skip unless CuPy sees at least `n` CUDA devices."""
    return pytest.mark.skipif(_cuda_device_count() < n, reason=f"needs {n} CUDA devices: {reason}")


@functools.cache
def _c_compiler() -> str | None:
    import shutil

    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def requires_c_compiler(reason: str) -> pytest.MarkDecorator:
    """Skip unless a C compiler (cc, gcc or clang) is on PATH."""
    return pytest.mark.skipif(_c_compiler() is None, reason=f"no C compiler: {reason}")


def c_compiler() -> str:
    cc = _c_compiler()
    assert cc is not None, "guard the test with requires_c_compiler"
    return cc
