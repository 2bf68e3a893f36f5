"""A persistent kernel in clusters (kernels_sm90a's split-K GEMM instances,
``#[cluster_launch(SPLIT)]`` beside ``#[launch(persistent_tiles(...))]``): a plain call
launches whole clusters, one per tile, as many as the device holds at once
(pyoxide/_launch/clusters.py: ``persistent_blocks``: no more than its driver says run at
once), and the compiled launcher sizes it the same (crates/pyoxide-native/src/launcher.rs),
on the fake ``cupy`` of tests/launch/test_fast_path.py. A cluster that spans y has no
compiled rule: the general path rounds its grid as for any cluster kernel. Last,
kernels_sm90a's own split instances from their manifest entries, on both paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import pytest
from helpers import fake_cupy
from helpers.bundled import sm90a_kernels_manifest
from helpers.fake_launch import (
    FakeNdarray,
    assert_same_launch,
    fake_native,
    native_installed,
    warm_up,
)
from helpers.fixtures import kernel, load_with_entry, param
from test_variants import MapsRecorded

import pyoxide
from pyoxide._launch.clusters import persistent_blocks
from pyoxide.errors import ArgumentValueError

native = pytest.fixture(fake_native, name="native")


def shaped(name: str, kind: str, dims: list[str]) -> dict[str, Any]:
    return {**param(name, kind, "f32", kind == "disjoint_array"),
            "array": {"layout": "c", "dims": dims}}  # fmt: skip


def persistent(entry: str, cluster: list[int] | None) -> dict[str, Any]:
    """A GEMM-shaped kernel of 128×128 tiles of c, 384 threads a block, in `cluster`."""
    arrays = [shaped("a", "array", ["m", "k"]), shaped("b", "array", ["k", "n"]),
              shaped("c", "disjoint_array", ["m", "n"])]  # fmt: skip
    launch = {"kind": "persistent_tiles", "over": "c", "block": [384, 1, 1],
              "tile": [128, 128, 1], "blocks_per_sm": 1}  # fmt: skip
    return {**kernel(entry, arrays), "launch": launch, "cluster": cluster}


def gemm(m: int, n: int, k: int = 64) -> tuple[FakeNdarray, ...]:
    return FakeNdarray((m, k)), FakeNdarray((k, n)), FakeNdarray((m, n))


@pytest.mark.parametrize(
    ("tiles", "resident", "cluster", "active", "blocks"),
    [
        (16, 132, 1, 0, 16), (500, 132, 1, 0, 132),  # a block per tile, up to the device
        (32, 132, 4, 0, 128), (33, 132, 4, 0, 132), (500, 132, 4, 0, 132),
        (500, 132, 2, 0, 132), (500, 130, 4, 0, 128),  # whole clusters only
        (5, 3, 4, 0, 4),  # fewer blocks fit than a cluster has: still one cluster
        (0, 132, 4, 0, 0),  # no tile, no block
        # the clusters the device runs at once, where its backend says (an H200 with a
        # 230 KiB block an SM: 30 of 4, 39 of 3)
        (500, 132, 4, 30, 120), (112, 132, 3, 39, 117), (16, 132, 4, 30, 64),
        (500, 132, 4, 40, 132),  # more than the SMs hold: the SM count still binds
    ],
)  # fmt: skip
def test_a_persistent_grid_is_whole_clusters_one_per_tile(
    tiles: int, resident: int, cluster: int, active: int, blocks: int
) -> None:
    assert persistent_blocks(tiles, resident, cluster, active) == blocks


@pytest.mark.parametrize("split", [2, 4])
def test_the_compiled_rule_carries_the_cluster(tmp_path: Path, split: int) -> None:
    k = load_with_entry(tmp_path, persistent(f"mm_{split}", [split, 1, 1]))
    assert k.spec.cluster == (split, 1, 1)
    rule = k.fast_plan.grid
    assert rule is not None and (rule.kind, rule.cluster, rule.tile) == (
        "persistent", split, (128, 128, 1),
    )  # fmt: skip


@pytest.mark.parametrize("split", [1, 2, 4])
@pytest.mark.parametrize("sms", [132, 7])
@pytest.mark.parametrize(
    ("m", "n"), [(16, 4096), (128, 14336), (200, 4104), (1, 8), (4096, 4096), (300, 200)]
)
def test_a_plain_call_launches_as_the_general_path_does(
    native, tmp_path: Path, split: int, sms: int, m: int, n: int
) -> None:
    """Both paths launch `persistent_blocks(tiles, sms, split)` blocks, a multiple of the
    cluster, with the same parameter bytes."""
    fake, driver = native
    fake.multiprocessors = sms
    cluster = None if split == 1 else [split, 1, 1]
    k = load_with_entry(tmp_path, persistent(f"mm_{split}", cluster))
    warm_up(k, *gemm(128, 128))
    general, compiled = len(fake.launches), len(driver.launches)
    args = gemm(m, n)
    k(*args)
    assert len(fake.launches) == general, "the compiled launcher declined it"
    k.launch(*args)  # the general path
    (fast,) = driver.launches[compiled:]
    slow = fake.launches[-1]
    assert_same_launch(fast, slow)
    tiles = -(-m // 128) * -(-n // 128)
    assert slow["grid"] == (persistent_blocks(tiles, sms, split), 1, 1)
    assert slow["grid"][0] % split == 0 and slow["block"] == (384, 1, 1)


@pytest.mark.parametrize("split", [2, 4])
@pytest.mark.parametrize(("m", "n", "clusters"), [(4096, 4096, 7), (128, 512, 4)])
def test_no_more_clusters_than_the_device_runs_at_once(
    native, tmp_path: Path, split: int, m: int, n: int, clusters: int
) -> None:
    """Where the driver says fewer clusters run at once than SMs ÷ cluster (a cluster's
    blocks share a GPC, and GPCs strand SMs), both paths launch no more (here 7), or one
    per tile where there are fewer tiles; the driver is asked with the kernel's cluster,
    block and shared memory."""
    fake, driver = native
    fake.active_clusters = 7
    k = load_with_entry(tmp_path, persistent(f"mm_{split}", [split, 1, 1]))
    warm_up(k, *gemm(128, 128))
    compiled = len(driver.launches)
    args = gemm(m, n)
    k(*args)
    k.launch(*args)  # the general path
    (fast,) = driver.launches[compiled:]
    slow = fake.launches[-1]
    assert_same_launch(fast, slow)
    assert slow["grid"] == (clusters * split, 1, 1)
    asked = {query[1:] for query in fake.occupancy_queries}
    assert asked == {((split, 1, 1), (384, 1, 1), k.spec.shared_bytes)}


def test_a_cluster_across_y_takes_the_general_path(native, tmp_path: Path) -> None:
    """No compiled rule; the general path rounds the grid's y up to the cluster's."""
    fake, driver = native
    k = load_with_entry(tmp_path, persistent("mm_2x2", [2, 2, 1]))
    assert k.fast_plan is None or k.fast_plan.grid is None
    for _ in range(2):
        k(*gemm(300, 200))
    assert driver.launches == []
    assert fake.launches[-1]["grid"] == (6, 2, 1)  # 6 tiles, y rounded up to 2


def test_an_explicit_grid_must_be_whole_clusters(native, tmp_path: Path) -> None:
    fake, _ = native
    k = load_with_entry(tmp_path, persistent("mm_4", [4, 1, 1]))
    with pytest.raises(ArgumentValueError, match="multiple of the kernel's 4x1x1 cluster"):
        k[6, 384](*gemm(300, 200))
    k[8, 384](*gemm(300, 200))
    assert fake.launches[-1]["grid"] == (8, 1, 1)


@pytest.mark.parametrize("entry", ["gemm_bf16_sm90_128_4_128", "gemm_bf16_bf16_sm90_256_2_64"])
def test_a_bundled_split_instance_launches_whole_clusters_on_both_paths(entry: str) -> None:
    """kernels_sm90a's split-K instances, from their real manifest entries (their tensor
    maps recorded, not encoded): the general launch, then the compiled launcher's, with the
    same grid of whole clusters, block, shared memory and bytes."""
    fake = fake_cupy.FakeCuda()
    out = "float32" if entry.startswith("gemm_bf16_sm90") else ml_dtypes.bfloat16
    m, n, k = 16, 4096, 4096
    with native_installed(fake, backend_class=MapsRecorded) as (_, driver):
        kernel = pyoxide.load(sm90a_kernels_manifest())[entry]
        split = kernel.spec.cluster[0]
        bf16 = ml_dtypes.bfloat16
        args = (FakeNdarray((m, k), bf16), FakeNdarray((k, n), bf16), FakeNdarray((m, n), out))
        kernel(*args)  # the general path: makes the maps, builds the launcher
        kernel(*args)  # the compiled launcher
    (slow,), (fast,) = fake.launches, driver.launches
    tiles = -(-n // kernel.spec.launch.tile[0])
    assert slow["grid"] == fast["grid"] == (persistent_blocks(tiles, 132, split), 1, 1)
    assert slow["block"] == fast["block"] == (384, 1, 1)
    assert fast["smem"] == slow["shared_mem"] == kernel.spec.shared_bytes
    assert_same_launch(fast, slow)
