"""The one place a backend is chosen.

A backend runs kernels on one kind of memory: ``cupy`` (GPU arrays, through CuPy)
or ``emu`` (host arrays, through the CPU emulator). Launchers never branch on the
backend; they call :func:`select` with the kind of the arrays they were given and
talk to the result through the :class:`Backend` protocol.

``PYOXIDE_BACKEND=auto`` (default) picks by the arrays; ``cupy`` or ``emu`` forces
one and refuses arrays of the other kind. Tests substitute a backend with
:func:`override`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from .._launch.arrays import GPU, HOST
from .._launch.clusters import Dim3
from .._manifest import knobs as _knobs
from ..errors import ArgumentTypeError, BackendUnavailableError

if TYPE_CHECKING:
    from .._launch.arrays import ArrayView
    from .._launch.fastplan import FastPlan
    from .._manifest.reader import Manifest, ParamSpec
    from .cupy import CupyBackend

__all__ = ["Backend", "TensorMapRequest", "get", "gpu", "override", "select"]


class TensorMapRequest(NamedTuple):
    """One TMA tensor map to encode: a row-major ``rows`` × ``cols`` array of
    ``elem_bytes``-byte elements at device address ``ptr``, copied in boxes of
    ``box_rows`` × ``box_cols`` elements, swizzled over ``swizzle_bytes`` (0: none)."""

    ptr: int
    rows: int
    cols: int
    elem_bytes: int
    box_rows: int
    box_cols: int
    swizzle_bytes: int


class Backend(Protocol):
    """What a launcher needs from a backend."""

    name: str  # "cupy" or "emu"
    array_kind: str  # the kind of arrays it runs on: GPU or HOST

    def current_device(self) -> int:
        """The device a launch would run on now."""
        ...

    def device_of_pointer(self, ptr: int) -> int | None:
        """The device that owns ``ptr``, or None when it is not device memory."""
        ...

    def device_identity(self, device: int) -> tuple[str, str]:
        """(model, architecture) of ``device``: what tuned choices are kept per
        (``NVIDIA H200``, ``sm_90``; the emulator's are ``_abi.EMULATOR_DEVICE`` and
        ``EMULATOR_ARCH``)."""
        ...

    def multiprocessors(self, device: int) -> int:
        """How many blocks ``device`` runs at once, to first order: its streaming
        multiprocessors (GPU) or its cores (emulator). Sizes grid-stride launches."""
        ...

    def active_clusters(
        self, function: Any, device: int, cluster: Dim3, block: Dim3, shared_mem: int
    ) -> int:
        """How many clusters of ``cluster`` blocks of the kernel ``function`` (compiled
        for that cluster) ``device`` runs at once with blocks of ``block`` and
        ``shared_mem`` bytes of dynamic shared memory, or 0 where the backend cannot
        say. Caps a persistent grid of clusters (pyoxide/_launch/clusters.py), which the
        SM count alone overestimates."""
        ...

    def load_module(self, manifest: Manifest, device: int) -> Any:
        """Load the crate's code for ``device`` (once per device; the caller caches)."""
        ...

    def get_function(self, module: Any, entry: str) -> Any:
        """The launchable handle of one entry symbol of a loaded module."""
        ...

    def write_constant(self, module: Any, name: str, raw: bytes) -> None:
        """Write the bytes of the `#[constant]` static ``name`` in a loaded module."""
        ...

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
        """Launch on ``device`` (made current for the launch when it is not).
        ``args`` is the flat ABI list (NumPy scalars; slices as ptr, len)."""
        ...

    def fast_launcher(self, plan: FastPlan, function: Any, device: int) -> Any:
        """After a launch of ``function`` on ``device`` without an explicit stream: a
        compiled launcher (``pyoxide._launch._native.Launcher``) built from the kernel's fast plan,
        which takes the next calls it can (the same bytes, grid and block as the general
        path) and declines the rest; or None, and every call takes ``launch``."""
        ...

    def tensor_maps(
        self, kernel: str, device: int, stream: Any, maps: Sequence[TensorMapRequest]
    ) -> tuple[Any, int]:
        """Encode ``maps`` and place them in ``device``'s memory, in order, 128 bytes each
        (``TENSOR_MAP_BYTES``), 64-byte aligned, ordered before launches on ``stream``:
        (the object that owns that memory, its address)."""
        ...


_instances: dict[str, Backend] = {}
_overrides: dict[str, Backend] = {}


def get(name: str) -> Backend:
    """The backend called ``name``, created on first use (CuPy is imported then)."""
    if name in _overrides:
        return _overrides[name]
    if name not in _instances:
        if name == "cupy":
            from .cupy import CupyBackend

            _instances[name] = CupyBackend()
        elif name == "emu":
            from .emu import EmuBackend

            _instances[name] = EmuBackend()
        else:
            raise ValueError(f"no backend named {name!r}")
    return _instances[name]


def gpu() -> CupyBackend:
    """The GPU backend, for what only it has (CuPy's arrays, the devices' facts, tensor
    map encoding): ``get("cupy")``, which tests substitute through :func:`override`.
    Raises BackendUnavailableError where CuPy cannot be imported."""
    return cast("CupyBackend", get("cupy"))


@contextlib.contextmanager
def override(name: str, backend: Backend) -> Iterator[Backend]:
    """Use ``backend`` wherever ``name`` would be chosen (for tests)."""
    previous = _overrides.get(name)
    _overrides[name] = backend
    try:
        yield backend
    finally:
        if previous is None:
            del _overrides[name]
        else:
            _overrides[name] = previous


_ARRAY_KIND = {"cupy": GPU, "emu": HOST}
_FIX_FOR = {
    GPU: "copy it to the GPU with cupy.asarray(x)",
    HOST: "copy it to the host with cupy.asnumpy(x) (or tensor.cpu())",
}


def select(kernel: str, arrays: Sequence[tuple[ParamSpec, ArrayView]]) -> Backend:
    """Choose the backend for one launch, from the kind of its array arguments.

    Mixing GPU and host arrays is refused, naming one of each.
    """
    kind = arrays[0][1].kind if arrays else None
    for p, v in arrays:
        if v.kind != kind:
            gpu = next((p, v) for p, v in arrays if v.kind == GPU)
            host = next((p, v) for p, v in arrays if v.kind == HOST)
            raise ArgumentTypeError(
                kernel,
                host[0].name,
                f"arrays in the same memory as '{gpu[0].name}' ({gpu[1].describe()}, on the GPU)",
                f"{host[1].describe()} in host memory",
                "pass all arrays on the GPU (cupy.asarray(x)) or all on the host "
                "(cupy.asnumpy(x)); pyoxide never copies behind your back",
            )
    choice = _knobs.backend()
    if choice == "auto":
        if kind is None:
            # No array says where to run (a kernel of scalars, or of records by value):
            # the GPU when CuPy is there, else the emulator, which runs it the same.
            try:
                return get("cupy")
            except BackendUnavailableError:
                return get("emu")
        return get("emu" if kind == HOST else "cupy")
    # Checked before the backend is made: a forced cupy refuses NumPy arrays even where
    # CuPy cannot be imported.
    array_kind = _ARRAY_KIND[choice]
    if kind is not None and kind != array_kind:
        p, v = arrays[0]
        where = "GPU" if array_kind == GPU else "host"
        raise ArgumentTypeError(
            kernel,
            p.name,
            f"a {where} array (PYOXIDE_BACKEND={choice})",
            v.describe(),
            f"{_FIX_FOR[array_kind]}, or unset PYOXIDE_BACKEND",
        )
    return get(choice)
