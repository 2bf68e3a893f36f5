"""The emu backend against a hand-written C emulator library (tests/fixtures/emu_fixtures.c):
results, the widening of every scalar type to the ABI's u64 words, each status mapped to
its documented error, and the library's sha256 and presence checked at load."""

from __future__ import annotations

import ctypes
import hashlib
import json
import multiprocessing
import shutil
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.emu import ECHO_TYPES, LIBRARY, build_library, planted_library, write_emu_manifest
from helpers.fakes import cuda
from helpers.fixtures import write_manifest
from helpers.probes import requires_c_compiler

import pyoxide
from pyoxide._manifest import abi as _abi
from pyoxide.backends import emu

pytestmark = requires_c_compiler("compiles the C emulator fixture")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_library(tmp_path_factory.mktemp("emu_lib"))


@pytest.fixture
def mod(tmp_path: Path, library: Path) -> pyoxide.Module:
    return pyoxide.load(write_emu_manifest(tmp_path, library=library))


# --- results -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 255, 256, 257, 10_007])
def test_vecadd_matches_numpy(mod: pyoxide.Module, n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = np.full(n, np.nan, np.float32)
    mod.vecadd(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_numpy_arrays_pick_the_emulator_and_a_forced_emu_backend_agrees(
    mod: pyoxide.Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = np.arange(300, dtype=np.float32)
    c = np.full(300, np.nan, np.float32)
    monkeypatch.setenv("PYOXIDE_BACKEND", "emu")
    mod.vecadd[2, 160](a, a, c)
    np.testing.assert_array_equal(c, 2 * a)
    with pytest.raises(pyoxide.ArgumentTypeError, match="PYOXIDE_BACKEND=emu"):
        mod.vecadd(cuda(8), cuda(8), cuda(8))


def test_stream_is_ignored_on_the_host_but_checked(mod: pyoxide.Module) -> None:
    a = np.ones(40, np.float32)
    c = np.zeros(40, np.float32)
    mod.vecadd[1, 64, 0, 7](a, a, c)  # a raw handle: meaningless on the host
    assert (c == 2).all()
    # What no GPU would take is refused here too, so NumPy-tested code runs on GPU arrays.
    for bad in ("foo", -1, 1.5, object()):
        with pytest.raises(pyoxide.ArgumentTypeError, match="parameter 'stream'"):
            mod.vecadd.launch(a, a, c, stream=bad)


@pytest.mark.parametrize(
    ("other", "one_at_a_time"),
    [
        ("this module", True),
        ("another module, one library", True),
        ("a copy of the library", False),
    ],
)
def test_launches_of_one_library_wait_for_each_other_and_others_run_meanwhile(
    mod: pyoxide.Module, tmp_path: Path, library: Path, other: str, one_at_a_time: bool
) -> None:
    """The GIL is released while a kernel runs, and a library's launches hold its lock (its
    statics are shared by every Module that opened it): two naps from two threads take
    twice as long on one library, and as long as one on two copies of it."""
    second = {
        "this module": lambda: mod,
        "another module, one library": lambda: pyoxide.load(mod.manifest.path),
        # write_emu_manifest copies the library beside the manifest: another file
        "a copy of the library": lambda: pyoxide.load(
            write_emu_manifest(tmp_path / "copy", library=library)
        ),
    }[other]()
    out = np.zeros(1, np.float32)
    mod.nap(1, out)  # load the libraries first
    second.nap(1, out)
    start = time.perf_counter()
    threads = [threading.Thread(target=m.nap, args=(400, out)) for m in (mod, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    assert (elapsed >= 0.8) if one_at_a_time else (elapsed < 0.7), elapsed


def test_a_child_forked_during_a_launch_can_launch(mod: pyoxide.Module) -> None:
    """The parent's launch holds the library's lock; the forked child has no such launch,
    so it must not wait for it (it would wait forever)."""
    out = np.zeros(1, np.float32)
    mod.nap(1, out)
    napping = threading.Thread(target=mod.nap, args=(3000, out))
    napping.start()
    time.sleep(0.3)  # the nap holds the lock now
    child = multiprocessing.get_context("fork").Process(target=mod.nap, args=(1, out))
    child.start()
    child.join(timeout=2)  # before the parent's nap ends
    if child.exitcode is None:
        child.kill()
    napping.join()
    assert child.exitcode == 0


def test_an_empty_output_launches_nothing(mod: pyoxide.Module) -> None:
    e = np.empty(0, np.float32)
    mod.vecadd(e, e, e)
    mod.trap(e)  # would raise if launched


# --- argument words ------------------------------------------------------------------------

_EXTREMES = {
    "i8": (-(2**7), 2**7 - 1), "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1),
    "isize": (-1, 2**63 - 1), "u8": (0, 255), "u16": (0, 2**16 - 1),
    "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1), "usize": (0, 2**64 - 1),
}  # fmt: skip


def _f32_bits(x: float) -> int:
    return int.from_bytes(struct.pack("<f", x), "little")


def _f64_bits(x: float) -> int:
    return int.from_bytes(struct.pack("<d", x), "little")


@pytest.mark.parametrize("end", [0, 1], ids=["min", "max"])
def test_every_scalar_type_is_widened_per_the_abi(mod: pyoxide.Module, end: int) -> None:
    ints = [_EXTREMES[t][end] for t in ECHO_TYPES[:10]]
    floats = [-1.5, 2.0**-1074] if end == 0 else [3.25, -0.0]
    flag = bool(end)
    out = np.zeros(32, np.uint64)
    mod.echo[(2, 3, 1), (4, 5, 6), 100](*ints, *floats, flag, out)
    want = [i & (2**64 - 1) for i in ints]  # two's complement: sign-extended
    want += [_f32_bits(floats[0]), _f64_bits(floats[1]), int(flag)]
    want += [out.ctypes.data, 32]  # a slice: address, element count
    assert out[:15].tolist() == want
    assert out[15:23].tolist() == [2, 3, 1, 4, 5, 6, 100, 15]  # grid, block, shared, nargs


def test_numpy_scalars_and_special_floats_are_widened(mod: pyoxide.Module) -> None:
    out = np.zeros(32, np.uint64)
    args = [np.int8(-2), np.int16(-3), np.int32(-4), np.int64(-5), -6, np.uint8(7),
            np.uint16(8), np.uint32(9), np.uint64(2**64 - 1), 11]  # fmt: skip
    mod.echo[1, 1](*args, np.float32(np.inf), float("nan"), np.bool_(True), out)
    assert out[:5].tolist() == [2**64 - k for k in (2, 3, 4, 5, 6)]
    assert out[5:10].tolist() == [7, 8, 9, 2**64 - 1, 11]
    assert out[10] == 0x7F80_0000 and out[12] == 1
    assert out[11] == np.float64("nan").view(np.uint64)


def test_widen_by_hand() -> None:
    assert emu.widen(np.int8(-1)) == 2**64 - 1
    assert emu.widen(np.uint32(2**32 - 1)) == 2**32 - 1
    assert emu.widen(np.float32(1.0)) == 0x3F80_0000
    assert emu.widen(np.float64(1.0)) == 0x3FF0_0000_0000_0000
    assert emu.widen(np.bool_(False)) == 0 and emu.widen(True) == 1
    with pytest.raises(TypeError, match="float16"):
        emu.widen(np.float16(1))


# --- statuses ------------------------------------------------------------------------------


def test_a_trap_names_kernel_block_thread_and_message(mod: pyoxide.Module) -> None:
    with pytest.raises(pyoxide.EmulatorError) as info:
        mod.trap(np.zeros(4, np.float32))
    e = info.value
    assert (e.kernel, e.block, e.thread) == ("trap", (2, 1, 0), (5, 3, 1))
    assert str(e).startswith(
        "kernel 'trap' trapped in block (2, 1, 0) thread (5, 3, 1): "
        "index out of bounds: the len is 4 but the index is 9."
    )
    assert "Fix:" in str(e)


def test_a_divergent_barrier_says_a_gpu_would_hang(mod: pyoxide.Module) -> None:
    with pytest.raises(pyoxide.EmulatorError) as info:
        mod.diverge(np.zeros(4, np.float32))
    e = info.value
    assert (e.kernel, e.block, e.thread) == ("diverge", (2, 1, 0), (5, 3, 1))
    text = str(e)
    assert "barrier not reached by every thread of block (2, 1, 0)" in text
    assert "thread (5, 3, 1)" in text and "on a GPU this kernel would hang" in text
    assert "thread returned before sync_threads" in text and "Fix:" in text


def test_a_refused_launch_is_a_launch_error(mod: pyoxide.Module) -> None:
    with pytest.raises(pyoxide.LaunchError) as info:
        mod.refuse(np.zeros(4, np.float32))
    assert info.value.kernel == "refuse"
    assert "emulator refused the launch: block of 2048 threads" in str(info.value)
    assert not isinstance(info.value, pyoxide.EmulatorError)


def test_an_unknown_status_is_an_emulator_error(mod: pyoxide.Module) -> None:
    with pytest.raises(pyoxide.EmulatorError, match="unknown status 42"):
        mod.weird(np.zeros(4, np.float32))


def test_wrong_word_count_is_reported_by_the_library(mod: pyoxide.Module) -> None:
    # The launcher always sends the manifest's words; call the entry directly to see the
    # library's own check come back as a bad launch.
    entry = mod.function(emu.EmuBackend(), 0, "vecadd")
    outcome = entry((1, 1, 1), (1, 1, 1), 0, [0, 0])
    assert outcome.status == _abi.EmuStatus.BAD_LAUNCH
    assert outcome.message == "expected 6 argument words, got 2"
    assert isinstance(emu.launch_error("vecadd", outcome), pyoxide.LaunchError)


# --- loading -------------------------------------------------------------------------------


def test_an_entry_missing_from_the_library_is_a_load_error(mod: pyoxide.Module) -> None:
    with pytest.raises(pyoxide.LoadError, match=r"no entry 'absent' \(__oxide_host_absent\)"):
        mod.absent(np.zeros(4, np.float32))


def test_a_changed_library_is_refused(tmp_path: Path, library: Path) -> None:
    path = write_emu_manifest(tmp_path, library=library)
    m = json.loads(path.read_text())
    m["emulator"]["sha256"] = "0" * 64
    path.write_text(json.dumps(m))
    with pytest.raises(pyoxide.ArtifactError, match="changed since its manifest was written"):
        pyoxide.load(path).vecadd(*(np.zeros(4, np.float32) for _ in range(3)))


def test_a_missing_library_is_refused(tmp_path: Path, library: Path) -> None:
    path = write_emu_manifest(tmp_path)
    (tmp_path / LIBRARY).unlink()
    with pytest.raises(pyoxide.ArtifactError, match="cannot read the emulator library"):
        pyoxide.load(path).vecadd(*(np.zeros(4, np.float32) for _ in range(3)))


def test_a_library_that_does_not_open_is_a_load_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.emu.so"
    bogus.write_bytes(b"not an ELF file")
    path = write_emu_manifest(tmp_path, library=bogus)
    with pytest.raises(pyoxide.LoadError, match="cannot open the emulator library"):
        pyoxide.load(path).vecadd(*(np.zeros(4, np.float32) for _ in range(3)))


def test_a_build_without_emulator_says_how_to_get_one(tmp_path: Path) -> None:
    m = pyoxide.load(write_manifest(tmp_path))
    x = np.ones(8, np.float32)
    with pytest.raises(pyoxide.EmulatorError) as info:
        m.saxpy(2.0, x, x.copy(), np.empty_like(x))
    text = str(info.value)
    assert "this build has no emulator library" in text
    assert "rebuild with `pyoxide build` (cargo oxide builds it unless --no-emu)" in text


def test_the_library_is_opened_once_per_module(mod: pyoxide.Module) -> None:
    a = np.ones(8, np.float32)
    mod.vecadd(a, a, np.empty_like(a))
    loaded = dict(mod._loaded)
    mod.vecadd(a, a, np.empty_like(a))
    assert mod._loaded == loaded and list(loaded) == [("emu", 0)]


# --- bad inputs through NumPy arrays, on the real emu backend --------------------------------

f32 = np.float32
_BAD_IDS = ["dtype", "2d", "strided", "alias", "mixed", "list", "block", "bool", "i8", "u64-out"]


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda m, o: m.vecadd(np.ones(8), np.ones(8, f32), o), TypeError, "float64"),
        (lambda m, o: m.vecadd(np.ones((2, 4), f32), np.ones(8, f32), o), ValueError, "1-D"),
        (lambda m, o: m.vecadd(np.ones(16, f32)[::2], np.ones(8, f32), o), ValueError, "strided"),
        (lambda m, o: m.vecadd(o, np.ones(8, f32), o), ValueError, "overlapping 'a'"),
        (lambda m, o: m.vecadd(np.ones(8, f32), cuda(8), o), TypeError, "host memory"),
        (lambda m, o: m.vecadd(np.ones(8, f32), [1.0] * 8, o), TypeError, "'b'"),
        (lambda m, o: m.vecadd[1, 2048](o.copy(), o.copy(), o), ValueError, "'block'"),
        (lambda m, o: m.echo(*[0] * 12, 2, o.view(np.uint64)), TypeError, "'s_bool'"),
        (lambda m, o: m.echo(200, *[0] * 11, True, o.view(np.uint64)), ValueError, "'s_i8'"),
        (lambda m, o: m.echo(*[0] * 12, True, o), TypeError, "uint64 array"),
    ],
    ids=_BAD_IDS,
)
def test_bad_numpy_inputs_are_refused_before_the_emulator_runs(
    mod: pyoxide.Module, call: object, error: type[Exception], fragment: str
) -> None:
    out = np.full(8, np.nan, f32)
    with pytest.raises(pyoxide.ArgumentError) as info:
        call(mod, out)  # type: ignore[operator]
    assert isinstance(info.value, error) and fragment in str(info.value)
    assert np.isnan(out).all()  # nothing ran


def test_a_read_only_output_is_refused(mod: pyoxide.Module) -> None:
    out = np.full(8, np.nan, f32)
    out.flags.writeable = False
    with pytest.raises(pyoxide.ArgumentValueError, match="read-only"):
        mod.vecadd(np.ones(8, f32), np.ones(8, f32), out)


# --- what a manifest may make pyoxide open ------------------------------------------------


@pytest.mark.parametrize("where", ["absolute", "parent", "inside"])
def test_a_library_the_manifest_did_not_build_is_never_opened(tmp_path: Path, where: str) -> None:
    """Issue 27.8: an absolute or ../ emulator path was loaded at the first launch, and its
    constructor ran before the descriptor check. Now paths must stay in the manifest's
    folder, and the descriptors are read from the library's bytes before dlopen."""
    marker = tmp_path / "constructor-ran"
    outside = planted_library(tmp_path / "elsewhere", marker)
    crate_dir = tmp_path / "crate"
    path = write_emu_manifest(crate_dir)
    m = json.loads(path.read_text())
    digest = hashlib.sha256(outside.read_bytes()).hexdigest()
    if where == "inside":
        shutil.copy2(outside, crate_dir / outside.name)
    named = {"absolute": str(outside), "parent": "../elsewhere/" + outside.name}
    m["emulator"] = {"path": named.get(where, outside.name), "sha256": digest}
    path.write_text(json.dumps(m))
    with pytest.raises(pyoxide.LoadError) as info:
        pyoxide.load(path).vecadd(*(np.zeros(4, np.float32) for _ in range(3)))
    assert not marker.exists()  # its constructor never ran
    expected = "no kernel descriptors" if where == "inside" else "inside the manifest's folder"
    assert expected in str(info.value)
    ctypes.CDLL(str(outside))  # the library does run its constructor when opened
    assert marker.read_text() == "ran"
