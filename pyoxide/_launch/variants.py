"""Variants: a kernel of another crate that runs a plain call of a kernel where it can.

A kernel author declares one in Rust, ``#[variant_of(gemm_bf16)]``, on a kernel with the
same parameters a caller passes; the manifest records it, and
``Module.add_variants(other)`` (pyoxide/_launch/module.py) wires every such kernel of ``other``
to the kernel it names. A plain call (``kernels.gemm_bf16(a, b, c)``) then runs the
first variant that takes it: the variant's own argument rules accept the arguments (its
dtypes, its shape contract, the rules of its tensor maps), they live on a GPU, and the
variant's code runs on that GPU (an ``sm_90a`` build loads on sm_90 only). Anything else
runs the kernel itself, which also explains what is wrong with a call. A configured call
(``kernel[grid, block](...)``, ``.launch(..., grid=...)``) is always the kernel itself,
whose launch it describes. ``Kernel.variant_for`` (pyoxide/_launch/kernel.py) makes that
choice; the compiled launchers follow the same order (a variant's launchers first,
crates/pyoxide-native/src/kernel.rs).

A variant's launch comes from its own manifest entry: its launch policy (e.g.
``persistent_tiles``), its dynamic shared memory (``#[launch(..., shared = N)]``), and
its tensor maps (``#[tensor_maps(maps, a(rows = 128), ...)]``): the TMA descriptors of
some of its 2-D arrays, which :func:`tensor_maps` has the backend encode
(``Backend.tensor_maps``) and keeps per device, addresses and extents, shared with the
kernel's compiled launchers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import backends
from .._manifest import abi as _abi
from ..errors import ArgumentValueError, PyoxideError
from .args import abi_pointer
from .arrays import GPU
from .devices import device_of

if TYPE_CHECKING:
    from .._manifest.reader import KernelSpec, ParamSpec
    from .arrays import ArrayView


#: A call's arguments as one parameter list sees them: their views, the arrays among
#: them, the backend and the device; None where that list refuses them.
Described = tuple[list[Any], list[Any], backends.Backend, int] | None


def describe(plan: Any, name: str, args: Sequence[Any]) -> Described:
    """``args`` through the parameter list of ``plan`` (kernel ``name``'s ArgumentPlan),
    for :meth:`Kernel.variant_for <pyoxide._launch.kernel.Kernel.variant_for>`."""
    try:
        views = plan.views(args)
        _, arrays = plan.pack(args, views)
        backend = backends.select(name, arrays)
        device = 0
        if backend.array_kind == GPU:
            device, _ = device_of(name, backend, arrays, None)
    except PyoxideError:
        return None
    return views, arrays, backend, device


def mapped_ok(spec: KernelSpec, arrays: Sequence[tuple[ParamSpec, ArrayView]]) -> bool:
    """Whether the arrays keep TMA's rules (:func:`check_mapped`): always, for a kernel
    without tensor maps (most variants; asked for each on every plain call)."""
    if not spec.tensor_maps:
        return True
    try:
        check_mapped(spec, arrays)
    except PyoxideError:
        return False
    return True


def check_mapped(spec: KernelSpec, arrays: Sequence[tuple[ParamSpec, ArrayView]]) -> None:
    """TMA's rules for the arrays a tensor map describes: an address and rows that are
    multiples of 16 bytes, no empty extent."""
    mapped = {m.array for m in spec.tensor_maps}
    align = _abi.TMA_ALIGN_BYTES
    for p, v in arrays:
        if p.name not in mapped:
            continue
        row_bytes = v.shape[-1] * v.itemsize
        if v.ptr % align or row_bytes % align or 0 in v.shape:
            raise ArgumentValueError(
                spec.entry, p.name, f"an array TMA can read: its address and its rows "
                f"multiples of {align} bytes, no empty extent",
                f"{v.describe()} at {v.ptr:#x}, rows of {row_bytes} bytes",
                f"pass a fresh array (x.copy()) whose last extent is a multiple of "
                f"{align // v.itemsize}, or call the kernel this one is a variant of",
            )  # fmt: skip


def tensor_maps(
    spec: KernelSpec,
    values: Any,
    backend: backends.Backend,
    device: int,
    stream: Any,
    arrays: Sequence[tuple[ParamSpec, ArrayView]],
) -> list[Any]:
    """The launch ABI words (pointer, length) of ``spec``'s tensor maps for these
    arrays, made by the backend the first time and kept in ``values``
    (``pyoxide._launch._native.DerivedValues``, which the compiled launchers read too)."""
    import numpy as np

    check_mapped(spec, arrays)
    by_name = {p.name: v for p, v in arrays}
    views = [by_name[m.array] for m in spec.tensor_maps]
    key = [device]
    for v in views:
        key += [abi_pointer(v), *v.shape]
    kept = values.get(key)
    if kept is None:
        requests = [
            backends.TensorMapRequest(
                ptr=v.ptr, rows=v.shape[0], cols=v.shape[1], elem_bytes=v.itemsize,
                box_rows=m.box_rows, box_cols=m.box_bytes // v.itemsize,
                swizzle_bytes=m.swizzle_bytes,
            )
            for m, v in zip(spec.tensor_maps, views, strict=True)
        ]  # fmt: skip
        owner, ptr = backend.tensor_maps(spec.entry, device, stream, requests)
        size = len(requests) * _abi.TENSOR_MAP_BYTES
        values.insert(key, ptr, size, owner)
        kept = (ptr, size)
    return [np.uint64(kept[0]), np.uint64(kept[1])]
