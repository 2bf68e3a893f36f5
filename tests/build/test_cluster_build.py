"""`#[cluster_launch]` through the build (tests/fixtures/cluster_kernels): the link step's
`"nvvm.cluster_dim"` comes out of LLVM as `.explicitcluster` / `.reqnctapercluster` on
exactly the cluster kernels, ptxas accepts it for sm_90, the manifest records the
shape, and a build for a target without clusters is refused, naming the kernel."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner
from helpers.bundled import (
    CLUSTER_KERNELS,
    cluster_kernels_manifest,
    find_ptxas,
    workspace_cargo_oxide,
)

import pyoxide
from pyoxide.cli import cli
from pyoxide.cli.inspect import entry_ptx

SHAPES = {
    "neighbours_2": "2, 1, 1",
    "neighbours_4": "4, 1, 1",
    "neighbours_2x2": "2, 2, 1",
    "iota_pairs": "2, 1, 1",
    "iota": None,
    "swap": "2, 1, 1",
}


def test_the_ptx_requires_each_kernels_cluster() -> None:
    manifest = cluster_kernels_manifest()
    ptx = (manifest.parent / "cluster_kernels.sm_90.ptx").read_text()
    assert ".target sm_90" in ptx
    for entry, shape in SHAPES.items():
        text = entry_ptx(ptx, entry)
        assert text is not None, entry
        header = text[: text.index("{")]
        if shape is None:
            assert "cluster" not in header, header
        else:
            assert ".explicitcluster" in header, header
            assert f".reqnctapercluster {shape}" in header, header
    assert "mapa.u64" in ptx and "mapa.shared::cluster.u32" in ptx
    assert "ld.shared::cluster.u32" in ptx and "st.shared::cluster.u32" in ptx
    assert "barrier.cluster.arrive;" in ptx and "barrier.cluster.wait;" in ptx
    assert "%cluster_ctarank" in ptx and "%is_explicit_cluster" in ptx


def test_the_manifest_records_the_shape_and_ptxas_accepted_it() -> None:
    data = json.loads(cluster_kernels_manifest().read_text())
    clusters = {k["entry"]: k.get("cluster") for k in data["kernels"]}
    assert clusters == {
        e: None if s is None else [int(v) for v in s.split(", ")] for e, s in SHAPES.items()
    }
    (artifact,) = data["artifacts"]
    assert artifact["arch"] == "sm_90"
    if find_ptxas() is not None:  # the build verified the PTX with it
        assert set(artifact["ptxas"]) >= set(SHAPES), artifact["ptxas"]


def test_a_build_for_a_target_without_clusters_is_refused(tmp_path) -> None:
    exe = workspace_cargo_oxide()
    if exe is None:
        pytest.fail("cargo is needed to build the fixture (scripts/setup installs it)")
    cmd = [exe, "oxide", "build", "--manifest-path", str(CLUSTER_KERNELS / "Cargo.toml")]
    out = subprocess.run(
        [*cmd, "--arch", "sm_90,sm_80", "--out-dir", str(tmp_path), "--no-emu"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode != 0
    err = out.stderr
    assert "kernel `" in err and "` has #[cluster_launch(" in err, err
    assert "sm_80, which has no thread-block clusters" in err, err
    assert "--arch sm_90" in err, err
    assert not list(tmp_path.glob("*.ptx")), "nothing is written for a refused build"


def test_inspect_shows_the_cluster() -> None:
    manifest = str(cluster_kernels_manifest())
    r = CliRunner().invoke(cli, ["inspect", "neighbours_2x2", manifest, "--ptx"])
    assert r.exit_code == 0, r.output
    assert "cluster: 2 x 2 x 1 blocks" in r.output, r.output
    assert ".reqnctapercluster 2, 2, 1" in r.output, r.output
    r = CliRunner().invoke(cli, ["inspect", "iota", manifest])
    assert r.exit_code == 0 and "  cluster:" not in r.output, r.output


def test_loading_a_cluster_crate_for_sm_80_says_how_to_load_it() -> None:
    with pytest.raises(pyoxide.BuildError) as e:
        pyoxide.load(CLUSTER_KERNELS, arch=["sm_80", "sm_90"])
    text = str(e.value)
    assert "no thread-block clusters" in text and 'arch="sm_90"' in text, text
