"""How many cases `pyoxide verify` runs and how long it waits, shared by the command line
(which must import without NumPy: `pyoxide build` runs in environments that lack it) and
pyoxide/verify.py."""

from __future__ import annotations

#: Cases per kernel unless --cases says otherwise (the bar of issue 14: at least 200).
DEFAULT_CASES = 200
#: Cases per kernel under the sanitizer (each launch runs tens of times slower there).
SANITIZE_CASES = 24
#: Seconds one case may take unless --timeout says otherwise (the largest bundled case
#: takes well under a second on the emulator): past it the kernel is taken for hung.
CASE_TIMEOUT = 60.0
#: Seconds a verify worker may take to start: import NumPy and pyoxide, load the module
#: (already built) and the spec files.
WORKER_START_TIMEOUT = 300.0
#: Smaller shapes the shrinker tries at most for one failure.
SHRINK_TRIES = 60
#: Failures verify shrinks: each smaller candidate is a case like any other (a crash, a
#: hang or a spec error would cost a new worker, the time limit or nothing per candidate).
SHRINKABLE = frozenset(
    {"wrong result", "unwritten element", "input modified", "out-of-bounds write", "raised"}
)
