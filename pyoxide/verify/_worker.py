"""Where verify runs the spec's code and the kernels: a worker process that a fault, a
hang or a spec's own ``os.abort()`` cannot take the run down with.

The parent (:class:`Worker`, used by pyoxide/verify.py) starts a Python that runs
:func:`main` with one end of a socket pair, in a session of its own (Ctrl-C
at the terminal reaches only the parent, which decides). The worker loads the module the
parent already built (a manifest path, or the bundled kernels: never a compile) and the
spec files, then answers requests, one case each. The parent waits for each answer at
most the per-case time limit; a worker that does not answer is killed ("timed out"), one
that dies is reported with its signal and last output ("crashed"), and the next request
starts a fresh worker. On the GPU a case that leaves the CUDA context broken (an illegal
address is sticky) is marked fatal, and the parent replaces the worker before the next
case. The worker's stdout is its stderr: a kernel's printf cannot corrupt ``--json``."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .._manifest import abi as _abi
from .._manifest import knobs as _knobs
from ._limits import WORKER_START_TIMEOUT

__all__ = ["Died", "Target", "Worker", "load_module"]


@dataclass(frozen=True)
class Target:
    """What a worker loads: `module` (a manifest path; None: the bundled kernels), the
    specs (a folder or one file) and the backend it runs cases on."""

    module: str | None
    specs: str
    backend: str


@dataclass(frozen=True)
class Died:
    """The worker gave no answer: ``what`` is "crashed" or "timed out"."""

    what: str
    message: str


def load_module(crate: str | None) -> Any:
    """The bundled kernels (``pyoxide.kernels``) where ``crate`` is None, else ``crate``'s."""
    from .._launch.module import load
    from ..bundled import load_bundled

    return load_bundled() if crate is None else load(crate)


def worker_environment(backend: str) -> dict[str, str]:
    """What verify sets in a worker's environment, beyond the parent's, for `backend`.
    The emulator's strict mode (issue 27: poisoned uninitialised shared memory, varied
    thread interleavings, shuffles outside their mask trapped), on by default in verify,
    is switched on here and nowhere else."""
    return {_abi.PYOXIDE_EMU_STRICT.name: "1"} if backend == "emu" else {}


class Worker:
    """The parent's handle of the worker process (started on first use, and again after
    it died or was killed)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.listing: dict[str, Any] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=200)
        self._reader: threading.Thread | None = None
        #: Whether the last request ended the worker (it died, hung or was left broken).
        self.lost_last = False

    def request(self, message: tuple[Any, ...], timeout: float) -> Any:
        """The worker's answer to `message`, or Died. Raises KeyboardInterrupt (after
        killing the worker) on Ctrl-C."""
        started = self.start()
        if isinstance(started, Died):
            self.lost_last = True
            return started
        return self._ask(message, timeout)

    def close(self) -> None:
        """Stop the worker (killed: it may be stuck in a kernel) and release its pipes."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
        if self._conn is not None:
            self._conn.close()
        if self._reader is not None:
            self._reader.join(timeout=2)
        if self._proc is not None and self._proc.stderr is not None:
            self._proc.stderr.close()
        self._proc = self._conn = self._reader = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the process -------------------------------------------------------------------

    def start(self) -> Died | None:
        """Start the worker unless it runs; Died when it could not start."""
        if self._proc is not None:
            return None
        mine, theirs = socket.socketpair()
        self._tail.clear()
        self._proc = subprocess.Popen(
            # main() by import, not `-m` on this module: the package pyoxide.verify
            # imports it first, and runpy would then warn that it runs a second copy.
            [sys.executable, "-c", _ENTRY, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=_knobs.environment_with(worker_environment(self.target.backend)),
            start_new_session=True,
        )  # fmt: skip
        theirs.close()
        self._conn = Connection(mine.detach())
        self._reader = threading.Thread(target=self._forward, daemon=True)
        self._reader.start()
        ready = self._ask(("start", self.target), WORKER_START_TIMEOUT)
        if isinstance(ready, Died):
            return Died(ready.what, f"while loading the module and specs: {ready.message}")
        self.listing = ready
        return None

    def _forward(self) -> None:
        """Copy the worker's output to ours, keeping its last lines for a crash report."""
        assert self._proc is not None and self._proc.stderr is not None
        for raw in self._proc.stderr:
            line = raw.decode(errors="replace")
            self._tail.append(line.rstrip("\n"))
            with contextlib.suppress(OSError, ValueError):  # our stderr closed: tail only
                sys.stderr.write(line)

    def _ask(self, message: tuple[Any, ...], timeout: float) -> Any:
        assert self._conn is not None and self._proc is not None
        self.lost_last = True  # until it answers and goes on
        try:
            self._conn.send(message)
            if not self._conn.poll(timeout):
                self.close()
                return Died(
                    "timed out",
                    f"no answer within the {timeout:g} s limit (a hung kernel, or one far "
                    "slower than expected: raise it with --timeout); its process was stopped",
                )
            status, value = self._conn.recv()
        except KeyboardInterrupt:
            self.close()
            raise
        except (EOFError, OSError):
            return self._died()
        if status == "error":  # verify's own code failed in the worker: start afresh
            self.close()
            return Died("crashed", f"the worker failed: {value}")
        if status == "fatal":  # the answer, from a worker that cannot go on
            self.close()
        else:
            self.lost_last = False
        return value

    def _died(self) -> Died:
        assert self._proc is not None
        try:
            code = self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=2)
        how = f"exit status {code}"
        if code < 0:
            how = f"signal {signal.Signals(-code).name}" if -code in signal.valid_signals() else how
        elif code >= 128 and (code - 128) in signal.valid_signals():
            how += f" ({signal.Signals(code - 128).name})"
        last = _last_words(list(self._tail))
        self.close()
        return Died("crashed", f"the process running the case died ({how}){last}"[:1500])


def _last_words(lines: list[str]) -> str:
    """What a dead worker said last: the lines before Python's fatal error report (a C
    library's own message, such as glibc's "double free or corruption") and the error
    with the innermost frame it names; or its last lines."""
    lines = [line for line in lines if line.strip()]
    fatal = next((i for i, line in enumerate(lines) if line.startswith("Fatal Python error")), None)
    if fatal is None:
        return (": its last output: " + " | ".join(lines[-6:])) if lines else " (no output)"
    said = lines[max(0, fatal - 3) : fatal + 1]
    current = next((i for i, line in enumerate(lines) if line.startswith("Current thread")), None)
    if current is not None and current + 1 < len(lines):
        said.append("in " + lines[current + 1].strip())
    return ": " + " | ".join(said)


# ---- the worker's side -------------------------------------------------------------------


class _State:
    """What a worker holds: the module, the specs, the arrays of the case it runs."""

    def __init__(self, target: Target) -> None:
        from ._case import Arrays
        from ._specs import read_specs

        self.backend = target.backend
        self.module = load_module(target.module)
        loaded, errors = read_specs(Path(target.specs))
        self.specs = {s.key: s for s in loaded}
        self.arrays = Arrays(target.backend)
        self.listing = {
            "specs": [(s.key, s.spec.kernel, str(s.file)) for s in loaded],
            "errors": [e.as_dict() for e in errors],
        }

    def handle(self, message: tuple[Any, ...]) -> tuple[str, Any]:
        from ._case import make_cases, run_in

        kind, key, *rest = message
        spec = self.specs[tuple(key)].spec
        if kind == "cases":
            return "ok", make_cases(spec, *rest)
        outcome = run_in(self.module, spec, rest[0], self.arrays)
        self.arrays.clear()
        if outcome.failure is not None and not self._healthy():
            return "fatal", outcome
        return "ok", outcome

    def _healthy(self) -> bool:
        """Whether the backend still works after a failed case (a CUDA context that
        took an illegal address is lost for good)."""
        if self.backend != "cupy":
            return True
        from .. import backends

        try:
            gpu = backends.gpu()
            gpu.synchronize()
            return int(gpu.xp.arange(4).sum()) == 6
        except Exception:
            return False


def _watch_parent(parent: int) -> None:
    """End the worker when its parent is gone (killed without a chance to kill us)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


#: The worker's command (``python -c``): sys.argv[1] is its end of the socket pair.
_ENTRY = "from pyoxide.verify._worker import main; main()"


def main() -> None:
    import faulthandler

    conn = Connection(int(sys.argv[1]))
    os.dup2(2, 1)  # printed output goes to stderr, never into the parent's stdout
    faulthandler.enable()
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    state: _State | None = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        try:
            if message[0] == "start":
                state = _State(message[1])
                reply: tuple[str, Any] = ("ok", state.listing)
            else:
                assert state is not None, "a request before start"
                reply = state.handle(message)
        except BaseException as e:  # verify's own failure: the parent starts afresh
            import traceback

            reply = ("error", "".join(traceback.format_exception_only(e)).strip()[-800:])
        conn.send(reply)
