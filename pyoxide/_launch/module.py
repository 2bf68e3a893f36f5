"""Stage 2: a built crate as a Python module of kernels.

:func:`load` turns a crate folder (built through the cache when stale) or a
manifest file into a :class:`Module`. A Module holds one launcher per kernel: a
:class:`~pyoxide._launch.kernel.Kernel` per kernel and per instance of a generic kernel
(``scale_f32``), and a :class:`~pyoxide._launch.kernel.GenericKernel` under the generic
name (``scale``) that dispatches by dtype. Code is loaded on a device the first
time a kernel runs there.

A Module and its launchers pickle by reference to where the module came from (its
:attr:`Module.origin`, pyoxide/_launch/handles.py), so Dask and ``multiprocessing`` ship
tasks that call kernels.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._build.cargo import Echo, Profile
from .._manifest import constants as _constants
from .._manifest import knobs as _knobs
from .._manifest.reader import Manifest, read_manifest
from ..errors import LoadError
from . import handles as _handles
from .tune_space import family_key, is_hand_pick

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..backends import Backend
    from .kernel import GenericKernel, Kernel

    Launcher: TypeAlias = Kernel | GenericKernel


class Module:
    """The kernels of one built crate. ``module.saxpy(...)`` launches ``saxpy``;
    ``module["name"]`` works for names that clash with attributes or keywords."""

    def __init__(
        self, manifest: Manifest, *, tuned: bool = True, from_source: bool = False
    ) -> None:
        # The launch runtime (and its native module) loads with the first Module, not at
        # `import pyoxide`.
        try:
            from .kernel import GenericKernel, Kernel
        except ImportError as e:
            if "pyoxide._launch._native" not in str(e):
                raise
            raise LoadError(
                f"pyoxide's native launcher (pyoxide._launch._native) cannot be imported ({e}). "
                "Fix: reinstall pyoxide (pip install --force-reinstall pyoxide); in a source "
                "checkout, run scripts/setup."
            ) from None

        self.manifest = manifest
        self.name = manifest.crate_name
        # Where it comes from (handles.Origin), set by whoever made it; else its manifest.
        self._origin: _handles.Origin | None = None
        self._tuned_asked = tuned
        self._loaded: dict[tuple[str, int], Any] = {}
        # `#[constant]` values set so far (pyoxide/_manifest/constants.py), by name, as bytes.
        self._constant_values: dict[str, bytes] = {}
        self._constants = {c.name: c for c in manifest.constants}
        self._functions: dict[tuple[str, int, str], Any] = {}
        launchers: dict[str, Launcher] = {}
        generic: dict[str, list[Kernel]] = {}
        for spec in manifest.kernels:
            kernel = Kernel(spec, self.function)
            launchers[spec.entry] = kernel
            # A tuned kernel's other candidates have their entries only: the name is
            # the hand pick's (pyoxide/_launch/tune_space.py).
            if spec.instance and is_hand_pick(spec):
                generic.setdefault(spec.name, []).append(kernel)
        for name, instances in generic.items():
            if name in launchers:
                continue  # an entry symbol wins over the generic name
            only_tuned = len(instances) == 1 and family_key(instances[0].spec)[1] == ()
            launchers[name] = instances[0] if only_tuned else GenericKernel(name, instances)
        self._launchers = launchers
        for name, launcher in launchers.items():
            _handles.serves(self, name, launcher)
        #: The tuned choices plain calls run (pyoxide/_launch/tuned.py): the manifest's and, for
        #: a build tuned here, pyoxide tune's cache's; for a build of the crate's folder
        #: (``from_source``), the crate's shipped ones under those (tune_store.py); none with
        #: tuned=False.
        self.tuned: list[Any] = []
        if tuned:
            from . import tune_store as _tune_store
            from . import tuned as _tuned

            shipped = _tune_store.shipped_for(manifest)[1] if from_source else ()
            choices = _tune_store.choices_for(manifest, shipped)
            self.tuned = _tuned.install(launchers, manifest.kernels, self.function, choices)
        # `module.name` is a plain attribute read: a kernel whose name neither the class
        # nor the instance uses lives in the instance dict (no __getattr__ call per
        # access, nothing for torch.compile to trace); the rest (`kernels`, `name`, …)
        # are reached through `module["name"]`.
        for name, launcher in launchers.items():
            if not hasattr(Module, name) and name not in self.__dict__:
                self.__dict__[name] = launcher
        # cuda-oxide's `module.set_<name>(value)` per `#[constant]` (a kernel of that
        # name keeps it).
        for constant in manifest.constants:
            setter = _constants.setter_name(constant)
            if setter not in launchers:
                self.__dict__[setter] = functools.partial(self.set_constant, constant.name)

    # --- where it comes from: pickling by reference --------------------------------

    @property
    def origin(self) -> _handles.Origin:
        """What makes this module again in another process: ``pyoxide.load`` of its crate
        or manifest (with the same options), the bundled kernels, or the manifest of an
        installed package (found through the package wherever it is installed)."""
        if self._origin is None:
            self._origin = manifest_origin(self.manifest, tuned=self._tuned_asked)
        return self._origin

    def set_origin(self, origin: _handles.Origin) -> None:
        """Record what makes this module again (``load_bundled`` and ``load`` do)."""
        self._origin = origin

    def __reduce__(self) -> tuple[Any, ...]:
        return _handles.reduce_module(self)

    # --- kernels as attributes ---------------------------------------------------

    @property
    def kernels(self) -> Mapping[str, Launcher]:
        return dict(self._launchers)

    def __getattr__(self, name: str) -> Launcher:
        launchers: dict[str, Launcher] | None = self.__dict__.get("_launchers")
        if launchers is None or name.startswith("__"):
            raise AttributeError(name)
        try:
            launcher = launchers[name]
        except KeyError:
            raise AttributeError(self._unknown(name)) from None
        # __getattr__ runs only after the normal lookup failed, which costs more than a
        # kernel launch's own host work (CPython builds and discards an AttributeError
        # first). Kept in the instance dict, the next `module.name` is a plain attribute
        # read. Safe: nothing in the class or the instance has this name, or the normal
        # lookup would have found it.
        self.__dict__[name] = launcher
        return launcher

    def __getitem__(self, name: str) -> Launcher:
        try:
            return self._launchers[name]
        except KeyError:
            raise KeyError(self._unknown(name)) from None

    def _unknown(self, name: str) -> str:
        close = difflib.get_close_matches(name, self._launchers, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        have = ", ".join(sorted(self._launchers)) or "none"
        return f"crate {self.name} has no kernel '{name}' (kernels: {have}).{hint}"

    def add_variants(self, variants: Module) -> list[str]:
        """Let each kernel of ``variants`` declared ``#[variant_of(name)]`` run the plain
        calls of this module's kernel ``name`` that it takes (pyoxide/_launch/variants.py):
        its hand pick, when it is ``#[tune]``d; returns the names of the kernels that got
        one."""
        from .kernel import Kernel

        wired: list[str] = []
        for spec in variants.manifest.kernels:
            # A tuned variant's other instances are its candidates, not more variants.
            if not is_hand_pick(spec):
                continue
            target = self._launchers.get(spec.variant_of) if spec.variant_of else None
            if isinstance(target, Kernel):
                # Before the tuned choices, which were measured among the kernel's own.
                tuned = [v for v in target.variants if v in self.tuned]
                declared = [v for v in target.variants if v not in self.tuned]
                target.set_variants([*declared, variants[spec.entry], *tuned])
                wired.append(target.name)
        return wired

    def serve(self, name: str, launcher: Any) -> None:
        """Serve ``name`` with ``launcher``: a call that wraps the kernel (its launch
        planned in Python, e.g. ``attention``'s, pyoxide/bundled/attention.py)."""
        self._launchers[name] = launcher
        self.__dict__[name] = launcher
        _handles.serves(self, name, launcher)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._launchers))

    def __iter__(self) -> Iterator[str]:
        return iter(self._launchers)

    def __contains__(self, name: object) -> bool:
        return name in self._launchers

    def __len__(self) -> int:
        return len(self._launchers)

    def __repr__(self) -> str:
        return (
            f"<pyoxide.Module {self.name} {self.manifest.crate_version}: "
            f"{len(self._launchers)} kernels, {', '.join(self.manifest.archs) or 'no PTX'}>"
        )

    # --- constant memory (#[constant] statics) -----------------------------------

    def set_constant(self, name: str, value: Any) -> None:
        """Set the `#[constant]` static ``name`` (``module.set_<name>(value)`` too) on
        every backend and device the crate is loaded on, and on those it loads later."""
        spec = self._constants.get(name)
        if spec is None:
            have = ", ".join(sorted(self._constants)) or "none"
            raise KeyError(
                f"crate {self.name} has no #[constant] static '{name}' (constants: {have})"
            )
        from .. import backends

        raw = _encode_constant(self.name, spec, value)
        self._constant_values[name] = raw
        for (backend_name, _device), loaded in self._loaded.items():
            backends.get(backend_name).write_constant(loaded, name, raw)

    # --- code per device ---------------------------------------------------------

    def function(self, backend: Backend, device: int, entry: str) -> Any:
        """The backend's handle of ``entry`` on ``device``; the crate's code is loaded
        there the first time."""
        key = (backend.name, device, entry)
        function = self._functions.get(key)
        if function is None:
            loaded = self._loaded.get((backend.name, device))
            if loaded is None:
                loaded = backend.load_module(self.manifest, device)
                for name, raw in self._constant_values.items():
                    backend.write_constant(loaded, name, raw)
                self._loaded[(backend.name, device)] = loaded
            function = self._functions[key] = backend.get_function(loaded, entry)
        return function


def load(
    path_or_manifest: str | os.PathLike[str] | Manifest,
    *,
    arch: str | Sequence[str] | None = None,
    profile: Profile = "release",
    fmad: bool | None = None,
    rebuild: bool = False,
    echo: Echo | None = None,
    emulator: str | os.PathLike[str] | None = None,
    tuned: bool = True,
) -> Module:
    """Load a kernel crate as a :class:`Module`.

    ``path_or_manifest`` is a crate folder (or its Cargo.toml), built through the
    cache when its sources or the toolchain changed; a ``<crate>.manifest.json``
    file, used as is; or a Manifest already read. ``arch`` defaults to
    ``PYOXIDE_ARCH``, then cargo-oxide's default. ``fmad=False`` builds as ``pyoxide
    build --no-fmad`` does (every multiply and add rounded apart, as on the emulator;
    default True, as nvcc); with a manifest, ``fmad`` given must match how it was built.
    ``rebuild=True`` builds again and replaces the cached build.

    ``emulator``, with a manifest: the crate's CPU emulator library when it was built
    apart from the PTX (a ``pyoxide new`` wheel: maturin's host build of the crate is
    the emulator, the manifest comes from ``pyoxide build --no-emu``).

    ``tuned=False``: plain calls run the hand-picked configurations, not the tuned
    choices of the manifest and of ``pyoxide tune``'s cache (docs/guide/tuning.md).
    """
    if isinstance(path_or_manifest, Manifest):
        return Module(_with_emulator(_built_with(path_or_manifest, fmad), emulator), tuned=tuned)
    path = Path(path_or_manifest)
    if path.is_file() and path.name.endswith(".json"):
        return Module(_with_emulator(_built_with(read_manifest(path), fmad), emulator), tuned=tuned)
    if emulator is not None:
        raise LoadError(
            f"load({str(path)!r}, emulator=…): an emulator library goes with a manifest, "
            "not a crate (a crate's build makes its own). Fix: drop emulator=, or pass "
            "the <crate>.manifest.json."
        )
    if path.is_dir() or path.name == "Cargo.toml":
        from .._build.cache import ensure_built

        archs = [arch] if isinstance(arch, str) else arch
        archs = archs if archs is not None else _knobs.arch()
        if echo is None and _knobs.verbose():
            echo = _stderr
        manifest = ensure_built(
            path,
            arch=archs,
            profile=profile,
            fmad=fmad is not False,
            rebuild=rebuild,
            echo=echo,
        )
        module = Module(read_manifest(manifest), tuned=tuned, from_source=True)
        # Another process loads the same crate with the same options (never rebuild=: a
        # worker reuses the build the cache has).
        options = {"arch": arch if isinstance(arch, str | None) else tuple(arch),
                   "profile": profile, "fmad": fmad, "tuned": tuned}  # fmt: skip
        crate = str(path.resolve())
        module.set_origin(
            _handles.Origin(module.name, "crate", crate, load, (crate,), tuple(options.items()))
        )
        return module
    raise LoadError(
        f"{path} is neither a kernel crate (a folder with Cargo.toml) nor a manifest "
        "(<crate>.manifest.json). Fix: pass one of those."
    )


def manifest_origin(manifest: Manifest, *, tuned: bool = True) -> _handles.Origin:
    """The origin of a module loaded from ``manifest``: the manifest inside an installed
    package (found through the package), else the manifest file; with the emulator library
    it was loaded with (``load(emulator=)``)."""
    options: list[tuple[str, Any]] = [] if tuned else [("tuned", False)]
    emulator = manifest.emulator[0] if manifest.emulator and manifest.emulator[1] is None else None
    found = _handles.package_of(manifest.path)
    if found is not None and emulator is not None:
        lib = _handles.package_of(emulator)
        if lib is not None and lib[0] == found[0]:
            options.append(("emulator", lib[1]))
        else:
            found = None  # an emulator library outside the package: the files as they are
    if found is not None:
        package, inside = found
        return _handles.Origin(
            manifest.crate_name, "package", package, load_packaged, (package, inside),
            tuple(options),
        )  # fmt: skip
    if emulator is not None:
        options.append(("emulator", str(emulator)))
    where = str(manifest.path)
    return _handles.Origin(manifest.crate_name, "manifest", where, load, (where,), tuple(options))


def load_packaged(package: str, manifest: str, *, emulator: str | None = None,
                  tuned: bool = True) -> Module:  # fmt: skip
    """The module of the manifest at ``manifest`` inside the installed package ``package``
    (an emulator library at ``emulator`` inside it too), wherever that package is
    installed: how a kernel package's module pickled in one process loads in another."""
    root = _handles.package_dir(package)
    lib = root / emulator if emulator is not None else None
    return load(root / manifest, emulator=lib, tuned=tuned)


def _built_with(manifest: Manifest, fmad: bool | None) -> Manifest:
    if fmad is not None and manifest.fmad != fmad:
        built = "with" if manifest.fmad else "without"
        raise LoadError(
            f"{manifest.path} was built {built} fused multiply-adds, but load(fmad={fmad}) "
            f"asks the other. Fix: load the crate folder with fmad={fmad} (it builds that), "
            "or drop fmad=."
        )
    return manifest


def _with_emulator(manifest: Manifest, emulator: str | os.PathLike[str] | None) -> Manifest:
    if emulator is None:
        return manifest
    if manifest.emulator is not None:
        raise LoadError(
            f"{manifest.path} names its own emulator library ({manifest.emulator[0].name}); "
            "emulator= is for manifests built with --no-emu. Fix: drop emulator=."
        )
    return dataclasses.replace(manifest, emulator=(Path(emulator).resolve(), None))


def _stderr(line: str) -> None:
    import sys

    print(line, file=sys.stderr, flush=True)


def _encode_constant(module: str, spec: _constants.ConstantSpec, value: Any) -> bytes:
    """The bytes of a `#[constant]` value, checked as a parameter of its Rust type would
    be (errors name the module's setter)."""
    import numpy as np

    from .._manifest.reader import ParamSpec
    from .args import Refused, _converter

    kind = "value" if spec.record else "scalar"
    param = ParamSpec(spec.name, kind, spec.type, mutable=False, record=spec.record)
    try:
        converted = _converter(np, param)(value)
    except Refused as r:
        raise r.cls(
            f"{module}.{_constants.setter_name(spec)}", spec.name, r.expected, r.got, r.fix
        ) from None
    return bytes(np.asarray(converted).tobytes())
