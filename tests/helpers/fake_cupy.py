"""A stand-in ``cupy`` module with the API surface pyoxide's CuPy backend uses.

It mirrors CuPy's names and signatures (cuda.function.Module.load/get_function,
Function(grid, block, args, shared_mem=, stream=), Device, Stream,
Event, runtime, driver) and records every call, so the backend's logic (arch
selection, error mapping, streams) is tested on a machine without CUDA.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


class CUDARuntimeError(RuntimeError):
    pass


class CUDADriverError(RuntimeError):
    pass


@dataclass
class FakeCuda:
    compute_capability: str = "90"
    device_name: str = "Fake GPU"
    driver_version: int = 12080
    device_count: int = 1
    current: int = 0
    pointers: dict[int, tuple[int, int]] = field(default_factory=dict)  # ptr -> (type, device)
    load_error: str | None = None
    launch_error: str | None = None
    sync_error: str | None = None
    loads: list[tuple[int, str]] = field(default_factory=list)  # (device, .target line)
    launches: list[dict[str, Any]] = field(default_factory=list)
    attributes: list[tuple[int, int, int]] = field(default_factory=list)
    waits: list[int] = field(default_factory=list)
    # Host-to-device copies into module globals: (symbol, bytes), from runtime.memcpy
    # to an address get_global_var gave out.
    global_writes: list[tuple[str, bytes]] = field(default_factory=list)
    syncs: int = 0
    multiprocessors: int = 132
    multiprocessors_of: dict[int, int] = field(default_factory=dict)  # device -> count
    # What the driver's cuOccupancyMaxActiveClusters answers (0: it cannot say), and
    # what it was asked: (function, cluster, block, shared memory).
    active_clusters: int = 0
    occupancy_queries: list[tuple[int, Any, Any, int]] = field(default_factory=list)
    # Export `cupy.cuda.stream.__pyx_capi__["get_current_stream_ptr"]`, as CuPy's Cython
    # module does: a capsule named "intptr_t (void)" around a C function.
    stream_capsule: bool = False

    def max_active_clusters(self, function: int, cluster: Any, block: Any, smem: int) -> int:
        """The backend's occupancy query (``_occupancy.max_active_clusters``), answered
        from ``active_clusters`` and recorded."""
        self.occupancy_queries.append((function, cluster, block, smem))
        return self.active_clusters

    def module(self) -> types.ModuleType:
        fake = self
        cp = types.ModuleType("cupy")
        cuda = types.ModuleType("cupy.cuda")
        runtime = types.ModuleType("cupy.cuda.runtime")
        driver = types.ModuleType("cupy.cuda.driver")
        function = types.ModuleType("cupy.cuda.function")
        cp.cuda = cuda  # type: ignore[attr-defined]
        cp.__version__ = "14.2.0-fake"  # type: ignore[attr-defined]
        cuda.runtime, cuda.driver, cuda.function = runtime, driver, function  # type: ignore[attr-defined]

        runtime.CUDARuntimeError = CUDARuntimeError  # type: ignore[attr-defined]
        runtime.getDevice = lambda: fake.current  # type: ignore[attr-defined]
        runtime.getDeviceCount = lambda: fake.device_count  # type: ignore[attr-defined]
        runtime.driverGetVersion = lambda: fake.driver_version  # type: ignore[attr-defined]
        runtime.getDeviceProperties = lambda d: {"name": fake.device_name.encode()}  # type: ignore[attr-defined]

        def pointer_attributes(ptr: int) -> Any:
            if ptr not in fake.pointers:
                raise CUDARuntimeError("cudaErrorInvalidValue: invalid argument")
            kind, device = fake.pointers[ptr]
            return types.SimpleNamespace(type=kind, device=device)

        runtime.pointerGetAttributes = pointer_attributes  # type: ignore[attr-defined]

        def stream_synchronize(ptr: int) -> None:
            fake.syncs += 1
            if fake.sync_error:
                raise CUDADriverError(fake.sync_error)

        runtime.streamSynchronize = stream_synchronize  # type: ignore[attr-defined]
        runtime.streamWaitEvent = lambda s, e: fake.waits.append(events[e].recorded_on)  # type: ignore[attr-defined]
        globals_at: dict[int, str] = {}  # fake device addresses of module globals
        runtime.memcpyHostToDevice = 1  # type: ignore[attr-defined]

        def memcpy(dst: int, src: int, size: int, kind: int) -> None:
            assert kind == 1 and dst in globals_at, "only host-to-global copies are faked"
            fake.global_writes.append((globals_at[dst], ctypes.string_at(src, size)))

        runtime.memcpy = memcpy  # type: ignore[attr-defined]

        driver.CUDADriverError = CUDADriverError  # type: ignore[attr-defined]
        driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8  # type: ignore[attr-defined]
        driver.funcSetAttribute = lambda f, a, v: fake.attributes.append((f, a, v))  # type: ignore[attr-defined]

        class Device:
            def __init__(self, id: int | None = None) -> None:
                self.id = fake.current if id is None else id
                self.compute_capability = fake.compute_capability
                count = fake.multiprocessors_of.get(self.id, fake.multiprocessors)
                self.attributes = {"MultiProcessorCount": count}

            def __enter__(self) -> Device:
                self._previous, fake.current = fake.current, self.id
                return self

            def __exit__(self, *exc: Any) -> None:
                fake.current = self._previous

        class Stream:
            def __init__(self, non_blocking: bool = False, ptr: int = 0x5000) -> None:
                self.ptr = ptr

            def synchronize(self) -> None:
                fake.syncs += 1
                if fake.sync_error:
                    raise CUDADriverError(fake.sync_error)

            def wait_event(self, event: Any) -> None:
                fake.waits.append(event.recorded_on)

        events: dict[int, Any] = {}

        class Event:
            def __init__(self, disable_timing: bool = False) -> None:
                self.recorded_on: int | None = None
                self.ptr = id(self)
                events[self.ptr] = self

            def record(self, stream: Any = None) -> None:
                self.recorded_on = stream.ptr

        current_stream = Stream(ptr=0)

        class Function:
            def __init__(self, name: str) -> None:
                self.name = name
                self.ptr = hash(name) & 0xFFFF

            def __call__(
                self, grid: tuple, block: tuple, args: Any, shared_mem: int = 0, stream: Any = None
            ) -> None:
                assert isinstance(grid, tuple) and isinstance(block, tuple)
                fake.launches.append({
                    "name": self.name, "grid": grid, "block": block, "args": tuple(args),
                    "shared_mem": shared_mem, "stream": stream, "device": fake.current,
                })  # fmt: skip
                if fake.launch_error:
                    raise CUDADriverError(fake.launch_error)

        class Module:
            def __init__(self) -> None:
                self.text = ""

            def load(self, data: bytes) -> None:
                assert isinstance(data, bytes)
                if fake.load_error:
                    raise CUDADriverError(fake.load_error)
                self.text = data.decode()
                target = re.search(r"^\.target (\S+)", self.text, re.MULTILINE)
                fake.loads.append((fake.current, target.group(1) if target else "?"))

            def get_global_var(self, name: str) -> int:
                if not re.search(rf"^\.visible \.(const|global) .* {name}\[", self.text, re.M):
                    raise CUDADriverError("CUDA_ERROR_NOT_FOUND: named symbol not found")
                address = 0x7000_0000 + len(globals_at) * 0x100
                globals_at[address] = name
                return address

            def get_function(self, name: str) -> Function:
                if f".entry {name}(" not in self.text:
                    raise CUDADriverError("CUDA_ERROR_NOT_FOUND: named symbol not found")
                return Function(name)

        cuda.Device = Device  # type: ignore[attr-defined]
        cuda.Stream = Stream  # type: ignore[attr-defined]
        cuda.Event = Event  # type: ignore[attr-defined]
        cuda.get_current_stream = lambda: current_stream  # type: ignore[attr-defined]
        if fake.stream_capsule:
            stream = types.ModuleType("cupy.cuda.stream")
            get_ptr = _STREAM_FN(lambda: current_stream.ptr)
            stream.__pyx_capi__ = {"get_current_stream_ptr": capsule(get_ptr)}  # type: ignore[attr-defined]
            stream._keep_alive = get_ptr  # type: ignore[attr-defined]  # the capsule only points at it
            cuda.stream = stream  # type: ignore[attr-defined]
        function.Module = Module  # type: ignore[attr-defined]
        function.Function = Function  # type: ignore[attr-defined]
        return cp


_STREAM_FN = ctypes.CFUNCTYPE(ctypes.c_ssize_t)
# Capsule names are not copied: this one lives as long as the process.
_STREAM_SIGNATURE = ctypes.create_string_buffer(b"intptr_t (void)")


def capsule(function: Any, name: Any = _STREAM_SIGNATURE) -> Any:
    """A PyCapsule holding the address of a ctypes function, named `name` (a ctypes
    buffer that must outlive the capsule), as Cython exports a cdef function."""
    new = ctypes.pythonapi.PyCapsule_New
    new.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    new.restype = ctypes.py_object
    return new(ctypes.cast(function, ctypes.c_void_p), ctypes.addressof(name), None)


@contextlib.contextmanager
def replaced_module(name: str, module: types.ModuleType | None) -> Iterator[None]:
    """``import name`` gives ``module`` (raises ImportError for None) while the context
    lasts (only that entry of sys.modules changes: modules imported meanwhile stay
    imported)."""
    saved = sys.modules.get(name)
    sys.modules[name] = module
    try:
        yield
    finally:
        if saved is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved


@contextlib.contextmanager
def installed(
    fake: FakeCuda,
    *,
    entry_points: tuple[int, ...] | None = None,
    backend_class: Any = None,
) -> Iterator[types.ModuleType]:
    """Make ``import cupy`` return the fake, and a CuPy backend made on it (of
    ``backend_class``, a CupyBackend by default) serve the GPU launches
    (``backends.override``) while the context lasts.

    The backend's compiled launchers are off unless ``entry_points`` (stand-ins for the
    driver, helpers/fake_launch.py) are given: they would hand the fake's function
    handles to the real driver."""
    from pyoxide import backends
    from pyoxide.backends.cupy import CupyBackend

    cp = fake.module()
    with replaced_module("cupy", cp):
        cls = backend_class or CupyBackend
        backend = cls(
            compiled=entry_points is not None, entry_points=entry_points,
            occupancy=fake.max_active_clusters,
        )  # fmt: skip
        with backends.override("cupy", backend):
            yield cp
