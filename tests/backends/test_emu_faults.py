"""Issue 16: what used to kill the interpreter or corrupt memory in the emulator now
raises a clean exception. Each crash case runs in a child interpreter, and the test
asserts on its exit status (never a signal) and on the exception it printed.

Kernels: the bundled scan (dynamic shared memory) and tests/fixtures/hostile_kernels
(a 280 KB local array, runaway recursion, a loop that never yields)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.bundled import emu_kernels_manifest
from helpers.hostile import CATCH, child, hostile_manifest, interrupted, outcome


@pytest.fixture(scope="module")
def hostile() -> Path:
    return hostile_manifest()


@pytest.mark.parametrize(
    "call",
    [
        "K.scan_blocks_u32.launch(u, r, block=1024, shared_mem=0)",
        "K.scan_blocks_u32.launch(u, r, block=256, shared_mem=4)",
        "K.scan_blocks_u32.launch(u[:32], r[:32], block=1024, shared_mem=0)",
    ],
)
def test_scan_without_its_shared_memory_raises_instead_of_corrupting_the_heap(
    call: str,
) -> None:
    body = "u = np.arange(1000, dtype=np.uint32); r = np.zeros_like(u)\n"
    got = outcome(child(emu_kernels_manifest(), body + CATCH.format(call=call)))
    assert got.startswith("RESULT EmulatorError scan_blocks_u32 (0, 0, 0) (0, 0, 0)"), got
    assert "DynamicSharedArray::<u32>::len() >= warps" in got, got


def test_scan_called_the_obvious_way_is_refused_before_launch() -> None:
    """`K.scan_blocks_u32(u, r)` (issue #16's first case) once corrupted the heap; its
    launch policy (`segments`) now asks for the block, which is part of the result."""
    body = (
        "u = np.arange(1000, dtype=np.uint32); r = np.zeros_like(u)\n"
        "from pyoxide.errors import ArgumentValueError\n"
        "try:\n    K.scan_blocks_u32(u, r)\n    print('RESULT ok')\n"
        "except ArgumentValueError as e:\n    print('RESULT', e.param, str(e).split('. Fix:')[1])\n"
    )
    got = outcome(child(emu_kernels_manifest(), body))
    assert got.startswith("RESULT block  call scan_blocks_u32.launch(..., block=256"), got


def test_scan_with_its_shared_memory_is_right() -> None:
    body = (
        "u = np.random.default_rng(1).integers(0, 1000, 1024, dtype=np.uint32)\n"
        "r = np.full_like(u, 7)\n"
        "K.scan_blocks_u32.launch(u, r, block=256, shared_mem=32)\n"
        "want = np.concatenate([np.cumsum(b) for b in u.reshape(4, 256)])\n"
        "print('RESULT', bool((r == want).all()))\n"
    )
    assert outcome(child(emu_kernels_manifest(), body)) == "RESULT True"


def test_a_large_local_array_runs(hostile: Path) -> None:
    body = "out = np.zeros(64, np.uint32)\n" + CATCH.format(
        call="K.local_280k(out); print('RESULT', int(out[0]), int(out[33]))"
    ).replace('print("RESULT ok")', "")
    want = sum((i ^ t) & 0xFF for i in range(280 * 1024) for t in (0,))
    want1 = sum((i ^ 1) & 0xFF for i in range(280 * 1024))
    assert outcome(child(hostile, body)) == f"RESULT {want} {want1}"


@pytest.mark.parametrize("levels", [20_000, 10_000_000])
def test_runaway_recursion_is_an_emulator_error_not_a_signal(hostile: Path, levels: int) -> None:
    body = "out = np.zeros(64, np.uint64)\n" + CATCH.format(call=f"K.recurse({levels}, out)")
    got = outcome(child(hostile, body))
    if levels == 20_000 and got == "RESULT ok":
        return  # fits in the emulator's stack: fine, as long as nothing crashed
    assert got.startswith("RESULT EmulatorError recurse ("), got
    assert "stack overflow" in got and "faulted in block" in got, got


def test_ctrl_c_raises_keyboard_interrupt(hostile: Path) -> None:
    body = (
        "stop = np.zeros(1, np.uint32)\n"
        "print('READY', flush=True)\n"
        "try:\n"
        "    K.spin[64, 128](stop)\n"
        "    print('RESULT finished')\n"
        "except KeyboardInterrupt:\n"
        "    print('RESULT KeyboardInterrupt')\n"
        "stop[0] = 1\n"
        "K.spin[4, 32](stop)\n"  # the emulator still works afterwards
        "print('AFTER ok')\n"
    )
    out, err = interrupted(hostile, body)
    assert out.split() == ["RESULT", "KeyboardInterrupt", "AFTER", "ok"], out + err


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda k: k["params"][0].update(type="f32"), "other parameters"),
        (lambda k: k.update(entry="spin_fast", name="spin_fast"), "has no such kernel"),
        (lambda k: k.update(launch_bounds={"max_threads": 64, "min_blocks": None}), "other"),
    ],
)
def test_a_hand_edited_manifest_is_checked_against_the_emulator_library(
    hostile: Path, tmp_path: Path, edit: Any, why: str
) -> None:
    """The host entries read their argument words by the descriptors compiled into the
    library; a manifest that disagrees would pass them the wrong words."""
    import pyoxide
    from pyoxide.errors import ManifestError

    value = json.loads(hostile.read_text())
    for a in value["artifacts"]:
        shutil.copy(hostile.parent / a["path"], tmp_path / a["path"])
    shutil.copy(hostile.parent / value["emulator"]["path"], tmp_path / value["emulator"]["path"])
    spin = next(k for k in value["kernels"] if k["entry"] == "spin")
    edit(spin)
    edited = tmp_path / hostile.name
    edited.write_text(json.dumps(value))
    with pytest.raises(ManifestError, match=rf"kernel '{spin['entry']}'.*{why}.*Fix: rebuild"):
        mod = pyoxide.load(edited)
        dtype = np.float32 if spin["params"][0]["type"] == "f32" else np.uint32
        getattr(mod, spin["entry"])[1, 32](np.ones(1, dtype))
