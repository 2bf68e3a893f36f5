"""A kernel's fast description: what its compiled launcher needs to know, in one value.

:func:`fast_plan` reads it from the kernel's manifest entry once; a backend that has a
compiled launcher (``Backend.fast_launcher``) takes it as it is, so a launch option is one
field here and its reader in crates/pyoxide-native/src/plan.rs. The launcher takes a
subset of the calls :mod:`._args` accepts and packs them into the same bytes
(tests/launch/test_fast_path.py); a kernel whose calls it cannot pack has no plan (None) and
every call takes the general path.

Dimension codes: -1 any extent, ``n >= 0`` exactly ``n``, ``-2 - id`` the shared name
``id`` (``k`` in ``a[m, k]`` and ``b[k, n]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._manifest import abi as _abi
from .._manifest.reader import KernelSpec, ParamSpec
from . import policy as _policy
from .records import lane_count

#: Shared dimension names a compiled launcher binds at most (its MAX_NAMES).
MAX_NAMES = 8


@dataclass(frozen=True, slots=True)
class FastParam:
    """One parameter as the compiled launcher packs it."""

    type: str  # the Rust scalar type, or the element type of an array
    array: bool = False
    mutable: bool = False
    dims: tuple[int, ...] | None = None  # a shaped array's dimension codes
    length: int = -1  # a slice's length contract, coded as a dimension
    # The extra rules of an array a tensor map describes (TMA's): the address a
    # multiple of `align` bytes, the rows a multiple of `pitch` bytes, no empty extent.
    align: int = 0
    pitch: int = 0
    nonzero: bool = False
    # A parameter no caller passes (a tensor map's bytes): after the passed ones.
    derived: bool = False
    # A record of integers by value (`[u64; 3]`, from a tuple or list): (how many, its
    # alignment in the parameter buffer, the PTX's `.param .align A .b8 p[N]`).
    lanes: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class GridRule:
    """How a plain call is sized: ``elements``, ``ceil(len(param) / per_block)`` blocks;
    ``stride``, ``max(1, min(ceil(len(param) / per_block), blocks_per_sm ×
    multiprocessors))`` blocks; ``tiles``, one block per ``tile`` of the shaped ``param``
    (x over its last extent); ``persistent``, ``min(tiles, max(1, blocks_per_sm ×
    multiprocessors // cluster)) × cluster`` blocks on x (``cluster``: blocks per cluster
    along x, 1 for a kernel without one; no more clusters than the device runs at once,
    where its backend says: clusters.persistent_blocks); ``rows``, one block
    per row of ``param`` (of the integer argument ``cols`` elements, which divides its
    length; ``cols`` -1: the 2-D ``param``'s rows; with ``blocks_per_sm`` > 0, at most
    ``blocks_per_sm × multiprocessors`` blocks), of ``min(block.x, max(least_block,
    32 · ceil(row length / columns_per_warp)))`` threads."""

    kind: str
    param: int
    block: tuple[int, int, int]
    tile: tuple[int, int, int] = (1, 1, 1)
    per_block: int = 1
    blocks_per_sm: int = 1
    least_block: int = 1
    columns_per_warp: int = 1
    cols: int = -1
    cluster: int = 1

    @property
    def needs_multiprocessors(self) -> bool:
        """Whether the grid depends on the device's multiprocessor count, which the
        backend passes to the launcher it builds."""
        return self.kind in ("stride", "persistent") or (
            self.kind == "rows" and self.blocks_per_sm > 0
        )


@dataclass(frozen=True, slots=True)
class Derived:
    """A derived parameter: ``param`` is made from the arrays ``sources``; the values
    made so far, shared with the kernel's launchers, in ``values``
    (``pyoxide._launch._native.DerivedValues``)."""

    param: int
    sources: tuple[int, ...]
    values: Any


@dataclass(frozen=True, slots=True)
class FastPlan:
    kernel: str
    params: tuple[FastParam, ...]
    grid: GridRule | None  # None: only configured calls take the fast path
    shared_mem: int = 0  # dynamic shared memory of a plain call
    derived: Derived | None = None
    # A tuned choice's bucket: (param, axis, low, high) per key extent; the launcher takes
    # a call only when low < extent <= high for each (pyoxide/_launch/tune_space.py).
    bucket: tuple[tuple[int, int, int, int], ...] = ()
    # `#[dependent_launch]`: launch with programmatic stream serialisation (unless
    # PYOXIDE_DEPENDENT_LAUNCH is 0: pyoxide/backends/cupy/_native.py's `launcher`).
    dependent: bool = False


def fast_plan(spec: KernelSpec, derived_values: Any = None) -> FastPlan | None:
    """The fast description of ``spec``, or None when no call of it can take the
    compiled path (raw pointers, records other than arrays of integers by value,
    half-precision scalars, contracts the launcher does not bind). ``derived_values``
    holds a variant's tensor maps (see :func:`pyoxide._launch.variants.tensor_map_sources`)."""
    names: dict[str, int] = {}
    params: list[FastParam] = []
    mapped = {m.array: m for m in spec.tensor_maps}
    for p in spec.params:
        if p.name == spec.maps_param:
            params.append(FastParam("u8", array=True, derived=True))
            continue
        param = _param(p, names, mapped.get(p.name))
        if param is None or len(names) > MAX_NAMES:
            return None
        params.append(param)
    derived = None
    if spec.maps_param is not None:
        if derived_values is None:
            return None
        index = [p.name for p in spec.params]
        sources = tuple(index.index(m.array) for m in spec.tensor_maps)
        derived = Derived(index.index(spec.maps_param), sources, derived_values)
    return FastPlan(spec.entry, tuple(params), _grid(spec), spec.shared_bytes, derived,
                    dependent=spec.dependent_launch)  # fmt: skip


def _param(p: ParamSpec, names: dict[str, int], mapped: Any) -> FastParam | None:
    if p.record is not None:
        return _lanes(p)
    if p.takes_address:
        return None  # raw pointers: the general path
    if not p.is_array:
        if p.type in ("f16", "bf16"):
            return None  # rounding a float to a half is the general path's (_half.py)
        return FastParam(p.type)

    def code(d: str | int | None) -> int:
        if d is None:
            return -1
        if isinstance(d, int):
            return d if d < 2**63 else -(2**62)  # no array has that extent: unbindable
        return -2 - names.setdefault(d, len(names))

    dims = None if p.array is None else tuple(code(d) for d in p.array.dims)
    if dims is not None and p.array is not None and p.array.layout != "c" and mapped:
        return None
    if any(d == -(2**62) for d in (*(dims or ()), code(p.length))):
        return None  # a length no array has (the general path explains)
    align = pitch = 0
    if mapped is not None:
        align, pitch = _abi.TMA_ALIGN_BYTES, _abi.TMA_ALIGN_BYTES
    return FastParam(
        p.type, array=True, mutable=p.mutable, dims=dims, length=code(p.length),
        align=align, pitch=pitch, nonzero=mapped is not None,
    )  # fmt: skip


def _lanes(p: ParamSpec) -> FastParam | None:
    """An array of integers by value (attention's stride records, ``[u64; 3]``); other
    records (structs, tuples, floats, nested arrays, slices of records:
    pyoxide/_manifest/records.py) take the general path, which reads their bytes."""
    layout, scalar = p.record, _abi.SCALARS[p.type]
    if layout is None or p.kind != "value" or scalar.kind not in "iu":
        return None
    count = lane_count(p)
    if not count or layout.rust_type.replace(" ", "") != f"[{p.type};{count}]":
        return None
    # The PTX aligns `[T; N]` as T (LLVM's ABI alignment, the compiler's `align_of`): a
    # record laid out otherwise is not one this launcher knows how to place.
    if layout.align != scalar.size:
        return None
    return FastParam(p.type, lanes=(count, layout.align))


def _grid(spec: KernelSpec) -> GridRule | None:
    """A plain call's grid, where it is a division of the arguments' extents (the
    launch policy's rule, pyoxide/_launch/policy.py); None where it needs more."""
    rule = _policy.plain_rule(spec)
    if rule is not None:
        param, block, per_block = rule
        return GridRule("elements", param, (block, 1, 1), per_block=per_block)
    tiles = _policy.tile_rule(spec)
    if tiles is not None:
        param, block3, tile = tiles
        b, t = tuple(block3), tuple(tile)
        return GridRule("tiles", param, (b[0], b[1], b[2]), (t[0], t[1], t[2]))
    stride = _policy.stride_rule(spec)
    if stride is not None:
        param, block, per_block, per_sm = stride
        return GridRule("stride", param, (block, 1, 1), per_block=per_block, blocks_per_sm=per_sm)
    rows = _policy.row_rule(spec)
    if rows is not None:
        param, least, most, columns, cols, per_sm = rows
        return GridRule("rows", param, (most, 1, 1), least_block=least, blocks_per_sm=per_sm,
                        columns_per_warp=columns, cols=-1 if cols is None else cols)  # fmt: skip
    persistent = _policy.persistent_rule(spec)
    if persistent is not None:
        param, block3, tile, per_sm, cluster = persistent
        b, t = tuple(block3), tuple(tile)
        return GridRule("persistent", param, (b[0], b[1], b[2]), (t[0], t[1], t[2]),
                        blocks_per_sm=per_sm, cluster=cluster)  # fmt: skip
    return None


def fast_scalar_types() -> dict[type, str]:
    """The NumPy scalar types a compiled launcher reads by value, with their kind ('f',
    'i', 'u', 'b'): a subset of what :mod:`._args` accepts for a scalar parameter (NumPy
    floats, integers and bools), by exact type. A 0-d NumPy array stands for its element."""
    import numpy as np

    names = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
             "uint16", "uint32", "uint64", "bool_")  # fmt: skip
    return {getattr(np, n): np.dtype(getattr(np, n)).kind for n in names}
