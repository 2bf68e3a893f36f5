"""A `map: TmaDescriptor` parameter (kind `tensor_map`) on the fake ``cupy`` of
tests/test_fast_path.py: the compiled fast path declines such kernels (see
pyoxide/backends/cupy/_native.py), the general path passes the map's 128 bytes as one
parameter, which lands at a 64-aligned offset (the PTX parameter's ``.align 64``), and
launches nothing that is not a map."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import fake_cupy
from helpers.fake_launch import FakeNdarray, general_bytes, install_native
from helpers.fixtures import kernel, param, write_manifest

import pyoxide
from pyoxide.errors import ArgumentTypeError, ArgumentValueError
from pyoxide.tma import TensorMap

RAW = bytes(range(7, 135))
OUT = FakeNdarray(1000)


@pytest.fixture
def mapped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple:
    fake = fake_cupy.FakeCuda(device_count=1)
    _, driver = install_native(monkeypatch, fake)
    k = kernel(
        "iota",  # the name and entry of a kernel the fixture PTX has (the fake driver looks it up)
        [
            param("a", "scalar", "f32"),
            param("map", "tensor_map", "u8"),
            param("out", "disjoint_slice", "f32"),
        ],
        line=70,
    )
    mod = pyoxide.load(write_manifest(tmp_path, kernels=[k]))
    return fake, driver, mod.iota


def test_the_general_path_passes_the_map_whole(mapped: tuple) -> None:
    fake, driver, k = mapped
    for given in (TensorMap(RAW, None, (8, 32), (8, 32), None), RAW, np.frombuffer(RAW, np.uint8)):
        for _ in range(2):  # the second call would be the fast path's
            k[1, 32](1.5, given, OUT)
            args = fake.launches[-1]["args"]
            assert isinstance(args[1], np.void) and args[1].tobytes() == RAW
            buf = general_bytes(args)
            assert buf[:4] == np.float32(1.5).tobytes() and buf[4:64] == bytes(60)
            assert buf[64:192] == RAW
            assert np.frombuffer(buf[192:], np.uint64).tolist() == [OUT.ptr, 1000]
    assert not driver.launches and k._fast is None


@pytest.mark.parametrize(
    ("given", "cls"),
    [(7, ArgumentTypeError), ("map", ArgumentTypeError), (RAW[:64], ArgumentValueError)],
    ids=["int", "str", "64-bytes"],
)
def test_what_is_not_a_map_launches_nowhere(mapped: tuple, given: object, cls: type) -> None:
    fake, driver, k = mapped
    with pytest.raises(cls) as e:
        k[1, 32](1.5, given, OUT)
    assert (e.value.kernel, e.value.param) == ("iota", "map")
    assert not driver.launches and not fake.launches
