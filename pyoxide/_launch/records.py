"""Kernel parameters whose Rust type is not a scalar: "records" (crates/oxide-macros/
src/records.rs). cuda-oxide's kernels take ``Copy`` structs, enums, unions, tuples and
arrays ``[T; N]`` by value, and slices of them (``&[Quad]``, ``DisjointSlice<[f32; 7]>``,
``&[DeviceAtomicU64]``).

The manifest gives such a parameter's ``record``: the type as written, and its size
and alignment as the compiler laid it out. It does not give a struct's fields (the
macro sees only the type's name), so Python takes the value's bytes as the user lays
them out; for a ``#[repr(C)]`` type a NumPy structured dtype or a ``ctypes.Structure``
with the same fields gives exactly those bytes. Where the type is made of one scalar
(``[f32; 7]``, ``DeviceAtomicU64``, ``Uniform<u32>``: the parameter's ``type``), plain
numbers of that scalar are accepted too.

* By value (kind ``value``): a NumPy structured scalar or 0-d/1-element array whose
  itemsize is the size, a ``ctypes`` structure, union or array, ``bytes``; or, for a
  one-scalar type, that many numbers (a list or an array of that exact dtype).
* Slices and pointers of records: an array of ``n`` records: a 1-D structured array
  with that itemsize, or an array of the scalar shaped ``(n, ...)`` whose trailing
  dimensions make one record (``(n, 7)`` float32 for ``[f32; 7]``), or a 1-D array of
  the scalar when one record is one scalar (``DeviceAtomicU64``).
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
from collections.abc import Callable
from typing import Any, NoReturn

from .._manifest.records import RecordLayout
from .arrays import RUST_TYPESTR, ArrayView, dtype_spelling, numpy_dtype

_BYTES_LIKE = (bytes, bytearray, memoryview, ctypes.Structure, ctypes.Union, ctypes.Array)


def lane_count(param: Any) -> int | None:
    """How many scalars of the parameter's ``type`` make one record, when the record is
    made of that scalar alone; None for a struct known only by its bytes."""
    layout: RecordLayout = param.record
    one = int(RUST_TYPESTR[param.type][2:])
    innermost = layout.rust_type.lstrip("[").split(";")[0].strip()
    made_of_lanes = param.type != "u8" or innermost == "u8"
    if not made_of_lanes or layout.size % one:
        return None
    return layout.size // one


def record_dtype(np: Any, layout: RecordLayout) -> Any:
    """The structured dtype a packed value has (CuPy passes a structured scalar's bytes
    as one kernel parameter; the emulator passes their address)."""
    return np.dtype({"names": ["bytes"], "formats": [(np.uint8, (layout.size,))]})


#: Raises the argument rules' refusal: ``refuse(cls, expected, got, fix)`` (given by
#: pyoxide/_launch/args.py, which this module sits below).
Refuse = Callable[[Any, str, str, str], NoReturn]


def value_converter(
    np: Any, param: Any, scalar: Callable[[Any, Any], Any], refused: Refuse
) -> Callable[[Any], Any]:
    """The converter of a by-value record parameter: value -> NumPy structured scalar.
    ``scalar(np, param)`` is the scalar converter, used for one lane."""
    from ..errors import ArgumentTypeError, ArgumentValueError

    layout: RecordLayout = param.record
    lanes = lane_count(param)
    dtype = record_dtype(np, layout)
    lane_param = dataclasses.replace(param, kind="scalar", record=None)
    lane = scalar(np, lane_param)
    expected = (
        f"a {layout.rust_type} value ({layout.size} bytes): a NumPy structured scalar "
        "(numpy.void) or ctypes structure laid out as the Rust type, or bytes"
    )
    if lanes is not None:
        expected += f", or {lanes} {param.type} value(s)"
    fix = (
        "pyoxide knows the type's size, not its fields: build the value with a NumPy "
        "structured dtype matching the #[repr(C)] type, e.g. numpy.array((1, 2.0), "
        "dtype=[('a', '<u4'), ('b', '<f4')])[()]"
    )

    def convert(v: Any) -> Any:
        raw: bytes | None = None
        if isinstance(v, _BYTES_LIKE):
            raw = bytes(v)
        elif isinstance(v, (np.ndarray, np.generic)):
            a = np.asarray(v)
            if a.dtype.kind == "V":
                raw = a.tobytes()
            elif lanes is None or a.dtype == numpy_dtype(param.type):
                # The record's scalar exactly; or any numbers for a type known only by
                # its bytes (the caller lays them out).
                raw = np.ascontiguousarray(a).tobytes()
            else:
                want = f"{dtype_spelling(param.type)} " if lanes else ""
                refused(ArgumentTypeError, expected, f"an array of {a.dtype}",
                        f"pass a {want}array or a structured scalar (no silent casts)")  # fmt: skip
        elif lanes is not None and isinstance(v, (list, tuple)):
            items = np.asarray(v, dtype=object).ravel().tolist()
            raw = b"".join(lane(x).tobytes() for x in items)
        else:
            refused(ArgumentTypeError, expected, type(v).__name__, fix)
        assert raw is not None
        if len(raw) != layout.size:
            refused(ArgumentValueError, expected, f"{len(raw)} bytes", fix)
        return np.frombuffer(raw, dtype=dtype)[0]

    return convert


def record_view(param: Any, v: ArrayView, refused: Refuse) -> ArrayView:
    """Check an array given for a slice (or pointer) of records and describe it as what
    the kernel sees: a 1-D array of records (so lengths, grids and overlap checks count
    records)."""
    from ..errors import ArgumentTypeError, ArgumentValueError

    layout: RecordLayout = param.record
    lanes = lane_count(param)
    lane_typestr = RUST_TYPESTR[param.type]
    expected = (
        f"an array of {layout.rust_type} ({param.rust_type}): a structured array of "
        f"itemsize {layout.size}"
    )
    if lanes is not None:
        expected += f" or a {param.type} array shaped (n, ...) with {lanes} per record"
    else:
        expected += f" or an array shaped (n, ...) with {layout.size} bytes per row"
    if not v.is_c_contiguous():
        refused(ArgumentValueError, expected, f"a strided {v.describe()}",
                "make it contiguous with numpy.ascontiguousarray(x)")  # fmt: skip
    if v.typestr.startswith("|V") and v.itemsize == layout.size:
        if len(v.shape) != 1:
            refused(ArgumentValueError, expected, v.describe(), "pass a 1-D structured array")
        n = v.shape[0]
    elif (lanes is not None and v.typestr == lane_typestr) or (lanes is None and v.shape):
        # (n, ...) numbers whose trailing dimensions make one record: of the record's
        # scalar exactly, or of any type for a record known only by its bytes.
        per = math.prod(v.shape[1:]) * v.itemsize if v.shape else 0
        if per != layout.size:
            shape = (
                f"(n, {lanes})" if lanes is not None else f"(n, ...) with {layout.size} bytes a row"
            )
            refused(ArgumentValueError, expected, v.describe(),
                    f"shape it {shape} (or with the record's own dimensions)")  # fmt: skip
        n = v.shape[0]
    else:
        refused(
            ArgumentTypeError, expected, v.describe(),
            "pass a NumPy/CuPy structured array whose dtype matches the Rust type "
            "(pyoxide never casts silently)",
        )  # fmt: skip
    return dataclasses.replace(
        v,
        shape=(n,),
        strides=None,
        typestr=f"|V{layout.size}",
        itemsize=layout.size,
    )
