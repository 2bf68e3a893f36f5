"""CuPy arrays a call makes from its arguments (pyoxide/bundled/attention.py's flat views and
stand-ins for absent arrays), made here so that code outside pyoxide/backends never
reaches into CuPy. They are ``cupy.ndarray``s because the compiled launchers
(pyoxide/backends/cupy/_native.py's ``bind_array_type``) read that type and PyTorch's
tensors only: a call given any other object takes the general (Python) launch path."""

from __future__ import annotations

from typing import Any


class CallArrays:
    """Flat CuPy views of CuPy arrays, and zero-size CuPy arrays kept per device and
    dtype (no allocation for each call)."""

    def __init__(self, cp: Any) -> None:
        self._cp = cp
        self._empty: dict[tuple[int, str], Any] = {}

    def flat(self, x: Any, n: int) -> Any | None:
        """The 1-D CuPy array of the ``n`` elements from CuPy array ``x``'s first one (its
        dtype and memory: ml_dtypes' bfloat16 stays bfloat16), which the caller has checked
        lie in ``x``'s memory; None when ``x`` is not a ``cupy.ndarray``. The body of
        ``cupy.lib.stride_tricks.as_strided``, less a Python call."""
        cp = self._cp
        if type(x) is not cp.ndarray:
            return None
        return cp.ndarray(shape=(n,), dtype=x.dtype, memptr=x.data, strides=(x.itemsize,))

    def empty(self, dtype: str) -> Any:
        """A zero-size CuPy array of ``dtype`` on the current device (where CuPy makes it,
        and where a CuPy call runs): made once per device and dtype. It has no memory to
        write, so sharing it between calls is safe."""
        device = int(self._cp.cuda.runtime.getDevice())
        made = self._empty.get((device, dtype))
        if made is None:
            made = self._empty[(device, dtype)] = self._cp.empty(0, dtype)
        return made
