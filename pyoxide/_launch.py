"""Stage 3: typed launchers.

A :class:`Kernel` checks a call (the argument rules of :mod:`._args`, the configuration
rules of :mod:`._config`, both before any backend is chosen), picks the backend and the
device and launches. :meth:`Kernel._run` is the one place that decides how a launch
goes: which backend, which device and stream, and whether a compiled fast launcher
(:mod:`pyoxide._native`) takes the next plain calls. The fast launcher is dropped when a
knob it depends on (``PYOXIDE_SYNC``, ``PYOXIDE_BACKEND``) changes; it declines every
call from then on, so the change takes effect at the next launch.

Streams and devices follow the array library: CuPy arrays (and other
``__cuda_array_interface__`` arrays) run on CuPy's current device and stream; PyTorch
tensors on their own device (a device guard, as PyTorch's ops) and PyTorch's current
stream there, so launches inside ``torch.cuda.graph`` capture and under
``torch.cuda.stream(s)`` go where PyTorch code goes. CuPy arrays and PyTorch tensors in
one call are refused unless ``stream=`` says which stream to use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from . import _knobs, backends
from ._abi import DEFAULT_DYNAMIC_SHARED_BYTES
from ._args import ArgumentPlan, Refused, not_an_array
from ._arrays import GPU, ArrayView, dtype_name
from ._arrays import RUST_TYPESTR as _TYPESTR
from ._config import (
    LAUNCH_KEYWORDS,
    Dim,
    check_shared_mem,
    check_stream,
    default_block,
    launch_config,
    unknown_keyword,
)
from ._devices import device_of, torch_stream
from ._manifest import KernelSpec
from ._policy import plain_rule, validates_grid
from .errors import ArgumentError, ArgumentTypeError

#: Loads a kernel's code: (backend, device, entry) -> the backend's function handle.
CodeLoader = Callable[[backends.Backend, int, str], Any]


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
            and not validates_grid(kernel.spec)  # checked against each call's arrays
            and self._stream is None
            and self._grid is not None
            and type(smem) is int
            and 0 <= smem <= DEFAULT_DYNAMIC_SHARED_BYTES  # more: the general path opts in
        ):
            try:
                grid3, block3 = launch_config(kernel.plan, [], self._grid, self._block)
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

    def __init__(self, spec: KernelSpec, code: CodeLoader) -> None:
        self.spec = spec
        self.name = spec.entry
        self._code = code
        self._plan: ArgumentPlan | None = None
        # Built after the first successful plain launch on a backend that offers one,
        # for the knob values of that moment (_fast_knobs).
        self._fast: Callable[[Sequence[Any], Any], bool] | None = None
        self._fast_tried = False
        self._fast_knobs: tuple[str | None, ...] = ()
        self.__doc__ = f"{spec.signature}\n\nDefined at {spec.source.file}:{spec.source.line}."

    def __repr__(self) -> str:
        return f"<pyoxide.Kernel {self.spec.signature}>"

    @property
    def plan(self) -> ArgumentPlan:
        if self._plan is None:
            self._plan = ArgumentPlan(self.spec)
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

    def launch(self, *args: Any, **config: Any) -> None:
        """Launch with an explicit configuration: ``grid``, ``block``, ``shared_mem``
        (bytes of dynamic shared memory), ``stream``; None picks what a plain call does."""
        grid, block, shared_mem, stream = _launch_keywords(self.name, config)
        plan = self.plan
        self._run(plan, args, plan.views(args), grid, block, shared_mem, stream)

    def _run(
        self,
        plan: ArgumentPlan,
        args: Sequence[Any],
        views: list[ArrayView | None],
        grid: Dim | None,
        block: Dim | None,
        shared_mem: Any,
        stream: Any,
    ) -> None:
        name = self.spec.entry
        knobs = _knobs.launch_knobs()
        if self._fast_tried and knobs != self._fast_knobs:
            self._fast, self._fast_tried = None, False  # built for other settings
        # Everything that depends only on the arguments, before a backend is chosen.
        packed, arrays = plan.pack(args, views)
        shared_mem = check_shared_mem(name, shared_mem)
        check_stream(name, stream)

        def multiprocessors() -> int:
            chosen = backends.select(name, arrays)
            return chosen.multiprocessors(chosen.current_device())

        grid3, block3 = launch_config(plan, views, grid, block, args, multiprocessors)
        backend = backends.select(name, arrays)
        torch_owned = False
        device = 0
        if backend.array_kind == GPU:
            device, torch_owned = device_of(name, backend, arrays, stream)
        if grid3[0] * grid3[1] * grid3[2] == 0:
            return  # an empty output: nothing to do
        if torch_owned and stream is None:
            stream = torch_stream(device)  # PyTorch's current stream on that device
        function = self._code(backend, device, name)
        producer = [v.stream for _, v in arrays if v.stream is not None]
        backend.launch(
            function, kernel=name, grid=grid3, block=block3, args=tuple(packed),
            shared_mem=shared_mem, stream=stream, producer_streams=producer, device=device,
        )  # fmt: skip
        if not self._fast_tried and stream is None:
            self._fast_tried, self._fast_knobs = True, knobs
            # A plain call's grid as the fast path computes it (a division), or None.
            rule = plain_rule(self.spec)
            self._fast = backend.fast_launcher(
                self.spec, function, device, rule[0] if rule else None, default_block(plan)
            )


def _launch_keywords(kernel: str, config: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    for key in config:
        if key not in LAUNCH_KEYWORDS:
            raise unknown_keyword(kernel, key, LAUNCH_KEYWORDS)
    return (
        config.get("grid"), config.get("block"), config.get("shared_mem", 0),
        config.get("stream"),
    )  # fmt: skip


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
        # The native base comes first so that its __call__ fills the type's call slot;
        # the Python class supplies everything else (__init__, launch, __repr__, ...).
        _native_classes = (
            _subclass("NativeKernel", native.KernelBase, Kernel),
            _subclass("NativeConfigured", native.ConfiguredBase, _Configured),
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
        f"keyword argument {key}=", f"pass the arguments in order: ({order}); launch "
        f"options go to .launch(..., {'=, '.join(LAUNCH_KEYWORDS)}=)",
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

    def launch(self, *args: Any, **config: Any) -> None:
        grid, block, shared_mem, stream = _launch_keywords(self.name, config)
        kernel, views = self.dispatch(args)
        kernel._run(kernel.plan, args, views, grid, block, shared_mem, stream)

    def dispatch(self, args: Sequence[Any]) -> tuple[Kernel, list[ArrayView | None]]:
        first = next(iter(self.instances.values()))
        views = first.plan.views(args)  # same parameter kinds in every instance
        for i in self._array_params:
            if views[i] is None and not (
                first.spec.params[i].takes_address and type(args[i]) is int
            ):
                try:
                    not_an_array(first.spec.params[i], args[i])
                except Refused as r:
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
