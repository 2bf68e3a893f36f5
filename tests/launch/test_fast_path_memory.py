"""A compiled launcher remembers, for each parameter, what it read from the CuPy array
of its last call there (crates/pyoxide-native/src/facts.rs): an array met again is not
read again while it keeps its shape, and every launch still carries the general path's
exact bytes, for arrays that are reshaped in place (CuPy's ``shape`` setter), freed and
made again at a reused address, or new on every call. Within one call, an array (a
tensor too) is read once however many launchers try the call, and a tensor changed in
place between calls is read afresh. On the fake ``cupy`` and ``torch`` of
tests/launch/test_fast_path.py."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.fake_launch import FakeNdarray, assert_same_launch, c_strides, fake_native, warm_up
from helpers.fake_torch import Tensor, fake_torch_module
from helpers.fixtures import kernel, load_with_entry, param, write_manifest

import pyoxide
from pyoxide.errors import ArgumentValueError, ShapeError

native = pytest.fixture(fake_native, name="native")
torch = pytest.fixture(fake_torch_module, name="torch")


def reshape_in_place(a: FakeNdarray, shape: tuple[int, ...]) -> None:
    """``a.shape = shape`` as CuPy does it for a C-contiguous array: the same memory, new
    extents, ndim and strides."""
    a.shape = a.iface["shape"] = shape
    a.ndim = len(shape)
    a.strides = c_strides(shape, a.dtype.itemsize)


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


def shaped(name: str, kind: str, dims: list[str]) -> dict[str, Any]:
    return {**param(name, kind, "f32", kind == "disjoint_array"),
            "array": {"layout": "c", "dims": dims}}  # fmt: skip


@pytest.fixture
def copy2d(tmp_path: Path) -> Any:
    entry = kernel("copy2d", [shaped("x", "array", ["m", "n"]),
                              shaped("out", "disjoint_array", ["m", "n"])])  # fmt: skip
    return load_with_entry(tmp_path, entry)


def test_an_array_met_again_is_not_read_again(native, mod, monkeypatch) -> None:
    fake, driver = native
    x, y, out = (FakeNdarray(1000) for _ in range(3))
    warm_up(mod.vecadd, x, y, out)
    reads = []  # of `strides`, which the launcher reads when it reads an array afresh

    def counted(self: FakeNdarray, name: str) -> Any:
        reads.extend([name] if name == "strides" else [])
        return object.__getattribute__(self, name)

    monkeypatch.setattr(FakeNdarray, "__getattribute__", counted)
    for _ in range(5):
        mod.vecadd(x, y, out)
    monkeypatch.undo()
    # Read on the first compiled call (their addresses were seen once), and on the
    # second, which remembers them.
    assert len(reads) == 2 * 3
    mod.vecadd.launch(x, y, out)  # the general path
    assert len(driver.launches) == 5
    for fast in driver.launches:
        assert_same_launch(fast, fake.launches[-1])


def test_new_arrays_at_reused_addresses_are_read_afresh(native, mod) -> None:
    """Arrays freed and made again (CPython hands their addresses out again): each
    launch carries its own arrays' pointers and lengths, whatever was remembered."""
    fake, driver = native
    warm_up(mod.vecadd, *(FakeNdarray(8) for _ in range(3)))
    seen: set[int] = set()
    for i in range(60):
        args = tuple(FakeNdarray(8 + i % 3) for _ in range(3))
        seen.update(id(a) for a in args)
        mod.vecadd(*args)
        mod.vecadd.launch(*args)
        assert_same_launch(driver.launches[-1], fake.launches[-1])
        del args
        gc.collect()
    assert len(driver.launches) == 60
    assert len(seen) < 3 * 60  # addresses came by again: the weak references were tested


def test_a_slice_reshaped_in_place_is_read_again(native, mod) -> None:
    fake, driver = native
    x, y, out = (FakeNdarray(1024) for _ in range(3))
    for _ in range(3):
        mod.vecadd(x, y, out)  # remembered from the second call
    reshape_in_place(x, (32, 32))
    with pytest.raises(ArgumentValueError, match="expected a 1-D array"):
        mod.vecadd(x, y, out)  # declined, then refused by the general path
    reshape_in_place(x, (1024,))
    mod.vecadd(x, y, out)
    assert len(driver.launches) == 3
    mod.vecadd.launch(x, y, out)
    assert_same_launch(driver.launches[-1], fake.launches[-1])


def test_a_shaped_array_reshaped_in_place_is_read_again(native, copy2d) -> None:
    fake, driver = native
    x, out = FakeNdarray((64, 32)), FakeNdarray((64, 32))
    for _ in range(3):
        copy2d(x, out)
    reshape_in_place(x, (32, 64))  # the contract (out's shape) no longer holds
    with pytest.raises(ShapeError):
        copy2d(x, out)
    reshape_in_place(out, (32, 64))
    copy2d(x, out)  # both read afresh: the new extents and strides reach the kernel
    copy2d.launch(x, out)
    assert len(driver.launches) == 3  # the first call took the general path
    assert_same_launch(driver.launches[-1], fake.launches[-1])
    assert driver.launches[-1]["grid"] != driver.launches[0]["grid"]


def test_a_tensor_is_read_once_a_call_however_many_launchers_try_it(
    native, torch, mod, monkeypatch
) -> None:
    """A generic kernel's float32 instance declines float64 tensors after reading the
    first; the float64 instance launches them without reading it again (a tuned kernel
    tries each of its choices so)."""
    _, driver = native
    x32, o32 = Tensor(10, "float32"), Tensor(10, "float32")
    x64, o64 = Tensor(10, "float64"), Tensor(10, "float64")
    mod.scale(2.0, x32, o32)
    mod.scale(2.0, x64, o64)  # both instances have launchers now, float32's first
    reads: list[int] = []

    def counted(self: Tensor) -> int:
        reads.append(id(self))
        return self.ptr

    monkeypatch.setattr(Tensor, "data_ptr", counted)
    for _ in range(3):
        mod.scale(3.0, x64, o64)
    monkeypatch.undo()
    assert len(driver.launches) == 3  # float64's launcher: the factor as 8 bytes
    assert driver.launches[0]["buffer"][:8] == np.float64(3.0).tobytes()
    assert sorted(reads) == sorted([id(x64), id(o64)] * 3)


def set_(t: Tensor, source: Tensor) -> None:
    """``t.set_(source)``: t takes source's memory and extents, in place."""
    t.ptr, t.shape, t.iface = source.ptr, source.shape, source.iface


def test_a_tensor_changed_in_place_between_calls_is_read_afresh(native, torch, mod) -> None:
    """``set_`` (or ``resize_``) between calls: the next launch carries the tensors' new
    memory and extent, as the general path's does."""
    fake, driver = native
    args = [Tensor(1000) for _ in range(3)]
    for _ in range(2):
        mod.vecadd(*args)
    smaller = [Tensor(500) for _ in range(3)]
    for t, source in zip(args, smaller, strict=True):
        set_(t, source)
    mod.vecadd(*args)
    mod.vecadd.launch(*args)
    assert len(driver.launches) == 2
    assert_same_launch(driver.launches[-1], fake.launches[-1])
    assert driver.launches[-1]["grid"] != driver.launches[0]["grid"]
