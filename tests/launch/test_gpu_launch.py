"""The Python launch path on a real GPU, through CuPy, against hand-written PTX.

The PTX (tests/fixtures/oxide_fixtures.ptx) follows the kernel ABI, so these tests
check argument packing, grid sizing, arch selection, dtype dispatch, streams and
trap reporting without needing the Rust toolchain. Every result is compared with
a float64 NumPy reference on fresh random inputs, written into NaN-poisoned outputs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers.fixtures import write_manifest
from helpers.probes import requires_gpu

import pyoxide
from pyoxide.errors import ArgumentValueError

pytestmark = [pytest.mark.gpu, requires_gpu("launches kernels through CuPy")]

SIZES = [1, 255, 256, 257, 1000, 4099, 2**24]


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return pyoxide.load(write_manifest(tmp_path_factory.mktemp("fixture")))


@pytest.fixture
def rng():
    return np.random.default_rng()


def poisoned(cp, n, dtype):
    return cp.full(n, np.nan if np.dtype(dtype).kind == "f" else 0xDEAD, dtype=dtype)


def assert_close(got, want, rtol):
    got = np.asarray(got, dtype=np.float64)
    assert not np.isnan(got).any(), "output still holds NaN poison"
    err = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30)) if want.size else 0.0
    assert err <= rtol, f"max relative error {err:.3e} > {rtol:.1e}"


@pytest.mark.parametrize("n", SIZES)
def test_vecadd(cp, mod, rng, n):
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    c = poisoned(cp, n, np.float32)
    mod.vecadd(cp.asarray(a), cp.asarray(b), c)
    assert_close(c.get(), a.astype(np.float64) + b, 2**-24)


def test_arrays_met_again_launch_as_they_are_now(cp, mod, rng):
    """The compiled launcher remembers what it read from a CuPy array
    (crates/pyoxide-native/src/facts.rs): the same arrays again, one reshaped in place
    and back, and new arrays at addresses that come by again all launch as they are."""
    x, y = (cp.asarray(rng.standard_normal(4096, dtype=np.float32)) for _ in range(2))
    out = poisoned(cp, 4096, np.float32)

    def check(x, y, out):
        mod.vecadd(x, y, out)
        assert_close(out.get(), x.get().astype(np.float64) + y.get(), 2**-24)
        out.fill(np.nan)

    for _ in range(3):
        y += 1
        check(x, y, out)
    x.shape = (64, 64)
    with pytest.raises(ArgumentValueError, match="expected a 1-D array"):
        mod.vecadd(x, y, out)
    x.shape = (4096,)
    check(x, y, out)
    for n in (100, 5000, 100, 5000, 1):
        check(*(cp.asarray(rng.standard_normal(n, dtype=np.float32)) for _ in range(3)))


@pytest.mark.parametrize("n", SIZES)
def test_saxpy(cp, mod, rng, n):
    a = np.float32(rng.uniform(-4, 4))
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = poisoned(cp, n, np.float32)
    mod.saxpy(float(a), cp.asarray(x), cp.asarray(y), out)
    want = np.float64(a) * x.astype(np.float64) + y
    ok = np.abs(want) > 1e-3  # away from cancellation, fma's one rounding is ≤ 2^-24
    assert_close(out.get()[ok], want[ok], 2**-23)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 257, 100_003])
def test_generic_scale_dispatches_by_dtype(cp, mod, rng, dtype, n):
    x = rng.standard_normal(n).astype(dtype)
    out = poisoned(cp, n, dtype)
    mod.scale(1.5, cp.asarray(x), out)
    rtol = 2**-24 if dtype == np.float32 else 2**-53
    assert_close(out.get(), 1.5 * x.astype(np.float64), rtol)


def test_every_scalar_type_reaches_the_kernel_intact(cp, mod):
    out = poisoned(cp, 300, np.float64)
    args = (-7, 65535, True, -(2**40), 0.25, 2**32 - 1, 2**50)
    mod.mix(*args, out)
    want = sum(float(v) for v in args) + np.arange(300, dtype=np.float64)
    np.testing.assert_array_equal(out.get(), want)


def test_records_of_integers_reach_the_kernel_intact_on_both_paths(cp, mod):
    """strided's `[u64; 3]`, `[i32; 2]` and `[u8; 3]` by value: the general path (CuPy's
    kernelParams, placed by the driver) and the compiled launcher (one packed buffer at
    the records' alignment) give the kernel the same values."""
    a, b, c = (3, 1 << 40, 5), (-(2**31), 7), (255, 0, 9)
    want = 3 * np.arange(300) + (1 << 40) + 5 - 2**31 + 7 + 255 + 9 + 1
    for _ in range(2):  # the general path, then the launcher it built
        out = poisoned(cp, 300, np.float32)
        mod.strided(a, list(b), c, True, out)
        np.testing.assert_array_equal(out.get(), want.astype(np.float32))
    assert len(mod.strided.launchers) == 1


def test_launch_bounds_pick_the_block(cp, mod):
    out = poisoned(cp, 1000, np.uint32)
    mod.iota(out)
    np.testing.assert_array_equal(out.get(), np.arange(1000, dtype=np.uint32))


def test_pointer_and_mut_slice(cp, mod, rng):
    x = cp.asarray(rng.standard_normal(777, dtype=np.float32))
    y0 = rng.standard_normal(777, dtype=np.float32)
    y = cp.asarray(y0)
    mod.accumulate(x, y)
    assert_close(y.get(), x.get().astype(np.float64) + y0, 2**-24)


def test_explicit_grid_forms(cp, mod, rng):
    x = rng.standard_normal(5000, dtype=np.float32)
    counter = cp.zeros(1, dtype=np.uint32)
    mod.count_positive[(5000 + 127) // 128, 128](cp.asarray(x), counter)
    assert int(counter.get()[0]) == int((x > 0).sum())
    counter[:] = 0
    stream = cp.cuda.Stream(non_blocking=True)
    mod.count_positive.launch(cp.asarray(x), counter, grid=40, block=128, stream=stream)
    stream.synchronize()
    assert int(counter.get()[0]) == int((x > 0).sum())


def test_explicit_stream_orders_work(cp, mod, rng):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = cp.asarray(rng.standard_normal(1 << 20, dtype=np.float32))
        out = poisoned(cp, 1 << 20, np.float32)
    mod.scale_f32.launch(3.0, x, out, stream=stream)
    stream.synchronize()
    assert_close(out.get(), 3.0 * x.get().astype(np.float64), 2**-24)


def test_bare_cuda_array_interface_object_asks_the_driver_for_its_device(cp, mod):
    class Bare:
        def __init__(self, a):
            self.a = a
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    x = cp.arange(10, dtype=cp.float32)
    out = poisoned(cp, 10, np.float32)
    mod.scale_f32(2.0, Bare(x), Bare(out))
    np.testing.assert_array_equal(out.get(), 2 * np.arange(10, dtype=np.float32))


def test_host_memory_posing_as_device_memory_is_refused(cp, mod):
    host = np.ones(8, dtype=np.float32)

    class Liar:
        __cuda_array_interface__ = {
            "shape": (8,),
            "typestr": "<f4",
            "data": (host.ctypes.data, False),
            "strides": None,
            "version": 3,
        }

    with pytest.raises(pyoxide.ArgumentValueError, match="not device memory"):
        mod.scale_f32(2.0, Liar(), cp.zeros(8, dtype=cp.float32))


def test_torch_tensors(mod, rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: torch sees no CUDA device")
    for n in (1, 257, 4099, 2**24):
        x = torch.randn(n, device="cuda", dtype=torch.float32)
        y = torch.randn(n, device="cuda", dtype=torch.float32)
        out = torch.full((n,), float("nan"), device="cuda")
        mod.saxpy(0.5, x, y, out)
        want = 0.5 * x.double().cpu().numpy() + y.double().cpu().numpy()
        ok = np.abs(want) > 1e-3
        assert_close(out.cpu().numpy()[ok], want[ok], 2**-23)
    x64 = torch.randn(1000, device="cuda", dtype=torch.float64)
    out64 = torch.full((1000,), float("nan"), device="cuda", dtype=torch.float64)
    mod.scale(2.0, x64, out64)
    assert_close(out64.cpu().numpy(), 2.0 * x64.cpu().numpy(), 2**-53)
    with pytest.raises(pyoxide.ArgumentValueError, match="contiguous"):
        mod.scale(2.0, x64[::2], out64[:500])


def test_dlpack_only_producer(cp, mod):
    torch = pytest.importorskip("torch")

    class OnlyDLPack:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, *a, **k):
            return self.t.__dlpack__(*a, **k)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    t = torch.arange(64, device="cuda", dtype=torch.float32)
    out = torch.full((64,), float("nan"), device="cuda")
    mod.scale_f32(2.0, OnlyDLPack(t), OnlyDLPack(out))
    np.testing.assert_array_equal(out.cpu().numpy(), 2 * np.arange(64, dtype=np.float32))


def test_no_ptx_for_this_device(tmp_path, cp):
    m = pyoxide.load(write_manifest(tmp_path, archs=("sm_120",), ptx_version="8.7"))
    with pytest.raises(pyoxide.NoCompatibleArchError, match="sm_120"):
        m.scale_f32(1.0, cp.zeros(4, cp.float32), cp.zeros(4, cp.float32))


def test_driver_too_old_for_the_ptx(tmp_path, cp):
    m = pyoxide.load(write_manifest(tmp_path, archs=("sm_80",), ptx_version="99.0"))
    with pytest.raises(pyoxide.NoCompatibleArchError, match="driver is too old"):
        m.scale_f32(1.0, cp.zeros(4, cp.float32), cp.zeros(4, cp.float32))


def test_changed_ptx_is_refused(tmp_path, cp):
    path = write_manifest(tmp_path, archs=("sm_80",))
    ptx = tmp_path / "oxide_fixtures.sm_80.ptx"
    ptx.write_text(ptx.read_text() + "\n// edited\n")
    m = pyoxide.load(path)
    with pytest.raises(pyoxide.ArtifactError, match="changed since"):
        m.scale_f32(1.0, cp.zeros(4, cp.float32), cp.zeros(4, cp.float32))


_TRAP_SCRIPT = """
import sys, time, cupy as cp, pyoxide
m = pyoxide.load(sys.argv[1])
a, b, c = cp.zeros(1000, cp.float32), cp.zeros(10, cp.float32), cp.zeros(1000, cp.float32)
try:
    m.vecadd(a, b, c)  # b is too short: the kernel's bounds check traps
    time.sleep(2)  # without PYOXIDE_SYNC the sticky error surfaces at the next launch
    m.vecadd(a[:4], a[4:8], c[:4])
except pyoxide.KernelTrapError as e:
    print("TRAP", e.kernel, "|", e)
except Exception as e:
    print("OTHER", type(e).__name__, e)
"""


@pytest.mark.parametrize("sync", ["0", "1"])
def test_a_trap_names_the_kernel(tmp_path, sync):
    # A trap kills the CUDA context, so it runs in a child process.
    path = write_manifest(tmp_path)
    env = {**__import__("os").environ, "PYOXIDE_SYNC": sync}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_TRAP_SCRIPT), str(path)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert "TRAP vecadd" in proc.stdout, proc.stdout + proc.stderr
    assert "trapped on the GPU" in proc.stdout
