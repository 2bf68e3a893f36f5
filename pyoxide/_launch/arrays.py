"""Array protocol adapters: turn whatever the user passed into one :class:`ArrayView`.

Accepted, zero-copy, in this order of preference:

1. ``__cuda_array_interface__`` (v2/v3): CuPy, PyTorch CUDA tensors, Numba, … → GPU.
2. ``__array_interface__``: NumPy and NumPy-like host arrays → host (CPU emulator).
3. ``__dlpack__`` + ``__dlpack_device__``: JAX, PyTorch CPU tensors, … A CUDA
   producer is imported through ``cupy.from_dlpack`` (CuPy is loaded then, not
   before), a CPU producer through ``numpy.from_dlpack``.

The device of a GPU array is read from the array when it says (CuPy's
``.device.id``, PyTorch's ``.device.index``, DLPack's device id); otherwise it is
left as None and the backend asks the driver at launch time.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, NoReturn

from .._manifest import abi as _abi

GPU = "gpu"
HOST = "host"

_LE = "<" if sys.byteorder == "little" else ">"

#: The NumPy typestr each Rust element type must have (little-endian, like the GPU).
RUST_TYPESTR: dict[str, str] = {t.name: t.typestr for t in _abi.SCALARS.values()}
#: bfloat16 has no typestr of its own (ml_dtypes' arrays report opaque bytes, ``<V2``);
#: a view of an array whose dtype is named ``bfloat16`` gets this spelling instead.
BF16_TYPESTR = RUST_TYPESTR["bf16"]

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_NAMES = {
    1: "CPU", 2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI",
    10: "ROCm", 11: "ROCm host", 13: "CUDA managed", 14: "oneAPI",
}  # fmt: skip


class ArrayProtocolError(Exception):
    """An object claims an array protocol but its description is unusable.

    The launch stage turns this into an ArgumentError that names kernel and parameter.
    """

    def __init__(self, got: str, fix: str, *, value_error: bool = False) -> None:
        self.got = got
        self.fix = fix
        self.value_error = value_error
        super().__init__(got)


@dataclass(slots=True)
class ArrayView:
    obj: Any  # the object to keep alive while the launch is queued
    kind: str  # GPU or HOST
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # in bytes; None means C-contiguous
    typestr: str  # normalized, e.g. "<f4", "|u1", "|b1"
    readonly: bool
    device: int | None  # GPU ordinal if the array says; None: ask the driver
    protocol: str  # the protocol it was read through, for messages
    itemsize: int
    stream: int | None = None  # the producer's stream (CAI v3), if it exported one
    source: str = ""  # what the user passed ("CuPy array", …); worked out only for messages

    @property
    def dtype_name(self) -> str:
        return dtype_name(self.typestr)

    def describe(self) -> str:
        shape = "x".join(str(n) for n in self.shape) or "0-d"
        source = self.source or _source_name(self.obj, self.protocol)
        return f"{source} of {self.dtype_name}[{shape}]"

    def is_c_contiguous(self) -> bool:
        if self.strides is None:
            return True
        expected = self.itemsize
        for n, s in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if n > 1 and s != expected:
                return False
            expected *= n
        return True


def dtype_name(typestr: str) -> str:
    """``<f4`` → ``float32``; ``>f4`` → ``float32 (big-endian)``."""
    order, kind, size = typestr[0], typestr[1], typestr[2:]
    if not size.isdigit():
        return typestr
    names = {"f": "float", "i": "int", "u": "uint", "c": "complex", "b": "bool", "E": "bfloat"}
    name = "bool" if kind == "b" else names.get(kind, f"'{kind}'") + str(8 * int(size))
    return name + (" (big-endian)" if order == ">" and size != "1" else "")


def rust_dtype_name(rust_type: str) -> str:
    return dtype_name(RUST_TYPESTR[rust_type])


def dtype_spelling(rust_type: str, module: str = "numpy") -> str:
    """How a user names the element type's dtype in ``module`` (for fixes in messages):
    ``numpy.float32``; bfloat16, which NumPy and CuPy lack, as ``ml_dtypes.bfloat16``."""
    if rust_type == "bf16":
        return "torch.bfloat16" if module == "torch" else "ml_dtypes.bfloat16"
    return f"{module}.{rust_dtype_name(rust_type)}"


def numpy_dtype(rust_type: str) -> Any:
    """The NumPy dtype of the element type; for bf16 ml_dtypes' (which CuPy uses too),
    or None when ml_dtypes is not installed."""
    import numpy

    if rust_type == "bf16":
        try:
            import ml_dtypes
        except ImportError:
            return None
        return numpy.dtype(ml_dtypes.bfloat16)
    return numpy.dtype(RUST_TYPESTR[rust_type])


_NORMALIZED: dict[str, str] = {}


def _normalized(typestr: str) -> str:
    """normalize_typestr, memoized (the set of dtypes a program uses is small)."""
    n = _NORMALIZED.get(typestr)
    if n is None:
        n = normalize_typestr(typestr)
        if len(_NORMALIZED) < 1024:
            _NORMALIZED[typestr] = n
    return n


def normalize_typestr(typestr: str) -> str:
    if len(typestr) < 3 or typestr[0] not in "<>|=" or not typestr[2:].isdigit():
        return typestr
    order, rest = typestr[0], typestr[1:]
    if rest[1:] == "1":
        return "|" + rest
    if order == "=":
        order = _LE
    if order == "|":
        order = _LE
    return order + rest


def _type_name(obj: Any) -> str:
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


#: What an array of each library is called in messages, by its top-level module.
_LIBRARY_ARRAYS = {"cupy": "CuPy array", "torch": "torch.Tensor", "numpy": "NumPy array",
                   "jax": "JAX array", "jaxlib": "JAX array"}  # fmt: skip


def _source_name(obj: Any, protocol: str) -> str:
    module = type(obj).__module__.split(".")[0]
    return _LIBRARY_ARRAYS.get(module) or f"{_type_name(obj)} (via {protocol})"


def _device_hint(obj: Any) -> int | None:
    """The GPU ordinal an array object reports about itself, if it does."""
    try:
        device = obj.device
    except Exception:
        return None
    for attr in ("id", "index"):  # CuPy: Device.id; PyTorch: torch.device.index
        value = getattr(device, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def view(obj: Any) -> ArrayView | None:
    """Describe ``obj`` as an array, or return None if it speaks no array protocol."""
    if isinstance(obj, (str, bytes, int, float, complex, bool)) or obj is None:
        return None
    if type(obj).__module__.startswith("numpy.ma"):  # its interface shows the data, not the mask
        raise ArrayProtocolError(
            "a NumPy masked array", "pass x.filled(value) or x.data: a kernel reads every element"
        )
    if type(obj).__module__.startswith("torch") and _is_torch_bfloat16(obj):
        return _from_torch_bfloat16(obj)
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        cai = None
    except Exception as e:  # e.g. torch: "Can't get __cuda_array_interface__ on Variable…"
        if type(obj).__module__.startswith("cupy") and _dtype_name(obj) == "bfloat16":
            return _from_cupy_bfloat16(obj)  # a CuPy that exports no bfloat16 interface
        raise ArrayProtocolError(
            f"{_type_name(obj)} whose __cuda_array_interface__ failed ({e})",
            "pass a plain device array (for PyTorch: tensor.detach())",
        ) from None
    if cai is not None:
        return _from_interface(obj, cai, GPU, "__cuda_array_interface__")
    try:
        ai = obj.__array_interface__
    except AttributeError:
        ai = None
    except Exception as e:
        raise ArrayProtocolError(
            f"{_type_name(obj)} whose __array_interface__ failed ({e})", "pass a NumPy array"
        ) from None
    if ai is not None:
        return _from_interface(obj, ai, HOST, "__array_interface__")
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj)
    return None


def _from_interface(obj: Any, iface: Any, kind: str, protocol: str) -> ArrayView:
    try:
        shape = iface["shape"]
        typestr = iface["typestr"]
        ptr, readonly = iface["data"]
    except (KeyError, TypeError, ValueError):
        _bad_interface(obj, iface, protocol)
    if type(shape) is not tuple:
        shape = tuple(shape) if isinstance(shape, (list, tuple)) else None
    if (
        shape is None
        or type(typestr) is not str
        or type(ptr) is not int
        or not 0 <= ptr < 2**64
        or not ((len(shape) == 1 and type(shape[0]) is int) or all(type(n) is int for n in shape))
    ):
        _bad_interface(obj, iface, protocol)
    if shape[0] < 0 if len(shape) == 1 else any(n < 0 for n in shape):
        raise ArrayProtocolError(
            f"an array with negative length in shape {shape}",
            f"pass a CuPy or NumPy array, or fix the object's {protocol}",
            value_error=True,
        )
    strides = iface.get("strides")
    if strides is not None:
        strides = tuple(strides)
        if len(strides) != len(shape) or not all(type(s) is int for s in strides):
            _bad_interface(obj, iface, protocol)
    if iface.get("mask") is not None:
        raise ArrayProtocolError(
            "a masked array", "fill the masked elements and pass a plain array"
        )
    typestr = _normalized(typestr)
    if typestr == "<V2" and _dtype_name(obj) == "bfloat16":
        typestr = BF16_TYPESTR  # ml_dtypes' bfloat16 (NumPy, CuPy, JAX through DLPack)
    stream = iface.get("stream") if kind == GPU else None
    return ArrayView(
        obj=obj,
        kind=kind,
        ptr=ptr,
        shape=shape,
        strides=strides,
        typestr=typestr,
        readonly=bool(readonly),
        device=_device_hint(obj) if kind == GPU else None,
        protocol=protocol,
        itemsize=int(typestr[2:]) if typestr[2:].isdigit() else 0,
        stream=stream if type(stream) is int else None,
    )


def _bad_interface(obj: Any, iface: Any, protocol: str) -> NoReturn:
    """Say what is wrong with an array interface (the slow path, for errors only)."""
    fix = f"pass a CuPy or NumPy array, or fix the object's {protocol}"
    name = _type_name(obj)
    if not isinstance(iface, dict):
        raise ArrayProtocolError(f"{name} whose {protocol} is not a dict", fix)
    for key in ("shape", "typestr", "data"):
        if key not in iface:
            raise ArrayProtocolError(f"{name} whose {protocol} lacks '{key}'", fix)
    shape, data = iface["shape"], iface["data"]
    if not isinstance(shape, (list, tuple)) or not all(type(n) is int for n in shape):
        raise ArrayProtocolError(f"an array with shape {shape!r}", fix)
    if not isinstance(iface["typestr"], str):
        raise ArrayProtocolError(f"an array with typestr {iface['typestr']!r}", fix)
    if not (isinstance(data, tuple) and len(data) == 2 and type(data[0]) is int
            and 0 <= data[0] < 2**64):  # fmt: skip
        raise ArrayProtocolError(f"an array whose data field is {data!r}", fix)
    raise ArrayProtocolError(
        f"an array with strides {iface.get('strides')!r} for shape {tuple(shape)}", fix
    )


def _from_dlpack(obj: Any) -> ArrayView:
    try:
        dev_type, dev_id = obj.__dlpack_device__()
    except Exception as e:
        raise ArrayProtocolError(
            f"{_type_name(obj)} whose __dlpack_device__() failed ({e})",
            "pass a CuPy, PyTorch, JAX or NumPy array",
        ) from None
    if dev_type in (_DL_CUDA, _DL_CUDA_MANAGED):
        from ..backends.cupy._dlpack import from_dlpack

        v = view(from_dlpack(obj, _type_name(obj)))  # v.obj: the CuPy view (owns the capsule)
        assert v is not None
        v.device, v.source = int(dev_id), _source_name(obj, "__dlpack__")
        return v
    if dev_type == _DL_CPU:
        import numpy

        v = view(numpy.from_dlpack(obj))
        assert v is not None
        v.source = _source_name(obj, "__dlpack__")
        return v
    where = _DL_NAMES.get(int(dev_type), f"DLPack device type {dev_type}")
    raise ArrayProtocolError(
        f"a {_type_name(obj)} on a {where} device",
        "move it to a CUDA device or to host memory first",
    )


def _dtype_name(obj: Any) -> str | None:
    return getattr(getattr(obj, "dtype", None), "name", None)


def _from_cupy_bfloat16(obj: Any) -> ArrayView:
    return _bfloat16_view(
        obj, GPU, int(obj.data.ptr), tuple(obj.strides), int(obj.device.id), "CuPy array",
        "cupy.ndarray attributes",
    )  # fmt: skip


def _bfloat16_view(
    obj: Any, kind: str, ptr: int, strides: tuple[int, ...], device: int | None,
    source: str, protocol: str,
) -> ArrayView:  # fmt: skip
    """A bfloat16 array described from its library's own attributes (no protocol says
    bfloat16): ``strides`` in bytes."""
    return ArrayView(
        obj=obj, kind=kind, ptr=ptr, shape=tuple(obj.shape), strides=strides,
        typestr=BF16_TYPESTR, readonly=False, device=device, protocol=protocol, itemsize=2,
        source=source,
    )  # fmt: skip


def _is_torch_bfloat16(obj: Any) -> bool:
    return str(getattr(obj, "dtype", "")) == "torch.bfloat16"


def _from_torch_bfloat16(obj: Any) -> ArrayView:
    """A bfloat16 tensor, described from its own attributes: PyTorch exports no
    __cuda_array_interface__ for bfloat16, and its DLPack export needs ml_dtypes on the
    importing side."""
    if obj.requires_grad:
        raise ArrayProtocolError(
            "a torch.Tensor that requires grad",
            "pass a plain device array (for PyTorch: tensor.detach())",
        )
    on_gpu = obj.device.type == "cuda"
    if not on_gpu and obj.device.type != "cpu":
        raise ArrayProtocolError(
            f"a torch.Tensor on a {obj.device.type} device",
            "move it to a CUDA device or to host memory first",
        )
    return _bfloat16_view(
        obj, GPU if on_gpu else HOST, int(obj.data_ptr()), tuple(2 * s for s in obj.stride()),
        obj.device.index if on_gpu else None, "torch.Tensor", "torch.Tensor attributes",
    )  # fmt: skip
