"""Types for annotating code that calls pyoxide kernels (and for generated stubs).

Importing this module is cheap: NumPy is only named for type checkers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

__all__ = ["Array", "Bool", "CudaArray", "DLPackArray", "Dim", "Float", "HostArray", "Int"]


class CudaArray(Protocol):
    """Anything exposing ``__cuda_array_interface__`` (CuPy, PyTorch CUDA tensors, Numba)."""

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...


class HostArray(Protocol):
    """Anything exposing ``__array_interface__`` (NumPy)."""

    @property
    def __array_interface__(self) -> dict[str, Any]: ...


class DLPackArray(Protocol):
    """Anything exposing DLPack (JAX, PyTorch, …)."""

    __dlpack__: Callable[..., Any]
    __dlpack_device__: Callable[..., Any]


Array = CudaArray | HostArray | DLPackArray
Dim = int | tuple[int] | tuple[int, int] | tuple[int, int, int]

if TYPE_CHECKING:
    import numpy as np

    Float = float | np.floating[Any]
    Int = int | np.integer[Any]
    Bool = bool | np.bool_
else:
    Float = float
    Int = int
    Bool = bool
