"""TMA tensor maps: the one place pyoxide calls the driver's ``cuTensorMapEncodeTiled``.

A tensor map (``CUtensorMap``, 128 opaque bytes) tells the tensor-memory accelerator
where a 2-D array lives, its extents and row stride, the box one copy moves and how
to swizzle it in shared memory. CuPy does not wrap the call, so it goes through
ctypes on ``libcuda`` (loaded on first use, never at import).
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

from ..._manifest.abi import TENSOR_MAP_BYTES as MAP_BYTES
from ...errors import LaunchError

# cuda.h's enum values (CUtensorMapDataType, …Interleave, …Swizzle, …L2promotion,
# …FloatOOBfill).
# Elements move as unsigned words of their size (bf16 as 16-bit, f32 as 32-bit: the bits
# are copied, not converted); out-of-bounds elements read as 0.
_UINT_OF_SIZE = {1: 0, 2: 1, 4: 2, 8: 4}  # element bytes -> CU_TENSOR_MAP_DATA_TYPE_UINT*
_INTERLEAVE_NONE = 0
_SWIZZLE_OF_BYTES = {0: 0, 32: 1, 64: 2, 128: 3}  # span -> CU_TENSOR_MAP_SWIZZLE_*
_L2_PROMOTION_256B = 3
_OOB_FILL_ZEROS = 0


@cache
def _encode_tiled(kernel: str) -> Any:
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise LaunchError(
            kernel,
            f"cannot load the CUDA driver library libcuda.so.1 ({e}) to make a TMA tensor "
            "map. Fix: install the NVIDIA driver (it ships libcuda).",
        ) from None
    fn = libcuda.cuTensorMapEncodeTiled
    u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    fn.argtypes = [
        ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p,
        u32p, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ]  # fmt: skip
    fn.restype = ctypes.c_int
    return fn


def encode_2d(
    kernel: str,
    ptr: int,
    cols: int,
    rows: int,
    box_cols: int,
    box_rows: int,
    swizzle_bytes: int,
    elem_bytes: int,
) -> bytes:
    """The tensor map of a row-major ``rows``×``cols`` array of ``elem_bytes``-byte
    elements (1, 2, 4 or 8) at device address ``ptr`` (16-byte aligned; rows a multiple
    of 16 bytes), copied in boxes of ``box_rows``×``box_cols``, swizzled over
    ``swizzle_bytes`` (0, 32, 64 or 128). Coordinates are (column, row); elements outside
    the array read as zero, and stores there are dropped. Errors name ``kernel``, the
    launch the map is for."""
    dims = (ctypes.c_uint64 * 2)(cols, rows)
    strides = (ctypes.c_uint64 * 1)(cols * elem_bytes)
    box = (ctypes.c_uint32 * 2)(box_cols, box_rows)
    steps = (ctypes.c_uint32 * 2)(1, 1)
    # CUtensorMap is declared 64-byte aligned: encode into an aligned spot of a buffer.
    raw = ctypes.create_string_buffer(MAP_BYTES + 64)
    at = -ctypes.addressof(raw) % 64
    status = _encode_tiled(kernel)(
        ctypes.addressof(raw) + at, _UINT_OF_SIZE[elem_bytes], 2, ptr, dims, strides, box, steps,
        _INTERLEAVE_NONE, _SWIZZLE_OF_BYTES[swizzle_bytes], _L2_PROMOTION_256B, _OOB_FILL_ZEROS,
    )  # fmt: skip
    if status != 0:
        raise LaunchError(
            kernel,
            f"cuTensorMapEncodeTiled refused a {rows}x{cols} array of {elem_bytes}-byte "
            f"elements at {ptr:#x} with {box_rows}x{box_cols} boxes (CUresult {status}). "
            "Fix: pass 16-byte-aligned arrays whose rows are a multiple of 16 bytes.",
        )
    return raw.raw[at : at + MAP_BYTES]


def encode_tiled(
    kernel: str,
    ptr: int,
    dims: tuple[int, ...],
    strides: tuple[int, ...],
    box: tuple[int, ...],
    swizzle_bytes: int,
    elem_bytes: int,
) -> bytes:
    """The tensor map of an array of rank ``len(dims)`` (1 to 5): extents ``dims``
    innermost first, the byte ``strides`` of every dimension but the innermost (which is
    contiguous; each a multiple of 16), copied in boxes of ``box`` elements swizzled over
    ``swizzle_bytes``. What :func:`encode_2d` is for two dimensions, for any rank:
    attention moves (d, rows, heads, batch) arrays of any layout with one 4-D map. Errors
    name ``kernel``."""
    rank = len(dims)
    c_dims = (ctypes.c_uint64 * rank)(*dims)
    c_strides = (ctypes.c_uint64 * max(rank - 1, 1))(*strides)
    c_box = (ctypes.c_uint32 * rank)(*box)
    steps = (ctypes.c_uint32 * rank)(*([1] * rank))
    raw = ctypes.create_string_buffer(MAP_BYTES + 64)
    at = -ctypes.addressof(raw) % 64
    status = _encode_tiled(kernel)(
        ctypes.addressof(raw) + at, _UINT_OF_SIZE[elem_bytes], rank, ptr, c_dims, c_strides,
        c_box, steps, _INTERLEAVE_NONE, _SWIZZLE_OF_BYTES[swizzle_bytes], _L2_PROMOTION_256B,
        _OOB_FILL_ZEROS,
    )  # fmt: skip
    if status != 0:
        raise LaunchError(
            kernel,
            f"cuTensorMapEncodeTiled refused an array of extents {dims} and byte strides "
            f"{strides} at {ptr:#x} with boxes {box} (CUresult {status}). Fix: pass "
            "16-byte-aligned arrays whose strides are multiples of 16 bytes.",
        )
    return raw.raw[at : at + MAP_BYTES]
