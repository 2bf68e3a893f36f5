"""What the launch fast paths read on a fake CuPy: a `cupy.ndarray` look-alike, and the
decoding of one cuLaunchKernel call that passes a packed parameter buffer."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .fakes import FakeCudaArray


class FakeNdarray(FakeCudaArray):
    """A `cupy.ndarray` look-alike: the attributes the fast paths read, plus the CUDA
    array interface the general path reads."""

    def __init__(self, n: int, dtype: str = "float32", device: int = 0, **kw: Any) -> None:
        dt = np.dtype(dtype)
        super().__init__(n, dt.str, device=device, **kw)
        self.dtype = dt
        self.ndim = len(self.shape)
        self.size = int(np.prod(self.shape))
        self._c_contiguous = kw.get("strides") is None
        self.data = type("MemoryPointer", (), {"ptr": self.ptr, "device_id": device})()


def decode_launch(f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                  smem: int, stream: int, params: int, extra: int) -> dict[str, Any]:  # fmt: skip
    """One cuLaunchKernel call; `extra` is the void* array [1, buf, 2, &size, 0]."""
    words = (ctypes.c_void_p * 5).from_address(extra)
    assert [words[0], words[2], words[4]] == [1, 2, None]  # BUFFER_POINTER, BUFFER_SIZE, END
    size = ctypes.c_size_t.from_address(words[3]).value
    return {
        "f": f, "grid": (gx, gy, gz), "block": (bx, by, bz), "smem": smem, "stream": stream,
        "params": params, "buffer": ctypes.string_at(words[1], size),
    }  # fmt: skip
