"""The argument rules: which Python values a kernel parameter takes, in one place.

The general launch path (:mod:`._launch`) applies them to every call; the compiled fast
path (crates/pyoxide-native) accepts a subset and declines the rest, so a call it takes
is one these rules accept, packed into the same bytes (tests/launch/test_fast_path.py).

* Arrays: exact dtype (no silent casts), 1-D and C-contiguous for slices, writable for
  mutable kinds, aligned to the element size, all on one device and all on the GPU or
  all on the host; a mutable slice may not overlap another array argument (Rust assumes
  no aliasing). Zero-length arrays are fine: an automatic grid of zero blocks launches
  nothing. Masked arrays are refused (the kernel would read the masked values).
* Integer scalars: Python ``int`` or NumPy integers, in range for the Rust type.
  ``bool`` is refused (say ``int(flag)``), floats are refused (even ``3.0``).
* Float scalars: ``float``, NumPy floats, and ``int`` when exactly representable.
  ``bool`` is refused. A finite value too large for ``f32`` is refused.
* ``bool`` scalars: ``True``/``False`` or ``numpy.bool_`` only.
* A 0-d NumPy array of numbers stands for its element, for any scalar parameter.
* Pointers (``unsafe`` kernels): an array (dtype checked, any shape, contiguous),
  or an ``int`` address taken as is.

* Shaped arrays (``Array2<T>``, ``DisjointArray2<T, Strided>`` …): rank, layout, strides
  and the kernel's ``#[shapes(...)]`` contract, by the rules of :mod:`._shapes`.

Each parameter kind's facts (slice or pointer, mutable, sizes the grid) come from
oxide-abi's table (:mod:`._abi`), so a new kind is one row there.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from .._manifest import abi as _abi
from .._manifest.reader import KernelSpec, ParamSpec
from ..errors import ArgumentError, ArgumentTypeError, ArgumentValueError
from . import records as _records
from .arrays import RUST_TYPESTR as _TYPESTR
from .arrays import ArrayProtocolError, ArrayView, dtype_spelling, rust_dtype_name, view
from .half import HALF_OVERFLOW, half_bits, half_value
from .shapes import check_contract, check_shaped, has_contract, span_bytes

_F32_OVERFLOW = 2.0**128 - 2.0**103  # rounds to inf as f32
_NP_NAMES = {
    t.name: "uint8"
    if t.kind == "b"
    else {"i": "int", "u": "uint", "f": "float"}[t.kind] + str(8 * t.size)
    for t in _abi.SCALARS.values()
}


class Refused(Exception):
    """Raised by a converter; the caller adds kernel and parameter."""

    def __init__(self, cls: type[ArgumentError], expected: str, got: str, fix: str) -> None:
        super().__init__(expected)
        self.cls, self.expected, self.got, self.fix = cls, expected, got, fix


def _refuse(cls: type[ArgumentError], expected: str, got: str, fix: str) -> NoReturn:
    raise Refused(cls, expected, got, fix)


def describe_value(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, (bool, int, float)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, str):
        return f"str {value!r}" if len(value) < 40 else "a str"
    t = type(value)
    name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        return f"{name} {value!r}"
    return name


# --- scalar converters ---------------------------------------------------------------


def _converter(np: Any, param: ParamSpec) -> Callable[[Any], Any]:
    if param.record is not None:  # a struct, enum, tuple or [T; N] by value
        return _records.value_converter(np, param, _scalar_converter, _refuse)
    return _scalar_converter(np, param)


def _scalar_converter(np: Any, param: ParamSpec) -> Callable[[Any], Any]:
    t = param.type
    np_type = getattr(np, _NP_NAMES[t])
    if t == "bool":

        def convert_bool(v: Any) -> Any:
            if isinstance(v, (bool, np.bool_)):
                return np_type(1 if v else 0)
            raise Refused(
                ArgumentTypeError, "a bool (True or False)", describe_value(v),
                f"pass bool(...) explicitly, e.g. {param.name}=bool(value)",
            )  # fmt: skip

        return convert_bool
    if t in ("f16", "bf16"):
        return _half_converter(np, param)
    if t in ("f32", "f64"):
        return _float_converter(np, param, np_type)
    return _int_converter(np, param, np_type)


def _a_bool(expected: str, v: Any, cast: str, values: str) -> Refused:
    """A bool where a number is expected is refused: True is not 1 by accident."""
    return Refused(
        ArgumentTypeError, expected, describe_value(v), f"pass {cast} if you mean {values}"
    )


def _int_converter(np: Any, param: ParamSpec, np_type: Any) -> Callable[[Any], Any]:
    t = param.type
    lo, hi = _abi.SCALARS[t].lo, _abi.SCALARS[t].hi
    assert lo is not None and hi is not None, f"{t} is an integer type"
    expected = f"an int in [{lo}, {hi}] ({t})"

    def convert_int(v: Any) -> Any:
        if type(v) is int:  # the common case, first
            i = v
        elif isinstance(v, (bool, np.bool_)):
            raise _a_bool(expected, v, "int(flag)", "0 or 1")
        elif isinstance(v, (float, np.floating)):
            if math.isnan(v) or math.isinf(v):
                raise Refused(
                    ArgumentValueError, expected, describe_value(v),
                    "an integer parameter has no NaN or infinity; pass a finite int",
                )  # fmt: skip
            raise Refused(
                ArgumentTypeError, expected, describe_value(v),
                f"pass an int (int({v!r}) if truncation is what you want)",
            )  # fmt: skip
        elif isinstance(v, (str, bytes)) or v is None or not hasattr(v, "__index__"):
            raise Refused(ArgumentTypeError, expected, describe_value(v), "pass a Python int")
        else:
            try:
                i = operator.index(v)
            except TypeError:
                raise Refused(
                    ArgumentTypeError, expected, describe_value(v), "pass a Python int"
                ) from None
        if not lo <= i <= hi:
            raise Refused(
                ArgumentValueError, expected, f"{i}",
                f"pass a value that fits {t}; the Rust parameter cannot hold {i}",
            )  # fmt: skip
        return np_type(i)

    return convert_int


def _float_converter(np: Any, param: ParamSpec, np_type: Any) -> Callable[[Any], Any]:
    """An ``f32``/``f64`` by value, passed as that NumPy scalar."""

    def exact(i: int) -> bool:
        try:
            return int(np_type(i)) == i
        except OverflowError:
            return False

    limit = (_F32_OVERFLOW, "3.4e38", "f64") if param.type == "f32" else None
    return _real_converter(np, param, exact, np_type, limit)


def _half_converter(np: Any, param: ParamSpec) -> Callable[[Any], Any]:
    """An ``f16``/``bf16`` by value: a float rounded to nearest (or an int the type holds
    exactly), passed as its 16 bits (the entry point's ABI parameter is a ``u16``)."""
    t = param.type
    top = HALF_OVERFLOW[t]
    return _real_converter(
        np, param,
        lambda i: abs(i) < top and half_value(t, half_bits(t, float(i))) == i,
        lambda f: np.uint16(half_bits(t, f)),
        (top, f"{top:.6g}", "f32"),
    )  # fmt: skip


def _real_converter(
    np: Any,
    param: ParamSpec,
    exact: Callable[[int], bool],
    pack: Callable[[float], Any],
    limit: tuple[float, str, str] | None,
) -> Callable[[Any], Any]:
    """The rules of a float parameter: a float, or an int the type holds ``exact``-ly;
    ``limit`` (where rounding reaches infinity, how to say it, the wider type to suggest)
    refuses finite values that would overflow; ``pack`` makes the launch-ABI value."""
    t = param.type
    expected = f"a float ({t})"

    def convert_float(v: Any) -> Any:
        if type(v) is float:
            f = v
        elif isinstance(v, (bool, np.bool_)):
            raise _a_bool(expected, v, "float(flag)", "0.0 or 1.0")
        elif isinstance(v, (float, np.floating)):
            f = float(v)
        elif isinstance(v, (int, np.integer)):
            i = int(v)
            if not exact(i):
                raise Refused(
                    ArgumentValueError, expected + ", exactly representable", f"int {i}",
                    f"pass float({i}) to accept rounding to the nearest {t}",
                )  # fmt: skip
            return pack(float(i))  # exact, so within range
        else:
            fix = "pass a Python float"
            if hasattr(v, "item"):
                fix += " (value.item() for a 0-d array)"
            raise Refused(ArgumentTypeError, expected, describe_value(v), fix)
        if limit is not None and abs(f) >= limit[0] and not math.isinf(f):
            raise Refused(
                ArgumentValueError, f"a float within {t}'s range (|x| < {limit[1]})", repr(f),
                f"pass a smaller value, or use a kernel that takes {limit[2]}",
            )  # fmt: skip
        return pack(f)

    return convert_float


# --- array checks ----------------------------------------------------------------------


def check_array(param: ParamSpec, v: ArrayView) -> None:
    want = f"|V{param.record.size}" if param.record else _TYPESTR[param.type]
    if v.typestr != want:
        torch = v.source == "torch.Tensor" or type(v.obj).__module__.startswith("torch")
        how = f".to({dtype_spelling(param.type, 'torch')})" if torch else (
            f".astype({dtype_spelling(param.type)})"
        )  # fmt: skip
        raise Refused(
            ArgumentTypeError, f"a {rust_dtype_name(param.type)} array ({param.rust_type})",
            v.describe(), f"convert it with {how} (pyoxide never casts silently)",
        )  # fmt: skip
    if _abi.PARAM_KINDS[param.kind].is_slice and len(v.shape) != 1:
        raise Refused(
            ArgumentValueError, f"a 1-D array ({param.rust_type})",
            f"{len(v.shape)}-D {v.describe()}",
            "pass a 1-D array: .ravel() a contiguous array, or index one row",
        )  # fmt: skip
    if param.array is None and not v.is_c_contiguous():  # shaped: checked by _shapes
        raise Refused(
            ArgumentValueError, f"a contiguous array ({param.rust_type})",
            f"a strided {v.describe()} (strides {v.strides})",
            "make it contiguous with cupy.ascontiguousarray(x) / numpy.ascontiguousarray(x)",
        )  # fmt: skip
    if param.mutable and v.readonly:
        raise Refused(
            ArgumentValueError, f"a writable array ({param.rust_type})",
            f"a read-only {v.describe()}",
            "pass a writable array (x.copy())",
        )  # fmt: skip
    n = math.prod(v.shape)
    if n and v.ptr == 0:
        raise Refused(
            ArgumentValueError, "an array with memory behind it",
            f"a null pointer for {n} elements",
            "allocate the array (cupy.empty(n, dtype))",
        )  # fmt: skip
    if n * v.itemsize > _abi.MAX_SLICE_BYTES or v.ptr + n * v.itemsize > 2**64:
        raise Refused(
            ArgumentValueError, "at most 2**63-1 bytes (the ABI length) that end below 2**64",
            f"{n} elements of {v.itemsize} bytes at {v.ptr:#x}",
            "split the work into smaller arrays (or fix the object's array interface)",
        )  # fmt: skip
    align = param.record.align if param.record else v.itemsize  # a record: its type's
    if n and align and v.ptr % align:
        # The emulator would cope; a GPU faults on a misaligned load and loses the context.
        raise Refused(
            ArgumentValueError, f"an array aligned to its {align}-byte elements",
            f"a {v.describe()} at address {v.ptr:#x} (a view at an odd byte offset)",
            "copy it into an aligned array with x.copy() (numpy.ascontiguousarray(x) keeps "
            "an already contiguous view where it is)",
        )  # fmt: skip


def abi_pointer(v: ArrayView) -> int:
    """The launch ABI's pointer for an array: its data pointer, or for an empty array the
    element size, so that the kernel never sees null (CuPy and PyTorch give empty arrays
    a null pointer). The fact's home: oxide-abi's ``types::empty_array_address``."""
    return v.ptr if math.prod(v.shape) else v.itemsize


def not_an_array(param: ParamSpec, value: Any) -> NoReturn:
    dt = rust_dtype_name(param.type)
    rank = param.array.rank if param.array is not None else 1
    raise Refused(
        ArgumentTypeError,
        f"a {rank}-D {dt} array ({param.rust_type}): CuPy, NumPy, or anything with "
        "__cuda_array_interface__ or __dlpack__",
        describe_value(value),
        f"pass an array, e.g. cupy.asarray(value, dtype={dtype_spelling(param.type, 'cupy')})",
    )


def check_aliasing(
    kernel: str, arrays: list[tuple[ParamSpec, ArrayView]], strides: dict[str, Any]
) -> None:
    """A mutable slice or array may not overlap any other array argument (`strides`:
    each shaped argument's strides in elements, by parameter name)."""
    spans = []
    for p, v in arrays:
        if p.array is not None:
            size = span_bytes(v, strides[p.name])
        elif _abi.PARAM_KINDS[p.kind].is_slice:
            size = math.prod(v.shape) * v.itemsize
        else:
            continue
        if size:
            spans.append((p, v, v.ptr, v.ptr + size))
    for i, (p, v, lo, hi) in enumerate(spans):
        for q, w, lo2, hi2 in spans[i + 1 :]:
            if (p.mutable or q.mutable) and lo < hi2 and lo2 < hi and v.device == w.device:
                m, other = (p, q) if p.mutable else (q, p)
                raise ArgumentValueError(
                    kernel, m.name, f"memory that no other argument uses ({m.rust_type} "
                    "is exclusive in Rust)", f"an array overlapping '{other.name}'",
                    f"write into a separate array (e.g. {m.name} = {other.name}.copy())",
                )  # fmt: skip


#: Every distinct parameter list an ArgumentPlan was made for (kept: few, and a list's
#: identity must outlive any one plan).
_SIGNATURES: dict[tuple[ParamSpec, ...], tuple[ParamSpec, ...]] = {}


class ArgumentPlan:
    """What checking a call needs that depends only on the kernel, computed once."""

    __slots__ = (
        "checks", "contract", "grid_param", "max_threads", "may_alias", "ndarray", "params",
        "spec",
    )  # fmt: skip

    def __init__(self, spec: KernelSpec) -> None:
        import numpy as np  # numpy loads on the first launch, not at import

        self.spec = spec
        # (a derived parameter is the launcher's to make) One tuple per distinct list, so
        # that Kernel.variant_for tells equal lists apart by identity.
        self.params = _SIGNATURES.setdefault(spec.passed_params, spec.passed_params)
        self.ndarray = np.ndarray
        bounds = spec.launch_bounds
        self.max_threads = bounds.max_threads if bounds else _abi.MAX_THREADS_PER_BLOCK
        self.grid_param = next(
            (i for i, p in enumerate(self.params) if _abi.PARAM_KINDS[p.kind].sizes_grid), None
        )
        slices = [p for p in self.params if _abi.PARAM_KINDS[p.kind].is_slice or p.array]
        self.may_alias = len(slices) > 1 and any(p.mutable for p in slices)
        self.contract = has_contract(spec)
        self.checks: tuple[Callable[[Any], Any] | None, ...] = tuple(
            None if p.is_array else _converter(np, p) for p in self.params
        )

    def arity(self, args: Sequence[Any]) -> None:
        if len(args) != len(self.params):
            names = ", ".join(p.name for p in self.params)
            raise ArgumentTypeError(
                self.spec.entry, None,
                f"{len(self.params)} argument(s) ({names})", f"{len(args)}",
                f"call {self.spec.entry}({names}); the Rust signature is {self.spec.signature}",
            )  # fmt: skip

    def views(self, args: Sequence[Any]) -> list[ArrayView | None]:
        """Describe the array arguments (arity checked first)."""
        self.arity(args)
        out: list[ArrayView | None] = []
        for p, a in zip(self.params, args, strict=True):
            if not p.is_array:
                out.append(None)
                continue
            try:
                v = view(a)
            except ArrayProtocolError as e:
                cls = ArgumentValueError if e.value_error else ArgumentTypeError
                raise cls(
                    self.spec.entry, p.name, f"an array ({p.rust_type})", e.got, e.fix
                ) from None
            if v is not None and p.record is not None:
                try:
                    v = _records.record_view(p, v, _refuse)  # counted in records from here on
                except Refused as r:
                    raise self.refuse(p.name, r) from None
            out.append(v)
        return out

    def refuse(self, param: str, r: Refused) -> ArgumentError:
        return r.cls(self.spec.entry, param, r.expected, r.got, r.fix)

    def pack(
        self, args: Sequence[Any], views: list[ArrayView | None]
    ) -> tuple[list[Any], list[tuple[ParamSpec, ArrayView]]]:
        """Check every argument; return the flat ABI words (NumPy scalars; a slice as
        pointer, length) and the array arguments."""
        packed: list[Any] = []
        arrays: list[tuple[ParamSpec, ArrayView]] = []
        strides: dict[str, Any] = {}
        for p, check, a, v in zip(self.params, self.checks, args, views, strict=True):
            try:
                if check is not None:
                    if type(a) is self.ndarray and a.ndim == 0 and a.dtype.kind in "biuf":
                        a = a[()]  # a 0-d array of numbers: its element
                    packed.append(check(a))
                    continue
                if v is None:
                    if p.takes_address and type(a) is int and 0 <= a < 2**64:
                        packed.append(_u64(a))  # a raw address: unsafe kernels only
                        continue
                    not_an_array(p, a)
                check_array(p, v)
            except Refused as r:
                raise self.refuse(p.name, r) from None
            arrays.append((p, v))
            packed.append(_u64(abi_pointer(v)))
            if p.array is not None:  # pointer, extents, strides in elements
                s = strides[p.name] = check_shaped(self.spec.entry, p, v)
                packed.extend(_u64(n) for n in v.shape)
                packed.extend(_u64(n) for n in s)
            elif _abi.PARAM_KINDS[p.kind].is_slice:
                packed.append(_u64(math.prod(v.shape)))
        if self.contract:
            check_contract(self.spec.entry, arrays)
        if self.may_alias:
            check_aliasing(self.spec.entry, arrays, strides)
        return packed, arrays


def _u64(x: int) -> Any:
    return _NP_U64(x)


class _LazyU64:
    """numpy.uint64, bound on first use (numpy is not imported at `import pyoxide`)."""

    def __call__(self, x: int) -> Any:
        import numpy as np

        global _NP_U64
        _NP_U64 = np.uint64
        return np.uint64(x)


_NP_U64: Callable[[int], Any] = _LazyU64()
