"""The GPU backend: loads PTX and launches through CuPy.

CuPy is imported when this backend is first chosen, never at ``import pyoxide``.
The pure helpers (:func:`select_ptx`, :func:`ptx_isa_min_driver`) need no CuPy and
are tested on their own.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..._launch.arrays import GPU
from ..._manifest import knobs as _knobs
from ..._manifest.abi import parse_arch
from ...errors import (
    ArgumentTypeError,
    BackendUnavailableError,
    KernelTrapError,
    LaunchError,
    LoadError,
    NoCompatibleArchError,
)
from ._occupancy import max_active_clusters
from ._shared_memory import SharedOptIn
from ._tensormap import encode_2d, encode_tiled
from ._views import CallArrays

if TYPE_CHECKING:
    from ..._launch.clusters import Dim3
    from ..._launch.fastplan import FastPlan
    from ..._manifest.artifacts import PtxArtifact
    from ..._manifest.reader import Manifest

# Driver errors that mean a kernel died (they are sticky: the context is lost).
_TRAP_MARKERS = (
    "illegalinstruction", "launchfail", "illegaladdress", "misaligned",
    "assert", "hardwarestack", "unspecifiedlaunch",
)  # fmt: skip


def ptx_isa_min_driver(isa: str) -> int:
    """The oldest CUDA driver (as ``cudaDriverGetVersion`` reports it) taking PTX ISA ``isa``."""
    major_s, _, minor_s = isa.partition(".")
    major, minor = int(major_s), int(minor_s or 0)
    if major <= 6:
        cuda = {0: (9, 0), 1: (9, 1), 2: (9, 2), 3: (10, 0), 4: (10, 1)}.get(minor, (10, 2))
    elif major == 7:
        cuda = (11, minor)
    elif major == 8:
        cuda = (12, minor if minor <= 5 else minor + 1)
    else:  # ISA 9.x shipped with CUDA 13.x
        cuda = (major + 4, minor)
    return cuda[0] * 1000 + cuda[1] * 10


def select_ptx(
    artifacts: Sequence[PtxArtifact], compute_capability: str, driver_version: int
) -> PtxArtifact:
    """The best PTX for a device: the highest arch the device can run, whose PTX ISA the
    driver understands. Raises NoCompatibleArchError naming what was there and why."""
    cc = int(compute_capability)  # CuPy spells it "90" for 9.0
    runnable = []
    for a in artifacts:
        try:
            num, suffix = parse_arch(a.arch)
        except ValueError:
            continue
        fits = {
            "": num <= cc,
            "a": num == cc,  # arch-specific features: that exact device only
            "f": num // 10 == cc // 10 and num <= cc,  # family: same major
        }[suffix]
        if fits:
            runnable.append((num, suffix != "", a))
    have = ", ".join(a.arch for a in artifacts) or "none"
    if not runnable:
        raise NoCompatibleArchError(
            f"no PTX runs on this device (compute capability {cc // 10}.{cc % 10}, sm_{cc}); "
            f"the manifest has {have}. Fix: rebuild with `pyoxide build --arch sm_{cc}` "
            f"(or PYOXIDE_ARCH=sm_{cc})."
        )
    runnable.sort(key=lambda t: (t[0], t[1]), reverse=True)
    for _, _, a in runnable:
        if ptx_isa_min_driver(a.ptx_version) <= driver_version:
            return a
    best = runnable[0][2]
    need = ptx_isa_min_driver(best.ptx_version)
    raise NoCompatibleArchError(
        f"the CUDA driver is too old for this PTX: {best.arch} declares PTX ISA "
        f"{best.ptx_version}, which needs a driver for CUDA {need // 1000}.{need % 1000 // 10} "
        f"or newer; this driver supports CUDA {driver_version // 1000}."
        f"{driver_version % 1000 // 10}. Fix: update the NVIDIA driver, or rebuild with an "
        "older LLVM/ptx version."
    )


class CupyBackend:
    """``compiled``: whether plain calls get compiled launchers (pyoxide._launch._native);
    ``entry_points``: the driver functions they call, as addresses (cuLaunchKernel,
    cuCtxGetCurrent, cuGetErrorName, cuGetErrorString and optionally cuLaunchKernelEx; all
    but the first two may be 0), or None
    for libcuda's; ``occupancy``: how it asks how many clusters of a kernel run at once
    (``_occupancy.max_active_clusters``, libcuda's, by default). Tests and benchmarks pass
    stand-ins, through ``backends.override``."""

    name = "cupy"
    array_kind = GPU

    def __init__(
        self,
        *,
        compiled: bool = True,
        entry_points: tuple[int, ...] | None = None,
        occupancy: Callable[[int, Dim3, Dim3, int], int] = max_active_clusters,
    ) -> None:
        try:
            import cupy
        except ImportError as e:
            raise BackendUnavailableError(
                f"GPU arrays need CuPy, which cannot be imported ({e}). "
                "Fix: pip install 'pyoxide[cuda]' (CUDA 13 drivers) or 'pyoxide[cuda12]'."
            ) from None
        from ..._launch._native import LaunchRecord

        self._cp = cupy
        #: The last kernel launched on either path (named in trap messages).
        self.record = LaunchRecord()
        self._compiled = compiled
        self._entry_points = entry_points
        self._occupancy = occupancy
        self._runtime: Any = None  # the compiled launchers' (pyoxide._launch._native.Runtime)
        self._multiprocessors: dict[int, int] = {}
        self._active_clusters: dict[tuple[int, int, Dim3, Dim3, int], int] = {}
        self._identities: dict[int, tuple[str, str]] = {}
        #: Opts a function in to dynamic shared memory above 48 KiB (only ever more), and
        #: keeps how much in a SharedLimit its compiled launchers share.
        self._opt_in_shared = SharedOptIn(cupy)
        #: The CuPy arrays a call makes from its arguments (a flat view, a kept empty one).
        self.call_arrays = CallArrays(cupy)

    # --- devices -----------------------------------------------------------------

    def current_device(self) -> int:
        return int(self._cp.cuda.runtime.getDevice())

    def multiprocessors(self, device: int) -> int:
        count = self._multiprocessors.get(device)
        if count is None:
            attrs = self._cp.cuda.Device(device).attributes
            count = self._multiprocessors[device] = int(attrs["MultiProcessorCount"])
        return count

    def active_clusters(
        self, function: Any, device: int, cluster: Dim3, block: Dim3, shared_mem: int
    ) -> int:
        key = (int(function.ptr), device, cluster, block, shared_mem)
        count = self._active_clusters.get(key)
        if count is None:
            cp = self._cp
            with cp.cuda.Device(device):
                self._opt_in_shared(function, device, shared_mem)  # as the launch will
                count = self._occupancy(int(function.ptr), cluster, block, shared_mem)
            self._active_clusters[key] = count
        return count

    def device_identity(self, device: int) -> tuple[str, str]:
        known = self._identities.get(device)
        if known is None:
            name = self._cp.cuda.runtime.getDeviceProperties(device)["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
            cc = str(self._cp.cuda.Device(device).compute_capability)
            known = self._identities[device] = (name, f"sm_{cc}")
        return known

    def device_of_pointer(self, ptr: int) -> int | None:
        try:
            attrs = self._cp.cuda.runtime.pointerGetAttributes(ptr)
        except self._cp.cuda.runtime.CUDARuntimeError:
            return None
        # cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed
        if getattr(attrs, "type", 2) not in (2, 3):
            return None
        return int(attrs.device)

    # --- what only the GPU backend has: CuPy's arrays and the devices' facts ------

    @property
    def xp(self) -> Any:
        """CuPy, the array library of this backend's arrays (for the callers that make
        device arrays: verify's guarded copies, bench, a call's scratch arrays), so that
        no module outside pyoxide/backends imports it."""
        return self._cp

    def compute_capability(self, device: int) -> int:
        """``10 * major + minor`` (90 on an H100 or H200)."""
        return int(self._cp.cuda.Device(device).compute_capability)

    def devices(self) -> list[dict[str, Any]]:
        """Every CUDA device CuPy sees: id, name, compute capability ("9.0")."""
        out = []
        for i in range(self._cp.cuda.runtime.getDeviceCount()):
            cc = self.compute_capability(i)
            out.append({
                "id": i,
                "name": self.device_identity(i)[0],
                "compute_capability": f"{cc // 10}.{cc % 10}",
            })  # fmt: skip
        return out

    def driver_version(self) -> int:
        """The CUDA driver's version (``13000`` for CUDA 13.0)."""
        return int(self._cp.cuda.runtime.driverGetVersion())

    #: The 128 bytes of one TMA tensor map of any rank (``cuTensorMapEncodeTiled``).
    encode_tensor_map = staticmethod(encode_tiled)

    def synchronize(self) -> None:
        """Wait for the current device; raises what CUDA reports (a lost context)."""
        self._cp.cuda.runtime.deviceSynchronize()

    # --- loading -----------------------------------------------------------------

    def load_module(self, manifest: Manifest, device: int) -> Any:
        cp = self._cp
        with cp.cuda.Device(device) as dev:
            cc = str(dev.compute_capability)
            driver = int(cp.cuda.runtime.driverGetVersion())
            ptx = select_ptx(manifest.artifacts, cc, driver)
            data = ptx.read()  # checked against the manifest's sha256
            module = cp.cuda.function.Module()
            try:
                module.load(data)  # cuModuleLoadData: the driver JITs the PTX here
            except cp.cuda.driver.CUDADriverError as e:
                text = str(e)
                if "PTX" in text.upper() or "UNSUPPORTED" in text.upper():
                    raise NoCompatibleArchError(
                        f"the driver refused {ptx.path} ({text}). Fix: update the NVIDIA "
                        "driver, or rebuild for an older PTX ISA."
                    ) from None
                raise LoadError(
                    f"CUDA could not load {ptx.path} on device {device}: {text}. "
                    "Fix: rebuild with `pyoxide build`; run `pyoxide doctor` if it persists."
                ) from None
        return (module, device)

    def write_constant(self, module: Any, name: str, raw: bytes) -> None:
        import numpy as np

        loaded, device = module
        host = np.frombuffer(raw, dtype=np.uint8)
        with self._on_device(device, lambda e: (
            f"cannot set the #[constant] static '{name}' on device {device}: {e}. "
            "Fix: rebuild with `pyoxide build` (the PTX does not match its manifest)."
        )):  # fmt: skip
            # cuModuleGetGlobal: the address of the static's `.const` bytes.
            target = loaded.get_global_var(name)
            runtime = self._cp.cuda.runtime
            runtime.memcpy(target, host.ctypes.data, host.nbytes, runtime.memcpyHostToDevice)

    def get_function(self, module: Any, entry: str) -> Any:
        loaded, device = module
        # On the module's device: a PyTorch tensor's launch may load it for a device other
        # than the current one.
        with self._on_device(device, lambda e: (
            f"the PTX has no entry '{entry}' ({e}). Fix: rebuild; the manifest and the PTX "
            "come from different builds."
        )):  # fmt: skip
            return loaded.get_function(entry)

    @contextlib.contextmanager
    def _on_device(self, device: int, failure: Callable[[Exception], str]) -> Iterator[None]:
        """On `device`; a CUDA driver error in the block is a LoadError with the message
        ``failure(error)``."""
        try:
            with self._cp.cuda.Device(device):
                yield
        except self._cp.cuda.driver.CUDADriverError as e:
            raise LoadError(failure(e)) from None

    # --- launching ---------------------------------------------------------------

    def _stream(self, kernel: str, stream: Any) -> Any:
        """What Function.__call__ takes as its stream: an object whose ``.ptr`` is the
        handle (CuPy reads nothing else)."""
        cp = self._cp
        if isinstance(stream, cp.cuda.Stream):
            return stream
        if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
            return _Handle(cp.cuda.runtime, int(stream.cuda_stream))
        if hasattr(stream, "__cuda_stream__"):  # CUDA stream protocol: (version, handle)
            return _Handle(cp.cuda.runtime, int(stream.__cuda_stream__()[1]))
        if hasattr(stream, "ptr"):  # a CuPy stream of another kind
            return stream
        if isinstance(stream, int) and not isinstance(stream, bool):
            return _Handle(cp.cuda.runtime, stream)
        raise ArgumentTypeError(
            kernel,
            "stream",
            "a cupy.cuda.Stream, a torch.cuda.Stream, or a raw stream handle (int)",
            type(stream).__name__,
            "pass stream=cupy.cuda.get_current_stream() or leave it out",
        )

    def launch(
        self,
        function: Any,
        *,
        kernel: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: Sequence[Any],
        shared_mem: int,
        stream: Any,
        producer_streams: Sequence[int],
        device: int = 0,
    ) -> None:
        cp = self._cp
        if device != cp.cuda.runtime.getDevice():
            # A PyTorch tensor's own device (a device guard, as PyTorch's ops have).
            with cp.cuda.Device(device):
                self.launch(
                    function, kernel=kernel, grid=grid, block=block, args=args,
                    shared_mem=shared_mem, stream=stream, producer_streams=producer_streams,
                    device=device,
                )  # fmt: skip
            return
        s = None if stream is None else self._stream(kernel, stream)
        previous = self.record.swap(kernel)
        try:
            if producer_streams:
                current = s if s is not None else cp.cuda.get_current_stream()
                for p in set(producer_streams):
                    # CAI v3: wait for the producer's stream unless it is ours or a default.
                    if p not in (1, 2) and p != current.ptr:
                        event = cp.cuda.Event(disable_timing=True)
                        event.record(_Handle(cp.cuda.runtime, p))
                        current.wait_event(event)
            self._opt_in_shared(function, device, shared_mem)
            # Function launches on `stream`, or on the current stream when it is None.
            function(grid, block, args, shared_mem=shared_mem, stream=s)
            if _knobs.sync_launches():
                (s if s is not None else cp.cuda.get_current_stream()).synchronize()
        except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as e:
            raise self.launch_error(kernel, previous, e) from None

    def fast_launcher(self, plan: FastPlan, function: Any, device: int) -> Any:
        """The compiled launcher for calls with CuPy arrays or PyTorch tensors
        (pyoxide._launch._native), or None (then every call takes the general path)."""
        if not self._compiled or _knobs.sync_launches():
            return None  # debugging mode: every launch goes through `launch` and syncs
        from . import _native

        if self._runtime is None:
            self._runtime = _native.runtime(self._cp, self.record, self.launch_error,
                                            self._entry_points)  # fmt: skip
            if self._runtime is None:
                self._compiled = False  # no driver library: the general path does the job
                return None
        rule = plan.grid
        sized_by_device = rule is not None and rule.needs_multiprocessors
        sms = self.multiprocessors(device) if sized_by_device else 0  # cached per device
        clusters = 0  # a persistent grid of clusters: as many as run at once
        if rule is not None and rule.kind == "persistent" and rule.cluster > 1:
            cluster = (rule.cluster, 1, 1)
            clusters = self.active_clusters(function, device, cluster, rule.block, plan.shared_mem)
        with self._cp.cuda.Device(device):  # it keeps the context current now: device's
            # A plain call's; the limit grows with what the general path opts in to later
            # (a configured call's shared memory, up to which the launcher takes them).
            limit = self._opt_in_shared(function, device, plan.shared_mem)
            return _native.launcher(self._runtime, plan, function, device, sms, clusters, limit)

    def tensor_maps(
        self, kernel: str, device: int, stream: Any, maps: Sequence[Any]
    ) -> tuple[Any, int]:
        """Encode ``maps`` (``backends.TensorMapRequest``s) with the driver's
        ``cuTensorMapEncodeTiled`` into a CuPy array on ``device``, copied on ``stream``
        (the launch's), so that it lands before the kernel reads it."""
        cp = self._cp
        raw = b"".join(
            encode_2d(kernel, m.ptr, m.cols, m.rows, m.box_cols, m.box_rows,
                      m.swizzle_bytes, m.elem_bytes)
            for m in maps
        )  # fmt: skip
        with cp.cuda.Device(device):
            owner = cp.empty(len(raw), dtype=cp.uint8)  # CuPy aligns allocations to 256
            handle = cp.cuda.get_current_stream().ptr if stream is None else (
                self._stream(kernel, stream).ptr
            )  # fmt: skip
            host = ctypes.create_string_buffer(raw, len(raw))
            runtime = cp.cuda.runtime
            # From pageable memory the driver stages `host` before returning.
            runtime.memcpyAsync(owner.data.ptr, ctypes.addressof(host), len(raw),
                                runtime.memcpyHostToDevice, handle)  # fmt: skip
        return owner, int(owner.data.ptr)

    def launch_error(self, kernel: str, previous: str | None, e: Exception | str) -> LaunchError:
        """The error for a failed launch: `e` is CuPy's exception, or the driver's text
        ("CUDA_ERROR_X: description") from the native launcher."""
        text = str(e)
        squashed = text.replace("_", "").lower()
        if any(m in squashed for m in _TRAP_MARKERS):
            synced = _knobs.sync_launches()
            culprit = (
                f"'{kernel}'"
                if synced or previous is None
                else (f"'{kernel}' or an earlier launch (the last one was '{previous}')")
            )
            hint = "" if synced else " Set PYOXIDE_SYNC=1 to attribute traps to one launch."
            return KernelTrapError(
                kernel,
                f"kernel {culprit} trapped on the GPU ({text}): a Rust panic, failed bounds "
                "check or bad memory access. The CUDA context is now unusable: restart the "
                f"process. Fix: check the kernel's indices and input lengths.{hint}",
            )
        return LaunchError(
            kernel,
            f"launching '{kernel}' failed: {text}. Fix: check the launch configuration "
            "(grid, block, shared_mem) against the device's limits.",
        )


class _Handle:
    """A stream CuPy does not own, by its raw handle (a PyTorch stream, an int): what
    ``Function.__call__`` and ``Event.record`` read (``.ptr``), plus the two methods the
    backend calls. Not a CuPy stream object: ``cupy.cuda.ExternalStream`` is deprecated
    since CuPy 14, and the ``Stream`` that ``Stream.from_external`` returns destroys the
    handle when it is collected (Stream.__del__), which is not ours to destroy."""

    __slots__ = ("_runtime", "ptr")

    def __init__(self, runtime: Any, ptr: int) -> None:
        self._runtime = runtime
        self.ptr = ptr

    def synchronize(self) -> None:
        self._runtime.streamSynchronize(self.ptr)

    def wait_event(self, event: Any) -> None:
        self._runtime.streamWaitEvent(self.ptr, event.ptr)
