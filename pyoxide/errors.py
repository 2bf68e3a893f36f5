"""The one exception tree of pyoxide.

Every error pyoxide raises derives from :class:`PyoxideError`, carries the facts
that caused it as attributes, and ends its message with what to do about it::

    PyoxideError
    ├── ConfigError(ValueError)           a PYOXIDE_* variable has a bad value
    ├── BuildError                        cargo-oxide failed; .log is its full output
    │   └── ToolchainError                cargo-oxide, rustc or LLVM tools missing
    ├── LoadError                         a manifest or artifact cannot be used
    │   ├── ManifestError                 malformed, or a newer schema than we read
    │   ├── ArtifactError                 a file the manifest names is missing/changed
    │   ├── MissingCrateError             a pickled kernel's crate is not in this process's
    │   │                                 installation (a Dask worker, a spawned process)
    │   └── NoCompatibleArchError         no PTX fits the device, or driver too old
    ├── BackendUnavailableError           CuPy not installed / no CUDA device
    ├── ScaffoldError(ValueError)         `pyoxide new` refused: bad name, folder taken
    ├── ArgumentError                     a kernel argument was refused before launch
    │   ├── ArgumentTypeError(TypeError)  wrong kind of object, dtype, arity, backend mix
    │   └── ArgumentValueError(ValueError) out of range, wrong shape/device, aliasing
    │       └── ShapeError                an array's rank, layout or extents break the
    │                                     kernel's shape contract; .dim names the dimension
    ├── LaunchError                       the launch itself failed
    │   └── KernelTrapError               a kernel trapped (panic, failed bounds check)
    └── EmulatorError                     the CPU emulator failed (trap, barrier hang) or is absent

Argument errors are raised before anything is launched. Every class pickles (its
``__reduce__`` gives back the constructor's arguments), so errors cross process
boundaries (multiprocessing, pytest-xdist, Dask, Ray) intact.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "ArtifactError",
    "BackendUnavailableError",
    "BuildError",
    "ConfigError",
    "EmulatorError",
    "KernelTrapError",
    "LaunchError",
    "LoadError",
    "ManifestError",
    "MissingCrateError",
    "NoCompatibleArchError",
    "PyoxideError",
    "ScaffoldError",
    "ShapeError",
    "SpecError",
    "ToolchainError",
]


class PyoxideError(Exception):
    """Root of every error pyoxide raises.

    A subclass whose constructor takes more than the message stores its arguments in
    ``_init`` (positional) and ``_kw`` (keywords) so that it pickles.
    """

    _init: tuple[Any, ...] | None = None
    _kw: dict[str, Any] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        init = self._init if self._init is not None else self.args
        if self._kw:
            return (_rebuild, (type(self), init, self._kw), self.__dict__)
        return (type(self), init, self.__dict__)


def _rebuild(cls: type[PyoxideError], args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """Unpickle an error whose constructor takes keyword-only arguments."""
    return cls(*args, **kw)


class ConfigError(PyoxideError, ValueError):
    """An environment variable (``PYOXIDE_*``) has a value pyoxide cannot use."""

    def __init__(self, variable: str, value: str, expected: str) -> None:
        self.variable = variable
        self.value = value
        self.expected = expected
        self._init = (variable, value, expected)
        super().__init__(
            f"{variable}={value!r} is not valid: expected {expected}. "
            f"Fix: set {variable} to one of those values or unset it."
        )


class BuildError(PyoxideError):
    """``cargo oxide build`` failed. ``log`` holds everything it printed."""

    def __init__(
        self,
        message: str,
        *,
        log: str = "",
        returncode: int | None = None,
        command: list[str] | None = None,
    ) -> None:
        self.log = log
        self.returncode = returncode
        self.command = command or []
        self._init = (message,)
        self._kw = {"log": log, "returncode": returncode, "command": command}
        super().__init__(message)

    def __str__(self) -> str:
        text = super().__str__()
        tail = self.log.strip().splitlines()[-40:]
        if tail:
            text += "\n--- last lines of the build log (full log: .log) ---\n" + "\n".join(tail)
        return text


class ToolchainError(BuildError):
    """cargo-oxide, or a tool it needs (rustc, LLVM tools, libdevice, ptxas), is missing."""


class LoadError(PyoxideError):
    """A built module cannot be loaded."""


class ManifestError(LoadError):
    """The manifest is malformed, or has a newer schema than this pyoxide reads."""


class ArtifactError(LoadError):
    """A file the manifest names is missing or differs from its recorded hash."""


class MissingCrateError(LoadError):
    """A kernel handle pickled in one process names a crate this process cannot find.

    Attributes: ``crate``, ``where`` (the crate folder, manifest or installed package it
    was looked for as), ``prefix`` and ``version`` (this process's Python prefix and
    pyoxide version) and ``fix``."""

    def __init__(self, crate: str, where: str, prefix: str, version: str, fix: str) -> None:
        self.crate = crate
        self.where = where
        self.prefix = prefix
        self.version = version
        self.fix = fix
        self._init = (crate, where, prefix, version, fix)
        super().__init__(
            f"crate {crate} ({where}) is not available in this process's installation "
            f"(Python prefix {prefix}, pyoxide {version}), so a kernel handle pickled "
            f"elsewhere cannot be loaded here. Fix: {fix}."
        )


class NoCompatibleArchError(LoadError):
    """No PTX in the manifest runs on the device, or the driver is too old for it."""


class BackendUnavailableError(PyoxideError, RuntimeError):
    """The backend an argument needs cannot run here (CuPy missing, no CUDA device)."""


class ScaffoldError(PyoxideError, ValueError):
    """``pyoxide new`` cannot create the project (bad name, folder in the way, no crates)."""


class SpecError(PyoxideError, ValueError):
    """A spec file cannot be used (it fails to import, or its SPECS is not a list of Spec)."""


class ArgumentError(PyoxideError):
    """A kernel argument was refused before anything was launched.

    Attributes: ``kernel``, ``param`` (name, or None for whole-call problems such as
    arity), ``expected``, ``got`` and ``fix``.
    """

    def __init__(self, kernel: str, param: str | None, expected: str, got: str, fix: str) -> None:
        self.kernel = kernel
        self.param = param
        self.expected = expected
        self.got = got
        self.fix = fix
        self._init = (kernel, param, expected, got, fix)
        where = f"{kernel}(): " if param is None else f"{kernel}(): parameter '{param}' "
        super().__init__(f"{where}expected {expected}, got {got}. Fix: {fix}")


class ArgumentTypeError(ArgumentError, TypeError):
    """Wrong kind of argument: not an array, wrong dtype, wrong arity, backends mixed."""


class ArgumentValueError(ArgumentError, ValueError):
    """Right kind, wrong value: out of range, wrong shape or device, aliasing, bad grid."""


class ShapeError(ArgumentValueError):
    """A shaped array argument breaks the kernel's shape contract (``#[shapes(...)]``),
    rank or layout. Besides ``kernel``, ``param``, ``expected``, ``got`` and ``fix``,
    ``dim`` names the dimension (the contract's name, ``a[0]``, or ``rank``)."""

    def __init__(
        self, kernel: str, param: str, dim: str, expected: str, got: str, fix: str,
        *, detail: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__(kernel, param, expected, got, fix)
        self.dim = dim
        self.detail = detail
        self._init = (kernel, param, dim, expected, got, fix)
        self._kw = {"detail": detail} if detail is not None else None
        if detail is None:
            detail = f"parameter '{param}' (dimension '{dim}'): expected {expected}, got {got}"
        Exception.__init__(self, f"{kernel}(): {detail}. Fix: {fix}")


class LaunchError(PyoxideError):
    """The launch itself failed (the driver refused it, or the backend raised)."""

    def __init__(self, kernel: str, message: str) -> None:
        self.kernel = kernel
        self._init = (kernel, message)
        super().__init__(message)


class KernelTrapError(LaunchError):
    """A kernel trapped on the GPU: a Rust panic or failed bounds check."""


class EmulatorError(PyoxideError):
    """The CPU emulator failed. ``block`` and ``thread`` say where, when known."""

    def __init__(
        self,
        message: str,
        *,
        kernel: str | None = None,
        block: tuple[int, int, int] | None = None,
        thread: tuple[int, int, int] | None = None,
    ) -> None:
        self.kernel = kernel
        self.block = block
        self.thread = thread
        self._init = (message,)
        self._kw = {"kernel": kernel, "block": block, "thread": thread}
        super().__init__(message)
