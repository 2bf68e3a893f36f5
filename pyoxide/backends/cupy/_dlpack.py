"""CUDA arrays that arrive through DLPack (a JAX GPU array, say), imported as CuPy views:
pyoxide/_launch/arrays.py asks here, so that CuPy is imported in pyoxide/backends only."""

from __future__ import annotations

from typing import Any

from ...errors import BackendUnavailableError


def from_dlpack(obj: Any, what: str) -> Any:
    """A CuPy view of ``obj``'s device memory (it owns the DLPack capsule); ``what``
    names the object in the error when CuPy is missing."""
    try:
        import cupy
    except ImportError:
        raise BackendUnavailableError(
            f"a CUDA {what} arrived through DLPack, which needs CuPy to import it. Fix: pip "
            "install 'pyoxide[cuda]' (CUDA 13 drivers) or 'pyoxide[cuda12]'."
        ) from None
    return cupy.from_dlpack(obj)
