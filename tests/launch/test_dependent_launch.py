"""`#[dependent_launch]` kernels (programmatic dependent launch, oxide_device::grid): the
descriptor's flag reaches the compiled launcher, which starts them through
cuLaunchKernelEx with the programmatic-stream-serialisation attribute, and ordinary kernels
through cuLaunchKernel; PYOXIDE_DEPENDENT_LAUNCH=0 launches them as ordinary ones. Both
launches carry the grid, block and parameter bytes of the general path's (which launches
through CuPy, without the attribute: correct, since the kernel's own wait returns at once).
On the fake ``cupy`` and driver of tests/helpers/fake_launch.py; kernels_sm90a's GEMM
chains under it run in tests/kernels/test_gemm_sm90.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.fake_cupy import FakeCuda
from helpers.fake_launch import assert_same_launch, fake_native, native_installed, warm_up
from helpers.fixtures import load_with_entry
from test_persistent_clusters import gemm, persistent

import pyoxide
from pyoxide.errors import ConfigError

native = pytest.fixture(fake_native, name="native")

#: cuda.h's CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
PROGRAMMATIC_STREAM_SERIALIZATION = 6


def gemm_like(entry: str, dependent: bool) -> dict[str, Any]:
    """tests/launch/test_persistent_clusters.py's GEMM-shaped kernel, `#[dependent_launch]`
    or not."""
    k = persistent(entry, None)
    return {**k, "dependent_launch": True} if dependent else k


@pytest.mark.parametrize(
    ("dependent", "knob", "attributes"),
    [
        (True, None, {PROGRAMMATIC_STREAM_SERIALIZATION: 1}),
        (True, "1", {PROGRAMMATIC_STREAM_SERIALIZATION: 1}),
        (True, "0", {}),  # switched off: an ordinary launch
        (False, None, {}),
    ],
)
def test_the_compiled_launch_asks_for_programmatic_serialisation_where_declared(
    native, tmp_path: Path, monkeypatch, dependent: bool, knob: str | None,
    attributes: dict[int, int],
) -> None:  # fmt: skip
    fake, driver = native
    if knob is not None:
        monkeypatch.setenv("PYOXIDE_DEPENDENT_LAUNCH", knob)
    k = load_with_entry(tmp_path, gemm_like("mm", dependent))
    assert k.spec.dependent_launch is dependent
    warm_up(k, *gemm(128, 128))
    compiled = len(driver.launches)
    args = gemm(300, 4096)
    k(*args)
    k.launch(*args)  # the general path, through the fake CuPy
    (fast,) = driver.launches[compiled:]
    assert fast["attributes"] == attributes
    assert_same_launch(fast, fake.launches[-1])


def test_the_knob_applies_to_launchers_built_before_it_changed(
    native, tmp_path: Path, monkeypatch
) -> None:
    """PYOXIDE_DEPENDENT_LAUNCH is a launch knob: after its change and
    pyoxide.reload_knobs() the launcher built before declines, and the next is built with
    the new setting."""
    _, driver = native
    k = load_with_entry(tmp_path, gemm_like("mm", True))
    warm_up(k, *gemm(128, 128))
    k(*gemm(128, 256))
    assert driver.launches[-1]["attributes"] == {PROGRAMMATIC_STREAM_SERIALIZATION: 1}
    monkeypatch.setenv("PYOXIDE_DEPENDENT_LAUNCH", "0")
    pyoxide.reload_knobs()
    for _ in range(2):  # the first builds the new generation's launcher
        k(*gemm(128, 256))
    assert driver.launches[-1]["attributes"] == {}


def test_a_knob_value_other_than_0_or_1_is_refused(native, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PYOXIDE_DEPENDENT_LAUNCH", "yes")
    k = load_with_entry(tmp_path, gemm_like("mm", True))
    with pytest.raises(ConfigError, match="PYOXIDE_DEPENDENT_LAUNCH"):
        warm_up(k, *gemm(128, 128))


def test_without_cuLaunchKernelEx_the_kernel_launches_as_an_ordinary_one(tmp_path: Path) -> None:
    """A driver without cuLaunchKernelEx: cuLaunchKernel, no attribute; the kernel's own
    wait then returns at once."""
    with native_installed(FakeCuda(device_count=1), has_launch_ex=False) as (_, driver):
        k = load_with_entry(tmp_path, gemm_like("mm", True))
        warm_up(k, *gemm(128, 128))
        k(*gemm(128, 256))
        assert driver.launches[-1]["attributes"] == {}
