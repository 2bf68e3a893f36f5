"""Stage 3: typed launchers.

A :class:`Kernel` checks a call (the argument rules of :mod:`._args`, the configuration
rules of :mod:`._config`, both before any backend is chosen), picks the backend and the
device and launches. :meth:`Kernel._run` is the one place that decides how a launch
goes: which backend, which device and stream, and which compiled launcher
(``Backend.fast_launcher``, given the kernel's fast plan, :mod:`._fastplan`) takes the
next calls on that device.

The calls themselves (``kernel(*args)``, ``kernel[grid, block]``, ``kernel[grid,
block](*args)``) run in compiled code: the classes here derive from
``pyoxide._launch._native.KernelBase`` and ``ConfiguredBase``, which try the kernel's launchers
and call back into this module (the hooks set in ``__init__``) for anything they
decline. A launcher is built for one knob generation
(:func:`pyoxide._manifest.knobs.launch_generation`, published before every launch made
here): after a launch knob (:func:`pyoxide._manifest.knobs.launch_knobs`) changes in a
running process, the change takes effect for every kernel at the next launch made here,
and at once after :func:`reload_knobs`.

Streams and devices follow the array library: CuPy arrays (and other
``__cuda_array_interface__`` arrays) run on CuPy's current device and stream; PyTorch
tensors on their own device (a device guard, as PyTorch's ops) and PyTorch's current
stream there, so launches inside ``torch.cuda.graph`` capture and under
``torch.cuda.stream(s)`` go where PyTorch code goes. CuPy arrays and PyTorch tensors in
one call are refused unless ``stream=`` says which stream to use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from .. import backends
from .._manifest import knobs as _knobs
from .._manifest.abi import MAX_DYNAMIC_SHARED_BYTES
from .._manifest.reader import KernelSpec
from ..errors import ArgumentError, ArgumentTypeError, NoCompatibleArchError
from . import variants as _variants
from ._native import ConfiguredBase, DerivedValues, KernelBase, set_knob_generation
from .args import ArgumentPlan, Refused, not_an_array
from .arrays import GPU, ArrayView, dtype_name
from .arrays import RUST_TYPESTR as _TYPESTR
from .config import (
    LAUNCH_KEYWORDS,
    Dim,
    check_shared_mem,
    check_stream,
    launch_config,
    unknown_keyword,
)
from .devices import device_of, torch_stream
from .fastplan import FastPlan, fast_plan
from .handles import check_picklable_config, configured, reduce_launcher
from .policy import validates_grid

#: Loads a kernel's code: (backend, device, entry) -> the backend's function handle.
CodeLoader = Callable[[backends.Backend, int, str], Any]
#: Tensor maps kept per variant kernel (each set names its arrays' addresses).
_MAPS_KEPT = 64


def reload_knobs() -> None:
    """Apply a change of ``PYOXIDE_SYNC``, ``PYOXIDE_BACKEND`` or ``PYOXIDE_TUNED_FALLBACK``
    made in this process to every kernel now (otherwise: at the next launch that takes the
    general path)."""
    set_knob_generation(_knobs.launch_generation())


class _Configured(ConfiguredBase):
    """``kernel[grid, block]`` or ``kernel[grid, block, shared_mem, stream]``."""

    def __init__(self, kernel: Kernel | GenericKernel, config: Any) -> None:
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise ArgumentTypeError(
                kernel.name, None, "kernel[grid, block] (optionally [grid, block, shared_mem, "
                "stream])", repr(config), f"write {kernel.name}[blocks, 256](...)",
            )  # fmt: skip
        self._kernel = kernel
        self._grid, self._block = config[0], config[1]
        # None: what the kernel declares it needs (#[launch(..., shared = N)]), else 0.
        self._shared_mem = config[2] if len(config) > 2 else None
        self._stream = config[3] if len(config) > 3 else None
        # The fast path takes a configuration checked here, once (a launcher declines
        # shared memory its function is not opted in to); anything unusual (an explicit
        # stream, a bad value) stays on the general path, which raises at call time.
        checked: tuple[int, ...] | None = None
        smem = self._shared_mem
        if smem is None and isinstance(kernel, Kernel):
            smem = kernel.spec.shared_bytes
        if (
            isinstance(kernel, Kernel)
            and not validates_grid(kernel.spec)  # checked against each call's arrays
            and self._stream is None
            and self._grid is not None
            and type(smem) is int
            and 0 <= smem <= MAX_DYNAMIC_SHARED_BYTES  # more: the general path refuses it
        ):
            try:
                grid3, block3 = launch_config(kernel.plan, [], self._grid, self._block)
            except ArgumentError:
                pass
            else:
                checked = (*grid3, *block3, smem)
        self.bind(kernel, checked, _configured_general)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by reference: its kernel and the configuration (pyoxide/_launch/handles.py);
        a stream is refused (it belongs to this process)."""
        config: tuple[Any, ...] = (self._grid, self._block)
        if self._shared_mem is not None or self._stream is not None:
            config += (self._shared_mem,)
        if self._stream is not None:
            config += (self._stream,)
        return (configured, (self._kernel, check_picklable_config(self._kernel.name, config)))

    def _call_general(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> None:
        """A configured call no launcher took."""
        if kwargs:
            k = self._kernel
            spec = k.spec if isinstance(k, Kernel) else next(iter(k.instances.values())).spec
            _no_keywords(spec, kwargs, k.name)
        self._kernel.launch(
            *args, grid=self._grid, block=self._block,
            shared_mem=self._shared_mem, stream=self._stream,
        )  # fmt: skip


# The hooks of the compiled calls (pyoxide._launch._native): module functions, so that a kernel
# holds no reference to itself.


def _general(kernel: Kernel | GenericKernel, args: tuple[Any, ...], kwargs: Any) -> None:
    kernel._call_general(args, kwargs)


def _configured_general(configured: _Configured, args: tuple[Any, ...], kwargs: Any) -> None:
    configured._call_general(args, kwargs)


def _configure(kernel: Kernel | GenericKernel, config: Any) -> _Configured:
    """``kernel[config]`` (kept for the next one by the compiled ``__getitem__`` when the
    configuration is made of ints alone)."""
    return _Configured(kernel, config)


class Kernel(KernelBase):
    """A launcher for one kernel (or one instance of a generic kernel)."""

    def __init__(self, spec: KernelSpec, code: CodeLoader) -> None:
        self.spec = spec
        self.name = spec.entry
        self._code = code
        self._plan: ArgumentPlan | None = None
        self._fast_plan: FastPlan | bool | None = False  # False: not read yet
        # A variant's tensor maps, shared with its launchers (pyoxide/_launch/variants.py).
        self._derived = DerivedValues(_MAPS_KEPT) if spec.maps_param else None
        # (device, knob generation) a compiled launcher was asked for.
        self._fast_tried: set[tuple[int, int]] = set()
        self._runs_on: dict[tuple[str, int], bool] = {}
        self.set_hooks(_general, _configure)
        self.__doc__ = f"{spec.signature}\n\nDefined at {spec.source.file}:{spec.source.line}."

    def __repr__(self) -> str:
        return f"<pyoxide.Kernel {self.spec.signature}>"

    #: Pickled by reference: its module's origin and its name (pyoxide/_launch/handles.py).
    __reduce__ = reduce_launcher

    @property
    def plan(self) -> ArgumentPlan:
        if self._plan is None:
            self._plan = ArgumentPlan(self.spec)
        return self._plan

    @property
    def fast_plan(self) -> FastPlan | None:
        """The description its compiled launchers are built from (None: it has none)."""
        if self._fast_plan is False:
            self._fast_plan = fast_plan(self.spec, self._derived)
        return self._fast_plan  # type: ignore[return-value]

    def picks(self, *args: Any) -> str:
        """The entry a plain call with these arguments runs: a variant's (one of
        ``self.variants``, pyoxide/_launch/variants.py) or this kernel's."""
        return (self.variant_for(args) or self).name

    #: Whether it runs as a variant on the emulator too (a tuned choice made there does;
    #: a `#[variant_of]` kernel is a faster kernel for some GPUs).
    variant_on_host = False

    def variant_for(self, args: Sequence[Any]) -> Kernel | None:
        """The first variant that takes this plain call: its argument rules accept the
        arguments (the rules of its tensor maps too), it takes their shapes
        (:meth:`takes`), they are on a GPU (or it runs on the emulator too), and its
        code runs there; or that variant's own variant that takes it (a tuned
        ``#[variant_of]`` kernel's choice). None: this kernel runs it (or explains what is
        wrong with it). The arguments are described once per parameter list, which a
        kernel's tuned choices share (32 describing them each cost attention 3 ms)."""
        described: dict[int, _variants.Described] = {}
        for variant in self.variants:
            plan = variant.plan
            key = id(plan.params)  # interned (pyoxide/_launch/args.py): one tuple a list
            if key not in described:
                described[key] = _variants.describe(plan, variant.name, args)
            if (found := described[key]) is None:
                continue
            views, arrays, backend, device = found
            if backend.array_kind != GPU and not variant.variant_on_host:
                continue
            if not _variants.mapped_ok(variant.spec, arrays):
                continue
            if variant.takes(args, views) and variant.runs_on(backend, device):
                # A variant's own variants (a tuned variant's choices) come first.
                inner = variant.variant_for(args) if variant.variants else None
                return inner or variant  # type: ignore[no-any-return]
        return None

    def takes(self, args: Sequence[Any], views: Sequence[ArrayView | None]) -> bool:
        """Whether, as a variant, it takes a plain call with these arguments and their
        views (a tuned choice: its bucket, pyoxide/_launch/tuned.py); all calls by default."""
        return True

    @property
    def decides_in_compiled_code(self) -> bool:
        """Whether its compiled launchers can tell the plain calls it takes as a variant
        (and so can its variants): not a tuned choice keyed by scalars (tuned.py). A
        kernel with a variant that cannot leaves its plain calls to the general path."""
        return all(v.decides_in_compiled_code for v in self.variants)

    def runs_on(self, backend: backends.Backend, device: int) -> bool:
        """Whether its code loads on ``device`` (a build for another architecture, such
        as ``sm_90a`` on anything but sm_90, does not)."""
        key = (backend.name, device)
        known = self._runs_on.get(key)
        if known is None:
            try:
                self._code(backend, device, self.name)
            except NoCompatibleArchError:
                known = False
            else:
                known = True
            self._runs_on[key] = known
        return known

    def _call_general(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> None:
        """A plain call no launcher took: a variant that takes it (pyoxide/_launch/variants.py),
        else this kernel."""
        if kwargs:
            _no_keywords(self.spec, kwargs)
        variant = self.variant_for(args) if self.variants else None
        (variant or self).launch(*args)

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
        generation = _knobs.launch_generation()
        set_knob_generation(generation)
        # Everything that depends only on the arguments, before a backend is chosen.
        packed, arrays = plan.pack(args, views)
        if shared_mem is None:
            shared_mem = self.spec.shared_bytes  # a plain call gives what the kernel needs
        shared_mem = check_shared_mem(name, shared_mem)
        check_stream(name, stream)

        def multiprocessors() -> int:
            chosen = backends.select(name, arrays)
            return chosen.multiprocessors(chosen.current_device())

        placement: tuple[backends.Backend, int, bool] | None = None

        def clusters(block3: tuple[int, int, int]) -> int:  # that run at once
            nonlocal placement
            placement = chosen, device, _ = _placed(name, arrays, stream)  # the launch's too
            code, cluster = self._code(chosen, device, name), self.spec.cluster
            return chosen.active_clusters(code, device, cluster or (1, 1, 1), block3, shared_mem)

        grid3, block3 = launch_config(plan, views, grid, block, args, multiprocessors, clusters)
        backend, device, torch_owned = placement or _placed(name, arrays, stream)
        if grid3[0] * grid3[1] * grid3[2] == 0:
            return  # an empty output: nothing to do
        launch_stream = stream
        if torch_owned and stream is None:
            launch_stream = torch_stream(device)  # PyTorch's current stream on that device
        function = self._code(backend, device, name)
        if self._derived is not None:  # a variant's tensor maps, made by the backend
            packed += _variants.tensor_maps(
                self.spec, self._derived, backend, device, launch_stream, arrays
            )
        producer = [v.stream for _, v in arrays if v.stream is not None]
        backend.launch(
            function, kernel=name, grid=grid3, block=block3, args=tuple(packed),
            shared_mem=shared_mem, stream=launch_stream, producer_streams=producer,
            device=device,
        )  # fmt: skip
        if stream is None:
            # The launch went where a compiled launcher's would (the current stream of
            # the arrays' library): from now on launchers take the calls they can, the
            # variants' first (pyoxide/_launch/variants.py).
            self._build_launcher(backend, device, generation, function)
            if backend.array_kind == GPU:
                self._build_variant_launchers(backend, device, generation)

    def _build_variant_launchers(
        self, backend: backends.Backend, device: int, generation: int
    ) -> None:
        """Build the launchers of its variants that run on ``device``, and of their own
        variants: the compiled plain call tries them before this kernel's, so all of them
        exist before a launcher of this kernel takes a call that one of them would."""
        for variant in self.variants:
            if variant.runs_on(backend, device):
                variant._build_launcher(backend, device, generation, None)
                variant._build_variant_launchers(backend, device, generation)

    def _build_launcher(
        self, backend: backends.Backend, device: int, generation: int, function: Any
    ) -> None:
        """Ask ``backend`` for a compiled launcher on ``device`` (once per knob
        generation) and install it."""
        if (device, generation) in self._fast_tried:
            return
        self._fast_tried.add((device, generation))
        self.prune()
        fast = self.fast_plan
        if fast is None:
            return
        if fast.grid is not None and not self.decides_in_compiled_code:
            # A variant's compiled launchers cannot tell its plain calls from this kernel's
            # (a scalar tune key): those go to the general path, where variant_for decides.
            fast = dataclasses.replace(fast, grid=None)
        if function is None:
            function = self._code(backend, device, self.name)
        launcher = backend.fast_launcher(fast, function, device)
        if launcher is not None:
            self.install(launcher)


def _placed(name: str, arrays: Any, stream: Any) -> tuple[backends.Backend, int, bool]:
    """(backend, device, whether PyTorch owns the arrays) of a launch on ``arrays``."""
    backend = backends.select(name, arrays)
    gpu = backend.array_kind == GPU
    return (backend, *(device_of(name, backend, arrays, stream) if gpu else (0, False)))


def _launch_keywords(kernel: str, config: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    for key in config:
        if key not in LAUNCH_KEYWORDS:
            raise unknown_keyword(kernel, key, LAUNCH_KEYWORDS)
    return (
        config.get("grid"), config.get("block"), config.get("shared_mem"), config.get("stream"),
    )  # fmt: skip


def _no_keywords(spec: KernelSpec, kwargs: dict[str, Any], name: str | None = None) -> NoReturn:
    key = next(iter(kwargs))
    order = ", ".join(p.name for p in spec.passed_params)
    raise ArgumentTypeError(
        name or spec.entry, key, "positional arguments (kernels follow the Rust signature)",
        f"keyword argument {key}=", f"pass the arguments in order: ({order}); launch "
        f"options go to .launch(..., {'=, '.join(LAUNCH_KEYWORDS)}=)",
    )  # fmt: skip


class GenericKernel(KernelBase):
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
        self.set_hooks(_general, _configure)
        self.set_instances(list(instances))  # a plain call tries their launchers

    def __repr__(self) -> str:
        return f"<pyoxide.GenericKernel {self.name}: {', '.join(self.instances)}>"

    #: Pickled by reference: its module's origin and its name (pyoxide/_launch/handles.py).
    __reduce__ = reduce_launcher

    def _call_general(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> None:
        """A plain call: the instance's plain call (its variants first)."""
        if kwargs:
            _no_keywords(next(iter(self.instances.values())).spec, kwargs, self.name)
        kernel, _ = self.dispatch(args)
        kernel._call_general(args, None)

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
