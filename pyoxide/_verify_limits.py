"""How many cases `pyoxide verify` runs, shared by the command line (which must import
without NumPy: `pyoxide build` runs in environments that lack it) and pyoxide/verify.py."""

from __future__ import annotations

#: Cases per kernel unless --cases says otherwise (the bar of issue 14: at least 200).
DEFAULT_CASES = 200
#: Cases per kernel under the sanitizer (each launch runs tens of times slower there).
SANITIZE_CASES = 24
