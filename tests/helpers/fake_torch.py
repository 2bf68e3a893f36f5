"""A stand-in ``torch`` with the surface pyoxide reads from PyTorch: ``torch.Tensor``
(the attributes the compiled launcher reads, and ``__cuda_array_interface__``, which the
general path reads, refused for a tensor that requires grad as PyTorch refuses it), its
dtypes, ``torch.cuda.current_device()``, ``torch._C._cuda_getCurrentRawStream(device)``
(stream 0x100 + device unless set), and ``torch.compiler.disable``, which records what it
wraps. Installed with :func:`installed` (PyTorch is not a test dependency here)."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

from .fake_cupy import replaced_module
from .fakes import FakeCudaArray


class FakeDtype:
    def __init__(self, name: str, numpy_name: str) -> None:
        self.name = name
        self.numpy = np.dtype(numpy_name) if numpy_name else None

    def __repr__(self) -> str:
        return f"torch.{self.name}"


_DTYPES = {
    "float16": "float16", "float32": "float32", "float64": "float64", "bfloat16": "",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool",
}  # fmt: skip
DTYPES = {name: FakeDtype(name, numpy_name) for name, numpy_name in _DTYPES.items()}


class _Device:
    def __init__(self, index: int | None) -> None:
        self.type = "cuda" if index is not None and index >= 0 else "cpu"
        self.index = index if self.type == "cuda" else None


class Tensor(FakeCudaArray):
    """A CUDA tensor look-alike (``type(t).__module__`` is torch's)."""

    __module__ = "torch"
    #: Every fake tensor is a CUDA tensor (pyoxide's kept attention launches ask).
    is_cuda = True

    def __init__(
        self,
        shape: Any = 16,
        dtype: str = "float32",
        device: int = 0,
        *,
        requires_grad: bool = False,
        strides: tuple[int, ...] | None = None,  # in elements, as Tensor.stride()
        ptr: int | None = None,
    ) -> None:
        self.dtype = DTYPES[dtype]
        itemsize = 2 if dtype == "bfloat16" else self.dtype.numpy.itemsize  # type: ignore[union-attr]
        typestr = "<V2" if dtype == "bfloat16" else self.dtype.numpy.str  # type: ignore[union-attr]
        byte_strides = None if strides is None else tuple(s * itemsize for s in strides)
        super().__init__(shape, typestr, ptr=ptr, strides=byte_strides, device=device,
                         device_style="torch")  # fmt: skip
        self.shape = tuple(self.shape)
        self.requires_grad = requires_grad
        self._index = device
        self._strides = strides

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.requires_grad:
            raise RuntimeError(
                "Can't get __cuda_array_interface__ on Variable that requires grad. "
                "Use var.detach().__cuda_array_interface__ instead."
            )
        return self.iface

    def get_device(self) -> int:
        return self._index

    def data_ptr(self) -> int:
        return self.ptr

    def is_contiguous(self) -> bool:
        if self._strides is None:
            return True
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self._strides), strict=True):
            if n > 1 and s != expected:
                return False
            expected *= n
        return True

    def dim(self) -> int:
        return len(self.shape)

    def stride(self) -> tuple[int, ...]:
        if self._strides is not None:
            return self._strides
        strides, step = [], 1
        for n in reversed(self.shape):
            strides.append(step)
            step *= n
        return tuple(reversed(strides))


def fake_torch_module() -> Iterator[types.ModuleType]:
    """The stand-in installed for a test (`installed`). Test modules make it their `torch`
    fixture: ``torch = pytest.fixture(fake_torch_module, name="torch")``."""
    with installed() as torch:
        yield torch


@contextlib.contextmanager
def installed() -> Iterator[types.ModuleType]:
    """``import torch`` gives the stand-in while the context lasts; its
    ``compiler.wrapped`` lists the functions ``torch.compiler.disable`` wrapped, and its
    ``streams`` maps a device to its current stream."""
    torch = types.ModuleType("torch")
    torch.Tensor = Tensor  # type: ignore[attr-defined]
    for name, dtype in DTYPES.items():
        setattr(torch, name, dtype)
    streams: dict[int, int] = {}
    torch.streams = streams  # type: ignore[attr-defined]
    torch._C = types.SimpleNamespace(  # type: ignore[attr-defined]
        _cuda_getCurrentRawStream=lambda d: streams.get(d, 0x100 + d)
    )
    torch.cuda = types.SimpleNamespace(current_device=lambda: 0)  # type: ignore[attr-defined]
    wrapped: list[Any] = []

    def disable(fn: Any) -> Any:
        wrapped.append(fn)

        def opaque(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        opaque.wrapped = fn  # type: ignore[attr-defined]
        return opaque

    torch.compiler = types.SimpleNamespace(disable=disable, wrapped=wrapped)  # type: ignore[attr-defined]
    with replaced_module("torch", torch):
        yield torch
