"""A `map: TmaDescriptor` parameter (kind `tensor_map`) on the compiled fast path and
the general path, on the fake ``cupy`` of tests/test_fast_path.py: both put the map's
128 bytes at a 64-aligned offset of the parameter buffer (the PTX parameter's
``.align 64``); the fast path takes an exact ``pyoxide.tma.TensorMap`` and leaves raw
bytes to the general path; neither launches what is not a map."""

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


def test_both_paths_put_the_map_at_a_64_aligned_offset(mapped: tuple) -> None:
    fake, driver, k = mapped
    m = TensorMap(RAW, None, (8, 32), (8, 32), None)
    k[1, 32](1.5, m, OUT)  # the general path, which builds the fast launcher
    slow = general_bytes(fake.launches[-1]["args"])
    k[1, 32](1.5, m, OUT)  # the compiled fast path
    (launch,) = driver.launches
    buf = launch["buffer"]
    assert k._fast.buffer_size == 208
    assert buf[:4] == np.float32(1.5).tobytes() and buf[4:64] == bytes(60)
    assert buf[64:192] == RAW
    assert np.frombuffer(buf[192:], np.uint64).tolist() == [OUT.ptr, 1000]
    assert buf == slow


def test_raw_bytes_take_the_general_path(mapped: tuple) -> None:
    fake, driver, k = mapped
    k[1, 32](1.5, TensorMap(RAW, None, (8, 32), (8, 32), None), OUT)
    before = len(fake.launches)
    k[1, 32](1.5, RAW, OUT)
    assert not driver.launches and len(fake.launches) == before + 1
    assert general_bytes(fake.launches[-1]["args"])[64:192] == RAW


@pytest.mark.parametrize(
    ("given", "cls"),
    [(7, ArgumentTypeError), ("map", ArgumentTypeError), (RAW[:64], ArgumentValueError)],
    ids=["int", "str", "64-bytes"],
)
def test_what_is_not_a_map_launches_nowhere(mapped: tuple, given: object, cls: type) -> None:
    fake, driver, k = mapped
    k[1, 32](1.5, TensorMap(RAW, None, (8, 32), (8, 32), None), OUT)
    before = len(fake.launches)
    with pytest.raises(cls) as e:
        k[1, 32](1.5, given, OUT)
    assert (e.value.kernel, e.value.param) == ("iota", "map")
    assert not driver.launches and len(fake.launches) == before
