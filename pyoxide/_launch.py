"""Stage 3: typed launchers.

A :class:`Kernel` checks a call against its manifest entry and launches it. The
work that depends only on the kernel (one converter per parameter, which parameter
sizes the grid, the default block) is done once, on the first call, into a
:class:`LaunchPlan`; a call then runs the plan's converters over its arguments.

Argument rules (all enforced before anything is launched):

* Arrays: exact dtype (no silent casts), 1-D and C-contiguous for slices, writable
  for ``DisjointSlice``/``&mut [T]``/``*mut T``, all on one device (the current one)
  and all on the GPU or all on the host; a mutable slice may not overlap another
  array argument (Rust assumes no aliasing). Zero-length arrays are fine: an
  automatic grid of zero blocks launches nothing.
* Integer scalars: Python ``int`` or NumPy integers, in range for the Rust type.
  ``bool`` is refused (say ``int(flag)``), floats are refused (even ``3.0``).
* Float scalars: ``float``, NumPy floats, and ``int`` when exactly representable.
  ``bool`` is refused. A finite value too large for ``f32`` is refused.
* ``bool`` scalars: ``True``/``False`` or ``numpy.bool_`` only.
* Pointers (``unsafe`` kernels): an array (dtype checked, any shape, contiguous),
  or an ``int`` address taken as is.
"""

from __future__ import annotations

import importlib
import math
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from . import _policy, backends
from ._arrays import GPU, ArrayProtocolError, ArrayView, dtype_name, rust_dtype_name, view
from ._arrays import RUST_TYPESTR as _TYPESTR
from ._manifest import INT_RANGES, SLICE_KINDS, KernelSpec, ParamSpec
from .errors import ArgumentError, ArgumentTypeError, ArgumentValueError

if TYPE_CHECKING:
    from ._module import Module

Dim = int | tuple[int] | tuple[int, int] | tuple[int, int, int]

# Dynamic shared memory above this needs a function attribute set first (general path).
_FAST_SHARED_LIMIT = 48 * 1024
_MAX_ABI_BYTES = 2**63 - 1
_F32_OVERFLOW = 2.0**128 - 2.0**103  # rounds to inf as f32
_NP_NAMES = {
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "isize": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "usize": "uint64",
    "f32": "float32", "f64": "float64", "bool": "uint8",
}  # fmt: skip


class _Refused(Exception):
    """Raised by a converter; the caller adds kernel and parameter."""

    def __init__(self, cls: type[ArgumentError], expected: str, got: str, fix: str) -> None:
        super().__init__(expected)
        self.cls, self.expected, self.got, self.fix = cls, expected, got, fix


def _describe_value(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, (bool, int, float)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, str):
        return f"str {value!r}" if len(value) < 40 else "a str"
    t = type(value)
    name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        return f"{name} {value!r}"
    return name


# --- scalar converters ---------------------------------------------------------------


def _scalar_converter(np: Any, param: ParamSpec) -> Callable[[Any], Any]:
    t = param.type
    np_type = getattr(np, _NP_NAMES[t])
    if t == "bool":

        def convert_bool(v: Any) -> Any:
            if isinstance(v, (bool, np.bool_)):
                return np_type(1 if v else 0)
            raise _Refused(
                ArgumentTypeError, "a bool (True or False)", _describe_value(v),
                f"pass bool(...) explicitly, e.g. {param.name}=bool(value)",
            )  # fmt: skip

        return convert_bool
    if t in ("f32", "f64"):
        return _float_converter(np, param, np_type)
    return _int_converter(np, param, np_type)


def _int_converter(np: Any, param: ParamSpec, np_type: Any) -> Callable[[Any], Any]:
    t = param.type
    lo, hi = INT_RANGES[t]
    expected = f"an int in [{lo}, {hi}] ({t})"

    def convert_int(v: Any) -> Any:
        if type(v) is int:  # the common case, first
            i = v
        elif isinstance(v, (bool, np.bool_)):
            raise _Refused(
                ArgumentTypeError, expected, _describe_value(v),
                "pass int(flag) if you mean 0 or 1",
            )  # fmt: skip
        elif isinstance(v, (float, np.floating)):
            if math.isnan(v) or math.isinf(v):
                raise _Refused(
                    ArgumentValueError, expected, _describe_value(v),
                    "an integer parameter has no NaN or infinity; pass a finite int",
                )  # fmt: skip
            raise _Refused(
                ArgumentTypeError, expected, _describe_value(v),
                f"pass an int (int({v!r}) if truncation is what you want)",
            )  # fmt: skip
        elif isinstance(v, (str, bytes)) or v is None or not hasattr(v, "__index__"):
            raise _Refused(ArgumentTypeError, expected, _describe_value(v), "pass a Python int")
        else:
            try:
                i = operator.index(v)
            except TypeError:
                raise _Refused(
                    ArgumentTypeError, expected, _describe_value(v), "pass a Python int"
                ) from None
        if not lo <= i <= hi:
            raise _Refused(
                ArgumentValueError, expected, f"{i}",
                f"pass a value that fits {t}; the Rust parameter cannot hold {i}",
            )  # fmt: skip
        return np_type(i)

    return convert_int


def _float_converter(np: Any, param: ParamSpec, np_type: Any) -> Callable[[Any], Any]:
    t = param.type
    expected = f"a float ({t})"

    def convert_float(v: Any) -> Any:
        if type(v) is float:
            f = v
        elif isinstance(v, (bool, np.bool_)):
            raise _Refused(
                ArgumentTypeError, expected, _describe_value(v),
                "pass float(flag) if you mean 0.0 or 1.0",
            )  # fmt: skip
        elif isinstance(v, (float, np.floating)):
            f = float(v)
        elif isinstance(v, (int, np.integer)):
            i = int(v)
            try:
                exact = int(np_type(i)) == i
            except OverflowError:
                exact = False
            if not exact:
                raise _Refused(
                    ArgumentValueError, expected + ", exactly representable", f"int {i}",
                    f"pass float({i}) to accept rounding to the nearest {t}",
                )  # fmt: skip
            return np_type(i)
        else:
            fix = "pass a Python float"
            if hasattr(v, "item"):
                fix += " (value.item() for a 0-d array)"
            raise _Refused(ArgumentTypeError, expected, _describe_value(v), fix)
        if t == "f32" and abs(f) >= _F32_OVERFLOW and not math.isinf(f):
            raise _Refused(
                ArgumentValueError, "a float within f32's range (|x| < 3.4e38)", repr(f),
                "pass a smaller value, or use a kernel that takes f64",
            )  # fmt: skip
        return np_type(f)

    return convert_float


# --- array checks ----------------------------------------------------------------------


def _check_array(param: ParamSpec, v: ArrayView) -> None:
    want = _TYPESTR[param.type]
    if v.typestr != want:
        raise _Refused(
            ArgumentTypeError, f"a {rust_dtype_name(param.type)} array ({param.rust_type})",
            v.describe(),
            f"convert it with .astype(numpy.{rust_dtype_name(param.type)}) "
            "(pyoxide never casts silently)",
        )  # fmt: skip
    if param.kind in SLICE_KINDS and len(v.shape) != 1:
        raise _Refused(
            ArgumentValueError, f"a 1-D array ({param.rust_type})",
            f"{len(v.shape)}-D {v.describe()}",
            "pass a 1-D array: .ravel() a contiguous array, or index one row",
        )  # fmt: skip
    if not v.is_c_contiguous():
        raise _Refused(
            ArgumentValueError, f"a contiguous array ({param.rust_type})",
            f"a strided {v.describe()} (strides {v.strides})",
            "make it contiguous with cupy.ascontiguousarray(x) / numpy.ascontiguousarray(x)",
        )  # fmt: skip
    if param.mutable and v.readonly:
        raise _Refused(
            ArgumentValueError, f"a writable array ({param.rust_type})",
            f"a read-only {v.describe()}",
            "pass a writable array (x.copy())",
        )  # fmt: skip
    n = math.prod(v.shape)
    if n and v.ptr == 0:
        raise _Refused(
            ArgumentValueError, "an array with memory behind it",
            f"a null pointer for {n} elements",
            "allocate the array (cupy.empty(n, dtype))",
        )  # fmt: skip
    if n * v.itemsize > _MAX_ABI_BYTES:
        raise _Refused(
            ArgumentValueError, "at most 2**63-1 bytes (the ABI length)",
            f"{n} elements of {v.itemsize} bytes",
            "split the work into smaller arrays",
        )  # fmt: skip


def _not_an_array(param: ParamSpec, value: Any) -> NoReturn:
    dt = rust_dtype_name(param.type)
    raise _Refused(
        ArgumentTypeError,
        f"a 1-D {dt} array ({param.rust_type}): CuPy, NumPy, or anything with "
        "__cuda_array_interface__ or __dlpack__",
        _describe_value(value),
        f"pass an array, e.g. cupy.asarray(value, dtype=cupy.{dt})",
    )


# --- grid and block ----------------------------------------------------------------------


def _dim3(kernel: str, what: str, value: Any, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    parts = value if isinstance(value, tuple) else (value,)
    ok = 1 <= len(parts) <= 3 and all(
        type(p) is int or (hasattr(p, "__index__") and not isinstance(p, bool)) for p in parts
    )
    if ok:
        dims = tuple(operator.index(p) for p in parts) + (1,) * (3 - len(parts))
        if all(1 <= d <= lim for d, lim in zip(dims, limits, strict=True)):
            return dims  # type: ignore[return-value]
    raise ArgumentValueError(
        kernel, what,
        f"a positive int or a tuple of up to 3 positive ints, each at most {limits}",
        _describe_value(value) if not isinstance(value, tuple) else repr(value),
        f"pass e.g. {what}=256 or {what}=(16, 16)",
    )  # fmt: skip


class LaunchPlan:
    """What a call needs that depends only on the kernel, computed once."""

    __slots__ = (
        "checks", "default_block", "max_threads", "may_alias", "params", "spec", "validates_grid",
    )  # fmt: skip

    def __init__(self, spec: KernelSpec) -> None:
        import numpy as np  # numpy loads on the first launch, not at import

        self.spec = spec
        self.params = spec.params
        self.max_threads = _policy.max_threads(spec)
        self.default_block = _policy.default_block(spec)
        self.validates_grid = _policy.validates_grid(spec)
        slices = [p for p in spec.params if p.kind in SLICE_KINDS]
        self.may_alias = len(slices) > 1 and any(p.mutable for p in slices)
        self.checks: tuple[Callable[[Any], Any] | None, ...] = tuple(
            None if p.is_array else _scalar_converter(np, p) for p in spec.params
        )

    def arity(self, args: Sequence[Any]) -> None:
        if len(args) != len(self.params):
            names = ", ".join(p.name for p in self.params)
            raise ArgumentTypeError(
                self.spec.entry, None,
                f"{len(self.params)} argument(s) ({names})", f"{len(args)}",
                f"call {self.spec.entry}({names}); the Rust signature is {self.spec.signature}",
            )  # fmt: skip

    def views(self, args: Sequence[Any]) -> list[ArrayView | None]:
        """Describe the array arguments (arity checked first)."""
        self.arity(args)
        out: list[ArrayView | None] = []
        for p, a in zip(self.params, args, strict=True):
            if not p.is_array:
                out.append(None)
                continue
            try:
                v = view(a)
            except ArrayProtocolError as e:
                cls = ArgumentValueError if e.value_error else ArgumentTypeError
                raise cls(
                    self.spec.entry, p.name, f"an array ({p.rust_type})", e.got, e.fix
                ) from None
            out.append(v)
        return out

    def refuse(self, param: str, r: _Refused) -> ArgumentError:
        return r.cls(self.spec.entry, param, r.expected, r.got, r.fix)


class _Configured:
    """``kernel[grid, block]`` or ``kernel[grid, block, shared_mem, stream]``."""

    # No __slots__: with the native module this class is combined with a compiled base
    # (configured_class), whose instance layout a slotted class would conflict with.

    def __init__(self, kernel: Kernel | GenericKernel, config: Any) -> None:
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise ArgumentTypeError(
                kernel.name, None, "kernel[grid, block] (optionally [grid, block, shared_mem, "
                "stream])", repr(config), f"write {kernel.name}[blocks, 256](...)",
            )  # fmt: skip
        self._kernel = kernel
        self._grid, self._block = config[0], config[1]
        self._shared_mem = config[2] if len(config) > 2 else 0
        self._stream = config[3] if len(config) > 3 else None
        # The fast path takes a configuration checked here, once; anything unusual (an
        # explicit stream, large shared memory, a bad value) stays on the general path,
        # which raises the documented errors at call time.
        self._checked: tuple[int, ...] | None = None
        smem = self._shared_mem
        if (
            isinstance(kernel, Kernel)
            and not kernel.plan.validates_grid  # checked against each call's arrays
            and self._stream is None
            and self._grid is not None
            and type(smem) is int
            and 0 <= smem <= _FAST_SHARED_LIMIT
        ):
            try:
                grid3, block3 = kernel._config(kernel.plan, [], self._grid, self._block)
            except ArgumentError:
                pass
            else:
                self._checked = (*grid3, *block3, smem)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        # The same logic runs in compiled code for the class from configured_class().
        if self._checked is not None and not kwargs:
            fast = self._kernel._fast  # type: ignore[union-attr]
            if fast is not None and fast(args, self._checked):
                return
        self._call_general(args, kwargs)

    def _call_general(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> None:
        """A configured call the fast launcher declined (or there is none yet)."""
        if kwargs:
            k = self._kernel
            spec = k.spec if isinstance(k, Kernel) else next(iter(k.instances.values())).spec
            _no_keywords(spec, kwargs, k.name)
        self._kernel.launch(
            *args, grid=self._grid, block=self._block,
            shared_mem=self._shared_mem, stream=self._stream,
        )  # fmt: skip


class Kernel:
    """A launcher for one kernel (or one instance of a generic kernel)."""

    def __init__(self, spec: KernelSpec, module: Module) -> None:
        self.spec = spec
        self.name = spec.entry
        self._module = module
        self._plan: LaunchPlan | None = None
        # Built after the first successful plain launch on a backend that offers one.
        self._fast: Callable[[Sequence[Any], Any], bool] | None = None
        self._fast_tried = False
        self.__doc__ = f"{spec.signature}\n\nDefined at {spec.source.file}:{spec.source.line}."

    def __repr__(self) -> str:
        return f"<pyoxide.Kernel {self.spec.signature}>"

    @property
    def plan(self) -> LaunchPlan:
        if self._plan is None:
            self._plan = LaunchPlan(self.spec)
        return self._plan

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        # The same logic runs in compiled code for the class from kernel_class().
        fast = self._fast
        if fast is not None and not kwargs and fast(args, None):
            return
        self._call_general(args, kwargs)

    def _call_general(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> None:
        """A plain call the fast launcher declined (or there is none yet)."""
        if kwargs:
            _no_keywords(self.spec, kwargs)
        self.launch(*args)

    def __getitem__(self, config: Any) -> _Configured:
        return _configured_class(self, config)

    def launch(
        self,
        *args: Any,
        grid: Dim | None = None,
        block: Dim | None = None,
        shared_mem: int = 0,
        stream: Any = None,
    ) -> None:
        """Launch with an explicit configuration; None picks it as a plain call does."""
        plan = self.plan
        self._run(plan, args, plan.views(args), grid, block, shared_mem, stream)

    def _run(
        self,
        plan: LaunchPlan,
        args: Sequence[Any],
        views: list[ArrayView | None],
        grid: Dim | None,
        block: Dim | None,
        shared_mem: int,
        stream: Any,
    ) -> None:
        name = self.spec.entry
        packed: list[Any] = []
        arrays: list[tuple[ParamSpec, ArrayView]] = []
        for p, check, a, v in zip(plan.params, plan.checks, args, views, strict=True):
            try:
                if check is not None:
                    packed.append(check(a))
                    continue
                if v is None:
                    if p.kind == "pointer" and type(a) is int and 0 <= a < 2**64:
                        packed.append(_u64(a))  # a raw address: unsafe kernels only
                        continue
                    _not_an_array(p, a)
                _check_array(p, v)
            except _Refused as r:
                raise plan.refuse(p.name, r) from None
            arrays.append((p, v))
            packed.append(_u64(v.ptr))
            if p.kind != "pointer":
                packed.append(_u64(math.prod(v.shape)))
        backend = backends.select(name, arrays)
        device = self._device(backend, arrays) if backend.array_kind == GPU else 0
        if plan.may_alias:
            _check_aliasing(name, arrays)
        grid3, block3 = self._config(plan, views, grid, block, args, backend, device)
        if grid3[0] * grid3[1] * grid3[2] == 0:
            return  # an empty output: nothing to do
        if type(shared_mem) is not int or not 0 <= shared_mem < 2**32:
            raise ArgumentValueError(
                name, "shared_mem", "a byte count (int >= 0)", _describe_value(shared_mem),
                "pass the dynamic shared memory size in bytes, or leave it out",
            )  # fmt: skip
        function = self._module._function(backend, device, name)
        producer = [v.stream for _, v in arrays if v.stream is not None]
        backend.launch(
            function, kernel=name, grid=grid3, block=block3, args=tuple(packed),
            shared_mem=shared_mem, stream=stream, producer_streams=producer,
        )  # fmt: skip
        if not self._fast_tried and stream is None:
            self._fast_tried = True
            self._fast = backend.fast_launcher(self.spec, function, device, plan.default_block)

    def _device(self, backend: backends.Backend, arrays: list[tuple[ParamSpec, ArrayView]]) -> int:
        name = self.spec.entry
        first: tuple[str, int, ArrayView] | None = None
        for p, v in arrays:
            dev = v.device
            if dev is None:
                if math.prod(v.shape) == 0:
                    continue  # nothing will be read through it
                dev = backend.device_of_pointer(v.ptr)
                if dev is None:
                    raise ArgumentValueError(
                        name, p.name, "GPU memory", f"{v.describe()} whose pointer "
                        f"{v.ptr:#x} is not device memory",
                        "pass an array allocated on the GPU (cupy.asarray(x))",
                    )  # fmt: skip
                v.device = dev
            if first is None:
                first = (p.name, dev, v)
            elif dev != first[1]:
                raise ArgumentValueError(
                    name, p.name, f"an array on device {first[1]}, like '{first[0]}'",
                    f"{v.describe()} on device {dev}",
                    f"put all arrays on one device (with cupy.cuda.Device({first[1]}): "
                    f"{p.name} = cupy.asarray({p.name}))",
                )  # fmt: skip
        current = backend.current_device()
        if first is not None and first[1] != current:
            raise ArgumentValueError(
                name, first[0], f"an array on the current device ({current})",
                f"{first[2].describe()} on device {first[1]}",
                f"run the call inside `with cupy.cuda.Device({first[1]}):`",
            )  # fmt: skip
        return current

    def _config(
        self,
        plan: LaunchPlan,
        views: list[ArrayView | None],
        grid: Dim | None,
        block: Dim | None,
        args: Sequence[Any] = (),
        backend: backends.Backend | None = None,
        device: int = 0,
    ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) for this call, by the kernel's launch policy (pyoxide/_policy)."""
        name = self.spec.entry
        block3 = None if block is None else _dim3(name, "block", block, (1024, 1024, 64))
        grid3 = None if grid is None else _dim3(name, "grid", grid, (2**31 - 1, 65535, 65535))

        def multiprocessors() -> int:
            assert backend is not None, "a plain call is configured with its arrays"
            return backend.multiprocessors(device)

        return _policy.configure(
            self.spec, _policy.lengths_of(views), args, grid3, block3, multiprocessors
        )


_native_classes: tuple[type[Kernel], type[_Configured]] | None = None


def kernel_class() -> type[Kernel]:
    """The class a Module makes its kernels of: with pyoxide._native, a subclass of
    Kernel whose ``__call__`` is compiled (pyoxide._native.KernelBase, which runs the fast
    launcher and calls ``_call_general`` when it declines), so a hot-loop call enters
    native code with no Python frame in between; else Kernel itself.

    It imports the native module when a Module is made (not at ``import pyoxide``): a
    kernel's class is fixed when it is created, before its first launch."""
    classes = _native()
    return classes[0] if classes is not None else Kernel


def _configured_class(kernel: Kernel | GenericKernel, config: Any) -> _Configured:
    """``kernel[config]``: of the compiled-call subclass when ``kernel`` is of one."""
    classes = _native_classes
    if classes is not None and isinstance(kernel, classes[0]):
        return classes[1](kernel, config)
    return _Configured(kernel, config)


def _native() -> tuple[type[Kernel], type[_Configured]] | None:
    global _native_classes
    if _native_classes is None:
        try:
            # import_module (not `from . import`) consults sys.modules first, so a test
            # can make the module unimportable.
            native = importlib.import_module("pyoxide._native")
        except ImportError:
            return None  # not cached: the module may become importable later
        kernel_base = getattr(native, "KernelBase", None)  # a stale build may lack them
        configured_base = getattr(native, "ConfiguredBase", None)
        if kernel_base is None or configured_base is None:
            return None
        # The native base comes first so that its __call__ fills the type's call slot;
        # the Python class supplies everything else (__init__, launch, __repr__, ...).
        _native_classes = (
            _subclass("NativeKernel", kernel_base, Kernel),
            _subclass("NativeConfigured", configured_base, _Configured),
        )
    return _native_classes


def _subclass(name: str, native_base: type, cls: type[Any]) -> Any:
    attrs = {"__module__": __name__, "__qualname__": name, "__doc__": cls.__doc__}
    return type(name, (native_base, cls), attrs)


def _no_keywords(spec: KernelSpec, kwargs: dict[str, Any], name: str | None = None) -> NoReturn:
    key = next(iter(kwargs))
    order = ", ".join(p.name for p in spec.params)
    raise ArgumentTypeError(
        name or spec.entry, key, "positional arguments (kernels follow the Rust signature)",
        f"keyword argument {key}=", f"pass the arguments in order: ({order})",
    )  # fmt: skip


def _u64(x: int) -> Any:
    return _NP_U64(x)


class _LazyU64:
    """numpy.uint64, bound on first use (numpy is not imported at `import pyoxide`)."""

    def __call__(self, x: int) -> Any:
        import numpy as np

        global _NP_U64
        _NP_U64 = np.uint64
        return np.uint64(x)


_NP_U64: Callable[[int], Any] = _LazyU64()


def _check_aliasing(kernel: str, arrays: list[tuple[ParamSpec, ArrayView]]) -> None:
    """A mutable slice may not overlap any other array argument."""
    spans = []
    for p, v in arrays:
        size = math.prod(v.shape) * v.itemsize
        if p.kind in SLICE_KINDS and size:
            spans.append((p, v, v.ptr, v.ptr + size))
    for i, (p, v, lo, hi) in enumerate(spans):
        for q, w, lo2, hi2 in spans[i + 1 :]:
            if (p.mutable or q.mutable) and lo < hi2 and lo2 < hi and v.device == w.device:
                m, other = (p, q) if p.mutable else (q, p)
                raise ArgumentValueError(
                    kernel, m.name, f"memory that no other argument uses ({m.rust_type} "
                    "is exclusive in Rust)", f"an array overlapping '{other.name}'",
                    f"write into a separate array (e.g. {m.name} = {other.name}.copy())",
                )  # fmt: skip


class GenericKernel:
    """A generic kernel: dispatches to the instance whose types match the arrays."""

    def __init__(self, name: str, instances: Sequence[Kernel]) -> None:
        self.name = name
        self.instances = {k.name: k for k in instances}
        self.__doc__ = "Generic kernel; instances:\n" + "\n".join(
            f"  {k.name}: {k.spec.signature}" for k in instances
        )
        array_params = [i for i, p in enumerate(instances[0].spec.params) if p.is_array]
        self._array_params = array_params
        self._by_types: dict[tuple[str, ...], list[Kernel]] = {}
        for k in instances:
            key = tuple(_TYPESTR[k.spec.params[i].type] for i in array_params)
            self._by_types.setdefault(key, []).append(k)

    def __repr__(self) -> str:
        return f"<pyoxide.GenericKernel {self.name}: {', '.join(self.instances)}>"

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if not kwargs:
            for k in self.instances.values():
                fast = k._fast
                if fast is not None and fast(args, None):
                    return
        if kwargs:
            _no_keywords(next(iter(self.instances.values())).spec, kwargs, self.name)
        self.launch(*args)

    def __getitem__(self, config: Any) -> _Configured:
        return _configured_class(self, config)

    def launch(
        self,
        *args: Any,
        grid: Dim | None = None,
        block: Dim | None = None,
        shared_mem: int = 0,
        stream: Any = None,
    ) -> None:
        kernel, views = self.dispatch(args)
        kernel._run(kernel.plan, args, views, grid, block, shared_mem, stream)

    def dispatch(self, args: Sequence[Any]) -> tuple[Kernel, list[ArrayView | None]]:
        first = next(iter(self.instances.values()))
        views = first.plan.views(args)  # same parameter kinds in every instance
        for i in self._array_params:
            if views[i] is None and not (
                first.spec.params[i].kind == "pointer" and type(args[i]) is int
            ):
                try:
                    _not_an_array(first.spec.params[i], args[i])
                except _Refused as r:
                    raise first.plan.refuse(first.spec.params[i].name, r) from None
        key = tuple(
            v.typestr if v is not None else "" for v in (views[i] for i in self._array_params)
        )
        matches = self._by_types.get(key, [])
        if len(matches) == 1:
            return matches[0], views
        available = "; ".join(
            f"{k.name} ({', '.join(f'{p}={t}' for p, t in k.spec.instance)})"
            for k in self.instances.values()
        )
        got = ", ".join(
            f"{first.spec.params[i].name}: {dtype_name(t) if t else 'raw pointer'}"
            for i, t in zip(self._array_params, key, strict=True)
        )
        if matches:
            raise ArgumentTypeError(
                self.name, None, "array dtypes that pick one instance", got,
                f"several instances match ({', '.join(k.name for k in matches)}); call one "
                "of them directly",
            )  # fmt: skip
        raise ArgumentTypeError(
            self.name, None, f"array dtypes of one instance: {available}", got,
            f"convert the arrays with .astype(...) to one instance's types, or call an "
            f"instance directly (e.g. {first.name})",
        )  # fmt: skip
