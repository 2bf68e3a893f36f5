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
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .. import backends
from .._manifest import abi as _abi
from ..errors import ArgumentValueError, PyoxideError
from .args import abi_pointer
from .arrays import GPU
from .devices import device_of

if TYPE_CHECKING:
    from .._manifest.reader import KernelSpec, ParamSpec
    from .arrays import ArrayView


class Candidate(Protocol):
    """What :func:`first_taking` asks of a variant (a ``Kernel``, pyoxide/_launch/kernel.py,
    which imports this module)."""

    name: str
    spec: KernelSpec
    variant_on_host: bool

    @property
    def plan(self) -> Any: ...
    @property
    def variants(self) -> Sequence[Any]: ...
    def takes(self, args: Sequence[Any], views: Sequence[Any]) -> bool: ...
    def runs_on(self, backend: backends.Backend, device: int) -> bool: ...
    def variant_for(self, args: Sequence[Any]) -> Any: ...


_C = TypeVar("_C", bound=Candidate)

#: One call's arguments as a parameter list sees them: their views, the arrays among
#: them, the backend and the device; None where that list refuses them.
_Described = tuple[list[Any], list[Any], "backends.Backend", int] | None


def first_taking(variants: Sequence[_C], args: Sequence[Any]) -> _C | None:
    """The first of ``variants`` that takes a plain call with ``args``
    (:meth:`Kernel.variant_for <pyoxide._launch.kernel.Kernel.variant_for>`).

    The arguments are described and checked once per parameter list, not once per
    variant: a kernel's variants mostly share one (its tuned choices are instances of
    one generic kernel, pyoxide/_launch/args.py interns their lists), and describing
    every argument for each of attention's 32 tuned choices in turn cost 3 ms a call
    (H100, 2026-12-06)."""
    described: dict[int, _Described] = {}
    for variant in variants:
        plan = variant.plan
        key = id(plan.params)  # interned: one tuple per distinct list, kept alive
        if key not in described:
            described[key] = _describe(variant, args)
        found = described[key]
        if found is None:
            continue
        views, arrays, backend, device = found
        if backend.array_kind != GPU and not variant.variant_on_host:
            continue
        if variant.spec.tensor_maps:
            try:
                check_mapped(variant.spec, arrays)
            except PyoxideError:
                continue
        if variant.takes(args, views) and variant.runs_on(backend, device):
            # A variant's own variants (a tuned variant's choices) come first.
            inner: _C | None = variant.variant_for(args) if variant.variants else None
            return inner or variant
    return None


def _describe(variant: Candidate, args: Sequence[Any]) -> _Described:
    """``args`` through ``variant``'s parameter list (None: it refuses them)."""
    plan = variant.plan
    try:
        views = plan.views(args)
        _, arrays = plan.pack(args, views)
        backend = backends.select(variant.name, arrays)
        device = 0
        if backend.array_kind == GPU:
            device, _ = device_of(variant.name, backend, arrays, None)
    except PyoxideError:
        return None
    return views, arrays, backend, device


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
