"""A failed `gpu_assert!` on a GPU (issue 27, item 10): the kernel calls CUDA's
`__assertfail` (as `assert()` does in CUDA C++), so the launch fails with
CUDA_ERROR_ASSERT, a KernelTrapError, and the CUDA driver prints the condition and the
kernel's file and line on stderr. The context is lost with the launch, so each case
runs in a child interpreter.

Kernels: tests/fixtures/hostile_kernels (carry target/oxide/hostile_kernels)."""

from __future__ import annotations

import os

import pytest
from helpers.hostile import HOSTILE, child, hostile_manifest, outcome
from helpers.probes import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu("the kernel runs on a CUDA device")]


def test_a_failed_gpu_assert_is_reported_by_the_driver() -> None:
    source = (HOSTILE.parent / "src" / "lib.rs").read_text().splitlines()
    line = next(i for i, s in enumerate(source, 1) if "gpu_assert!(n < limit" in s)
    body = (
        "from pyoxide.errors import KernelTrapError\n"
        "K.bounded[1, 32](3, 4)\n"  # holds: runs
        "try:\n"
        "    K.bounded[1, 32](7, 4)\n"
        "    print('RESULT ok')\n"
        "except KernelTrapError as e:\n"
        "    print('RESULT KernelTrapError', str(e).replace(chr(10), ' '))\n"
    )
    env = {**os.environ, "PYOXIDE_BACKEND": "cupy", "PYOXIDE_SYNC": "1"}
    p = child(hostile_manifest(), body, env=env)
    got = outcome(p)
    # What the message recovery can rely on, recorded for the notes either way.
    print("stdout:", p.stdout[-2000:], "\nstderr:", p.stderr[-2000:])
    assert got.startswith("RESULT KernelTrapError"), got
    assert "ASSERT" in got.upper(), got
    assert "n < limit" in p.stderr and f"lib.rs:{line}" in p.stderr, p.stderr
