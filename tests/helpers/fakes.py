"""Fake arrays (speaking __cuda_array_interface__ v3) and a recording backend."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from pyoxide._launch.arrays import GPU, HOST

_next_ptr = itertools.count(1)


def fresh_ptr() -> int:
    """A distinct fake device address (1 GiB apart: fake arrays never overlap by accident)."""
    return 0x7F00_0000_0000 + next(_next_ptr) * (1 << 30)


class _Device:
    def __init__(self, id: int) -> None:
        self.id = id


class _TorchDevice:
    """A ``torch.device``: equal to another of the same type and index, as PyTorch's."""

    def __init__(self, index: int) -> None:
        self.type = "cuda"
        self.index = index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _TorchDevice) and (other.type, other.index) == (
            self.type,
            self.index,
        )

    def __hash__(self) -> int:
        return hash((self.type, self.index))


class FakeCudaArray:
    """An object exposing only ``__cuda_array_interface__`` (and optionally ``.device``)."""

    def __init__(
        self,
        shape: tuple[int, ...] | int = 16,
        typestr: str = "<f4",
        *,
        ptr: int | None = None,
        readonly: bool = False,
        strides: tuple[int, ...] | None = None,
        device: int | None = 0,
        device_style: str = "cupy",  # cupy: .device.id; torch: .device.index; none: no .device
        stream: int | None = None,
        mask: Any = None,
        version: int = 3,
    ) -> None:
        self.shape = (shape,) if isinstance(shape, int) else shape
        self.ptr = fresh_ptr() if ptr is None else ptr
        self.iface: dict[str, Any] = {
            "shape": self.shape,
            "typestr": typestr,
            "data": (self.ptr, readonly),
            "strides": strides,
            "version": version,
        }
        if stream is not None:
            self.iface["stream"] = stream
        if mask is not None:
            self.iface["mask"] = mask
        if device_style == "cupy" and device is not None:
            self.device: Any = _Device(device)
        elif device_style == "torch" and device is not None:
            self.device = _TorchDevice(device)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self.iface


def cuda(n: int | tuple[int, ...] = 16, typestr: str = "<f4", **kw: Any) -> FakeCudaArray:
    return FakeCudaArray(n, typestr, **kw)


@dataclass
class Launch:
    function: Any
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[Any, ...]
    shared_mem: int
    stream: Any
    producer_streams: list[int]
    device: int = 0


@dataclass
class RecordingBackend:
    """A backend that records what it is asked and launches nothing."""

    name: str = "cupy"
    array_kind: str = GPU
    current: int = 0
    pointer_devices: dict[int, int | None] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)
    loads: list[tuple[str, int]] = field(default_factory=list)
    pointer_queries: list[int] = field(default_factory=list)
    maps: list[tuple[str, int, Any, list[Any]]] = field(default_factory=list)

    def current_device(self) -> int:
        return self.current

    def device_of_pointer(self, ptr: int) -> int | None:
        self.pointer_queries.append(ptr)
        return self.pointer_devices.get(ptr, self.current)

    def load_module(self, manifest: Any, device: int) -> Any:
        self.loads.append((manifest.crate_name, device))
        return ("module", device)

    def get_function(self, module: Any, entry: str) -> Any:
        return (module, entry)

    def fast_launcher(self, plan: Any, function: Any, device: int) -> None:
        return None  # every recorded launch goes through `launch`

    def tensor_maps(self, kernel: str, device: int, stream: Any, maps: Any) -> tuple[Any, int]:
        """Records the maps asked for; their "memory" is a fresh fake address."""
        self.maps.append((kernel, device, stream, list(maps)))
        return ("maps", len(self.maps)), fresh_ptr()

    def launch(self, function: Any, **kw: Any) -> None:
        self.launches.append(Launch(function, **kw))


def host_backend() -> RecordingBackend:
    return RecordingBackend(name="emu", array_kind=HOST)
