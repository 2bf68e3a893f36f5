"""What an attention call's arrays say: pyoxide/bundled/attention.py's checks and the scalars
the kernels take, derived from the shapes and strides (no copy), and the flat views
through which the kernels read strided arrays. Every refusal is an ArgumentError that
names the parameter, what was expected, what came, and a fix."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from .._launch.arrays import GPU, ArrayProtocolError, ArrayView, view
from ..errors import ArgumentError, ArgumentTypeError, ArgumentValueError

#: The kernels' element types (the instances' names) by typestr, and head dimensions.
DTYPES = {"<E2": "bf16", "<f2": "f16"}
HEAD_DIMS = (64, 128)
LAYOUTS = ("bshd", "bhsd")


@dataclass(frozen=True)
class Options:
    """The call's keyword arguments, as given."""

    causal: Any = False
    scale: Any = None
    lse: Any = None
    cu_seqlens_q: Any = None
    cu_seqlens_k: Any = None
    max_seqlen_q: Any = None
    max_seqlen_k: Any = None
    layout: str = "bshd"


@dataclass(frozen=True)
class Tensor:
    """One of q, k, v, out: its view, (batch, row, head) strides in elements, its rows
    (a sequence's, or all packed rows) and heads."""

    view: ArrayView
    strides: tuple[int, int, int]
    rows: int
    heads: int


@dataclass(frozen=True)
class Plan:
    """A checked call: everything the kernels' scalars are made of."""

    dtype: str  # "bf16" or "f16"
    tensors: dict[str, Tensor]  # q, k, v, out
    batch: int
    heads: int
    kv_heads: int
    head_dim: int
    seqlen_q: int  # the longest sequence's, for a varlen batch
    seqlen_k: int
    varlen: bool
    scale: float
    lse_strides: tuple[int, int]


def refuse(
    kernel: str, param: str, expected: str, got: str, fix: str, *, kind: bool = False
) -> ArgumentError:
    """The error for a bad argument (`kind`: the wrong kind of thing, a TypeError)."""
    cls = ArgumentTypeError if kind else ArgumentValueError
    return cls(kernel, param, expected, got, fix)


def array_view(kernel: str, name: str, x: Any) -> ArrayView:
    try:
        v = view(x)
    except ArrayProtocolError as e:
        raise refuse(kernel, name, "an array", e.got, e.fix, kind=True) from None
    if v is None:
        raise refuse(kernel, name, "an array (NumPy, CuPy or PyTorch)", type(x).__name__,
                     f"pass {name} as an array", kind=True)  # fmt: skip
    return v


def plan(kernel: str, q: Any, k: Any, v: Any, out: Any, o: Options) -> Plan:
    """Check a call (module docs) and derive its scalars."""
    if o.layout not in LAYOUTS:
        raise refuse(kernel, "layout", "'bshd' or 'bhsd'", repr(o.layout),
                     "pass layout='bshd' (batch, seq, heads, d) or 'bhsd'")  # fmt: skip
    if not is_flag(o.causal):
        raise refuse(kernel, "causal", "a bool", repr(o.causal), "pass causal=True or False",
                     kind=True)  # fmt: skip
    varlen = o.cu_seqlens_q is not None or o.cu_seqlens_k is not None
    if varlen and (o.cu_seqlens_q is None or o.cu_seqlens_k is None):
        raise refuse(kernel, "cu_seqlens_k" if o.cu_seqlens_k is None else "cu_seqlens_q",
                     "both cu_seqlens_q and cu_seqlens_k, or neither", "only one",
                     "pass the cumulative offsets of the queries and of the keys")  # fmt: skip
    given = {"q": q, "k": k, "v": v, "out": out}
    views = {n: array_view(kernel, n, x) for n, x in given.items()}
    first = views["q"]
    dtype = DTYPES.get(first.typestr)
    if dtype is None:
        raise refuse(kernel, "q", "a bfloat16 or float16 array", first.describe(),
                     "convert q, k, v and out to bfloat16 (or float16)", kind=True)  # fmt: skip
    for n, x in views.items():
        if x.typestr != first.typestr:
            raise refuse(kernel, n, f"the dtype of q ({first.dtype_name})", x.describe(),
                         f"convert {n} to q's dtype", kind=True)  # fmt: skip
    t = {n: tensor(kernel, n, x, 3 if varlen else 4, o.layout) for n, x in views.items()}
    d = first.shape[-1]
    if d not in HEAD_DIMS:
        raise refuse(kernel, "q", "head dimension 64 or 128", f"{d}",
                     "pad the head dimension to 64 or 128")  # fmt: skip
    for n in ("k", "v", "out"):
        if views[n].shape[-1] != d:
            raise refuse(kernel, n, f"head dimension {d} (q's)", f"{views[n].shape[-1]}",
                         f"give {n} q's head dimension")  # fmt: skip
    heads, kv_heads = t["q"].heads, t["k"].heads
    if (t["out"].heads, t["out"].rows) != (heads, t["q"].rows):
        raise refuse(kernel, "out", f"q's shape {first.shape}", f"{views['out'].shape}",
                     "allocate out like q (torch.empty_like(q))")  # fmt: skip
    if (t["v"].heads, t["v"].rows) != (kv_heads, t["k"].rows):
        raise refuse(kernel, "v", f"k's shape {views['k'].shape}", f"{views['v'].shape}",
                     "pass v with k's shape")  # fmt: skip
    if kv_heads == 0 or heads % kv_heads:
        raise refuse(kernel, "k", f"a number of heads that divides q's {heads}", f"{kv_heads}",
                     "use k and v heads that divide q's (GQA groups)")  # fmt: skip
    if varlen:
        batch, seq_q, seq_k = _varlen(kernel, o, t)
    else:
        batch, seq_q, seq_k = first.shape[0], t["q"].rows, t["k"].rows
        for n in ("k", "v", "out"):
            if views[n].shape[0] != batch:
                raise refuse(kernel, n, f"batch {batch} (q's)", f"{views[n].shape[0]}",
                             "pass arrays of one batch")  # fmt: skip
    scale = 1.0 / math.sqrt(d) if o.scale is None else o.scale
    if not (is_number(scale) and scale > 0 and math.isfinite(scale)):
        raise refuse(kernel, "scale", "a positive float", repr(scale),
                     "leave scale out (1/sqrt(d)) or pass a positive number")  # fmt: skip
    lse_strides = _lse(kernel, o.lse, varlen, batch, heads, seq_q, first)
    return Plan(dtype, t, batch, heads, kv_heads, d, seq_q, seq_k, varlen, float(scale),
                lse_strides)  # fmt: skip


def is_flag(x: Any) -> bool:
    """A bool as users pass one: Python's, or a NumPy bool (not a subclass of it), as
    the kernels' bool parameters take (pyoxide/_launch/args.py)."""
    import numpy as np  # at the first call, not at `import pyoxide`

    return isinstance(x, (bool, np.bool_))


def is_number(x: Any) -> bool:
    """A real number as users pass one: a Python int or float, or a NumPy scalar
    (``np.float32(0.125)``, which is not a float), never a bool."""
    return isinstance(x, numbers.Real) and not is_flag(x)


def tensor(kernel: str, name: str, v: ArrayView, rank: int, layout: str) -> Tensor:
    if len(v.shape) != rank:
        want = "(total, heads, d)" if rank == 3 else (
            "(batch, seq, heads, d)" if layout == "bshd" else "(batch, heads, seq, d)"
        )  # fmt: skip
        raise refuse(kernel, name, f"a {rank}-D array {want}", f"{len(v.shape)}-D {v.describe()}",
                     "pass cu_seqlens_q/_k with packed 3-D arrays, else 4-D arrays")  # fmt: skip
    item = v.itemsize
    strides = v.strides or c_strides(v.shape, item)
    if any(s < 0 or s % item for s in strides):
        raise refuse(kernel, name, "non-negative strides", f"strides {strides} (bytes)",
                     f"pass {name}.contiguous() (or a positive-stride view)")  # fmt: skip
    el = [s // item for s in strides]
    if v.shape[-1] > 1 and el[-1] != 1:
        raise refuse(kernel, name, "a contiguous last (d) dimension", f"d stride {el[-1]}",
                     f"pass {name}.contiguous()")  # fmt: skip
    if rank == 3:  # packed rows: no batch stride (sequences are row offsets)
        return Tensor(v, (0, el[0], el[1]), v.shape[0], v.shape[1])
    if layout == "bshd":
        return Tensor(v, (el[0], el[1], el[2]), v.shape[1], v.shape[2])
    return Tensor(v, (el[0], el[2], el[1]), v.shape[2], v.shape[1])


def _varlen(kernel: str, o: Options, t: dict[str, Tensor]) -> tuple[int, int, int]:
    """(batch, longest query sequence, longest key sequence) of a packed batch."""
    longest, count = [], []
    for name, cu, rows, given in (
        ("cu_seqlens_q", o.cu_seqlens_q, t["q"].rows, o.max_seqlen_q),
        ("cu_seqlens_k", o.cu_seqlens_k, t["k"].rows, o.max_seqlen_k),
    ):
        cv = array_view(kernel, name, cu)
        if cv.typestr != "<i4" or len(cv.shape) != 1 or not cv.is_c_contiguous() or not cv.shape[0]:
            raise refuse(kernel, name, "a contiguous 1-D int32 array of batch + 1 offsets",
                         cv.describe(), f"pass {name} as int32 (torch.int32)")  # fmt: skip
        count.append(cv.shape[0])
        if given is None:  # read from the offsets (a copy to the host for GPU arrays)
            host = to_host(cu)
            bad = host[0] < 0 or (host[1:] < host[:-1]).any() or host[-1] > rows
            if bad:
                want = f"offsets from 0 or more, non-decreasing, at most {rows}"
                raise refuse(kernel, name, want, f"{host.tolist()[:8]}",
                             "pass the cumulative sequence lengths")  # fmt: skip
            given = int((host[1:] - host[:-1]).max()) if len(host) > 1 else 0
        longest.append(int(given))
    if count[0] != count[1]:
        raise refuse(kernel, "cu_seqlens_k", f"{count[0]} offsets (cu_seqlens_q's)", f"{count[1]}",
                     "pass one offset per sequence, plus one")  # fmt: skip
    return count[0] - 1, longest[0], longest[1]


def _lse(kernel: str, lse: Any, varlen: bool, batch: int, heads: int, seq_q: int,
         q: ArrayView) -> tuple[int, int]:  # fmt: skip
    """lse's (batch, head) strides: (B, H, Sq), or (H, total_q) for a packed batch."""
    if lse is None:
        return (0, 0)
    lv = array_view(kernel, "lse", lse)
    rows = q.shape[0] if varlen else seq_q
    want = (heads, rows) if varlen else (batch, heads, rows)
    if (
        lv.typestr != "<f4"
        or tuple(lv.shape) != want
        or not lv.is_c_contiguous()
        or lv.kind != q.kind
    ):
        fix = "allocate it with torch.empty(shape, dtype=torch.float32, device=q.device)"
        raise refuse(kernel, "lse", f"a contiguous float32 array of shape {want}", lv.describe(),
                     fix)  # fmt: skip
    return (0, rows) if varlen else (heads * rows, rows)


def c_strides(shape: tuple[int, ...], item: int) -> tuple[int, ...]:
    out, acc = [], item
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def span(v: ArrayView) -> int:
    """Elements from a view's first to its last element, inclusive (0 if empty)."""
    if any(n == 0 for n in v.shape):
        return 0
    strides = v.strides or c_strides(v.shape, v.itemsize)
    return 1 + sum((n - 1) * s for n, s in zip(v.shape, strides, strict=True)) // v.itemsize


def to_host(x: Any) -> Any:
    import numpy as np

    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


#: ArrayLib.empty's PyTorch tensors, by (device, dtype name): zero-size, never written.
_EMPTY_TENSORS: dict[tuple[Any, str], Any] = {}


class ArrayLib:
    """The array library of a call: flat views and small arrays made so that the launch
    sees one library (PyTorch's stream for tensors; CuPy's for other GPU arrays), and, for
    PyTorch tensors and CuPy arrays, arrays of the types the compiled launchers read."""

    def __init__(self, like: Any) -> None:
        module = type(like).__module__
        self.name = "torch" if module.startswith("torch") else (
            "numpy" if module.startswith("numpy") else "other"
        )  # fmt: skip
        self._gpu_arrays: Any = None

    def _call_arrays(self) -> Any:
        """The GPU backend's CuPy arrays for calls, asked once in this object's life: a
        kept launch (pyoxide/bundled/_attention_repeat.py) keeps it, and runs only while
        the GPU backend is the one it was made with."""
        if self._gpu_arrays is None:
            from .. import backends

            self._gpu_arrays = backends.gpu().call_arrays
        return self._gpu_arrays

    def flat(self, x: Any, v: ArrayView) -> Any:
        """The 1-D array of the elements from `x`'s first to its last (its memory as the
        kernels read it, through the strides)."""
        n = span(v)
        made = self.flat_elements(x, n)
        return FlatGpu(x, v, n) if made is None else made

    def flat_elements(self, x: Any, n: int) -> Any:
        """`x`'s first `n` elements as a 1-D array of its library (None for a GPU array of
        neither PyTorch nor CuPy), which the caller has checked lie in `x`'s memory."""
        if self.name == "torch":
            return x.as_strided((n,), (1,))
        if self.name == "numpy":
            import numpy as np

            return np.lib.stride_tricks.as_strided(x, (n,), (x.itemsize,))
        # A CuPy array's is a CuPy view: the compiled launchers read no other GPU array
        # but PyTorch's (a FlatGpu sends the call down the general path).
        return self._call_arrays().flat(x, n)

    def empty(self, like: Any, dtype: str) -> Any:
        """A zero-size array of `dtype` beside the array `like` (an absent lse or offsets
        array: the kernel reads none of it). GPU ones are kept per device and dtype (CuPy's by the
        backend), so a plain call does not allocate up to three arrays each time."""
        if self.name == "torch":
            key = (like.device, dtype)
            made = _EMPTY_TENSORS.get(key)
            if made is None:
                import torch

                made = torch.empty(0, dtype=getattr(torch, dtype), device=like.device)
                _EMPTY_TENSORS[key] = made
            return made
        if self.name == "numpy":
            import numpy as np

            return np.empty(0, dtype)
        return self._call_arrays().empty(dtype)

    def device_bytes(self, raw: bytes, like: ArrayView) -> Any:
        if self.name == "torch":
            import torch

            return torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(like.obj.device)
        import numpy as np

        from .. import backends

        return backends.gpu().xp.asarray(np.frombuffer(raw, np.uint8))


class FlatGpu:
    """A 1-D GPU array over `n` elements from `v`'s first one (through
    ``__cuda_array_interface__``), keeping `base` alive: for GPU arrays other than
    PyTorch's and CuPy's (Numba's, say), whose calls take the general launch path."""

    def __init__(self, base: Any, v: ArrayView, n: int) -> None:
        assert v.kind == GPU
        self.base = base
        self.dtype = getattr(base, "dtype", None)  # names bfloat16 for ml_dtypes arrays
        self.__cuda_array_interface__ = {
            "shape": (n,), "typestr": v.typestr, "version": 3,
            "data": (v.ptr, v.readonly), "strides": None, "stream": v.stream,
        }  # fmt: skip
