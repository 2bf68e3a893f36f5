"""The emulator library's C ABI, through cffi: the only module that touches ``ffi``/``lib``.

Mirrors ``crates/oxide-abi/src/emu.rs``: every kernel instance has a host entry

    int32_t __oxide_host_<entry>(const OxideLaunch *launch,
                                 const uint64_t *args, size_t nargs,
                                 OxideError *error);

This layer only opens a library, finds entries and calls them with words already
widened to 64 bits, one call of a library's entries at a time (:class:`LaunchLock`);
what a status means for the user is :mod:`.emu`'s business.
cffi is imported when a library is first opened, never at ``import pyoxide``.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._manifest.abi import EMU_CONFIGURE_SYMBOL as CONFIGURE_SYMBOL
from ..._manifest.abi import HOST_ENTRY_PREFIX, EmuStatus
from ..._manifest.abi import OXIDE_ERROR_MESSAGE_BYTES as MESSAGE_BYTES

_TYPES = f"""
typedef struct {{ uint32_t grid[3]; uint32_t block[3]; uint64_t shared_bytes; }} OxideLaunch;
typedef struct {{
    uint32_t block[3]; uint32_t thread[3]; char message[{MESSAGE_BYTES}];
}} OxideError;
"""
_SIGNATURE = "int32_t {symbol}(const OxideLaunch *, const uint64_t *, size_t, OxideError *);"
_CONFIGURE = f"int32_t {CONFIGURE_SYMBOL}(uint32_t, uint64_t);"


@dataclass(frozen=True)
class Outcome:
    """What one call of a host entry returned."""

    status: int
    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    message: str


class LaunchLock:
    """The lock that one loaded library's launches take, one at a time.

    A library's statics (a kernel's ``static`` atomics, a grid-wide ticket, the
    ``#[constant]`` cells) are one per loaded library, as they are one per loaded module
    and device on a GPU, where the launches of one stream never overlap. Host launches
    from several Python threads would: two launches of ``reduce_sum_f32`` at once mix
    their sums. So every call of an entry holds its library's lock for the whole launch.

    The lock is keyed by the loaded object (its dlopen handle), not by :class:`Library`:
    two Modules of one manifest, or two paths to one file, open the same object and share
    its statics. A launch's own threads are the emulator's (Rust) threads and never take
    it; a Python thread re-enters only before its launch starts (a signal handler that
    launches), hence an RLock. A forked child gets fresh locks: the thread that held one
    in the parent does not exist there.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()


_LOCKS: dict[int, LaunchLock] = {}  # by dlopen handle
_LOCKS_GUARD = threading.Lock()


def launch_lock(handle: int) -> LaunchLock:
    """The :class:`LaunchLock` of the loaded object whose dlopen handle is ``handle``."""
    with _LOCKS_GUARD:
        found = _LOCKS.get(handle)
        if found is None:
            found = _LOCKS[handle] = LaunchLock()
        return found


def _fresh_locks_after_fork() -> None:
    global _LOCKS_GUARD
    _LOCKS_GUARD = threading.Lock()
    for held in _LOCKS.values():
        held.lock = threading.RLock()


os.register_at_fork(after_in_child=_fresh_locks_after_fork)


class Library:
    """An emulator library opened with ``dlopen`` (cffi's ABI mode: no compiler needed).

    Raises ImportError when cffi is missing and OSError when the library cannot be
    opened; the backend turns both into pyoxide errors.
    """

    def __init__(self, path: Path) -> None:
        # Through importlib: cffi ships no type information, and user code type-checked
        # against pyoxide's stubs must not need cffi's.
        cffi: Any = importlib.import_module("cffi")
        self._ffi = cffi.FFI()
        self._ffi.cdef(_TYPES)
        self._lib: Any = self._ffi.dlopen(str(path))
        # The same path again: the dynamic loader matches it to the object just opened
        # (by name, before it looks at the file), so this is that object's handle, and
        # ctypes' view of its exported statics (#[constant]). ctypes never closes it, so
        # the handle names this object for the life of the process.
        self.symbols = ctypes.CDLL(str(path))
        self.launch_lock = launch_lock(self.symbols._handle)
        self._lock = threading.Lock()  # cdef and symbol lookup mutate the FFI
        self.path = path
        with self._lock:
            self._ffi.cdef(_CONFIGURE, override=True)
            try:
                self._configure: Any = getattr(self._lib, CONFIGURE_SYMBOL)
            except AttributeError:  # built before the emulator's checks existed
                self._configure = None

    @property
    def has_checks(self) -> bool:
        """Whether the library takes a launch's checks (strict mode)."""
        return self._configure is not None

    def entry(self, entry: str) -> HostEntry | None:
        """The host entry of device entry ``entry``, or None when the library lacks it."""
        symbol = HOST_ENTRY_PREFIX + entry
        if not symbol.isidentifier() or not symbol.isascii():
            return None  # not a C identifier: cannot be a symbol (and must not reach cdef)
        with self._lock:
            try:
                self._ffi.cdef(_SIGNATURE.format(symbol=symbol), override=True)
                function = getattr(self._lib, symbol)
            except AttributeError:  # dlsym found nothing
                return None
        return HostEntry(self._ffi, function, self._configure, self.launch_lock)


class HostEntry:
    """One ``__oxide_host_<entry>`` function. Calling it releases the GIL (cffi does so
    for every ABI-mode call), so other Python threads run while the kernel does; a call
    holds its library's :class:`LaunchLock`, so launches of another library run meanwhile
    and those of this one wait."""

    __slots__ = ("_configure", "_ffi", "_function", "_launch_lock")

    def __init__(self, ffi: Any, function: Any, configure: Any, launch_lock: LaunchLock) -> None:
        self._ffi = ffi
        self._function = function
        self._configure = configure
        self._launch_lock = launch_lock

    @property
    def has_checks(self) -> bool:
        """Whether its library takes a launch's checks (strict mode)."""
        return self._configure is not None

    def __call__(
        self,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        words: Sequence[int],
        checks: tuple[int, int] | None = None,
    ) -> Outcome:
        """Run the launch; ``checks`` (``CHECK_*`` bits, seed), when given, are set for
        it just before, on this OS thread (the library keeps them for the next launch
        the thread makes). The caller checked ``Library.has_checks``."""
        ffi = self._ffi
        launch = ffi.new("OxideLaunch *", {
            "grid": list(grid), "block": list(block), "shared_bytes": shared_bytes,
        })  # fmt: skip
        args = ffi.new("uint64_t[]", list(words) or [0])  # never a zero-sized allocation
        error = ffi.new("OxideError *")
        with self._launch_lock.lock:
            if checks is not None:
                status = int(self._configure(*checks))
                if status != EmuStatus.OK:
                    return Outcome(status, (0, 0, 0), (0, 0, 0), f"unknown checks {checks[0]:#x}")
            status = int(self._function(launch, args, len(words), error))
        if status == EmuStatus.OK:
            return Outcome(status, (0, 0, 0), (0, 0, 0), "")
        raw = ffi.string(error.message, MESSAGE_BYTES)
        return Outcome(
            status,
            (int(error.block[0]), int(error.block[1]), int(error.block[2])),
            (int(error.thread[0]), int(error.thread[1]), int(error.thread[2])),
            raw.decode("utf-8", errors="replace"),
        )
