"""Dynamic shared memory above the default 48 KiB: a function must be opted in
(``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``) before a launch asks for more. Both
launch paths depend on it: the general path opts in before it launches, and a compiled
launcher (pyoxide._launch._native) shares its function's ``SharedLimit``, which says
how much that is, and declines a call that asks for more."""

from __future__ import annotations

from typing import Any


class SharedOptIn:
    """What each function has been opted in to, per device, as a ``SharedLimit`` shared
    with its launchers. It only grows, so that a smaller launch never takes away what a
    launcher may launch with, and the driver is asked once per larger size. A function
    opted in above 48 KiB is kept here (with it, its CUDA module): a handle freed and
    reused by another module's function would otherwise be taken for opted in."""

    def __init__(self, cp: Any) -> None:
        from ..._launch._native import SharedLimit  # the native library loads on first use

        self._cp = cp
        self._new_limit = SharedLimit
        self._limits: dict[tuple[int, int], Any] = {}
        #: The functions opted in above 48 KiB, kept alive (the class docs).
        self._functions: dict[tuple[int, int], Any] = {}

    def __call__(self, function: Any, device: int, shared_mem: int) -> Any:
        """Let ``function`` (on ``device``) have ``shared_mem`` bytes of dynamic shared
        memory; returns its ``SharedLimit``. Raises CuPy's driver error beyond what the
        device allows (the limit stays as it was)."""
        key = (device, int(function.ptr))
        limit = self._limits.get(key)
        if limit is None:
            limit = self._limits[key] = self._new_limit()
        if shared_mem > limit.bytes:
            d = self._cp.cuda.driver
            attr = d.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            d.funcSetAttribute(function.ptr, attr, shared_mem)
            limit.raise_to(shared_mem)
            self._functions[key] = function
        return limit
