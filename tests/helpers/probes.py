"""Capability probes: a test skips only when a narrow probe says the capability is absent."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def cuda_device_count() -> int:
    """Number of CUDA devices CuPy sees; 0 when CuPy is missing or no driver/device."""
    try:
        import cupy
    except ImportError:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # CUDARuntimeError: no driver, no device
        return 0


def requires_gpu(reason: str) -> pytest.MarkDecorator:
    """Skip unless CuPy is importable and sees at least one CUDA device."""
    return pytest.mark.skipif(cuda_device_count() == 0, reason=f"no CUDA device: {reason}")


def requires_gpus(n: int, reason: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(cuda_device_count() < n, reason=f"no {n} CUDA devices: {reason}")
