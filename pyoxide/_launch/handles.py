"""Kernel handles pickle by reference, so engines that ship tasks to other processes
(Dask, ``multiprocessing``, Ray) can ship a task that calls a kernel.

A :class:`~pyoxide._launch.module.Module` knows its :class:`Origin`: the call that makes
it again (the bundled kernels, ``pyoxide.load(crate)`` with its options, a manifest file,
or a manifest inside an installed package, found again through that package wherever it
is installed). A module pickles as its origin; a launcher (a kernel, a generic kernel, a
configured launch ``kernel[grid, block]``) as its module's origin and its name (and its
configuration). Unpickling calls :func:`resolve`, which makes each module once per
process: it reuses the module this process already has for that origin (one loaded
here and pickled before, or one an earlier task resolved), and otherwise loads it through
the ordinary path, which reads a wheel's or the build cache's manifest without compiling
anything while the build is fresh. An origin whose crate this process cannot find raises
:class:`~pyoxide.errors.MissingCrateError`, naming the crate, where it was looked for and
this process's installation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import pickle
import sys
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import MissingCrateError

#: How an origin finds its crate: the bundled kernels, a crate folder, a manifest file,
#: or an installed package (``where`` is its import name).
SOURCES = ("bundled", "crate", "manifest", "package")


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a module comes from: ``load(*args, **dict(options))`` makes it again.

    ``load`` is a module-level function (pickled by its qualified name); ``crate`` and
    ``where`` (a path, or a package's import name) are what a missing crate's error
    names."""

    crate: str
    source: str
    where: str
    load: Callable[..., Any]
    args: tuple[Any, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()

    def describe(self) -> str:
        if self.source == "bundled":
            return "the kernels bundled with pyoxide"
        if self.source == "package":
            return f"the installed package {self.where!r}"
        return f"the {self.source} at {self.where}"


_lock = threading.RLock()
#: Modules this process resolved from an origin: kept for the life of the process, so a
#: worker loads each once however many tasks unpickle it.
_resolved: dict[Origin, Any] = {}
#: Modules this process made itself (``pyoxide.load``) and pickled: an unpickle here gives
#: that same module while it is alive.
_pickled: weakref.WeakValueDictionary[Origin, Any] = weakref.WeakValueDictionary()
#: launcher -> (its module, the name it serves it under), for the launchers modules serve.
_served: weakref.WeakKeyDictionary[Any, tuple[weakref.ref[Any], str]] = weakref.WeakKeyDictionary()


def resolve(origin: Origin) -> Any:
    """The module ``origin`` names, made at most once per process."""
    with _lock:
        module = _resolved.get(origin)
        if module is None:
            module = _pickled.get(origin)
        if module is None:
            _check_present(origin)
            module = origin.load(*origin.args, **dict(origin.options))
            _resolved[origin] = module
        return module


def reduce_module(module: Any) -> tuple[Any, ...]:
    """A module pickles as its origin (and unpickles here as itself while it lives)."""
    origin = module.origin
    with _lock:
        if _resolved.get(origin) is not module:
            _pickled[origin] = module
    return (resolve, (origin,))


def serves(module: Any, name: str, launcher: object) -> None:
    """Record that ``module`` serves ``launcher`` as ``module[name]`` (Module does, for
    each of its launchers), which is how the launcher pickles."""
    # A launcher that takes no weak reference pickles as itself, if it can.
    with contextlib.suppress(TypeError):
        _served[launcher] = (weakref.ref(module), name)


def reduce_launcher(launcher: object) -> tuple[Any, ...]:
    """A launcher pickles as ``module[name]`` of the module that serves it; one no module
    serves (a tuned choice, a kernel of a Module since dropped) is refused."""
    owner = _served.get(launcher)
    module, name = (owner[0](), owner[1]) if owner is not None else (None, "")
    if module is None or name not in module or module[name] is not launcher:
        raise pickle.PicklingError(
            f"{launcher!r} cannot be pickled by reference: no module serves it. Fix: pickle "
            "a launcher that a module gives (module.name or module['name'], e.g. "
            "kernels.saxpy), or the module itself."
        )
    reduce_module(module)  # the module unpickles as itself in this process
    return (launcher_of, (module.origin, name))


def launcher_of(origin: Origin, name: str) -> Any:
    """``module[name]`` of the module ``origin`` names (the unpickling of a launcher)."""
    return resolve(origin)[name]


def configured(launcher: Any, config: tuple[Any, ...]) -> Any:
    """``launcher[config]`` (the unpickling of a configured launch)."""
    return launcher[config]


def check_picklable_config(name: str, config: tuple[Any, ...]) -> tuple[Any, ...]:
    """A configuration that means the same in another process: no stream (a stream is a
    handle of the process that made it)."""
    if len(config) > 3:
        raise pickle.PicklingError(
            f"{name}[grid, block, shared_mem, stream] cannot be pickled: a stream belongs to "
            "the process that made it. Fix: pickle the launch without the stream "
            f"({name}[grid, block, shared_mem]); the other process launches on its current "
            "stream."
        )
    return config


def _check_present(origin: Origin) -> None:
    if origin.source in ("crate", "manifest"):
        present = Path(origin.where).exists()
    elif origin.source == "package":
        present = importlib.util.find_spec(origin.where) is not None
    else:
        return
    if not present:
        fix = (
            f"pip install the package that provides {origin.where!r} into this environment"
            if origin.source == "package"
            else "make the path reachable here (a shared file system, the same checkout), "
            "or ship the crate as a wheel (docs/guide/shipping.md) and install it here"
        )
        raise MissingCrateError(origin.crate, origin.describe(), sys.prefix, _version(), fix)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("pyoxide")
    except metadata.PackageNotFoundError:
        return "unknown (not installed as a distribution)"


def package_of(path: Path) -> tuple[str, str] | None:
    """``(package, path inside it)`` when ``path`` lies in a package importable from
    ``sys.path`` (an installed kernel package: a worker finds it wherever it is installed);
    None otherwise."""
    path = path.resolve()
    roots = set()
    for entry in sys.path:
        if entry:
            try:
                roots.add(Path(entry).resolve())
            except OSError:
                continue
    for parent in path.parents:
        if parent.parent in roots and (parent / "__init__.py").is_file():
            return parent.name, path.relative_to(parent).as_posix()
    return None


def package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, package
    return Path(next(iter(spec.submodule_search_locations)))
