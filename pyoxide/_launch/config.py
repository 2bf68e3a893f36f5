"""The launch configuration: grid, block, dynamic shared memory and stream.

Every rule here depends only on the arguments, so :mod:`._launch` applies them before a
backend is chosen (a bad grid reports the grid, whether or not CuPy is installed).
:func:`launch_config` is the one function that picks the default grid and block.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._manifest import abi as _abi
from ..errors import ArgumentTypeError, ArgumentValueError
from . import policy as _policy
from .args import describe_value
from .clusters import Dim3

if TYPE_CHECKING:
    from .args import ArgumentPlan
    from .arrays import ArrayView

Dim = int | tuple[int] | tuple[int, int] | tuple[int, int, int]

#: Threads per block of an automatic configuration (fewer under tighter launch bounds).
DEFAULT_BLOCK = _policy.DEFAULT_BLOCK
#: The keywords of ``Kernel.launch`` besides the kernel's own arguments.
LAUNCH_KEYWORDS = ("grid", "block", "shared_mem", "stream")


def dim3(kernel: str, what: str, value: Any, limits: tuple[int, int, int]) -> Dim3:
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
        describe_value(value) if not isinstance(value, tuple) else repr(value),
        f"pass e.g. {what}=256 or {what}=(16, 16)",
    )  # fmt: skip


def default_block(plan: ArgumentPlan) -> int:
    return _policy.default_block(plan.spec)


def launch_config(
    plan: ArgumentPlan,
    views: list[ArrayView | None],
    grid: Dim | None,
    block: Dim | None,
    args: Sequence[Any] = (),
    multiprocessors: Callable[[], int] | None = None,
    active_clusters: Callable[[Dim3], int] = lambda block: 0,
) -> tuple[Dim3, Dim3]:
    """The grid and block of one launch: as given (checked against the CUDA limits, the
    kernel's launch bounds and, where the grid has a meaning, its launch policy), or,
    where None, the kernel's launch policy's (``#[launch]``, pyoxide/_launch/policy.py; without
    one, one thread per element of the first output in blocks of :func:`default_block`).
    ``multiprocessors()`` (the device's SM count) is called only by grid-stride policies,
    ``active_clusters(block)`` only by a persistent grid of clusters (_policy.configure).
    The compiled fast path sizes a plain call the same way (``_policy.plain_rule``)."""
    name = plan.spec.entry
    block3 = None if block is None else dim3(name, "block", block, _abi.MAX_BLOCK_DIM)
    grid3 = None if grid is None else dim3(name, "grid", grid, _abi.MAX_GRID_DIM)

    def unknown() -> int:
        raise AssertionError("a plain call of a grid-stride kernel is configured with its device")

    return _policy.configure(
        plan.spec, _policy.lengths_of(views), args, grid3, block3, multiprocessors or unknown,
        [None if v is None else v.shape for v in views], active_clusters,
    )  # fmt: skip


def check_shared_mem(kernel: str, shared_mem: Any) -> int:
    limit = _abi.MAX_DYNAMIC_SHARED_BYTES
    if type(shared_mem) is not int or not 0 <= shared_mem <= limit:
        raise ArgumentValueError(
            kernel, "shared_mem",
            f"a byte count from 0 to {limit} (the most dynamic shared memory a block can "
            "have)", describe_value(shared_mem),
            "pass the dynamic shared memory size in bytes, or leave it out",
        )  # fmt: skip
    return shared_mem


def check_stream(kernel: str, stream: Any) -> None:
    """A stream is None (the array library's current one), a raw handle (int), or a
    stream object (CuPy's ``.ptr``, PyTorch's ``.cuda_stream``, the ``__cuda_stream__``
    protocol). The emulator runs synchronously and ignores it, but refuses what no GPU
    would take, so code that runs on NumPy arrays runs on GPU arrays too."""
    if stream is None or (type(stream) is int and stream >= 0):
        return
    if any(hasattr(stream, a) for a in ("ptr", "cuda_stream", "__cuda_stream__")):
        return
    raise ArgumentTypeError(
        kernel, "stream",
        "a cupy.cuda.Stream, a torch.cuda.Stream, an object with __cuda_stream__, or a raw "
        "stream handle (int >= 0)", describe_value(stream),
        "pass stream=cupy.cuda.get_current_stream() or leave it out",
    )  # fmt: skip


def unknown_keyword(kernel: str, key: str, valid: tuple[str, ...]) -> ArgumentTypeError:
    import difflib

    close = difflib.get_close_matches(key, valid, n=1)
    hint = f" (did you mean {close[0]}=?)" if close else ""
    return ArgumentTypeError(
        kernel, key, f"one of the launch keywords {', '.join(valid)}",
        f"keyword argument {key}=", f"spell it as one of those{hint}; kernel arguments are "
        "positional",
    )  # fmt: skip
