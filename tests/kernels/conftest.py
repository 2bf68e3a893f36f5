"""The kernel suite runs every test once per array library chosen by `--backend`
(tests/conftest.py): `lib` is a helpers.arraylibs.ArrayLib. A test marked with
helpers.arraylibs.skip_on_emu("reason") is collected for every library and skipped on
the emulator only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def _loaded(manifest: Callable[[], Path], doc: str) -> Any:
    """A session fixture: the module of the crate that `manifest()` builds (or finds)."""

    def module() -> pyoxide.Module:
        return pyoxide.load(manifest())

    module.__doc__ = doc
    return pytest.fixture(scope="session")(module)


kernels = _loaded(
    emu_kernels_manifest,
    """kernels_rs, built from this checkout with its emulator library (or, on a machine
    with no Rust, the carried build): NumPy arrays run on the emulator, GPU arrays on
    the GPU.""",
)
ports = _loaded(
    cuda_oxide_ports_manifest,
    """NVIDIA cuda-oxide's examples, renamed and without host code
    (crates/oxide-device/tests/fixtures/cuda_oxide_ports), built like kernels_rs.""",
)
half = _loaded(
    half_kernels_manifest,
    "Kernels over f16 and bf16 (tests/fixtures/half_kernels), built like kernels_rs.",
)
clusters = _loaded(
    cluster_kernels_manifest,
    "Kernels in thread-block clusters (tests/fixtures/cluster_kernels), built for sm_90.",
)
cluster_tma = _loaded(
    cluster_tma_kernels_manifest,
    "A TMA multicast kernel (tests/fixtures/cluster_tma_kernels), built for sm_90a.",
)
readme = _loaded(
    readme_manifest,
    """The README's kernels (crates/oxide-device/tests/fixtures/readme), built like
    kernels_rs (target/oxide/readme).""",
)
natural = _loaded(
    natural_manifest,
    """Issue 23's four kernels written as docs/guide/kernels.md teaches
    (crates/oxide-device/tests/fixtures/natural), built like kernels_rs.""",
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lib" in metafunc.fixturenames:
        names = CHOICES[metafunc.config.getoption("backend")]
        metafunc.parametrize("lib", [array_lib(n) for n in names], scope="module")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip a test's emulator run where it is marked skip_on_emu: on the function, or on
    one of its other params (a param of sm_90a code, beside params the emulator runs)."""
    for item in items:
        mark = item.get_closest_marker("skip_on_emu")
        lib = getattr(item, "callspec", None) and item.callspec.params.get("lib")
        if mark is not None and getattr(lib, "name", None) == "emu":
            # First among the item's skipif marks, so that this reason is the one shown.
            reason = f"not on the emulator: {mark.kwargs['reason']}"
            item.add_marker(pytest.mark.skipif(True, reason=reason), append=False)
