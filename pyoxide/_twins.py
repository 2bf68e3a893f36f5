"""Bundled kernels with a faster twin for one architecture: the one place that picks it.

``kernels.gemm_bf16(a, b, c, m, n, k)`` (and ``gemm_bf16_bf16``) runs kernels_sm90a's
wgmma + TMA kernel when the arrays are on a GPU of compute capability 9.0 and the
shapes suit TMA (n and k multiples of 8, 16-byte-aligned a and b), and kernels_rs's
mma.sync kernel everywhere else (other GPUs, the CPU emulator, other shapes), sized
from m and n. A call with an explicit configuration (``kernel[grid, block](...)``,
``.launch(..., grid=...)``) is always the plain kernel, whose launch it describes.

The twin reads a and b through TMA tensor maps, made here (by the CuPy backend's
``cuTensorMapEncodeTiled``) and kept in device memory per (a, b, m, n, k): a map
depends only on the addresses and extents, never on the data.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._launch import Kernel

# A crate's Module (pyoxide/_module.py, which imports this module: named here by role,
# not imported, so the package's imports stay a DAG).
Module = Any

#: kernels_rs launcher -> its kernels_sm90a twin (same arguments, plus the maps).
TWINS = {"gemm_bf16": "gemm_bf16_sm90", "gemm_bf16_bf16": "gemm_bf16_bf16_sm90"}
#: The plain kernels' tile and block (kernels_rs's GEMM_TILE, gemm_bf16's launch).
PLAIN_TILE, PLAIN_BLOCK = 128, 256
#: kernels_sm90a's launch: its tile (SM90_BM × SM90_BN), block (SM90_THREADS) and
#: dynamic shared memory (SM90_SHARED_BYTES; the kernel asserts it got that much).
SM90_BM, SM90_BN, SM90_THREADS, SM90_SHARED_BYTES = 128, 256, 384, 197_696
_MAPS_KEPT = 64


def add_twins(module: Module, load_twins: Callable[[], Module | None]) -> None:
    """Serve each kernel of TWINS in ``module`` through a :class:`TwinPicker`."""
    loader = _TwinLoader(load_twins)
    for name, twin in TWINS.items():
        if name in module:
            module._replace(name, TwinPicker(module[name], twin, loader))


class _TwinLoader:
    """The sm_90a crate, loaded (or built) the first time a call could use it."""

    def __init__(self, load: Callable[[], Module | None]) -> None:
        self._load = load
        self._module: Module | None = None
        self._tried = False
        self.maps: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self.cc90: dict[int, bool] = {}

    def module(self) -> Module | None:
        if not self._tried:
            self._tried = True
            self._module = self._load()
        return self._module


class TwinPicker:
    """A plain kernel's launcher that runs its sm_90a twin where it can (module docs)."""

    def __init__(self, plain: Kernel, twin: str, loader: _TwinLoader) -> None:
        self._plain = plain
        self._twin = twin
        self._loader = loader

    def __call__(self, a: Any, b: Any, c: Any, m: Any, n: Any, k: Any, **config: Any) -> None:
        if config:
            return self._plain(a, b, c, m, n, k, **config)
        if not all(type(x) is int and x > 0 for x in (m, n, k)):
            return self._plain(a, b, c, m, n, k)  # its own errors
        if self._run_twin(a, b, c, m, n, k):
            return None
        grid = (-(-n // PLAIN_TILE), -(-m // PLAIN_TILE))
        return self._plain[grid, PLAIN_BLOCK](a, b, c, m, n, k)

    def __getitem__(self, config: Any) -> Any:
        return self._plain[config]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plain, name)

    def __repr__(self) -> str:
        return f"<pyoxide twin picker {self._plain.name} | {self._twin} (sm_90a)>"

    def picks(self, a: Any, b: Any, c: Any, m: Any, n: Any, k: Any) -> str:
        """The entry a plain call with these arguments runs (this kernel or its twin)."""
        ok = all(type(x) is int and x > 0 for x in (m, n, k))
        return self._twin if ok and self._twin_plan(a, b, m, n, k) else self._plain.name

    def _run_twin(self, a: Any, b: Any, c: Any, m: int, n: int, k: int) -> bool:
        plan = self._twin_plan(a, b, m, n, k)
        if plan is None:
            return False
        twins, backend, device, pa, pb = plan
        maps = self._maps(a, device, pa, pb, m, n, k)
        tiles = -(-m // SM90_BM) * -(-n // SM90_BN)
        grid = min(tiles, backend.multiprocessors(device))
        twins[self._twin][grid, SM90_THREADS, SM90_SHARED_BYTES](a, b, maps, c, m, n, k)
        return True

    def _twin_plan(self, a: Any, b: Any, m: int, n: int, k: int) -> tuple[Any, ...] | None:
        """(twin module, backend, device, a's and b's addresses) when the twin can run."""
        if n % 8 or k % 8:
            return None  # TMA's row strides are multiples of 16 bytes
        pa, pb = _gpu_pointer(a), _gpu_pointer(b)
        if pa is None or pb is None or pa % 16 or pb % 16:
            return None
        from . import backends

        backend = backends.get("cupy")
        device = backend.device_of_pointer(pa)
        if device is None or not self._on_sm90(backend, device):
            return None
        twins = self._loader.module()
        return None if twins is None else (twins, backend, device, pa, pb)

    def _on_sm90(self, backend: Any, device: int) -> bool:
        known = self._loader.cc90.get(device)
        if known is None:
            import cupy

            cc = cupy.cuda.Device(device).compute_capability
            known = self._loader.cc90[device] = str(cc) == "90"
        return known

    def _maps(self, a: Any, device: int, pa: int, pb: int, m: int, n: int, k: int) -> Any:
        torch = _is_torch(a)
        key = (torch, device, pa, pb, m, n, k)
        kept = self._loader.maps
        maps = kept.get(key)
        if maps is not None:
            kept.move_to_end(key)
            return maps
        from .backends.cupy._tensormap import SWIZZLE_128B, encode_2d_u16

        raw = encode_2d_u16(self._twin, pa, k, m, 64, SM90_BM, SWIZZLE_128B)
        raw += encode_2d_u16(self._twin, pb, n, k, 64, 64, SWIZZLE_128B)
        if torch:
            import torch as t

            maps = t.frombuffer(bytearray(raw), dtype=t.uint8).to(a.device)
        else:
            import cupy
            import numpy

            with cupy.cuda.Device(device):
                maps = cupy.asarray(numpy.frombuffer(raw, numpy.uint8))
        kept[key] = maps
        if len(kept) > _MAPS_KEPT:
            kept.popitem(last=False)
        return maps


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _gpu_pointer(x: Any) -> int | None:
    """The device address of a GPU array (CuPy, PyTorch, any CAI array), else None."""
    try:
        cai = x.__cuda_array_interface__
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None
    try:
        return int(cai["data"][0])
    except (KeyError, TypeError, IndexError, ValueError):
        return None
