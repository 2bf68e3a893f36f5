"""``kernels.attention(q, k, v, out, causal=False, ...)``: attention forward in one call.

kernels_rs's ``attention`` (mma.sync, sm_80+, and the CPU emulator) and kernels_sm90a's
``attention_sm90`` (wgmma + TMA, sm_90) take the arrays as flat memory plus their
strides, so that (B, S, H, D), (B, H, S, D) and strided views of either run with no
copy. This module is the one place that turns shaped arrays into those arguments: it
checks them, derives every scalar the kernels take (strides, lengths, the grid),
and picks the kernel:

- ``attention_sm90`` where it runs: every array on a GPU of compute capability 9.0,
  q, k, v and out 16-byte aligned with row, head and batch strides that are multiples
  of 8 elements (TMA's rules; the kernel's 16-byte stores). Its TMA tensor maps are
  made here (the CuPy backend's ``cuTensorMapEncodeTiled``) and kept per
  (pointers, shapes, strides);
- ``attention`` everywhere else (other GPUs, the CPU emulator, other views).

Which kernel a call would run: :meth:`Attention.picks`. A call with an explicit
configuration (``kernels.attention_bf16[grid, block](...)``) is the plain kernel, with
the kernel's own parameters.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._arrays import GPU, ArrayProtocolError, ArrayView, view
from .errors import ArgumentTypeError, ArgumentValueError

#: kernels_rs's launch: query rows per block (ATTENTION_BM) and threads.
PLAIN_BM, PLAIN_THREADS = 64, 128
#: kernels_sm90a's launch: ATTENTION_SM90_BM, _THREADS and _SHARED_BYTES (the kernel
#: asserts it got that much shared memory; a test checks these against the Rust).
SM90_BM, SM90_THREADS, SM90_SHARED_BYTES = 128, 384, 164_936
#: The kernels' element types (their instances) and head dimensions.
DTYPES = {"<E2": "bf16", "<f2": "f16"}
HEAD_DIMS = (64, 128)
#: The kernel parameters this module derives from the arrays (a spec passes None).
DERIVED = (
    "q_strides",
    "k_strides",
    "v_strides",
    "out_strides",
    "lse_strides",
    "batch",
    "heads",
    "kv_heads",
    "head_dim",
    "seqlen_q",
    "seqlen_k",
)
LAYOUTS = ("bshd", "bhsd")
_MAPS_KEPT = 64

# A crate's Module (pyoxide/_module.py imports this module; named by role, not imported).
Module = Any


def add_attention(module: Module, load_twins: Callable[[], Module | None]) -> None:
    """Serve ``attention`` and its instances in ``module`` through :class:`Attention`."""
    if "attention" not in module:
        return
    plain = {t: module[f"attention_{t}"] for t in DTYPES.values()}
    maps: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
    for name in ("attention", *(f"attention_{t}" for t in DTYPES.values())):
        module._replace(name, Attention(name, module[name], plain, load_twins, maps))


def as_attention(kernel: Any) -> Attention:
    """`kernel` as the attention call: itself when it is one (``kernels.attention``), or
    the call around one plain instance (``attention_bf16`` of a module loaded with
    :func:`pyoxide.load`, which has no sm_90a twin)."""
    if isinstance(kernel, Attention):
        return kernel
    dtype = kernel.spec.params[0].type
    return Attention(kernel.name, kernel, {dtype: kernel}, lambda: None, OrderedDict())


@dataclass(frozen=True)
class _Tensor:
    """One of q, k, v, out: its view, (batch, row, head) strides in elements, its rows
    (per sequence, or packed) and heads."""

    name: str
    view: ArrayView
    strides: tuple[int, int, int]
    rows: int
    heads: int


class Attention:
    """The attention call (module docs); ``name`` is the launcher it serves."""

    def __init__(
        self,
        name: str,
        raw: Any,
        plain: dict[str, Any],
        load_twins: Callable[[], Module | None],
        maps: OrderedDict[tuple[Any, ...], Any],
    ) -> None:
        self.name = name
        self._raw = raw
        self._plain = plain
        self._load_twins = load_twins
        self._twins: Module | None = None
        self._tried = False
        self._maps = maps
        self._cc90: dict[int, bool] = {}

    def __repr__(self) -> str:
        return f"<pyoxide attention call {self.name} | attention_sm90 (sm_90a)>"

    def __getitem__(self, config: Any) -> Any:
        return self._raw[config]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def __call__(
        self,
        q: Any,
        k: Any,
        v: Any,
        out: Any,
        causal: bool = False,
        *,
        scale: float | None = None,
        lse: Any = None,
        cu_seqlens_q: Any = None,
        cu_seqlens_k: Any = None,
        max_seqlen_q: int | None = None,
        max_seqlen_k: int | None = None,
        layout: str = "bshd",
    ) -> None:
        """``out = softmax(scale · q·kᵀ + mask) · v`` (docs/guide/attention.md).

        q (B, Sq, H, D), k and v (B, Sk, Hk, D), out like q (``layout="bhsd"``: heads
        before rows), bf16 or f16, D 64 or 128, H a multiple of Hk; any strides with d
        contiguous. ``causal``: row i sees keys j <= i + Sk - Sq. ``scale``: default
        1/sqrt(D). ``lse``: an f32 (B, H, Sq) array to receive each row's log-sum-exp.
        Variable lengths: q (total_q, H, D) and k, v (total_k, Hk, D) packed, with int32
        ``cu_seqlens_q``/``_k`` of B + 1 offsets (lse then (H, total_q)); the longest
        sequences (``max_seqlen_q``/``_k``) are read from them when not given."""
        call = self._plan(
            q,
            k,
            v,
            out,
            causal,
            scale,
            lse,
            cu_seqlens_q,
            cu_seqlens_k,
            max_seqlen_q,
            max_seqlen_k,
            layout,
        )
        if call is None:
            return  # nothing to compute: an empty batch, or no query rows
        kernel, grid, block, shared, args = call
        kernel[grid, block, shared](*args)

    def picks(self, q: Any, k: Any, v: Any, out: Any, **options: Any) -> str:
        """The kernel entry a call with these arguments runs."""
        call = self._plan(
            q,
            k,
            v,
            out,
            options.pop("causal", False),
            options.pop("scale", None),
            options.pop("lse", None),
            options.pop("cu_seqlens_q", None),
            options.pop("cu_seqlens_k", None),
            options.pop("max_seqlen_q", None),
            options.pop("max_seqlen_k", None),
            options.pop("layout", "bshd"),
        )
        return "" if call is None else str(call[0].name)

    # --- planning ------------------------------------------------------------------

    def _refuse(self, param: str, expected: str, got: str, fix: str, value: bool = True) -> Any:
        cls = ArgumentValueError if value else ArgumentTypeError
        return cls(self.name, param, expected, got, fix)

    def _view(self, name: str, x: Any) -> ArrayView:
        try:
            v = view(x)
        except ArrayProtocolError as e:
            raise self._refuse(name, "an array", e.got, e.fix, value=False) from None
        if v is None:
            raise self._refuse(
                name,
                "an array (NumPy, CuPy or PyTorch)",
                type(x).__name__,
                f"pass {name} as an array",
                value=False,
            )
        return v

    def _plan(
        self,
        q: Any,
        k: Any,
        v: Any,
        out: Any,
        causal: Any,
        scale: Any,
        lse: Any,
        cu_q: Any,
        cu_k: Any,
        max_q: Any,
        max_k: Any,
        layout: str,
    ) -> tuple[Any, Any, int, int, list[Any]] | None:
        if layout not in LAYOUTS:
            raise self._refuse(
                "layout",
                "'bshd' or 'bhsd'",
                repr(layout),
                "pass layout='bshd' (batch, seq, heads, d) or 'bhsd'",
            )
        if not isinstance(causal, bool):
            raise self._refuse(
                "causal", "a bool", repr(causal), "pass causal=True or False", value=False
            )
        varlen = cu_q is not None or cu_k is not None
        if varlen and (cu_q is None or cu_k is None):
            raise self._refuse(
                "cu_seqlens_k" if cu_k is None else "cu_seqlens_q",
                "both cu_seqlens_q and cu_seqlens_k, or neither",
                "only one",
                "pass the cumulative offsets of the queries and of the keys",
            )
        views = {n: self._view(n, x) for n, x in (("q", q), ("k", k), ("v", v), ("out", out))}
        dtype = DTYPES.get(views["q"].typestr)
        if dtype is None:
            raise self._refuse(
                "q",
                "a bfloat16 or float16 array",
                views["q"].describe(),
                "convert q, k, v and out to bfloat16 (or float16)",
                value=False,
            )
        for n, x in views.items():
            if x.typestr != views["q"].typestr:
                raise self._refuse(
                    n,
                    f"the dtype of q ({views['q'].dtype_name})",
                    x.describe(),
                    f"convert {n} to q's dtype",
                    value=False,
                )
        rank = 3 if varlen else 4
        t = {n: self._tensor(n, x, rank, layout) for n, x in views.items()}
        d = views["q"].shape[-1]
        if d not in HEAD_DIMS:
            raise self._refuse(
                "q", "head dimension 64 or 128", f"{d}", "pad the head dimension to 64 or 128"
            )
        for n in ("k", "v", "out"):
            if views[n].shape[-1] != d:
                raise self._refuse(
                    n,
                    f"head dimension {d} (q's)",
                    f"{views[n].shape[-1]}",
                    f"give {n} q's head dimension",
                )
        heads, kv_heads = t["q"].heads, t["k"].heads
        if t["out"].heads != heads or t["out"].rows != t["q"].rows:
            raise self._refuse(
                "out",
                f"q's shape {views['q'].shape}",
                f"{views['out'].shape}",
                "allocate out like q (torch.empty_like(q))",
            )
        if t["v"].heads != kv_heads or t["v"].rows != t["k"].rows:
            raise self._refuse(
                "v", f"k's shape {views['k'].shape}", f"{views['v'].shape}", "pass v with k's shape"
            )
        if kv_heads == 0 or heads % kv_heads:
            raise self._refuse(
                "k",
                f"a number of heads that divides q's {heads}",
                f"{kv_heads}",
                "use k and v heads that divide q's (GQA groups)",
            )
        if varlen:
            batch, cu_qv, cu_kv, seq_q, seq_k = self._varlen(cu_q, cu_k, max_q, max_k, t)
        else:
            batch, seq_q, seq_k = views["q"].shape[0], t["q"].rows, t["k"].rows
            for n in ("k", "v", "out"):
                if views[n].shape[0] != batch:
                    raise self._refuse(
                        n,
                        f"batch {batch} (q's)",
                        f"{views[n].shape[0]}",
                        "pass arrays of one batch",
                    )
            cu_qv = cu_kv = None
        if scale is None:
            scale = 1.0 / math.sqrt(d)
        if not (isinstance(scale, (int, float)) and scale > 0 and math.isfinite(scale)):
            raise self._refuse(
                "scale",
                "a positive float",
                repr(scale),
                "leave scale out (1/sqrt(d)) or pass a positive number",
            )
        lse_strides = self._lse(lse, varlen, batch, heads, seq_q, views["q"])
        if batch == 0 or seq_q == 0 or heads == 0:
            return None
        lib = _Lib(q)
        arrays = {n: lib.flat(views[n].obj, _span(views[n])) for n in views}
        empty = lib.empty_i32(views["q"])
        scalars = {
            "cu_seqlens_q": cu_q if cu_q is not None else empty,
            "cu_seqlens_k": cu_k if cu_k is not None else empty,
            "lse": lib.flat(lse, _span(self._view("lse", lse)))
            if lse is not None
            else lib.empty_f32(views["q"]),
            "q_strides": t["q"].strides,
            "k_strides": t["k"].strides,
            "v_strides": t["v"].strides,
            "out_strides": t["out"].strides,
            "lse_strides": lse_strides,
            "batch": batch,
            "heads": heads,
            "kv_heads": kv_heads,
            "head_dim": d,
            "seqlen_q": seq_q,
            "seqlen_k": seq_k,
            "scale": float(scale),
            "causal": causal,
        }
        values = {**arrays, **scalars}
        twin = self._twin(dtype, views, t)
        if twin is not None:
            values["maps"] = self._tensor_maps(lib, views, t, varlen, cu_qv, cu_kv)
            grid = (-(-seq_q // SM90_BM), heads, batch)
            kernel, block, shared = twin, SM90_THREADS, SM90_SHARED_BYTES
        else:
            kernel = self._plain.get(dtype)
            if kernel is None:
                raise self._refuse(
                    "q",
                    f"a {'/'.join(self._plain)} array ({self.name})",
                    views["q"].describe(),
                    "call kernels.attention, which takes both",
                    value=False,
                )
            block, shared = PLAIN_THREADS, 0
            grid = (-(-seq_q // PLAIN_BM), heads, batch)
        args = [values[p.name] for p in kernel.spec.params]
        return kernel, grid, block, shared, args

    def _tensor(self, name: str, v: ArrayView, rank: int, layout: str) -> _Tensor:
        if len(v.shape) != rank:
            want = (
                "(total, heads, d)"
                if rank == 3
                else ("(batch, seq, heads, d)" if layout == "bshd" else "(batch, heads, seq, d)")
            )
            raise self._refuse(
                name,
                f"a {rank}-D array {want}",
                f"{len(v.shape)}-D {v.describe()}",
                "pass cu_seqlens_q/_k for packed 3-D arrays, else 4-D arrays",
            )
        item = v.itemsize
        strides = v.strides or _c_strides(v.shape, item)
        if any(s < 0 or s % item for s in strides):
            raise self._refuse(
                name,
                "non-negative strides",
                f"strides {strides} (bytes)",
                f"pass {name}.contiguous() (or a positive-stride view)",
            )
        el = [s // item for s in strides]
        if v.shape[-1] > 1 and el[-1] != 1:
            raise self._refuse(
                name,
                "a contiguous last (d) dimension",
                f"d stride {el[-1]}",
                f"pass {name}.contiguous()",
            )
        if rank == 3:
            return _Tensor(name, v, (0, el[0], el[1]), v.shape[0], v.shape[1])
        if layout == "bshd":
            return _Tensor(name, v, (el[0], el[1], el[2]), v.shape[1], v.shape[2])
        return _Tensor(name, v, (el[0], el[2], el[1]), v.shape[2], v.shape[1])

    def _varlen(self, cu_q: Any, cu_k: Any, max_q: Any, max_k: Any, t: dict[str, _Tensor]) -> Any:
        offsets = []
        for name, cu, rows in (
            ("cu_seqlens_q", cu_q, t["q"].rows),
            ("cu_seqlens_k", cu_k, t["k"].rows),
        ):
            cv = self._view(name, cu)
            if (
                cv.typestr != "<i4"
                or len(cv.shape) != 1
                or not cv.is_c_contiguous()
                or cv.shape[0] < 1
            ):
                raise self._refuse(
                    name,
                    "a contiguous 1-D int32 array of batch + 1 offsets",
                    cv.describe(),
                    f"pass {name} as int32 (torch.int32)",
                )
            offsets.append((name, cu, cv, rows))
        if offsets[0][2].shape != offsets[1][2].shape:
            raise self._refuse(
                "cu_seqlens_k",
                f"{offsets[0][2].shape[0]} offsets (cu_seqlens_q's)",
                f"{offsets[1][2].shape[0]}",
                "pass one offset per sequence, plus one",
            )
        longest = []
        for (name, cu, _, rows), given in zip(offsets, (max_q, max_k), strict=True):
            if given is None:
                host = _to_host(cu)
                if len(host) > 1 and (
                    host[0] < 0 or (host[1:] < host[:-1]).any() or host[-1] > rows
                ):
                    raise self._refuse(
                        name,
                        f"offsets from 0 or more, non-decreasing, at most {rows}",
                        f"{host.tolist()[:8]}",
                        "pass the cumulative sequence lengths",
                    )
                given = int((host[1:] - host[:-1]).max()) if len(host) > 1 else 0
            longest.append(int(given))
        return offsets[0][2].shape[0] - 1, offsets[0][1], offsets[1][1], longest[0], longest[1]

    def _lse(
        self, lse: Any, varlen: bool, batch: int, heads: int, seq_q: int, q: ArrayView
    ) -> tuple[int, int]:
        if lse is None:
            return (0, 0)
        lv = self._view("lse", lse)
        rows = q.shape[0] if varlen else seq_q
        want = (heads, rows) if varlen else (batch, heads, rows)
        if (
            lv.typestr != "<f4"
            or tuple(lv.shape) != want
            or not lv.is_c_contiguous()
            or lv.kind != q.kind
        ):
            raise self._refuse(
                "lse",
                f"a contiguous float32 array of shape {want}",
                lv.describe(),
                "allocate it with torch.empty(shape, dtype=torch.float32, device=q.device)",
            )
        return (0, rows) if varlen else (heads * rows, rows)

    # --- the sm_90a twin -----------------------------------------------------------

    def _twin(self, dtype: str, views: dict[str, ArrayView], t: dict[str, _Tensor]) -> Any:
        """kernels_sm90a's instance for `dtype` when it can run this call, else None."""
        if any(x.kind != GPU for x in views.values()) or t["q"].rows == 0 or t["k"].rows == 0:
            return None  # (a map cannot describe an empty array)
        for x in t.values():
            if x.view.ptr % 16 or any(s % 8 for s in x.strides):
                return None  # TMA: 16-byte aligned rows; the epilogue's 16-byte stores
        from . import backends

        backend = backends.get("cupy")
        device = backend.device_of_pointer(views["q"].ptr)
        if device is None or not self._on_sm90(device):
            return None
        if not self._tried:
            self._tried = True
            self._twins = self._load_twins()
        return None if self._twins is None else self._twins[f"attention_sm90_{dtype}"]

    def _on_sm90(self, device: int) -> bool:
        known = self._cc90.get(device)
        if known is None:
            import cupy

            cc = cupy.cuda.Device(device).compute_capability
            known = self._cc90[device] = str(cc) == "90"
        return known

    def _tensor_maps(
        self,
        lib: _Lib,
        views: dict[str, ArrayView],
        t: dict[str, _Tensor],
        varlen: bool,
        cu_q: Any,
        cu_k: Any,
    ) -> Any:
        """q's, k's and v's 4-D TMA maps (d, rows, heads, batch), kept per arrays."""
        d = views["q"].shape[-1]
        batch = 1 if varlen else views["q"].shape[0]
        key = (
            lib.name,
            d,
            batch,
            *((x.view.ptr, x.strides, x.rows, x.heads) for n, x in t.items() if n != "out"),
        )
        maps = self._maps.get(key)
        if maps is not None:
            self._maps.move_to_end(key)
            return maps
        from .backends.cupy._tensormap import SWIZZLE_128B, encode_tiled

        raw = b""
        for n in ("q", "k", "v"):
            x = t[n]
            # A varlen batch is one entry (its batch stride 0 is no stride TMA takes).
            b_stride = x.strides[0] if not varlen else max(x.strides[1] * x.rows, 8)
            raw += encode_tiled(
                self.name,
                x.view.ptr,
                (d, x.rows, x.heads, batch),
                (2 * x.strides[1], 2 * x.strides[2], 2 * b_stride),
                (64, 128, 1, 1),
                SWIZZLE_128B,
            )
        maps = lib.device_bytes(raw, views["q"])
        self._maps[key] = maps
        if len(self._maps) > _MAPS_KEPT:
            self._maps.popitem(last=False)
        return maps


def _c_strides(shape: tuple[int, ...], item: int) -> tuple[int, ...]:
    out, acc = [], item
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _span(v: ArrayView) -> int:
    """Elements from a view's first to its last element, inclusive (0 if empty)."""
    if any(n == 0 for n in v.shape):
        return 0
    strides = v.strides or _c_strides(v.shape, v.itemsize)
    return 1 + sum((n - 1) * s for n, s in zip(v.shape, strides, strict=True)) // v.itemsize


def _to_host(x: Any) -> Any:
    import numpy as np

    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


class _Lib:
    """The array library of a call: flat views and small arrays made so that the launch
    sees one library (PyTorch's stream for tensors; CuPy's for other GPU arrays)."""

    def __init__(self, like: Any) -> None:
        module = type(like).__module__
        self.name = (
            "torch"
            if module.startswith("torch")
            else ("numpy" if module.startswith("numpy") else "other")
        )

    def flat(self, x: Any, span: int) -> Any:
        """The 1-D array of the `span` elements from `x`'s first one (its memory as the
        kernel reads it through the strides)."""
        if self.name == "torch":
            return x.as_strided((span,), (1,))
        if self.name == "numpy":
            import numpy as np

            return np.lib.stride_tricks.as_strided(x, (span,), (x.itemsize,))
        return _FlatGpu(x, view(x), span)  # CuPy and other __cuda_array_interface__ arrays

    def _empty(self, like: ArrayView, dtype: str) -> Any:
        if self.name == "torch":
            import torch

            return torch.empty(0, dtype=getattr(torch, dtype), device=like.obj.device)
        import numpy as np

        if self.name == "numpy":
            return np.empty(0, dtype)
        import cupy

        return cupy.empty(0, dtype)

    def empty_i32(self, like: ArrayView) -> Any:
        return self._empty(like, "int32")

    def empty_f32(self, like: ArrayView) -> Any:
        return self._empty(like, "float32")

    def device_bytes(self, raw: bytes, like: ArrayView) -> Any:
        if self.name == "torch":
            import torch

            return torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(like.obj.device)
        import cupy
        import numpy as np

        return cupy.asarray(np.frombuffer(raw, np.uint8))


class _FlatGpu:
    """A 1-D GPU array over `span` elements from `v`'s first one (through
    ``__cuda_array_interface__``), keeping `base` alive."""

    def __init__(self, base: Any, v: ArrayView | None, span: int) -> None:
        assert v is not None and v.kind == GPU
        self.base = base
        self.dtype = getattr(base, "dtype", None)  # names bfloat16 for ml_dtypes arrays
        self.__cuda_array_interface__ = {
            "shape": (span,),
            "typestr": v.typestr,
            "version": 3,
            "data": (v.ptr, v.readonly),
            "strides": None,
            "stream": v.stream,
        }
