"""The kernel suite runs every test once per array library chosen by `--backend`
(tests/conftest.py): `lib` is a helpers.arraylibs.ArrayLib. A test marked with
helpers.arraylibs.skip_on_emu("reason") is collected for every library and skipped on
the emulator only."""

from __future__ import annotations

import pytest
from helpers.arraylibs import CHOICES, array_lib
from helpers.bundled import (
    cluster_kernels_manifest,
    cluster_tma_kernels_manifest,
    cuda_oxide_ports_manifest,
    emu_kernels_manifest,
    half_kernels_manifest,
    natural_manifest,
    readme_manifest,
)

import pyoxide


@pytest.fixture(scope="session")
def kernels() -> pyoxide.Module:
    """kernels_rs, built from this checkout with its emulator library (or, on a machine
    with no Rust, the carried build): NumPy arrays run on the emulator, GPU arrays on
    the GPU."""
    return pyoxide.load(emu_kernels_manifest())


@pytest.fixture(scope="session")
def ports() -> pyoxide.Module:
    """NVIDIA cuda-oxide's examples, renamed and without host code
    (crates/oxide-device/tests/fixtures/cuda_oxide_ports), built like kernels_rs."""
    return pyoxide.load(cuda_oxide_ports_manifest())


@pytest.fixture(scope="session")
def half() -> pyoxide.Module:
    """Kernels over f16 and bf16 (tests/fixtures/half_kernels), built like kernels_rs."""
    return pyoxide.load(half_kernels_manifest())


@pytest.fixture(scope="session")
def clusters() -> pyoxide.Module:
    """Kernels in thread-block clusters (tests/fixtures/cluster_kernels), built for sm_90."""
    return pyoxide.load(cluster_kernels_manifest())


@pytest.fixture(scope="session")
def cluster_tma() -> pyoxide.Module:
    """A TMA multicast kernel (tests/fixtures/cluster_tma_kernels), built for sm_90a."""
    return pyoxide.load(cluster_tma_kernels_manifest())


@pytest.fixture(scope="session")
def readme() -> pyoxide.Module:
    """The README's kernels (crates/oxide-device/tests/fixtures/readme), built like
    kernels_rs (target/oxide/readme)."""
    return pyoxide.load(readme_manifest())


@pytest.fixture(scope="session")
def natural() -> pyoxide.Module:
    """Issue 23's four kernels written as docs/guide/kernels.md teaches
    (crates/oxide-device/tests/fixtures/natural), built like kernels_rs."""
    return pyoxide.load(natural_manifest())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lib" in metafunc.fixturenames:
        names = CHOICES[metafunc.config.getoption("backend")]
        mark = metafunc.definition.get_closest_marker("skip_on_emu")
        reason = None if mark is None else mark.kwargs["reason"]
        metafunc.parametrize("lib", [array_lib(n, reason) for n in names], scope="module")
