"""pyoxide: write CUDA kernels in Rust, call them from Python.

``from pyoxide import kernels`` gives the bundled kernels; ``pyoxide.load(path)``
a crate of your own. Importing pyoxide loads neither CuPy nor NumPy nor any
native library: they load when a kernel first runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors as _errors
from ._build.cargo import build
from ._build.stubs import render_stub, write_stub
from ._launch.module import Module, load
from ._manifest.reader import Manifest, read_manifest
from .errors import *  # noqa: F403  (the exception tree: errors.__all__)

if TYPE_CHECKING:
    from ._launch.kernel import GenericKernel, Kernel, reload_knobs

__version__ = "0.1.0"

__all__ = [
    "GenericKernel",
    "Kernel",
    "Manifest",
    "Module",
    "build",
    "kernels",  # noqa: F405  (loaded by __getattr__ below)
    "load",
    "read_manifest",
    "reload_knobs",
    "render_stub",
    "write_stub",
]
__all__ += _errors.__all__  # every error class, as pyoxide.errors lists it


#: Names of the launch runtime, imported on first use: it loads the native module, which
#: `import pyoxide` does not.
_LAUNCH_NAMES = ("GenericKernel", "Kernel", "reload_knobs")


def __getattr__(name: str) -> Any:
    if name in _LAUNCH_NAMES:
        from ._launch import kernel as _launch

        value = getattr(_launch, name)
        globals()[name] = value
        return value
    # `kernels` is loaded (and, from a source checkout, built) on first access. Type
    # checkers see its kernels through pyoxide/kernels.pyi, which `pyoxide build
    # --bundled` generates (and which must not be shadowed by a declaration here).
    if name == "kernels":
        from ._launch.handles import resolve
        from .bundled import bundled_origin

        # The process's one bundled module: the one an unpickled kernel resolved too.
        module = resolve(bundled_origin())
        globals()["kernels"] = module
        return module
    raise AttributeError(f"module 'pyoxide' has no attribute {name!r}")
