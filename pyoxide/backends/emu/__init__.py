"""The CPU emulator backend: runs kernels on host (NumPy) arrays.

``cargo oxide build`` also builds the kernel crate for the host as ``<crate>.emu.so``
(unless ``--no-emu``) and names it in the manifest's ``emulator`` field; every kernel
instance has a host entry there that runs the whole grid on the CPU, block by block,
with the same barriers, shared memory, warps and atomics as on a GPU. This backend
opens that library (after checking its sha256 against the manifest), hands each entry
the launch's ABI words widened to 64 bits, and turns the entry's status into the
documented errors:

* trap (a panic, failed bounds check, ``gpu_assert!``) → :class:`EmulatorError` naming
  the kernel, block, thread and the panic message;
* divergent barrier (on a GPU: a hang) → :class:`EmulatorError` naming the block and
  the first thread that left it;
* bad launch → :class:`LaunchError`, as the driver's refusal would be on a GPU;
* undefined behaviour the emulator can name (a shuffle from a lane the block lacks or,
  in strict mode, outside its mask) → :class:`EmulatorError` naming block, thread and
  lane.

Strict mode (:func:`strict`, or ``PYOXIDE_EMU_STRICT=1``; ``pyoxide verify`` uses it)
makes bugs visible that a GPU shows only sometimes: shared memory that no thread wrote
is poisoned (NaN, all ones), a block's threads run in orders shuffled by a seed (a
missing barrier gives wrong results), and a shuffle outside its mask traps. The same
seed gives the same run.

Launches are synchronous: the call returns when the grid has run. ``stream`` (whose
type the launcher checked) and ``producer_streams`` mean nothing on the host. The GIL is released
while a kernel runs; the launches of one library run one at a time, since they share its
statics (:class:`._ffi.LaunchLock`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._launch.arrays import HOST
from ..._manifest import knobs as _knobs
from ..._manifest.abi import (
    DESCRIPTOR_SECTION,
    EMU_CHECK_STRICT,
    EMULATOR_ARCH,
    EMULATOR_DEVICE,
    HOST_ENTRY_PREFIX,
    EmuStatus,
)
from ...errors import (
    BackendUnavailableError,
    EmulatorError,
    LaunchError,
    LoadError,
    ManifestError,
)
from . import _elf
from . import _ffi as ffi

if TYPE_CHECKING:
    from ..._launch.clusters import Dim3
    from ..._manifest.reader import Manifest

NO_EMULATOR = (
    "this build has no emulator library, so its kernels cannot run on NumPy (host) arrays. "
    "Fix: rebuild with `pyoxide build` (cargo oxide builds it unless --no-emu), or pass GPU "
    "arrays (cupy.asarray(x))."
)
_U64 = 2**64 - 1

#: The checks of launches in this context, when :func:`strict` set them: (strict, seed).
_STRICT: contextvars.ContextVar[tuple[bool, int] | None] = contextvars.ContextVar(
    "pyoxide_emu_strict", default=None
)


@contextlib.contextmanager
def strict(seed: int = 0, *, enabled: bool = True) -> Iterator[None]:
    """Run the emulated launches of this block in strict mode with ``seed`` (or, with
    ``enabled=False``, in the default mode), whatever ``PYOXIDE_EMU_STRICT`` says::

        with pyoxide.backends.emu.strict(seed=7):
            kernels.my_kernel(x, out)   # NumPy arrays: the emulator, strict

    The setting follows the context (threads and asyncio tasks started inside see it).
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= _U64:
        raise ValueError(f"strict(seed={seed!r}): the seed is an integer from 0 to 2**64 - 1")
    token = _STRICT.set((enabled, seed))
    try:
        yield
    finally:
        _STRICT.reset(token)


def launch_checks() -> tuple[bool, int]:
    """(strict, seed) for an emulated launch made now: :func:`strict`'s, else the knobs'."""
    chosen = _STRICT.get()
    return chosen if chosen is not None else (_knobs.emu_strict(), _knobs.emu_seed())


def widen(word: Any) -> int:
    """One launch-ABI word as the u64 the host entry reads: integers zero- or
    sign-extended (two's complement), ``bool`` as 0 or 1, ``f32`` as its bit pattern in
    the low 32 bits, ``f64`` as its bit pattern."""
    import numpy as np

    if isinstance(word, (bool, np.bool_)):
        return 1 if word else 0
    if isinstance(word, np.float32):
        return int(word.view(np.uint32))
    if isinstance(word, (float, np.float64)):
        return int(np.float64(word).view(np.uint64))
    if isinstance(word, np.floating):
        raise TypeError(f"no launch-ABI encoding for {type(word).__name__}")
    return int(word) & _U64


class EmuModule:
    """A crate's emulator library, opened."""

    def __init__(self, crate: str, library: ffi.Library) -> None:
        self.crate = crate
        self.library = library


class EmuBackend:
    name = "emu"
    array_kind = HOST

    def current_device(self) -> int:
        return 0

    def device_of_pointer(self, ptr: int) -> int | None:
        return 0

    def device_identity(self, device: int) -> tuple[str, str]:
        return EMULATOR_DEVICE, EMULATOR_ARCH

    def multiprocessors(self, device: int) -> int:
        # The emulator runs a launch's blocks on the machine's cores.
        return os.cpu_count() or 1

    def active_clusters(
        self, function: Any, device: int, cluster: Dim3, block: Dim3, shared_mem: int
    ) -> int:
        return 0  # no GPCs: the emulator runs any number of clusters, a core's worth at once

    def load_module(self, manifest: Manifest, device: int) -> EmuModule:
        if manifest.emulator is None:
            raise EmulatorError(f"{manifest.crate_name}: {NO_EMULATOR}")
        data = manifest.read_emulator()  # present and unchanged since it was written
        path = manifest.emulator[0]
        # Before dlopen, which runs the library's constructors: only a library whose
        # compiled-in descriptors are the manifest's kernels is opened.
        check_descriptors(manifest, path, data or b"")
        try:
            library = ffi.Library(path)
        except ImportError as e:
            raise BackendUnavailableError(
                f"host arrays run on the CPU emulator, which needs cffi ({e}). "
                "Fix: pip install cffi (a dependency of pyoxide: reinstall it)."
            ) from None
        except OSError as e:
            raise LoadError(
                f"cannot open the emulator library {path}: {e}. Fix: rebuild with "
                "`pyoxide build` on this machine (the library is built for the host it "
                "was built on)."
            ) from None
        return EmuModule(manifest.crate_name, library)

    def write_constant(self, module: EmuModule, name: str, raw: bytes) -> None:
        import ctypes

        # The static is an exported symbol of the library (`export_name`), found through
        # ctypes' view of the object that cffi opened.
        try:
            cell = (ctypes.c_uint8 * len(raw)).in_dll(module.library.symbols, name)
        except ValueError:
            raise LoadError(
                f"the emulator library {module.library.path} has no #[constant] static "
                f"'{name}'; it does not match its manifest. Fix: rebuild with `pyoxide build`."
            ) from None
        with module.library.launch_lock.lock:  # not while a launch reads it
            ctypes.memmove(ctypes.addressof(cell), raw, len(raw))

    def get_function(self, module: EmuModule, entry: str) -> ffi.HostEntry:
        function = module.library.entry(entry)
        if function is None:
            raise LoadError(
                f"the emulator library {module.library.path} has no entry '{entry}' "
                f"({HOST_ENTRY_PREFIX}{entry}); it does not match its manifest. "
                "Fix: rebuild with `pyoxide build`."
            )
        return function

    def launch(
        self,
        function: ffi.HostEntry,
        *,
        kernel: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: Sequence[Any],
        shared_mem: int,
        stream: Any,  # ignored (its type was checked): a host launch is synchronous
        producer_streams: Sequence[int],  # ignored: host arrays have no streams
        device: int = 0,
    ) -> None:
        import numpy as np

        # A record by value (a NumPy structured scalar) crosses as the address of its
        # bytes, kept alive in `records` until the synchronous launch returns.
        records = [np.array(a) for a in args if isinstance(a, np.void)]
        it = iter(records)
        words = [next(it).ctypes.data if isinstance(a, np.void) else widen(a) for a in args]

        is_strict, seed = launch_checks()
        checks = (EMU_CHECK_STRICT, seed) if is_strict else None
        if checks is not None and not function.has_checks:
            raise EmulatorError(
                f"kernel '{kernel}': strict mode was asked for, but this emulator library "
                "was built before the emulator had it. Fix: rebuild with `pyoxide build`, or "
                "unset PYOXIDE_EMU_STRICT.",
                kernel=kernel,
            )
        outcome = function(grid, block, shared_mem, words, checks)
        if outcome.status == EmuStatus.INTERRUPTED:
            # Ctrl-C: Python's own SIGINT handler has run too and normally raised
            # KeyboardInterrupt already; this covers a handler that did not raise.
            raise KeyboardInterrupt(f"kernel '{kernel}' interrupted in the emulator")
        if outcome.status != EmuStatus.OK:
            raise launch_error(kernel, outcome)

    def fast_launcher(self, plan: Any, function: Any, device: int) -> None:
        return None  # every emulated launch takes the general path

    def tensor_maps(
        self, kernel: str, device: int, stream: Any, maps: Sequence[Any]
    ) -> tuple[Any, int]:
        """Zeroed host memory in place of the maps: TMA is not emulated, and a kernel
        that uses it stops at its first sm_90 instruction, which the emulator names."""
        import numpy as np

        from ..._manifest.abi import TENSOR_MAP_BYTES

        raw = np.zeros(len(maps) * TENSOR_MAP_BYTES + 64, np.uint8)
        at = -raw.ctypes.data % 64
        owner = raw[at : at + len(maps) * TENSOR_MAP_BYTES]
        return owner, owner.ctypes.data


def _library_descriptors(data: bytes) -> dict[str, dict[str, Any]] | None:
    """The kernel descriptors compiled into an emulator library, by entry, read from its
    bytes (None when it has no readable descriptor section)."""
    raw = _elf.section(data, DESCRIPTOR_SECTION)
    if raw is None:
        return None
    text, decoder, found, i = raw.decode("utf-8", "replace"), json.JSONDecoder(), {}, 0
    while (i := text.find("{", i)) != -1:
        try:
            obj, i = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if isinstance(obj, dict) and isinstance(obj.get("entry"), str):
            found[obj["entry"]] = obj
    return found


def check_descriptors(manifest: Manifest, path: Path, data: bytes) -> None:
    """Refuse a manifest whose kernels (parameters, launch bounds) differ from those the
    emulator library was compiled with: the host entries read argument words by the
    library's descriptors, so a hand-edited manifest would pass them the wrong ones; and
    refuse a library without descriptors (not one cargo-oxide built: a manifest that names
    a system library), all without loading it."""
    found = _library_descriptors(data)
    if found is None:
        raise LoadError(
            f"cannot open the emulator library {path}: it holds no kernel descriptors (no "
            f"{DESCRIPTOR_SECTION} section), so it is not a library `cargo oxide build` made "
            "and is not loaded. Fix: rebuild with `pyoxide build`."
        )
    for k in manifest.kernels:
        d = found.get(k.entry)
        want = [[p.name, p.kind, p.type, p.mutable] for p in k.params]
        lb = k.launch_bounds
        want_lb = None if lb is None else [lb.max_threads, lb.min_blocks]
        if d is not None:
            got = [[p.get(f) for f in ("name", "kind", "type", "mutable")] for p in d["params"]]
            dlb = d.get("launch_bounds")
            got_lb = None if not dlb else [dlb.get("max_threads"), dlb.get("min_blocks")]
            if got == want and got_lb == want_lb:
                continue
        what = "has no such kernel" if d is None else "was compiled with other parameters"
        raise ManifestError(
            f"the manifest {manifest.path} describes kernel '{k.entry}' as {k.signature}, "
            f"but its emulator library {path} {what} (the manifest was edited, or mixed "
            "with another build's). Fix: rebuild with `pyoxide build`."
        )


def _dim(d: tuple[int, int, int]) -> str:
    return f"({d[0]}, {d[1]}, {d[2]})"


#: What a failed host entry's status says, as the error's text: ``{kernel}``, ``{where}``
#: (block and thread), ``{block}``, ``{thread}`` and ``{message}`` (the emulator's) are
#: filled in. BAD_LAUNCH is a LaunchError; the others stop a kernel that ran.
_STATUS_TEXT: dict[int, str] = {
    EmuStatus.TRAP: (
        "kernel '{kernel}' trapped in {where}: {message}. Fix: the kernel panicked there (on "
        "a GPU this launch would fail with an illegal instruction); check the index or "
        "assertion it names, and the arguments and launch configuration."
    ),
    EmuStatus.DIVERGENT_BARRIER: (
        "kernel '{kernel}': barrier not reached by every thread of block {block} (thread "
        "{thread} waits for threads that never come; on a GPU this kernel would hang): "
        "{message}. Fix: make every thread of a block reach each sync_threads(), and every "
        "running lane of a warp operation's mask reach it (no barrier or warp operation "
        "inside a branch that depends on the thread, and no early return before one)."
    ),
    EmuStatus.UNDEFINED: (
        "kernel '{kernel}' did what a GPU leaves undefined in {where}: {message}. (On a GPU "
        "this launch would return wrong values silently; the emulator stops it.)"
    ),
    EmuStatus.FAULT: (
        "kernel '{kernel}' faulted in {where}: {message}. Fix: on a GPU this launch would "
        "fail with an illegal address and lose the CUDA context; give the launch the shared "
        "memory the kernel uses (shared_mem=), or shrink the thread's local arrays and "
        "recursion."
    ),
    EmuStatus.BAD_LAUNCH: (
        "kernel '{kernel}': the emulator refused the launch: {message}. Fix: check the grid, "
        "block and shared memory size (and the kernel's launch bounds)."
    ),
}


def launch_error(kernel: str, outcome: ffi.Outcome) -> EmulatorError | LaunchError:
    """The documented error for a failed host entry's status."""
    block, thread = outcome.block, outcome.thread
    fields = {
        "kernel": kernel, "block": _dim(block), "thread": _dim(thread),
        "where": f"block {_dim(block)} thread {_dim(thread)}",
        "message": outcome.message.strip() or "no message",
    }  # fmt: skip
    text = _STATUS_TEXT.get(outcome.status)
    if text is None:
        text = (
            "kernel '{kernel}': the emulator library returned unknown status "
            f"{outcome.status} ({{message}}). Fix: rebuild with `pyoxide build` so library "
            "and pyoxide match."
        )
    if outcome.status == EmuStatus.BAD_LAUNCH:
        return LaunchError(kernel, text.format(**fields))
    return EmulatorError(text.format(**fields), kernel=kernel, block=block, thread=thread)
