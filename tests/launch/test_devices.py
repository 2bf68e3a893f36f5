"""Which device and stream a launch gets (pyoxide/_launch/devices.py), on fakes: PyTorch
tensors launch on their own device and PyTorch's current stream there; CuPy-style
arrays on the current device and stream; a mix of the two needs an explicit stream.
tests/gpu/test_streams.py runs the same on real GPUs (graph capture, cuda:1, ranks)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
from helpers.fakes import FakeCudaArray, RecordingBackend, cuda
from helpers.fixtures import write_manifest

import pyoxide
from pyoxide import backends


class Tensor(FakeCudaArray):
    """Looks like a torch.Tensor to pyoxide: its type's module is torch's."""

    __module__ = "torch"

    def __init__(self, n: int, device: int) -> None:
        super().__init__(n, "<f4", device=device, device_style="torch")


@pytest.fixture
def torch(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A stand-in torch with per-device current streams 0x100 + device."""
    cuda_ns = types.SimpleNamespace(current_device=lambda: 0)
    fake = types.SimpleNamespace(
        cuda=cuda_ns, _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: 0x100 + d)
    )
    monkeypatch.setitem(sys.modules, "torch", fake)
    return fake


@pytest.fixture
def gpu() -> Any:
    rb = RecordingBackend(current=0)
    with backends.override("cupy", rb):
        yield rb


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


def test_tensors_run_on_their_device_and_torchs_stream_there(torch, gpu, mod) -> None:
    mod.vecadd(Tensor(8, 1), Tensor(8, 1), Tensor(8, 1))
    (launch,) = gpu.launches
    assert launch.device == 1 and launch.stream == 0x101  # not the current device 0
    assert gpu.loads == [("oxide_fixtures", 1)]


def test_an_explicit_stream_wins_for_tensors(torch, gpu, mod) -> None:
    mod.vecadd.launch(Tensor(8, 0), Tensor(8, 0), Tensor(8, 0), stream=0x777)
    assert gpu.launches[0].stream == 0x777


def test_cupy_arrays_follow_the_current_device_and_stream(torch, gpu, mod) -> None:
    mod.vecadd(cuda(8), cuda(8), cuda(8))
    assert gpu.launches[0].device == 0 and gpu.launches[0].stream is None
    with pytest.raises(pyoxide.ArgumentValueError, match="current device"):
        mod.vecadd(cuda(8, device=1), cuda(8, device=1), cuda(8, device=1))


def test_tensors_on_two_devices_are_refused(torch, gpu, mod) -> None:
    with pytest.raises(pyoxide.ArgumentValueError, match=r"\.to\('cuda:0'\)"):
        mod.vecadd(Tensor(8, 0), Tensor(8, 1), Tensor(8, 0))
    assert gpu.launches == []


def test_a_mix_of_tensors_and_cupy_arrays_needs_a_stream(torch, gpu, mod) -> None:
    with pytest.raises(pyoxide.ArgumentTypeError, match="PyTorch tensor") as info:
        mod.vecadd(Tensor(8, 0), cuda(8), Tensor(8, 0))
    assert info.value.param == "b" and "stream=" in info.value.fix
    mod.vecadd.launch(Tensor(8, 0), cuda(8), Tensor(8, 0), stream=0x55)
    assert [launch.stream for launch in gpu.launches] == [0x55]


def test_the_cupy_backend_guards_the_tensors_device(torch, tmp_path: Path) -> None:
    """On the CuPy backend (a fake CuPy): the module is loaded, the function fetched and
    the kernel launched with the tensor's device current, and the current device is
    restored after."""
    from helpers import fake_cupy

    fake = fake_cupy.FakeCuda(device_count=2)
    mod = pyoxide.load(write_manifest(tmp_path))
    with fake_cupy.installed(fake):
        mod.vecadd(Tensor(8, 1), Tensor(8, 1), Tensor(8, 1))
    assert fake.loads and all(device == 1 for device, _ in fake.loads)
    (launch,) = fake.launches
    assert launch["device"] == 1 and launch["stream"].ptr == 0x101
    assert fake.current == 0
