"""Thread-block clusters in the launch policies (pyoxide/_launch/policy.py): a kernel with
``#[cluster_launch(x, y, z)]`` runs in clusters of blocks, so every grid must be a
multiple of the cluster along each axis. An explicit grid that is not is refused; a sized
one is rounded up (the extra blocks find no work, as the last block of any grid finds part
of none), except where the grid has a meaning; a persistent grid is sized in whole
clusters (:func:`persistent_blocks`), one per tile, the blocks of a cluster sharing it.
"""

from __future__ import annotations

from .._manifest import abi as _abi
from .._manifest.reader import KernelSpec
from ..errors import ArgumentValueError

#: A grid, block or cluster extent (x, y, z): the launch modules' one spelling of it.
Dim3 = tuple[int, int, int]


def persistent_blocks(tiles: int, resident: int, cluster: int, active: int = 0) -> int:
    """A persistent grid's blocks for `tiles` tiles where `resident` blocks fit on the
    device at once: a block per tile, up to that many (each walks tiles ``blockIdx.x``,
    ``+ gridDim.x``, …); for a kernel in clusters of `cluster` blocks along x, a cluster
    per tile (its blocks share the tile: a split of its k range), up to the clusters that
    fit (at least one), so the grid is always whole clusters. `active`, where known (not
    0), is how many clusters the device runs at once (the backend's ``active_clusters``):
    fewer than ``resident // cluster`` where a cluster's blocks must share a GPC, and a
    cluster beyond them would start its tiles only when another had finished all of its.
    The compiled launchers compute the same from the rule's fields
    (crates/pyoxide-native/src/launcher.rs; tests/launch/test_persistent_clusters.py holds
    the two to the same grids)."""
    fit = max(1, resident // cluster)
    if active > 0:
        fit = min(fit, active)
    return min(tiles, fit) * cluster


def cluster_x(spec: KernelSpec) -> int:
    """The blocks of `spec`'s cluster, where it spans x alone (a persistent grid's unit);
    else 1 (a cluster across y keeps a block per tile, rounded up by :func:`fit_cluster`
    as any cluster kernel's grid)."""
    c = spec.cluster
    return c[0] if c is not None and c[1:] == (1, 1) else 1


def fit_cluster(spec: KernelSpec, grid: Dim3, given: bool, meaningful: bool) -> Dim3:
    """`grid` for a kernel of `spec.cluster`: as it is when a multiple of the cluster
    along each axis; a sized grid rounded up to one where its blocks may find no work;
    else (`given`, or a grid whose blocks each own an element, row or segment:
    `meaningful`) refused, saying which axis and the grid that would do."""
    name, cluster = spec.entry, spec.cluster
    assert cluster is not None
    if all(g % c == 0 for g, c in zip(grid, cluster, strict=True)):
        return grid
    fitted = tuple(-(-g // c) * c for g, c in zip(grid, cluster, strict=True))
    shape = "x".join(map(str, cluster))
    attr = f"#[cluster_launch({', '.join(map(str, cluster))})]"
    policy = spec.launch
    if given or meaningful:
        got = f"grid {grid}" if given else f"{grid} blocks ({policy.kind if policy else ''})"
        fix = (
            f"pass grid={fitted} (each axis rounded up; the kernel must let the extra "
            f"blocks do nothing), or leave the grid out"
            if given
            else "give it work whose block count is a multiple of the cluster, or launch it "
            f"with an explicit grid={fitted} that the kernel guards"
        )
        raise ArgumentValueError(
            name, "grid", f"a multiple of the kernel's {shape} cluster along each axis ({attr})",
            got, fix,
        )  # fmt: skip
    if any(f > m for f, m in zip(fitted, _abi.MAX_GRID_DIM, strict=True)):
        raise ArgumentValueError(
            name, "grid", f"at most {_abi.MAX_GRID_DIM} blocks once rounded up to the "
            f"{shape} cluster ({attr})", f"{grid} -> {fitted}", "split the work",
        )  # fmt: skip
    return fitted  # type: ignore[return-value]
