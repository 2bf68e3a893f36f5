"""The gallery (gallery/: kernels a user writes, with specs, CUDA C++ twins and PyTorch
peers). Every gallery kernel against its spec's float64 reference on every array library
(`lib`), called as a user calls it; the whole gallery under `pyoxide verify` on the
emulator; and, on a GPU, every peer (C++ twin, PyTorch) against the same reference, since
scripts/bench_gallery times pyoxide against them."""

from __future__ import annotations

import re
import sys
from typing import Any

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib
from helpers.bundled import GALLERY, gallery_manifest
from helpers.probes import requires_gpu

import pyoxide
from pyoxide.spec import Case, Spec
from pyoxide.verify import instance, load_specs, verify_crate
from pyoxide.verify._case import compare, param_names

sys.path.insert(0, str(GALLERY / "specs"))
from _gallery import TORCH, TWIN, peer_outputs

SPECS = load_specs(GALLERY / "specs")
BY_NAME = {s.kernel: s for s in SPECS}
#: One matrix with rows that are neither a multiple of 4 nor of a block, one vector.
SHAPE_2D, SHAPE_1D = (37, 1001), (100_003,)
#: The twins move float4s: their shapes are multiples of 4.
PEER_2D, PEER_1D = (64, 1028), (1 << 20,)


@pytest.fixture(scope="module")
def gallery() -> pyoxide.Module:
    """The gallery crate, built once with its emulator (target/oxide/gallery)."""
    return pyoxide.load(gallery_manifest())


def _case(spec: Spec, two_d: tuple[int, ...], one_d: tuple[int, ...]) -> Case:
    shape = one_d if spec.shapes is None else two_d
    return Case(shape, spec.dtypes[0], 0, seed=int(np.random.default_rng().integers(1 << 31)))


def _outputs(spec: Spec, case: Case) -> dict[str, np.ndarray]:
    return {name: out.make(case) for name, out in spec.outputs.items()}


@pytest.mark.parametrize("kernel", sorted(BY_NAME))
def test_gallery_kernel_against_numpy(gallery: pyoxide.Module, lib: ArrayLib, kernel: str) -> None:
    spec = BY_NAME[kernel]
    case = _case(spec, SHAPE_2D, SHAPE_1D)
    host = spec.inputs(case, np.random.default_rng(case.seed))
    outs = _outputs(spec, case)
    dev = {
        k: lib.asarray(v) if isinstance(v, np.ndarray) else v for k, v in {**host, **outs}.items()
    }
    launcher, entry = instance(gallery, spec, case.dtype)
    launcher(*[dev[n] for n in param_names(entry)])  # a plain call: the kernel's own launch
    got = {n: lib.to_numpy(dev[n]).reshape(outs[n].shape) for n in outs}
    outcome = compare(spec, case, host, got)
    assert outcome.failure is None, f"{kernel} {case.describe()}: {outcome.failure}"


@pytest.mark.parametrize("block", [32, 96])
def test_cumsum_rows_longer_than_one_round(
    gallery: pyoxide.Module, lib: ArrayLib, block: int
) -> None:
    """A row scan holds 8 slices of 32 vectors a warp: rows longer than that take
    several rounds, each carrying the ones before (rows of 4999: every row at another
    offset from a 16-byte boundary, so heads and tails too)."""
    x = np.random.default_rng(5).standard_normal((3, 4999)).astype(np.float32)
    out = lib.asarray(np.zeros_like(x))
    gallery.cumsum_rows.launch(lib.asarray(x), out, grid=3, block=block)
    want = np.cumsum(x.astype(np.float64), axis=1)
    np.testing.assert_allclose(lib.to_numpy(out), want, rtol=1e-4, atol=2e-3)


def test_gallery_verifies_on_the_emulator(gallery: pyoxide.Module) -> None:
    """`pyoxide verify` of the gallery (fewer cases than its default 200, for CI time);
    every gallery kernel has a spec."""
    report = verify_crate(
        gallery, GALLERY / "specs", backends=["emu"], cases=24, seed=23,
        crate=str(gallery.manifest.path),
    )  # fmt: skip
    failed = [k for k in report["kernels"] if not k["ok"]]
    assert not failed, failed
    assert report["unspecified"] == []
    assert {k.name for k in gallery.manifest.kernels} == set(BY_NAME)


@pytest.mark.parametrize("kernel", sorted(BY_NAME))
def test_every_gallery_kernel_has_its_peers(kernel: str) -> None:
    """A C++ twin whose source defines the kernel, and a PyTorch peer (each gallery op
    is one PyTorch has)."""
    peers = BY_NAME[kernel].peers
    assert TWIN in peers
    assert any(name.startswith(TORCH) for name in peers)
    sources = "".join(p.read_text() for p in (GALLERY / "cuda").glob("*.cu"))
    assert re.search(rf"\b{kernel}\(", sources), f"no {kernel}( in gallery/cuda/*.cu"


PEERS = [(k, p) for k in sorted(BY_NAME) for p in BY_NAME[k].peers]


@pytest.mark.gpu
@requires_gpu("the C++ twins and the PyTorch peers run on the GPU")
@pytest.mark.parametrize(("kernel", "peer"), PEERS, ids=[f"{k}-{p}" for k, p in PEERS])
def test_gallery_peer_against_numpy(kernel: str, peer: str) -> None:
    import cupy

    spec = BY_NAME[kernel]
    case = _case(spec, PEER_2D, PEER_1D)
    host = spec.inputs(case, np.random.default_rng(case.seed))
    outs = _outputs(spec, case)
    dev: dict[str, Any] = {
        k: cupy.asarray(v) if isinstance(v, np.ndarray) else v for k, v in {**host, **outs}.items()
    }
    result = spec.peers[peer](dev)()
    got = peer_outputs(list(outs), dev, result)
    host_got = {
        n: np.asarray(cupy.asnumpy(cupy.asarray(v))).reshape(outs[n].shape) for n, v in got.items()
    }
    outcome = compare(spec, case, host, host_got)
    assert outcome.failure is None, f"{kernel} {peer} {case.describe()}: {outcome.failure}"
