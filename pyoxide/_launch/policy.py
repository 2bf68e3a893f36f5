"""Launch policies: the one place that turns a kernel's policy, its arguments and the
device into a grid and a block.

A kernel declares its policy in Rust (``#[launch(...)]``, recorded in the manifest as
oxide-abi's ``LaunchPolicy``); a kernel without one is sized as one thread per element of
its first ``DisjointSlice``/``&mut [T]`` output. :func:`configure` sizes a call without
``[grid, block]`` and refuses an explicit grid that contradicts the policy (a grid that
means something: one block per element, per row, per segment). :func:`plain_rule` gives
the fast launchers the same rule, precomputed, where it is a plain division.

A kernel with ``#[cluster_launch(x, y, z)]`` runs in clusters of blocks, so every grid
must be a multiple of the cluster along each axis (pyoxide/_launch/clusters.py).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Collection, Sequence
from typing import Any

from .._manifest import abi as _abi
from .._manifest.policy_spec import LaunchPolicy
from .._manifest.reader import KernelSpec
from ..errors import ArgumentValueError
from .clusters import Dim3, cluster_x, fit_cluster, persistent_blocks
from .shapes import tile_block, tile_grid

#: Threads per block of a plain call of a kernel without a policy of its own (what
#: `#[launch]` records when it gives no block).
DEFAULT_BLOCK = _abi.DEFAULT_BLOCK
_MAX_GRID = _abi.MAX_GRID_DIM[0]
#: A row kernel's plain block: one warp per this many bytes of row a thread (8 vectors of
#: 16 bytes), from _ROW_LEAST_BLOCK threads up to the policy's block (see _row_block).
_ROW_BYTES_PER_THREAD = 128
_ROW_LEAST_BLOCK = 128
#: Policies whose grid has a meaning: an explicit grid must be exactly theirs.
_GRID_HAS_MEANING = frozenset({"block_per_element", "block_per_row", "segments"})
#: Policies whose plain grid is a division of one array's length (see plain_rule).
_PLAIN_KINDS = frozenset({"elementwise", "block_per_element", "columns"})


def policy_of(spec: KernelSpec) -> LaunchPolicy | None:
    """The kernel's policy, or the default one (elementwise over the first output), or
    None when neither applies (a plain call then needs an explicit configuration)."""
    if spec.launch is not None:
        return spec.launch
    out = next((i for i, p in enumerate(spec.params) if _abi.PARAM_KINDS[p.kind].sizes_grid), None)
    if out is None:
        return None
    array = spec.params[out].array
    if array is not None and array.rank > 1:
        # One thread per element of a 2-D or 3-D output: tiles of one block each.
        b = tile_block(array, max_threads(spec))
        return LaunchPolicy("tiles", out, block=b[0] * b[1] * b[2], block3=b, tile=b)
    return LaunchPolicy("elementwise", out, block=DEFAULT_BLOCK)


def max_threads(spec: KernelSpec) -> int:
    return spec.launch_bounds.max_threads if spec.launch_bounds else _abi.MAX_THREADS_PER_BLOCK


def default_block(spec: KernelSpec) -> int:
    policy = policy_of(spec)
    return _whole_warps(spec, min(policy.block if policy else DEFAULT_BLOCK, max_threads(spec)))


def _whole_warps(spec: KernelSpec, threads: int) -> int:
    """`threads`, rounded down to whole warps (at least one) for a kernel that needs
    them (`spec.whole_warps`)."""
    if spec.whole_warps is None or threads < _abi.WARP_SIZE:
        return threads if spec.whole_warps is None else _abi.WARP_SIZE
    return threads - threads % _abi.WARP_SIZE


def validates_grid(spec: KernelSpec) -> bool:
    """Whether an explicit grid is checked against the arguments (so a configured call
    cannot be checked once, ahead of them): where block b owns element, row or segment b,
    not a row kernel with (or tuned over) ``blocks_per_sm``, whose blocks walk rows."""
    policy = policy_of(spec)
    if policy is None or policy.kind not in _GRID_HAS_MEANING:
        return False
    tuned = [n for n, _ in spec.tune.launch] if spec.tune is not None else []
    return policy.kind != "block_per_row" or not (policy.blocks_per_sm or "blocks_per_sm" in tuned)


def needs_configuration(spec: KernelSpec) -> bool:
    """Whether a plain call (no grid, no block) is refused by :func:`configure`: no policy
    sizes the grid, or the block size is part of the result (``segments``)."""
    policy = policy_of(spec)
    return policy is None or policy.kind == "segments"


def _unclustered(
    spec: KernelSpec, kinds: Collection[str], *, tiled: bool = False, along_x: bool = False
) -> LaunchPolicy | None:
    """The kernel's policy where it is one of `kinds` and a fast launcher may size it:
    not a cluster kernel (configure() rounds its grid up to the cluster), or, where
    `along_x`, one whose cluster spans x alone (the rule sizes its grid in whole
    clusters), and, for a `tiled` policy, a block of whole warps where the kernel needs
    them (configure() refuses the others, with the message); else None."""
    policy = policy_of(spec)
    if policy is None or policy.kind not in kinds:
        return None
    if spec.cluster is not None and not (along_x and spec.cluster[1:] == (1, 1)):
        return None
    if tiled and not _is_whole_warps(spec, policy.block3):
        return None
    return policy


def plain_rule(spec: KernelSpec) -> tuple[int, int, int] | None:
    """``(param, block, elements per block)`` when a plain call launches
    ``ceil(len(param) / elements per block)`` blocks of ``block`` threads, for the fast
    launchers: elementwise policies (``block × per_thread`` elements a block),
    ``block_per_element`` (one) and ``columns`` (``per_block``); None when the grid
    depends on more than that."""
    policy = _unclustered(spec, _PLAIN_KINDS)
    if policy is None:
        return None
    block = default_block(spec)
    per_block = {"elementwise": block * policy.per_thread, "block_per_element": 1,
                 "columns": policy.per_block}[policy.kind]  # fmt: skip
    return policy.over, block, per_block


def stride_rule(spec: KernelSpec) -> tuple[int, int, int, int] | None:
    """``(param, block, elements per block, blocks_per_sm)`` of a ``grid_stride`` policy:
    a plain call launches ``max(1, min(ceil(len(param) / elements per block),
    blocks_per_sm × multiprocessors))`` blocks of ``block`` threads, for the fast
    launchers."""
    policy = _unclustered(spec, ("grid_stride",))
    if policy is None:
        return None
    block = default_block(spec)
    return policy.over, block, block * policy.per_thread, policy.blocks_per_sm


def tile_rule(spec: KernelSpec) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """``(param, block, tile)`` when a plain call launches blocks of `block` threads, one
    per `tile` of a shaped array's extents (x over its last dimension), for the fast
    launchers."""
    policy = _unclustered(spec, ("tiles",), tiled=True)
    if policy is None:
        return None
    return policy.over, policy.block3, policy.tile


def row_rule(spec: KernelSpec) -> tuple[int, int, int, int, int | None, int] | None:
    """``(param, least block, most block, columns per warp, cols, blocks_per_sm)`` when a
    plain call launches one block per row of ``param`` (``block_per_row``; at most
    ``blocks_per_sm × multiprocessors`` blocks where that is not 0), of ``min(most,
    max(least, 32 · ceil(columns / columns per warp)))`` threads, for the fast launchers.
    A row is ``cols`` (an argument dividing ``len(param)``) or the 2-D ``param``'s rows."""
    policy = _unclustered(spec, ("block_per_row",))
    if policy is None:
        return None
    most = default_block(spec)
    return (policy.over, _least_row_block(policy, most), most, _columns_per_warp(spec, policy),
            policy.cols, policy.blocks_per_sm)  # fmt: skip


def _least_row_block(policy: LaunchPolicy, most: int) -> int:
    """A row kernel's smallest plain block: 128 threads (or its largest block if that
    is smaller), unless the policy fixes it (a tuned block, pyoxide/_launch/tune_space.py)."""
    return min(policy.least_block or _ROW_LEAST_BLOCK, most)


def persistent_rule(
    spec: KernelSpec,
) -> tuple[int, tuple[int, int, int], tuple[int, int, int], int, int] | None:
    """``(param, block, tile, blocks_per_sm, cluster)`` of a ``persistent_tiles`` policy:
    a plain call launches ``persistent_blocks(tiles, blocks_per_sm × multiprocessors,
    cluster, active clusters)`` blocks (pyoxide/_launch/clusters.py), for the fast
    launchers (``cluster``: the blocks of a cluster along x, 1 without one)."""
    policy = _unclustered(spec, ("persistent_tiles",), tiled=True, along_x=True)
    if policy is None:
        return None
    return policy.over, policy.block3, policy.tile, policy.blocks_per_sm, cluster_x(spec)


def configure(
    spec: KernelSpec,
    lengths: Sequence[int | None],
    args: Sequence[Any],
    grid: Dim3 | None,
    block: Dim3 | None,
    multiprocessors: Callable[[], int],
    shapes: Sequence[tuple[int, ...] | None] = (),
    active_clusters: Callable[[Dim3], int] = lambda block: 0,
) -> tuple[Dim3, Dim3]:
    """The launch's (grid, block), from the call's (grid, block) if given (already
    read as 3-tuples). `lengths` has each array argument's element count (None for
    scalars), `shapes` its shape; they may be empty when `grid` is given and not
    checked against the arguments. `multiprocessors()` is called only when the policy
    needs it; `active_clusters(block)` (the clusters of the kernel the device runs at
    once, 0 where unknown) only for a persistent grid of clusters."""
    policy = policy_of(spec)
    if spec.launch is not None and spec.launch.kind in _abi.ONE_D_POLICIES:
        _one_d(spec, "grid", grid)
        _one_d(spec, "block", block)
    block3 = _block(spec, policy, block, args, shapes)
    _check_whole_warps(spec, block3)
    grid3 = _grid(
        spec, policy, block3, lengths, args, grid, multiprocessors, shapes, active_clusters
    )
    if spec.cluster is None:
        return grid3, block3
    return fit_cluster(spec, grid3, given=grid is not None, meaningful=validates_grid(spec)), block3


def _block(
    spec: KernelSpec,
    policy: LaunchPolicy | None,
    block: Dim3 | None,
    args: Sequence[Any],
    shapes: Sequence[tuple[int, ...] | None],
) -> Dim3:
    """The block of :func:`configure`'s launch: `block` as given, within the kernel's
    thread limit, else the policy's."""
    name = spec.entry
    if block is None:
        if policy is not None and policy.kind == "segments":
            over = spec.params[policy.over].name
            raise ArgumentValueError(
                name, "block", f"an explicit block: each block handles blockDim.x elements "
                f"of '{over}', so the block size is part of the result", "no block",
                f"call {name}.launch(..., block=256, ...) or {name}[grid, 256](...)",
            )  # fmt: skip
        if policy is not None and policy.kind in ("tiles", "persistent_tiles"):
            return policy.block3
        if policy is not None and policy.kind == "block_per_row":
            return (_row_block(spec, policy, args, shapes), 1, 1)
        return (default_block(spec), 1, 1)
    threads = block[0] * block[1] * block[2]
    limit = max_threads(spec)
    if threads > limit:
        raise ArgumentValueError(
            name, "block", f"at most {limit} threads per block "
            "(the kernel's launch bounds or the CUDA limit)",
            f"{block} = {threads} threads", f"pass block={limit} or fewer",
        )  # fmt: skip
    return block


def _grid(
    spec: KernelSpec,
    policy: LaunchPolicy | None,
    block3: Dim3,
    lengths: Sequence[int | None],
    args: Sequence[Any],
    grid: Dim3 | None,
    multiprocessors: Callable[[], int],
    shapes: Sequence[tuple[int, ...] | None],
    active_clusters: Callable[[Dim3], int],
) -> Dim3:
    """The grid of :func:`configure`'s launch of blocks of `block3`, before a cluster's
    rounding: `grid` as given where the policy gives the grid no meaning, else the
    policy's (an explicit `grid` checked against it)."""
    name = spec.entry
    if grid is not None and not validates_grid(spec):
        return grid
    if policy is None:
        raise ArgumentValueError(
            name, None, "an explicit launch configuration (the kernel has no "
            "DisjointSlice or &mut [T] output to size the grid from, and no #[launch] policy)",
            "none", f"launch it as {name}[grid, block](...) or {name}.launch(..., grid=, block=)",
        )  # fmt: skip
    if policy.kind == "tiles":
        shape = shapes[policy.over]
        assert shape is not None
        # A declared #[launch(tiles(..))] fixes each block's tile; the default one (one
        # thread per element) covers as many elements as the block has threads.
        tile = policy.tile if spec.launch is not None else block3
        return tile_grid(name, spec.params[policy.over], shape, tile)
    if policy.kind == "persistent_tiles":
        shape = shapes[policy.over]
        assert shape is not None
        g = tile_grid(name, spec.params[policy.over], shape, policy.tile)
        tiles = g[0] * g[1] * g[2]
        resident, cluster = policy.blocks_per_sm * multiprocessors(), cluster_x(spec)
        active = active_clusters(block3) if cluster > 1 else 0
        return (persistent_blocks(tiles, resident, cluster, active), 1, 1)
    blocks, what = _blocks(spec, policy, lengths, args, block3, multiprocessors, shapes)
    over = spec.params[policy.over].name
    if grid is not None:
        if grid[0] * grid[1] * grid[2] != blocks:
            raise ArgumentValueError(
                name, "grid", f"{blocks} block(s): {what}",
                f"{grid} = {grid[0] * grid[1] * grid[2]} blocks",
                f"leave the grid out ({name}.launch(..., block=...)) or pass grid={blocks}",
            )  # fmt: skip
        return grid
    if blocks > _MAX_GRID:
        raise ArgumentValueError(
            name, over, f"at most {_MAX_GRID} blocks of work", f"{lengths[policy.over]} elements",
            "split the work, or pass an explicit grid",
        )  # fmt: skip
    return (blocks, 1, 1)


def _is_whole_warps(spec: KernelSpec, block: Sequence[int]) -> bool:
    """Whether `block` is one `spec` may run with (see :func:`_check_whole_warps`)."""
    return spec.whole_warps is None or math.prod(block) % _abi.WARP_SIZE == 0


def _check_whole_warps(spec: KernelSpec, block: Dim3) -> None:
    """A kernel whose code runs a warp collective over the full warp (recorded by
    `cargo oxide build` as `whole_warps`) gets whole warps, or nothing: in a partial
    last warp its shuffles would read lanes that do not exist (undefined in PTX; the
    emulator traps)."""
    if _is_whole_warps(spec, block):
        return
    threads, warp = block[0] * block[1] * block[2], _abi.WARP_SIZE
    down, up = threads - threads % warp, threads - threads % warp + warp
    sizes = f"{down} or {up}" if down else f"{up}"
    raise ArgumentValueError(
        spec.entry, "block", f"a whole number of warps (a multiple of {warp} threads): the "
        f"kernel's code runs {spec.whole_warps} over the full warp (warp::reduce, "
        "block::reduce and their kin do), which a partial last warp cannot take part in",
        f"block {block} = {threads} threads",
        f"pass a block of {sizes} threads, or leave the block out; to keep this block, "
        "reduce over the lanes that exist (warp::reduce_partial(v, warp::live_lanes_1d(), op))",
    )  # fmt: skip


def _one_d(spec: KernelSpec, what: str, dims: Dim3 | None) -> None:
    """A 1-D policy's launches are 1-D (every policy but ``tiles``): the kernel's entry
    assumes so (blockDim.y and the rest are 1, which lets ``thread::index_1d()`` skip its
    check), and a block-per-element or per-row kernel that reads ``blockIdx_x()`` is
    right only in a 1-D grid, so any other grid or block is refused here, before
    launch."""
    if dims is None or dims[1:] == (1, 1):
        return
    name, kind = spec.entry, spec.launch.kind if spec.launch else ""
    total = dims[0] * dims[1] * dims[2]
    why = (
        " (block b handles element or row b, its blockIdx.x: a 2-D grid would repeat "
        "blockIdx.x along y)"
        if what == "grid" and validates_grid(spec)
        else ""
    )
    raise ArgumentValueError(
        name, what, f"a 1-D {what} (y and z extents 1): the kernel's "
        f"#[launch({kind}(..))] policy is 1-D{why}", f"{what} {dims}",
        f"pass {what}={total} (the same {'blocks' if what == 'grid' else 'threads'} "
        "in one dimension)",
    )  # fmt: skip


def _row_block(
    spec: KernelSpec, policy: LaunchPolicy, args: Sequence[Any],
    shapes: Sequence[tuple[int, ...] | None],
) -> int:  # fmt: skip
    """A row kernel's block when the call gives none: one warp per 4 KiB of row, so
    each thread holds 128 bytes of it (8 vectors of 16 bytes, 32 `f32`: what
    `block_share().cache::<8>()` keeps in registers), between 128 threads (short rows
    still get a full block's bandwidth) and the policy's `block` (its maximum). The row
    length is the `cols` argument, or a 2-D `over`'s second extent."""
    if policy.cols is None:
        shape = shapes[policy.over]
        assert shape is not None and len(shape) == 2
        cols = shape[1]
    else:
        cols = operator.index(args[policy.cols])
    warps = -(-max(cols, 1) // _columns_per_warp(spec, policy))
    most = default_block(spec)
    return max(min(_abi.WARP_SIZE * warps, most), _least_row_block(policy, most))


def _columns_per_warp(spec: KernelSpec, policy: LaunchPolicy) -> int:
    """A row kernel's plain block has one warp per 4 KiB of row: each thread holds
    _ROW_BYTES_PER_THREAD of it (8 vectors of 16 bytes, what `cache::<8>()` keeps in
    registers), 1024 columns of `f32` a warp."""
    p = spec.params[policy.over]
    itemsize = p.record.size if p.record is not None else _abi.SCALARS[p.type].size
    return max(1, _ROW_BYTES_PER_THREAD * _abi.WARP_SIZE // itemsize)


def _blocks(
    spec: KernelSpec,
    policy: LaunchPolicy,
    lengths: Sequence[int | None],
    args: Sequence[Any],
    block3: Dim3,
    multiprocessors: Callable[[], int],
    shapes: Sequence[tuple[int, ...] | None],
) -> tuple[int, str]:
    """The policy's block count for these arguments, and what it means (for messages)."""
    n = lengths[policy.over]
    assert n is not None
    over = spec.params[policy.over].name
    threads = block3[0] * block3[1] * block3[2]
    kind = policy.kind
    if kind == "elementwise":
        return -(-n // (threads * policy.per_thread)), ""
    if kind == "grid_stride":
        cover = -(-n // (threads * policy.per_thread))
        return max(1, min(cover, policy.blocks_per_sm * multiprocessors())), ""
    if kind == "block_per_element":
        return n, f"one per element of '{over}' ({n})"
    if kind == "segments":
        return -(-n // threads), f"one per {threads} elements of '{over}' ({n})"
    if kind == "columns":  # any 1-D grid: the kernel strides over its strips
        return -(-n // policy.per_block), ""
    assert kind == "block_per_row"
    if policy.cols is None:  # a 2-D shaped `over`
        shape = shapes[policy.over]
        assert shape is not None
        rows, cols = shape[0], shape[1]
    else:
        cols_name = spec.params[policy.cols].name
        cols = operator.index(args[policy.cols])
        if cols <= 0 or n % cols:
            raise ArgumentValueError(
                spec.entry, over, f"a row-major matrix of rows of {cols_name} elements",
                f"{n} elements with {cols_name}={cols}",
                f"pass {cols_name} = the row length, which divides len({over})",
            )  # fmt: skip
        rows = n // cols
    if policy.blocks_per_sm:  # the kernel walks rows: no more blocks than fill the SMs
        return min(rows, policy.blocks_per_sm * multiprocessors()), ""
    return rows, f"one per row of '{over}' ({rows} rows of {cols})"


def lengths_of(views: Sequence[Any]) -> list[int | None]:
    """Element counts of the array arguments' views (None for scalars)."""
    return [None if v is None else math.prod(v.shape) for v in views]
