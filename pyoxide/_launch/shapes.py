"""Shaped array arguments: the rules for ``Array2<T>``-like parameters and the kernel's
``#[shapes(...)]`` contract, applied by :mod:`._args` before anything is launched, the
same on every backend. Errors name the kernel, the parameter and the dimension.

* Rank: exactly the parameter's (an ``Array2`` takes 2-D arrays only).
* Strides: in whole elements and never negative (a reversed view is refused: copy it).
  ``C`` layout (the default) needs a C-contiguous array; ``Strided`` takes any other
  view (F-order, ``b.T``, slices), zero-copy. An output's elements may not overlap
  (a broadcast view, stride 0, is refused), as each thread owns one.
* Extents: each at most ``MAX_ARRAY_EXTENT`` (thread coordinates are 32-bit), a fixed
  extent of the contract exactly, and one extent per shared name (``k`` in ``a[m, k]``
  and ``b[k, n]``). Zero extents are fine: the launch does nothing.
* Slice lengths (``#[shapes(x[n], y[n], out[n])]``, schema 5): a slice's element count
  is one more extent of its name, or its fixed length exactly. The kernel's entry
  assumes them (no bounds check on ``x[i]`` past ``out``'s), so they are never skipped.

At the ABI an array is its pointer, its extents and its strides in elements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._manifest import abi as _abi
from .._manifest.reader import KernelSpec, ParamSpec
from .._manifest.shape_spec import ArraySpec
from ..errors import ShapeError
from .arrays import ArrayView


def dim_name(param: ParamSpec, axis: int) -> str:
    """The name of `param`'s dimension `axis`: the contract's, or ``a[0]``."""
    assert param.array is not None
    d = param.array.dims[axis]
    return d if isinstance(d, str) else f"{param.name}[{axis}]"


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def element_strides(v: ArrayView) -> tuple[int, ...] | None:
    """Strides in elements (C strides when the view has none), or None when a byte
    stride is not a whole number of elements."""
    if v.strides is None:
        out, acc = [], 1
        for n in reversed(v.shape):
            out.append(acc)
            acc *= n
        return tuple(reversed(out))
    if any(s % v.itemsize for s in v.strides):
        return None
    return tuple(s // v.itemsize for s in v.strides)


def _overlaps(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether two distinct indices reach one element (a sufficient test: each axis's
    stride, smallest first, must step past everything the smaller ones span)."""
    if 0 in shape:
        return False
    reach = 0  # the largest offset the axes so far span
    for n, s in sorted(((n, s) for n, s in zip(shape, strides, strict=True) if n > 1),
                       key=lambda a: a[1]):  # fmt: skip
        if s <= reach:
            return True
        reach += s * (n - 1)
    return False


def span_bytes(v: ArrayView, strides: Sequence[int]) -> int:
    """Bytes from the first element to the end of the last (0 for an empty array)."""
    if 0 in v.shape:
        return 0
    return (sum((n - 1) * s for n, s in zip(v.shape, strides, strict=True)) + 1) * v.itemsize


def check_shaped(kernel: str, p: ParamSpec, v: ArrayView) -> tuple[int, ...]:
    """Check one shaped argument against its parameter's rank and layout; return its
    strides in elements."""
    a = p.array
    assert a is not None
    contract = a.dim_text(p.name)
    if len(v.shape) != a.rank:
        raise ShapeError(
            kernel, p.name, "rank", f"a {a.rank}-D array {contract} ({p.rust_type})",
            f"a {len(v.shape)}-D {v.describe()} (shape {_shape_text(v.shape)})",
            f"pass a {a.rank}-D array; reshape it (x.reshape(...)) if its data is right",
        )  # fmt: skip
    strides = element_strides(v)
    if strides is None:
        raise ShapeError(
            kernel, p.name, dim_name(p, 0), "strides in whole elements",
            f"byte strides {v.strides} for {v.itemsize}-byte elements",
            "copy it into a fresh array (x.copy())",
        )  # fmt: skip
    for axis, (n, s) in enumerate(zip(v.shape, strides, strict=True)):
        if s < 0 and n > 1:
            raise ShapeError(
                kernel, p.name, dim_name(p, axis), "non-negative strides (pyoxide "
                "passes strides unsigned)", f"stride {s} in dimension {axis} "
                f"(a reversed view, strides {strides} elements)",
                "pass a forward copy (numpy/cupy.ascontiguousarray(x))",
            )  # fmt: skip
        if n > _abi.MAX_ARRAY_EXTENT:
            raise ShapeError(
                kernel, p.name, dim_name(p, axis), f"an extent of at most "
                f"{_abi.MAX_ARRAY_EXTENT} (thread coordinates are 32-bit)",
                f"{n} in dimension {axis} (shape {_shape_text(v.shape)})",
                "split the array into pieces along that dimension",
            )  # fmt: skip
        fixed = a.dims[axis]
        if isinstance(fixed, int) and n != fixed:
            raise ShapeError(
                kernel, p.name, str(fixed), f"extent {fixed} in dimension {axis} "
                f"{contract}", f"{n} (shape {_shape_text(v.shape)})",
                f"pass an array of shape with {fixed} in dimension {axis}",
            )  # fmt: skip
    if a.layout == "c" and not v.is_c_contiguous():
        what = "an F-order" if _is_f_contiguous(v.shape, strides) else "a strided"
        axis = next(
            (i for i in range(a.rank - 1, -1, -1)
             if v.shape[i] > 1 and strides[i] != math.prod(v.shape[i + 1 :])), 0
        )  # fmt: skip
        raise ShapeError(
            kernel, p.name, dim_name(p, axis), f"a C-contiguous array ({p.rust_type} "
            "reads rows as slices)", f"{what} {v.describe()} (strides {strides} elements)",
            "pass numpy/cupy.ascontiguousarray(x) (a copy; pyoxide never copies "
            "silently), or declare the parameter with the Strided layout",
        )  # fmt: skip
    if p.mutable and _overlaps(v.shape, strides):
        raise ShapeError(
            kernel, p.name, dim_name(p, 0), "an output whose elements do not overlap "
            "(each thread owns one)", f"a view with strides {strides} over shape "
            f"{_shape_text(v.shape)} (a broadcast or overlapping view)",
            "write into a fresh array (numpy/cupy.empty(shape, dtype))",
        )  # fmt: skip
    # An extent of 0 or 1 never steps its stride: pass 0 (a negative one fits no u64).
    return tuple(s if n > 1 else 0 for n, s in zip(v.shape, strides, strict=True))


def _is_f_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    acc = 1
    for n, s in zip(shape, strides, strict=True):
        if n > 1 and s != acc:
            return False
        acc *= n
    return True


def _extents(p: ParamSpec, v: ArrayView) -> list[tuple[str | int | None, int]]:
    """(contract dimension, extent) per axis of a shaped argument; a slice's length."""
    if p.array is not None:
        return list(zip(p.array.dims, v.shape, strict=True))
    return [(p.length, math.prod(v.shape))]


def check_contract(kernel: str, args: Sequence[tuple[ParamSpec, ArrayView]]) -> None:
    """One extent per shared dimension name across the call's shaped arguments and
    slices with a length (``x[n]``), and a slice's fixed length exactly (a shaped
    array's fixed extents are :func:`check_shaped`'s)."""
    seen: dict[str, tuple[int, ParamSpec, ArrayView]] = {}
    shaped = [(p, v) for p, v in args if p.array is not None or p.length is not None]
    for p, v in shaped:
        for d, n in _extents(p, v):
            if isinstance(d, int) and p.array is None and n != d:
                raise ShapeError(
                    kernel, p.name, str(d), f"{d} elements (the contract is "
                    f"{contract_text(kernel_params(shaped))})", f"{n} (shape "
                    f"{_shape_text(v.shape)})", f"pass an array of {d} elements",
                )  # fmt: skip
            if not isinstance(d, str):
                continue
            first = seen.setdefault(d, (n, p, v))
            if first[0] != n:
                n0, p0, v0 = first
                raise ShapeError(
                    kernel, p.name, d, f"{n0} (as in '{p0.name}')", f"{n}",
                    f"pass arrays whose '{d}' dimensions agree (the contract is "
                    f"{contract_text(kernel_params(shaped))})",
                    detail=f"dimension '{d}' is {n0} in '{p0.name}' (shape "
                    f"{_shape_text(v0.shape)}) but {n} in '{p.name}' (shape "
                    f"{_shape_text(v.shape)})",
                )  # fmt: skip


def kernel_params(shaped: Sequence[tuple[ParamSpec, Any]]) -> list[ParamSpec]:
    return [p for p, _ in shaped]


def contract_text(params: Sequence[ParamSpec]) -> str:
    """``a[m, k], b[k, n], c[m, n]`` (a slice with a length: ``x[n]``)."""
    return ", ".join(
        p.name + (p.array.dim_text(p.name) if p.array is not None else f"[{p.length}]")
        for p in params if p.array is not None or p.length is not None
    )  # fmt: skip


def has_contract(spec: KernelSpec) -> bool:
    """Whether a call needs a cross-check: a dimension name is shared, or a slice has a
    fixed length."""
    names = [d for p in spec.params if p.array for d in p.array.dims if isinstance(d, str)]
    names += [p.length for p in spec.params if isinstance(p.length, str)]
    fixed = any(isinstance(p.length, int) for p in spec.params)
    return fixed or len(names) != len(set(names))


# --- default grids from an output's shape ------------------------------------------


def tile_block(array: ArraySpec, max_threads: int) -> tuple[int, int, int]:
    """A plain call's block for a 2-D or 3-D output: 16×16 threads (8×8×4 for 3-D),
    fewer under tighter launch bounds."""
    b = (8, 8, 4) if array.rank == 3 else (16, 16, 1)
    while b[0] * b[1] * b[2] > max_threads:
        b = (b[0], max(1, b[1] // 2), max(1, b[2] // 2)) if b[1] > 1 else (b[0] // 2, 1, 1)
    return b


def tile_grid(
    kernel: str, p: ParamSpec, shape: Sequence[int], block: Sequence[int]
) -> tuple[int, int, int]:
    """One block per `block` (a tile: x, y, z extents) of `shape`: x over the last
    dimension, y over the one before, z over the first of three."""
    axes = list(reversed(shape)) + [1] * (3 - len(shape))
    grid = tuple(-(-n // b) for n, b in zip(axes, block, strict=True))
    for axis, (g, lim) in enumerate(zip(grid, _abi.MAX_GRID_DIM, strict=True)):
        if g > lim:
            name = dim_name(p, len(shape) - 1 - axis)
            raise ShapeError(
                kernel, p.name, name, f"at most {lim} blocks along grid axis "
                f"{'xyz'[axis]}", f"{g} blocks for extent {axes[axis]}",
                "pass an explicit grid and block, or split the work",
            )  # fmt: skip
    return grid  # type: ignore[return-value]
