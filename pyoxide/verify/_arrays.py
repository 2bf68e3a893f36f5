"""The arrays a verify case hands a kernel, laid out so that a write out of bounds is
seen, and on the emulator cannot corrupt the process.

Each array is a view into a region of its own: canary bytes before it (at least CANARY
elements, then `offset` elements for a misaligned view) and after it, the array itself
starting 256-byte aligned (as CuPy's allocations are) plus the offset. A write that lands
in the canary changes it and fails the case with the element written. On the emulator the
region is mapped memory with GUARD_BYTES of inaccessible (PROT_NONE) pages on each side:
a write past the canary faults at once, which the emulator reports as an invalid access
at an address that :meth:`Arrays.fault_at` names, instead of landing in the heap (where
it once aborted the process with "double free or corruption"). On a GPU those GUARD_BYTES
are canary too (device memory has no such pages to spare): a write that far out is seen
after the launch instead of landing unseen in CuPy's memory pool."""

from __future__ import annotations

import ctypes
import mmap
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Elements of canary bytes at least on each side of every array.
CANARY = 64
CANARY_BYTE = 0xA5
#: Inaccessible bytes on each side of an emulator array's region (canary on a GPU).
GUARD_BYTES = 1 << 16
#: Where an array with offset 0 starts: CuPy's allocation alignment.
ALIGN = 256


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


@dataclass
class _Region:
    name: str
    region: Any  # the whole region: a NumPy or CuPy array of the array's dtype
    lo: int  # where the array starts in it (elements)
    length: int  # the array's elements
    address: int  # the region's host address (0 on a GPU)


class Arrays:
    """Makes the device copies of a case's host arrays on one backend: NumPy (the
    emulator) or CuPy; knows where each one's guard bytes are."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.cp: Any = None
        self._regions: list[_Region] = []
        if backend == "cupy":
            from .. import backends

            self.cp = backends.gpu().xp

    def put(self, name: str, host: np.ndarray, offset: int) -> Any:
        flat = np.ascontiguousarray(host).reshape(-1)
        item = flat.dtype.itemsize
        pad = 0 if self.cp is None else GUARD_BYTES // item  # the GPU's guard: canary
        lo = pad + _round_up(CANARY * item, ALIGN) // item + offset  # in elements
        size = _round_up((lo + flat.size + CANARY + pad) * item, mmap.PAGESIZE)
        raw = _guarded(size) if self.cp is None else np.empty(size, np.uint8)
        # Canary on both sides; the array's own bytes are written once, by the copy (a
        # tuned shape makes them 2^28 elements long).
        raw[: lo * item] = CANARY_BYTE
        raw[(lo + flat.size) * item :] = CANARY_BYTE
        region: Any = raw.view(flat.dtype)
        region[lo : lo + flat.size] = flat
        if self.cp is not None:
            region = self.cp.asarray(region)
        address = region.ctypes.data if self.cp is None else 0  # faults: the emulator's
        self._regions.append(_Region(name, region, lo, flat.size, address))
        return region[lo : lo + flat.size].reshape(host.shape)  # a view, shaped as given

    def get(self, dev: Any) -> np.ndarray:
        if self.cp is None:
            return np.array(dev)
        return self.cp.asnumpy(dev)  # type: ignore[no-any-return]

    def overwritten_guard(self) -> tuple[str, int] | None:
        """The first array whose canary bytes changed, with the element index written
        (negative: before the array; >= its length: past its end)."""
        for r in self._regions:
            # Only the canary on each side is read back, not the array between them.
            end = r.lo + r.length
            for start, side in ((0, r.region[: r.lo]), (end, r.region[end:])):
                raw = self.get(side)
                changed = (raw.view(np.uint8).reshape(raw.size, -1) != CANARY_BYTE).any(axis=1)
                bad = np.flatnonzero(changed)
                if bad.size:
                    return r.name, start + int(bad[0]) - r.lo
        return None

    def fault_at(self, address: int) -> tuple[str, int] | None:
        """The array whose guard pages hold `address` (an emulator fault), with the
        element index it is at."""
        for r in self._regions:
            if not r.address:
                continue
            item = r.region.dtype.itemsize
            start, end = r.address, r.address + r.region.nbytes
            if start - GUARD_BYTES <= address < end + GUARD_BYTES:
                return r.name, (address - start) // item - r.lo
        return None

    def clear(self) -> None:
        self._regions.clear()


_PROT_NONE = 0
_libc: Any = None


def _guarded(size: int) -> np.ndarray:
    """`size` bytes (a page multiple) of mapped memory between GUARD_BYTES of
    inaccessible pages; the mapping is released when the last view of it goes."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    whole = np.frombuffer(mmap.mmap(-1, size + 2 * GUARD_BYTES), np.uint8)
    base = whole.ctypes.data
    for at in (base, base + GUARD_BYTES + size):
        if _libc.mprotect(at, GUARD_BYTES, _PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), "mprotect of a verify guard page failed")
    return whole[GUARD_BYTES : GUARD_BYTES + size]
