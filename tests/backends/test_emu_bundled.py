"""What only the CPU emulator does with the bundled kernels (the kernel suite in
tests/kernels runs their results on every backend): its library is named by the
manifest, and a kernel's trap comes back as an EmulatorError naming kernel, block and
thread (on a GPU it would end the CUDA context); and a kernel with device statics
(reduce_sum_f32's accumulator and ticket) gives each of several Python threads its own
sum, because the emulator runs one library's launches one at a time."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from helpers.bundled import emu_kernels_manifest

import pyoxide


@pytest.fixture(scope="module")
def kernels() -> pyoxide.Module:
    return pyoxide.load(emu_kernels_manifest())


def test_the_manifest_names_an_emulator(kernels: pyoxide.Module) -> None:
    assert kernels.manifest.emulator is not None
    assert kernels.manifest.emulator[0].is_file()


def test_scan_without_its_shared_memory_traps_with_its_message(
    kernels: pyoxide.Module,
) -> None:
    """The scan asks for 4 bytes of dynamic shared memory per warp and traps without."""
    x = np.ones(64, np.uint32)
    with pytest.raises(pyoxide.EmulatorError) as info:
        kernels.scan_blocks_u32[1, 64, 0](x, np.zeros(64, np.uint32))
    e = info.value
    assert e.kernel == "scan_blocks_u32" and e.block == (0, 0, 0) and e.thread is not None
    assert "trapped in block (0, 0, 0)" in str(e)


def test_a_misaligned_view_is_refused_with_the_fix(kernels: pyoxide.Module) -> None:
    """The emulator would read it fine; a GPU faults on the misaligned load and loses the
    CUDA context, so code tested on NumPy arrays must not pass it."""
    a = np.frombuffer(bytearray(4001), np.float32, 1000, 1)
    b, c = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    with pytest.raises(pyoxide.ArgumentValueError) as info:
        kernels.vecadd(a, b, c)
    e = info.value
    assert e.kernel == "vecadd" and e.param == "a"
    assert "aligned to its 4-byte elements" in str(e) and "x.copy()" in e.fix
    kernels.vecadd(a.copy(), b, c)  # the fix it names works


@pytest.mark.parametrize("modules", ["one module", "a module per thread"])
def test_threads_launching_a_kernel_with_device_statics_get_their_own_sums(
    kernels: pyoxide.Module, modules: str
) -> None:
    """reduce_sum_f32 adds every block's sum to a static accumulator and takes a static
    ticket; launches that overlapped would mix sums and tickets (and leave the statics
    dirty for later launches). Two Modules of one manifest open one library, whose statics
    they share. Integers below 2**24 make every f32 sum exact."""
    workers, rounds = 4, 12
    start = threading.Barrier(workers, timeout=60)  # a thread that raised breaks it
    wrong: list[tuple[int, int, float, float]] = []

    def work(seed: int) -> None:
        mod = kernels if modules == "one module" else pyoxide.load(kernels.manifest.path)
        rng = np.random.default_rng(seed)
        for r in range(rounds):
            x = rng.integers(-8, 9, int(rng.integers(1, 40_000))).astype(np.float32)
            out = np.full(1, np.nan, np.float32)
            start.wait()  # every thread launches at the same moment
            mod.reduce_sum_f32(x, out)
            if out[0] != x.sum(dtype=np.float64):
                wrong.append((seed, r, float(out[0]), float(x.sum(dtype=np.float64))))

    with ThreadPoolExecutor(workers) as pool:
        for done in [pool.submit(work, seed) for seed in range(workers)]:
            done.result()  # re-raises a thread's error
    assert wrong == []
