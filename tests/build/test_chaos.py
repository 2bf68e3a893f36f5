"""scripts/chaos --quick: killed builds, concurrent builds, damaged cache files of every
kind and an edit during a build; after each, the next pyoxide.load is correct and fresh
(issue 16). The full run is `scripts/chaos`. And scripts/chaos --verify --quick: the
hostile-user probe of issue 27 (verify, stale builds, the cache folder, manifest paths,
the emulator's checks), every case good or meh, none bad."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers.bundled import REPO, workspace_cargo_oxide


def test_the_quick_chaos_run_finds_no_failure() -> None:
    exe = workspace_cargo_oxide()
    assert exe is not None, "scripts/chaos builds a crate: run scripts/setup"
    env = dict(os.environ, PYOXIDE_CARGO_OXIDE=exe)
    p = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "chaos"), "--quick", "--seed", "16"],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    table = p.stdout.split("case", 1)[1]
    for case in ("killed", "concurrent", "edit", "corrupt index", "corrupt ptx"):
        assert f"\n{case} " in table, table
    assert "FAILED" not in p.stdout, p.stdout


def test_the_quick_verify_probe_finds_nothing_bad() -> None:
    exe = workspace_cargo_oxide()
    assert exe is not None, "scripts/chaos --verify builds a crate: run scripts/setup"
    env = dict(os.environ, PYOXIDE_CARGO_OXIDE=exe)
    p = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "chaos"), "--verify", "--quick"],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    table = p.stdout.split("verdict", 1)[1]
    # issue 27's items, each probed (11, the offline build, is in the full run only)
    for item in range(1, 11):
        assert f" {item:>2}  good" in table, table
    assert "pyoxide new + build offline" in table and "full run only" in table, table
    assert ", 0 bad," in p.stdout, p.stdout
