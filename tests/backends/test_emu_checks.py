"""Issue 27, items 6, 9 and 10, and issue 23's partial warps: the emulator shows what a
GPU would do.

- Strict mode (``backends.emu.strict()`` or ``PYOXIDE_EMU_STRICT=1``, seeded) makes a
  missing barrier give wrong values, reproducibly.
- A shuffle from a lane that a block's partial last warp lacks is an error naming the
  kernel, block, thread and lane.
- A failed ``gpu_assert!`` raises an error with its message and the kernel's own line,
  and prints nothing.
- Ctrl-C during a printing kernel leaves printing working (a child interpreter).

Kernels: tests/fixtures/hostile_kernels.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers.emu import write_emu_manifest
from helpers.hostile import (
    CTRL_C_IN_PRINTF,
    CTRL_C_IN_PRINTF_LINES,
    CTRL_C_IN_PRINTF_SAYS,
    HOSTILE,
    hostile_manifest,
    interrupted,
)
from helpers.probes import requires_c_compiler

import pyoxide
from pyoxide.backends import emu
from pyoxide.errors import ConfigError, EmulatorError


@pytest.fixture(scope="module")
def K() -> pyoxide.Module:
    return pyoxide.load(hostile_manifest())


def neighbours(K: pyoxide.Module) -> np.ndarray:
    out = np.full(512, 7, np.uint32)
    K.neighbour_without_barrier[2, 256](out)
    return out


# Thread t reads what thread t - 1 wrote (t + 1 - 1), had it written it yet.
RIGHT = np.tile(np.arange(256, dtype=np.uint32), 2)


def test_strict_mode_shows_a_missing_barrier_and_its_seed_reproduces_it(
    K: pyoxide.Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (neighbours(K) == RIGHT).all()  # thread order hides the race
    with emu.strict(seed=1):
        first = neighbours(K)
        again = neighbours(K)
    wrong = first != RIGHT
    assert wrong.any(), "the shuffled orders hid the race"
    assert (first[wrong] == 0xFFFFFFFF).all()  # the poison: a slot nobody wrote yet
    assert (again == first).all()
    with emu.strict(seed=2):
        assert (neighbours(K) != first).any()
    # The knobs do the same; strict(enabled=False) turns them off for a block.
    monkeypatch.setenv("PYOXIDE_EMU_STRICT", "1")
    monkeypatch.setenv("PYOXIDE_EMU_SEED", "1")
    assert (neighbours(K) == first).all()
    with emu.strict(enabled=False):
        assert (neighbours(K) == RIGHT).all()


@pytest.mark.parametrize("strict", [False, True])
def test_a_half_warp_shuffles_on_its_own(K: pyoxide.Module, strict: bool) -> None:
    """Lanes 0..16 shuffle over mask 0xffff while lanes 16..32 wait at a barrier: valid
    CUDA, which the emulator once refused as a hang."""
    out = np.zeros(64, np.uint32)
    with emu.strict(seed=3, enabled=strict):
        K.half_warp[1, 64](out)
    lane = np.arange(64) % 32
    np.testing.assert_array_equal(out, np.where(lane < 16, lane + (lane ^ 8), lane))


def test_a_shuffle_from_a_lane_the_block_lacks_names_it(K: pyoxide.Module) -> None:
    x = np.ones(100, np.float32)
    out = np.zeros(100, np.float32)
    full = 0xFFFF_FFFF
    K.butterfly_step[1, 128](full, np.ones(128, np.float32), np.zeros(128, np.float32))
    with pytest.raises(EmulatorError) as info:
        K.butterfly_step[1, 100](full, x, out)
    e = info.value
    assert (e.kernel, e.block, e.thread) == ("butterfly_step", (0, 0, 0), (96, 0, 0))
    assert "did what a GPU leaves undefined" in str(e)
    assert "lane 0 of warp 3 shuffles from lane 16, which does not exist" in str(e)


def test_a_failed_gpu_assert_carries_its_message_and_the_kernels_line(
    K: pyoxide.Module, capfd: pytest.CaptureFixture[str]
) -> None:
    source = (HOSTILE.parent / "src" / "lib.rs").read_text().splitlines()
    line = next(i for i, s in enumerate(source, 1) if "gpu_assert!(n < limit" in s)
    K.bounded[1, 32](3, 4)
    with pytest.raises(EmulatorError) as info:
        K.bounded[1, 32](7, 4)
    message = str(info.value)
    assert "gpu_assert!(n < limit) failed: n = 7 reached the limit 4" in message
    assert re.search(rf"hostile_kernels/src/lib\.rs:{line}:\d+", message), message
    assert "host.rs" not in message and "print.rs" not in message
    assert info.value.thread == (0, 0, 0)
    assert capfd.readouterr().out == ""  # the reason is in the error, not on stdout


def test_ctrl_c_during_a_printing_kernel_leaves_printing_working() -> None:
    out, err = interrupted(hostile_manifest(), CTRL_C_IN_PRINTF, ready_on="stderr")
    said = [line for line in err.splitlines() if line.startswith(("RESULT", "AFTER"))]
    assert said == CTRL_C_IN_PRINTF_SAYS, err[-2000:]
    assert out.count("says 0.50\n") >= CTRL_C_IN_PRINTF_LINES


@requires_c_compiler("compiles the C emulator fixture, which predates strict mode")
def test_strict_mode_needs_a_library_that_has_it(tmp_path: Path) -> None:
    mod = pyoxide.load(write_emu_manifest(tmp_path))
    a, out = np.ones(4, np.float32), np.zeros(4, np.float32)
    mod.vecadd(a, a, out)
    with (
        pytest.raises(EmulatorError, match=r"built before the emulator had it\. Fix: rebuild"),
        emu.strict(),
    ):
        mod.vecadd(a, a, out)


@pytest.mark.parametrize(
    ("name", "value"),
    [("PYOXIDE_EMU_STRICT", "yes"), ("PYOXIDE_EMU_SEED", "-1"), ("PYOXIDE_EMU_SEED", "²")],
)
def test_bad_knob_values_are_config_errors(
    K: pyoxide.Module, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv("PYOXIDE_EMU_STRICT", "1")
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        neighbours(K)


def test_a_bad_seed_is_refused() -> None:
    with pytest.raises(ValueError, match=r"integer from 0 to 2\*\*64 - 1"), emu.strict(seed=-1):
        pass
