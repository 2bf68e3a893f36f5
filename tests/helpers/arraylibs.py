"""Array libraries a kernel test runs over, one object each: the emulator (NumPy arrays),
CuPy and PyTorch (GPU arrays). A kernel test takes the `lib` fixture of
tests/kernels/conftest.py and builds every array through it, so one test body covers
every backend (`pytest --backend emu|cupy|torch|gpu|all`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from helpers.probes import requires_gpu

# `--backend` values and the array libraries each selects.
CHOICES = {
    "emu": ("emu",),
    "cupy": ("cupy",),
    "torch": ("torch",),
    "gpu": ("cupy", "torch"),
    "all": ("emu", "cupy", "torch"),
}


def poison_value(dtype: Any) -> float | int:
    """NaN for floats, 0xDEADBEEF (cut to the width) for integers: an element the kernel
    never wrote shows up as NaN or as that pattern."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return np.nan
    return 0xDEADBEEF & ((1 << (8 * dt.itemsize)) - 1) if dt.kind == "u" else -0x21524111


@dataclass(frozen=True)
class ArrayLib:
    """How one array library makes, poisons and reads back arrays."""

    name: str
    marks: tuple[Any, ...] = field(default=(), compare=False)

    @property
    def on_gpu(self) -> bool:
        return self.name != "emu"

    def asarray(self, host: np.ndarray) -> Any:
        """A copy of `host` in this library (same shape, dtype, C order)."""
        host = np.ascontiguousarray(host)
        if self.name == "emu":
            return host.copy()
        if self.name == "cupy":
            import cupy

            return cupy.asarray(host)
        import torch

        return torch.from_numpy(host.copy()).cuda()

    def poisoned(self, shape: int | tuple[int, ...], dtype: Any) -> Any:
        """An array the kernel must overwrite completely (see `poison_value`)."""
        return self.asarray(np.full(shape, poison_value(dtype), dtype))

    def zeros(self, shape: int | tuple[int, ...], dtype: Any) -> Any:
        return self.asarray(np.zeros(shape, dtype))

    def to_numpy(self, arr: Any) -> np.ndarray:
        """`arr` on the host, after the work queued on it has finished."""
        if self.name == "emu":
            return np.asarray(arr)
        if self.name == "cupy":
            import cupy

            return cupy.asnumpy(arr)
        import torch

        torch.cuda.synchronize()
        return arr.cpu().numpy()


def array_lib(name: str) -> Any:
    """A pytest param for the library `name`, with the marks its tests need."""
    if name == "emu":
        return pytest.param(ArrayLib("emu"), id="emu")
    marks = [pytest.mark.gpu, requires_gpu(f"runs the kernels on {name} arrays")]
    return pytest.param(ArrayLib(name), id=name, marks=marks)


def rel_err(got: Any, ref: Any) -> float:
    """‖got − ref‖ / ‖ref‖ in float64, after checking no poisoned (NaN) element is left."""
    got = np.asarray(got, dtype=np.float64)
    assert np.isfinite(got).all(), "an output element was not written (NaN poison left)"
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))
