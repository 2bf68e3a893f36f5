"""tests/fixtures/hostile_kernels (kernels that misbehave on purpose), built, and a child
interpreter to run them in: the crash and interrupt cases of the emulator tests run
there, and the tests assert on what the child printed and its exit status (never a
signal)."""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers.bundled import REPO, fixture_manifest

HOSTILE = REPO / "tests" / "fixtures" / "hostile_kernels" / "Cargo.toml"
#: Where it is built (carry it to the GPU machine, which has no Rust).
HOSTILE_OUT = REPO / "target" / "oxide" / "hostile_kernels"

#: A child's body: ``{call}`` in a try that prints ``RESULT ok`` or the (pickled and
#: unpickled) EmulatorError's kernel, block, thread and message on one line.
CATCH = """
try:
    {call}
    print("RESULT ok")
except EmulatorError as e:
    import pickle
    e = pickle.loads(pickle.dumps(e))
    print("RESULT EmulatorError", e.kernel, e.block, e.thread, str(e).replace(chr(10), " "))
"""


#: A child's body (see :func:`child_code`): Ctrl-C (:func:`interrupted`, ready on stderr:
#: the launch fills the stdout pipe meanwhile) lands inside a printing launch, then it
#: prints again, which once hung or trapped ("RefCell already borrowed"). What it says on
#: stderr is CTRL_C_IN_PRINTF_SAYS; stdout holds the lines of both launches.
CTRL_C_IN_PRINTF = """\
stop = np.zeros(1, np.uint32)
print('READY', file=sys.stderr, flush=True)
try:
    K.chatter[64, 128](2**32 - 1, stop)
    print('RESULT finished', file=sys.stderr, flush=True)
except KeyboardInterrupt:
    print('RESULT KeyboardInterrupt', file=sys.stderr, flush=True)
K.chatter[4, 32](3, stop)
print('AFTER ok', file=sys.stderr, flush=True)
"""
CTRL_C_IN_PRINTF_SAYS = ["RESULT KeyboardInterrupt", "AFTER ok"]
#: How many lines the second launch prints at least ("thread T says 0.50").
CTRL_C_IN_PRINTF_LINES = 4 * 32 * 3


@functools.cache
def hostile_manifest() -> Path:
    """The crate built by this checkout's cargo-oxide (PTX for sm_80, which a newer GPU
    compiles too, and the emulator library) into HOSTILE_OUT."""
    return fixture_manifest(HOSTILE.parent, HOSTILE_OUT, ("sm_80",))


def child_code(manifest: Path, body: str) -> str:
    """A child's program: ``body`` runs with ``K`` (the loaded module), ``np`` and
    ``EmulatorError``, with SIGINT raising KeyboardInterrupt as in an interactive
    Python (a background job may inherit SIGINT ignored)."""
    return (
        "import signal, sys, numpy as np, pyoxide\n"
        "from pyoxide.errors import EmulatorError\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"K = pyoxide.load({str(manifest)!r})\n" + body
    )


def child(manifest: Path, body: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """Run ``body`` (see :func:`child_code`) to the end; it prints its outcome."""
    return subprocess.run(
        [sys.executable, "-c", child_code(manifest, body)],
        capture_output=True, text=True, timeout=120, **kw,
    )  # type: ignore[call-overload]  # fmt: skip


def interrupted(manifest: Path, body: str, *, ready_on: str = "stdout") -> tuple[str, str]:
    """Run ``body`` (see :func:`child_code`) until it prints ``READY`` on ``ready_on``,
    then, a second later (well inside its launch), Ctrl-C it: its stdout and stderr,
    after checking that it exited normally (it handles the KeyboardInterrupt)."""
    p = subprocess.Popen(
        [sys.executable, "-c", child_code(manifest, body)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    ready = p.stdout if ready_on == "stdout" else p.stderr
    assert ready is not None
    assert ready.readline().strip() == "READY"
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    return out, err


def outcome(p: subprocess.CompletedProcess[str]) -> str:
    """The child's one ``RESULT`` line, after checking that it exited normally."""
    assert p.returncode == 0, f"exit {p.returncode} (a signal when negative)\n{p.stderr}"
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT")]
    assert len(lines) == 1, p.stdout + p.stderr
    return lines[0]
