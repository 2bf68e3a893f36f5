"""A kernel's launch policy as the manifest records it (oxide-abi ``LaunchPolicy``,
written by ``#[launch(...)]``): the data and its reader. pyoxide/_launch/policy.py applies it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import abi as _abi
from .json_checker import JsonChecker

#: Launch policies (oxide-abi `LaunchPolicy`, `#[launch(...)]`) and their fields besides
#: `kind` (checked against the manifest schema by tests/manifest/test_manifest.py).
LAUNCH_KINDS: Mapping[str, tuple[str, ...]] = {
    "elementwise": ("over", "per_thread", "block"),
    "grid_stride": ("over", "per_thread", "block", "blocks_per_sm"),
    "block_per_element": ("over", "block"),
    "block_per_row": ("over", "cols", "block", "blocks_per_sm"),
    "segments": ("over",),
    "columns": ("over", "per_block", "block"),
    "tiles": ("over", "block", "tile"),
    "persistent_tiles": ("over", "block", "tile", "blocks_per_sm"),
}

#: Fields a policy may leave out (schema 3: `block_per_row` over a 2-D shaped array;
#: schema 10: its `blocks_per_sm`, 0 when left out).
OPTIONAL_FIELDS: Mapping[str, tuple[str, ...]] = {"block_per_row": ("cols", "blocks_per_sm")}


@dataclass(frozen=True)
class LaunchPolicy:
    """A kernel's ``#[launch(...)]``; ``over`` and ``cols`` are parameter indices.
    pyoxide/_launch/policy.py applies it."""

    kind: str
    over: int
    per_thread: int = 1
    block: int = 256
    per_block: int = 1  # columns: the columns of `over` one block's strip covers
    # grid_stride, persistent_tiles: at least 1 (the manifest's); block_per_row: 0 (the
    # default) is one block per row, K > 0 at most K blocks a multiprocessor, each
    # walking rows
    blocks_per_sm: int = 0
    cols: int | None = None
    # tiles, persistent_tiles: the block (x, y, z) and the extents of `over` each block
    # covers (persistent_tiles: each block walks tiles, at most blocks_per_sm per SM)
    block3: tuple[int, int, int] = (1, 1, 1)
    tile: tuple[int, int, int] = (1, 1, 1)
    # block_per_row: the least block of a plain call (None: 128 or the block if smaller).
    # Not in the manifest: a tuned choice's exact block (pyoxide/_launch/tune_space.py).
    least_block: int | None = None


def read_launch_policy(c: JsonChecker, value: Any, w: str, params: Sequence[Any]) -> LaunchPolicy:
    """The manifest's `launch` of a kernel with `params`, checked (`c`: the manifest
    reader's checker, whose errors name the field)."""
    kind = c.choice(
        c.obj(value, w, ["kind"], closed=False)["kind"], w + ".kind", list(LAUNCH_KINDS)
    )
    fields = LAUNCH_KINDS[kind]
    optional = OPTIONAL_FIELDS.get(kind, ())
    v = c.obj(value, w, ["kind", *(f for f in fields if f not in optional)], optional)
    names = [p.name for p in params]
    over = c.choice(v["over"], w + ".over", names)
    if kind in ("tiles", "persistent_tiles"):
        return _read_tiles(c, v, w, params, names.index(over), kind)
    if params[names.index(over)].kind not in (
        "slice",
        "disjoint_slice",
        "mut_slice",
        "atomic_slice",
        "array",
        "disjoint_array",
    ):
        raise c.fail(w + ".over", f"parameter {over!r} is not a slice")
    ints = {f: c.uint(v[f], f"{w}.{f}", 32) for f in fields if f in v and f not in ("over", "cols")}
    may_be_zero = ("blocks_per_sm",) if kind in _abi.BLOCKS_PER_SM_ZERO_KINDS else ()
    most, most_per_sm = _abi.MAX_THREADS_PER_BLOCK, _abi.MAX_BLOCKS_PER_SM
    if (
        any(n == 0 and f not in may_be_zero for f, n in ints.items())
        or ints.get("block", 1) > most
        or ints.get("blocks_per_sm", 0) > most_per_sm
    ):
        raise c.fail(
            w,
            f"per_thread, per_block, block and blocks_per_sm are at least 1 (blocks_per_sm "
            f"of {', '.join(sorted(_abi.BLOCKS_PER_SM_ZERO_KINDS))}: 0, one block a row), "
            f"block at most {most}, blocks_per_sm at most {most_per_sm}",
        )
    cols = None
    if "cols" in v:
        cols = names.index(c.choice(v["cols"], w + ".cols", names))
        if params[cols].kind != "scalar" or params[cols].type in ("f32", "f64", "bool"):
            raise c.fail(w + ".cols", f"parameter {names[cols]!r} is not an integer scalar")
    elif kind == "block_per_row":
        a = getattr(params[names.index(over)], "array", None)
        if a is None or a.rank != 2:
            raise c.fail(w, f"block_per_row without 'cols' needs a 2-D array; {over!r} is not")
    return LaunchPolicy(
        kind,
        names.index(over),
        per_thread=ints.get("per_thread", 1),
        block=ints.get("block", 256),
        blocks_per_sm=ints.get("blocks_per_sm", 0),
        cols=cols,
        per_block=ints.get("per_block", 1),
    )


def _read_tiles(
    c: JsonChecker, v: Any, w: str, params: Sequence[Any], over: int, kind: str
) -> LaunchPolicy:
    a = getattr(params[over], "array", None)
    if a is None or a.rank < 2:
        raise c.fail(w + ".over", f"parameter {params[over].name!r} is not a 2-D or 3-D array")
    three: list[tuple[int, int, int]] = []
    for f in ("block", "tile"):
        xs = [c.uint(x, f"{w}.{f}[{i}]", 32) for i, x in enumerate(c.list_(v[f], f"{w}.{f}"))]
        if len(xs) != 3 or 0 in xs:
            raise c.fail(f"{w}.{f}", "three positive integers (x, y, z)")
        three.append((xs[0], xs[1], xs[2]))
    if three[0][0] * three[0][1] * three[0][2] > _abi.MAX_THREADS_PER_BLOCK:
        raise c.fail(w + ".block", f"at most {_abi.MAX_THREADS_PER_BLOCK} threads")
    block3, tile = three
    per_sm = 1
    if kind == "persistent_tiles":
        per_sm = c.uint(v["blocks_per_sm"], w + ".blocks_per_sm", 32)
        if not 1 <= per_sm <= _abi.MAX_BLOCKS_PER_SM:
            raise c.fail(w + ".blocks_per_sm", f"from 1 to {_abi.MAX_BLOCKS_PER_SM}")
    return LaunchPolicy(kind, over, block=block3[0] * block3[1] * block3[2],
                        blocks_per_sm=per_sm, block3=block3, tile=tile)  # fmt: skip


def read_cluster(c: JsonChecker, value: Any, w: str) -> tuple[int, int, int]:
    """A kernel's ``#[cluster_launch]`` shape (oxide-abi ``KernelDescriptor::cluster``):
    blocks per cluster along x, y and z, as the macro allows them."""
    dims = c.list_(value, w)
    if len(dims) != 3:
        raise c.fail(w, f"must list 3 blocks-per-cluster counts (x, y, z), not {len(dims)}")
    x, y, z = (c.uint(d, f"{w}[{i}]") for i, d in enumerate(dims))
    if min(x, y, z) < 1 or x * y * z > _abi.MAX_CLUSTER_SIZE:
        raise c.fail(w, f"must be at least 1 per axis and {_abi.MAX_CLUSTER_SIZE} blocks in all")
    return x, y, z


@dataclass(frozen=True)
class TensorMapSpec:
    """One TMA tensor map a kernel reads or writes an array through (oxide-abi
    ``TensorMap``, ``#[tensor_maps(maps, a(rows = 128), ...)]``): the 2-D array
    parameter ``array``, copied in boxes of ``box_rows`` rows of ``box_bytes`` bytes,
    swizzled in shared memory over ``swizzle_bytes`` (0: not swizzled)."""

    array: str
    box_rows: int
    box_bytes: int
    swizzle_bytes: int


def read_tensor_maps(
    c: JsonChecker, value: Any, w: str, params: Sequence[Any]
) -> tuple[str, tuple[TensorMapSpec, ...]]:
    """A kernel's ``tensor_maps``: its derived parameter (a ``&[u8]`` after every
    parameter a caller passes) and the maps it holds, in order."""
    v = c.obj(value, w, ["param", "maps"])
    names = [p.name for p in params]
    param = c.choice(v["param"], w + ".param", names)
    p = params[names.index(param)]
    if names.index(param) != len(names) - 1 or p.kind != "slice" or p.type != "u8":
        raise c.fail(w + ".param", f"{param!r} is not a last parameter of type &[u8]")
    maps = []
    for i, m in enumerate(c.list_(v["maps"], w + ".maps")):
        mw = f"{w}.maps[{i}]"
        m = c.obj(m, mw, ["array", "box_rows", "box_bytes", "swizzle_bytes"])
        array = c.choice(m["array"], mw + ".array", names)
        a = getattr(params[names.index(array)], "array", None)
        if a is None or a.rank != 2 or a.layout != "c":
            raise c.fail(mw + ".array", f"parameter {array!r} is not a C-layout 2-D array")
        ints = [c.uint(m[f], f"{mw}.{f}", 32) for f in ("box_rows", "box_bytes", "swizzle_bytes")]
        rows, width, swizzle = ints
        if not (1 <= rows <= _abi.TMA_MAX_BOX and 16 <= width <= _abi.TMA_MAX_BOX
                and width % 16 == 0 and swizzle in (0, 32, 64, 128)
                and (swizzle == 0 or width <= swizzle)):  # fmt: skip
            raise c.fail(mw, "a box of 1-256 rows of 16-256 bytes (a multiple of 16), at most "
                         "the swizzle span (0, 32, 64 or 128 bytes)")  # fmt: skip
        maps.append(TensorMapSpec(array, rows, width, swizzle))
    if not maps:
        raise c.fail(w + ".maps", "at least one map")
    return param, tuple(maps)
