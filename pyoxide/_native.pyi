"""The native launch fast path for CuPy arrays (see crates/pyoxide-native/src/lib.rs)."""

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

class Launcher:
    """A launcher for one kernel on one device; `launcher(args, cfg)` launches or
    returns False (declined: nothing launched)."""

    def __init__(
        self,
        function: int,
        device: int,
        params: Sequence[tuple[str, Any, int, bool, tuple[int, ...] | None, int]],
        ndarray: type,
        current_stream: Callable[[], Any],
        default_block: int,
        grid_param: int | None,
        backend: Any,
        kernel: str,
        on_error: Callable[[int, str, str | None], NoReturn],
        entry_points: tuple[int, int, int, int] | None = None,
        current_stream_capsule: Any = None,
        elements_per_block: int | None = None,
        tiles: tuple[int, tuple[int, int, int], tuple[int, int, int]] | None = None,
    ) -> None: ...
    def __call__(self, args: Sequence[Any], cfg: tuple[int, ...] | None, /) -> bool: ...
    @property
    def buffer_size(self) -> int: ...
    @property
    def stream_from_capsule(self) -> bool: ...

class KernelBase:
    """The compiled `__call__` of a kernel (see crates/pyoxide-native/src/kernel.rs):
    `_fast(args, None)`, else `self._call_general(args, kwargs)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> None: ...
    @property
    def _fast(self) -> Callable[[Sequence[Any], Any], bool] | None: ...
    @_fast.setter
    def _fast(self, value: Callable[[Sequence[Any], Any], bool] | None) -> None: ...

class ConfiguredBase:
    """The compiled `__call__` of `kernel[grid, block]` (see kernel.rs): the kernel's
    fast launcher with `_checked`, else `self._call_general(args, kwargs)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> None: ...
    @property
    def _kernel(self) -> Any: ...
    @_kernel.setter
    def _kernel(self, value: Any) -> None: ...
    @property
    def _checked(self) -> tuple[int, ...] | None: ...
    @_checked.setter
    def _checked(self, value: tuple[int, ...] | None) -> None: ...

_build_stamp: str

def _noop_entry_points() -> tuple[int, int]: ...
def _test_stream_capsule() -> Any: ...
def _test_set_stream(value: int | None, /) -> None: ...
