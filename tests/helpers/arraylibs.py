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

# The tolerance policy and poison patterns have one home, shared with `pyoxide verify`.
from pyoxide.spec import poison_value, rel_err, tol

__all__ = ["poison_value", "rel_err", "tol"]  # re-exported for the kernel tests

# `--backend` values and the array libraries each selects.
CHOICES = {
    "emu": ("emu",),
    "cupy": ("cupy",),
    "torch": ("torch",),
    "gpu": ("cupy", "torch"),
    "all": ("emu", "cupy", "torch"),
}


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

        if host.dtype.name == "bfloat16":  # ml_dtypes': PyTorch takes its bits
            return torch.from_numpy(host.view(np.uint16).copy()).cuda().view(torch.bfloat16)
        return torch.from_numpy(host.copy()).cuda()

    def poisoned(self, shape: int | tuple[int, ...], dtype: Any) -> Any:
        """An array the kernel must overwrite completely (see `poison_value`)."""
        return self.asarray(np.full(shape, poison_value(dtype), dtype))

    def zeros(self, shape: int | tuple[int, ...], dtype: Any) -> Any:
        return self.asarray(np.zeros(shape, dtype))

    def view(
        self, base: Any, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0
    ) -> Any:
        """A view of `base`'s memory with any `shape` and `strides` (in elements, any sign)
        starting `offset` elements in, zero-copy: NumPy's as_strided on the emulator, an
        object with ``__cuda_array_interface__`` on the GPU (``torch.as_strided`` for
        PyTorch where it can: it has no negative strides)."""
        if self.name == "emu":
            item = base.itemsize
            start = base[offset:] if base.ndim == 1 else base.reshape(-1)[offset:]
            return np.lib.stride_tricks.as_strided(
                start, shape, tuple(s * item for s in strides), writeable=True
            )
        if self.name == "torch" and min(strides, default=0) >= 0:
            import torch  # a tensor, so that the call stays all-PyTorch (its stream)

            return torch.as_strided(base, shape, strides, offset)
        return _CudaView(base, shape, strides, offset)

    def to_numpy(self, arr: Any) -> np.ndarray:
        """`arr` on the host, after the work queued on it has finished."""
        if self.name == "emu":
            return np.asarray(arr)
        if self.name == "cupy":
            import cupy

            return cupy.asnumpy(arr)
        import torch

        torch.cuda.synchronize()
        if arr.dtype == torch.bfloat16:
            import ml_dtypes

            return arr.cpu().view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
        return arr.cpu().numpy()


class _CudaView:
    """A GPU view through ``__cuda_array_interface__`` (v3), keeping its base alive."""

    def __init__(
        self, base: Any, shape: tuple[int, ...], strides: tuple[int, ...], offset: int
    ) -> None:
        if hasattr(base, "data_ptr"):  # PyTorch
            ptr, item = base.data_ptr(), base.element_size()
            typestr = np.dtype(str(base.dtype).removeprefix("torch.")).str
        else:
            ptr, item, typestr = base.data.ptr, base.itemsize, base.dtype.str
            self.dtype = base.dtype  # names bfloat16, whose typestr is opaque ("<V2")
        self.base = base
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": typestr, "version": 3,
            "data": (ptr + offset * item, False),
            "strides": tuple(s * item for s in strides),
        }  # fmt: skip


def array_lib(name: str) -> Any:
    """A pytest param for the library `name`, with the marks its tests need (a test
    marked `skip_on_emu` is skipped on the emulator by tests/kernels/conftest.py)."""
    if name == "emu":
        return pytest.param(ArrayLib("emu"), id="emu")
    marks = [pytest.mark.gpu, requires_gpu(f"runs the kernels on {name} arrays")]
    return pytest.param(ArrayLib(name), id=name, marks=marks)


def sizes(*fixed: int) -> list[int]:
    """Problem sizes: the fixed ones plus 3001 (a prime: no block size divides it).
    Fixed, not drawn, so that every array library and every run collects the same tests
    (`pytest --collect-only --backend emu` and `--backend cupy` list the same); the data
    is drawn afresh."""
    return [*fixed, 3001]


def skip_on_emu(reason: str) -> pytest.MarkDecorator:
    """Mark a kernel test that cannot run on the CPU emulator; it is still collected for
    every library (the emu and GPU collections list the same tests) and skipped, with
    `reason`, only where `lib` is the emulator (see `array_lib`)."""
    return pytest.mark.skip_on_emu(reason=reason)
