"""Bundled kernels with a faster twin for one architecture: the one place that picks it.

``kernels.gemm_bf16(a, b, c)`` (and ``gemm_bf16_bf16``; a (m, k), b (k, n), c (m, n))
runs kernels_sm90a's wgmma + TMA kernel when the arrays are C-contiguous on a GPU of
compute capability 9.0 and the shapes suit TMA (n and k multiples of 8, 16-byte-aligned
a, b and c), and kernels_rs's mma.sync kernel everywhere else (other GPUs, the CPU
emulator, other shapes or views), which checks the shapes and sizes its grid from c.
A call with an explicit configuration (``kernel[grid, block](...)``,
``.launch(..., grid=...)``) is always the plain kernel, whose launch it describes.

The twin reads a and b and writes c through TMA tensor maps, made here (by the CuPy
backend's ``cuTensorMapEncodeTiled``) and kept in device memory per (a, b, c, m, n, k):
a map depends only on the addresses and extents, never on the data.

A GEMM launch is short (0.2 ms at 4096³), so the Python in front of it counts: the
first call with given CuPy arrays takes the checked path (the plain launcher's own
checks, its general launch, which also opts the twin in to its large shared memory),
and later calls with arrays of the same addresses, shapes, strides and dtypes on the
same device reuse that decision and go to the twin's compiled launcher
(pyoxide._native) directly.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _abi

if TYPE_CHECKING:
    from ._arrays import ArrayView
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
SM90_BM, SM90_BN, SM90_THREADS, SM90_SHARED_BYTES = 128, 256, 384, 230_464
_MAPS_KEPT = 64
#: What `_dims` found: m, n, k and the views of a, b and c.
_Dims = tuple[int, int, int, tuple["ArrayView", "ArrayView", "ArrayView"]]
#: Calls remembered for the fast route (each holds the maps of its arrays).
_CALLS_KEPT = 64


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
        self.cupy: Any = None  # the cupy module, once a twin launch has imported it

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
        # _call_key -> (twin's compiled launcher, its checked launch, maps, m, n, k).
        self._calls: OrderedDict[tuple[Any, ...], tuple[Any, ...]] = OrderedDict()

    def __call__(self, a: Any, b: Any, c: Any, *rest: Any, **config: Any) -> None:
        if config or rest:
            return self._plain(a, b, c, *rest, **config)  # its own errors
        if self._calls:
            key = self._call_key(a, b, c)
            known = self._calls.get(key) if key is not None else None
            if known is not None:
                fast, checked, maps, m, n, k = known
                flat = (a.reshape(-1), b.reshape(-1), maps, c.reshape(-1), m, n, k)
                if fast(flat, checked):
                    return None
        dims = _dims(a, b, c)
        if dims is not None and self._run_twin(a, b, c, dims):
            return None
        return self._plain(a, b, c)  # the shapes checked, the grid from c

    def __getitem__(self, config: Any) -> Any:
        return self._plain[config]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plain, name)

    def __repr__(self) -> str:
        return f"<pyoxide twin picker {self._plain.name} | {self._twin} (sm_90a)>"

    def picks(self, a: Any, b: Any, c: Any) -> str:
        """The entry a plain call with these arguments runs (this kernel or its twin)."""
        dims = _dims(a, b, c)
        return self._twin if dims and self._twin_plan(dims) else self._plain.name

    def _run_twin(self, a: Any, b: Any, c: Any, dims: _Dims) -> bool:
        m, n, k, _ = dims
        plan = self._twin_plan(dims)
        if plan is None:
            return False
        twins, backend, device, pa, pb, pc = plan
        maps = self._maps(a, device, pa, pb, pc, m, n, k)
        tiles = -(-m // SM90_BM) * -(-n // SM90_BN)
        grid = min(tiles, backend.multiprocessors(device))
        flat = (x.reshape(-1) for x in (a, b, c))  # C-contiguous: views of the same memory
        a1, b1, c1 = flat
        twin = twins[self._twin]
        twin[grid, SM90_THREADS, SM90_SHARED_BYTES](a1, b1, maps, c1, m, n, k)
        # That launch took the general path, which opted the twin in to its shared memory
        # and built its compiled launcher: later calls like this one may go straight there.
        key = self._call_key(a, b, c)
        fast = getattr(twin, "_fast", None)
        if key is not None and fast is not None:
            checked = (grid, 1, 1, SM90_THREADS, 1, 1, SM90_SHARED_BYTES)
            self._calls[key] = (fast, checked, maps, m, n, k)
            if len(self._calls) > _CALLS_KEPT:
                self._calls.popitem(last=False)
        return True

    def _call_key(self, a: Any, b: Any, c: Any) -> tuple[Any, ...] | None:
        """What decides a CuPy call's route, read cheaply: addresses, shapes, strides and
        dtypes (contiguity, alignment and the maps follow from them) and the current
        device. None for anything but three CuPy arrays (the checked path then)."""
        cupy = self._loader.cupy
        if cupy is None:
            return None
        nd = cupy.ndarray
        if type(a) is not nd or type(b) is not nd or type(c) is not nd:
            return None
        return (
            cupy.cuda.runtime.getDevice(),
            a.data.ptr, a.shape, a.strides, a.dtype,
            b.data.ptr, b.shape, b.strides, b.dtype,
            c.data.ptr, c.shape, c.strides, c.dtype,
        )  # fmt: skip

    def _twin_plan(self, dims: _Dims) -> tuple[Any, ...] | None:
        """(twin module, backend, device, a's, b's and c's addresses) when the twin can
        run."""
        _, n, k, views = dims
        if n % 8 or k % 8:
            return None  # TMA's row strides are multiples of 16 bytes
        from ._arrays import RUST_TYPESTR

        wanted = [RUST_TYPESTR[p.type] for p in self._plain.spec.params]
        if any(v.typestr != t for v, t in zip(views, wanted, strict=True)):
            return None  # the plain kernel names the dtype it wants
        pa, pb, pc = (v.ptr for v in views)
        if pa % 16 or pb % 16 or pc % 16:
            return None
        from . import backends

        backend = backends.get("cupy")
        device = backend.device_of_pointer(pa)
        if device is None or not self._on_sm90(backend, device):
            return None
        twins = self._loader.module()
        return None if twins is None else (twins, backend, device, pa, pb, pc)

    def _on_sm90(self, backend: Any, device: int) -> bool:
        known = self._loader.cc90.get(device)
        if known is None:
            import cupy

            self._loader.cupy = cupy
            cc = cupy.cuda.Device(device).compute_capability
            known = self._loader.cc90[device] = str(cc) == "90"
        return known

    def _maps(self, a: Any, device: int, pa: int, pb: int, pc: int, m: int, n: int, k: int) -> Any:
        torch = _is_torch(a)
        out_bytes = _abi.SCALARS[self._plain.spec.params[2].type].size  # f32 or bf16
        key = (torch, device, pa, pb, pc, out_bytes, m, n, k)
        kept = self._loader.maps
        maps = kept.get(key)
        if maps is not None:
            kept.move_to_end(key)
            return maps
        from .backends.cupy._tensormap import SWIZZLE_128B, encode_2d

        raw = encode_2d(self._twin, pa, k, m, 64, SM90_BM, SWIZZLE_128B)
        raw += encode_2d(self._twin, pb, n, k, 64, 64, SWIZZLE_128B)
        # c: the epilogue's boxes, 64 rows of 128 bytes (kernels_sm90a's EPI_BOX_BYTES).
        raw += encode_2d(self._twin, pc, n, m, 128 // out_bytes, 64, SWIZZLE_128B, out_bytes)
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


def _dims(a: Any, b: Any, c: Any) -> _Dims | None:
    """(m, n, k, the three arrays' views) when a (m, k), b (k, n) and c (m, n) are
    C-contiguous GPU matrices that agree, else None (the plain kernel then runs the call,
    or explains what is wrong)."""
    from ._arrays import GPU, ArrayProtocolError, view

    try:
        va, vb, vc = view(a), view(b), view(c)
    except ArrayProtocolError:
        return None
    if not all(v is not None and v.kind == GPU and len(v.shape) == 2 and v.is_c_contiguous()
               for v in (va, vb, vc)):  # fmt: skip
        return None
    (m, k), (k2, n), (m2, n2) = va.shape, vb.shape, vc.shape  # type: ignore[union-attr]
    if (k, m, n) != (k2, m2, n2) or 0 in (m, n, k):
        return None
    return m, n, k, (va, vb, vc)  # type: ignore[return-value]


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")
