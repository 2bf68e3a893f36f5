"""The CuPy backend's logic, on a fake ``cupy`` (helpers/fake_cupy.py): arch choice,
driver checks, argument ABI, streams, error mapping. The real thing runs in
test_gpu_launch.py on a machine with a GPU."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import fake_cupy
from helpers.fakes import cuda
from helpers.fixtures import write_manifest

import pyoxide
from pyoxide._manifest.artifacts import PtxArtifact
from pyoxide.backends import cupy as cupy_backend
from pyoxide.backends.cupy import ptx_isa_min_driver, select_ptx


def arts(*specs: tuple[str, str]) -> list[PtxArtifact]:
    return [PtxArtifact(arch, Path(f"/x/{arch}.ptx"), "0", isa) for arch, isa in specs]


@pytest.mark.parametrize(
    ("isa", "driver"),
    [
        ("6.0", 9000),
        ("6.4", 10010),
        ("7.0", 11000),
        ("7.8", 11080),
        ("8.0", 12000),
        ("8.5", 12050),
        ("8.6", 12070),
        ("8.7", 12080),
        ("8.8", 12090),
        ("9.0", 13000),
    ],
)
def test_ptx_isa_to_driver(isa: str, driver: int) -> None:
    assert ptx_isa_min_driver(isa) == driver


def test_select_ptx_takes_the_best_arch_the_device_runs() -> None:
    a = arts(("sm_80", "7.0"), ("sm_90", "7.8"), ("sm_100", "8.6"))
    assert select_ptx(a, "90", 12080).arch == "sm_90"
    assert select_ptx(a, "89", 12080).arch == "sm_80"
    assert select_ptx(a, "120", 12080).arch == "sm_100"


def test_arch_specific_and_family_ptx() -> None:
    a = arts(("sm_80", "7.0"), ("sm_90a", "8.0"), ("sm_100f", "8.8"))
    assert select_ptx(a, "90", 12080).arch == "sm_90a"
    assert select_ptx(a, "100", 12090).arch == "sm_100f"
    assert select_ptx(a, "103", 12090).arch == "sm_100f"
    assert select_ptx(a, "120", 12090).arch == "sm_80"  # neither sm_90a nor the sm_100 family


def test_no_arch_fits() -> None:
    with pytest.raises(pyoxide.NoCompatibleArchError, match=r"sm_75.*sm_80, sm_90.*--arch sm_75"):
        select_ptx(arts(("sm_80", "7.0"), ("sm_90", "7.8")), "75", 12080)


def test_old_driver_falls_back_then_refuses() -> None:
    a = arts(("sm_80", "7.0"), ("sm_90", "8.7"))
    assert select_ptx(a, "90", 12020).arch == "sm_80"
    with pytest.raises(pyoxide.NoCompatibleArchError, match=r"driver is too old.*CUDA 12.8"):
        select_ptx(arts(("sm_90", "8.7")), "90", 12020)


@pytest.fixture
def fake() -> Iterator[fake_cupy.FakeCuda]:
    f = fake_cupy.FakeCuda()
    with fake_cupy.installed(f):
        yield f


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


def test_devices_name_each_device_and_its_compute_capability(fake: fake_cupy.FakeCuda) -> None:
    """``devices()`` (``pyoxide doctor``, bench reports): the name as device_identity
    reads it, and the compute capability as "major.minor" (sm_100's as "10.0")."""
    fake.device_count, fake.compute_capability = 2, "100"
    from pyoxide import backends

    assert backends.gpu().devices() == [
        {"id": i, "name": "Fake GPU", "compute_capability": "10.0"} for i in range(2)
    ]


def test_launch_passes_the_abi(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    x, y, out = cuda(1000), cuda(1000), cuda(1000)
    mod.saxpy(2.5, x, y, out)
    (launch,) = fake.launches
    assert launch["name"] == "saxpy"
    assert launch["grid"] == (4, 1, 1) and launch["block"] == (256, 1, 1)
    assert launch["stream"] is None and launch["shared_mem"] == 0
    args = launch["args"]
    assert [type(a) for a in args] == [np.float32] + [np.uint64] * 6
    assert list(map(int, args[1:])) == [x.ptr, 1000, y.ptr, 1000, out.ptr, 1000]
    assert fake.loads == [(0, "sm_90")]


def test_scalar_types_at_the_abi(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    mod.mix(-3, 7, True, -(2**40), 0.5, 2**32 - 1, 2**64 - 1, cuda(5, "<f8"))
    args = fake.launches[0]["args"]
    types = [np.int8, np.uint16, np.uint8, np.int64, np.float64, np.uint32, np.uint64]
    assert [type(a) for a in args[:7]] == types
    assert [int(a) if i != 4 else float(a) for i, a in enumerate(args[:7])] == [
        -3, 7, 1, -(2**40), 0.5, 2**32 - 1, 2**64 - 1,
    ]  # fmt: skip


def test_pointer_params_take_one_word(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    x, y = cuda(300), cuda(300)
    mod.accumulate(x, y)
    assert list(map(int, fake.launches[0]["args"])) == [x.ptr, y.ptr, 300]
    mod.count_positive[3, 128](x, 0x1234)
    assert list(map(int, fake.launches[1]["args"])) == [x.ptr, 300, 0x1234]


def test_module_loads_once_per_device(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    fake.device_count = 2
    for _ in range(3):
        mod.scale_f32(1.0, cuda(8), cuda(8))
    fake.current = 1
    mod.scale_f64(1.0, cuda(8, "<f8", device=1), cuda(8, "<f8", device=1))
    assert fake.loads == [(0, "sm_90"), (1, "sm_90")]
    assert [launch["device"] for launch in fake.launches] == [0, 0, 0, 1]


def test_older_device_gets_the_older_ptx(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    fake.compute_capability = "86"
    mod.iota(cuda(10, "<u4"))
    assert fake.loads == [(0, "sm_80")]
    assert fake.launches[0]["block"] == (128, 1, 1)  # launch bounds


def test_zero_length_output_launches_nothing(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    mod.scale_f32(1.0, cuda(0, ptr=0), cuda(0, ptr=0))
    assert fake.launches == [] and fake.loads == []


def test_streams(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    import cupy

    s = cupy.cuda.Stream(ptr=0xABC)
    mod.scale_f32.launch(1.0, cuda(8), cuda(8), stream=s)
    assert fake.launches[-1]["stream"] is s

    class TorchStream:
        cuda_stream = 0xDEF

    mod.scale_f32.launch(1.0, cuda(8), cuda(8), stream=TorchStream())
    assert fake.launches[-1]["stream"].ptr == 0xDEF
    mod.scale_f32[1, 32, 0, 0x777](1.0, cuda(8), cuda(8))
    assert fake.launches[-1]["stream"].ptr == 0x777
    n = len(fake.launches)
    with pytest.raises(pyoxide.ArgumentTypeError, match="'stream'"):
        mod.scale_f32.launch(1.0, cuda(8), cuda(8), stream="default")
    assert len(fake.launches) == n


def test_producer_streams_are_waited_on(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    mod.scale_f32(1.0, cuda(8, stream=0x999), cuda(8, stream=1))
    assert fake.waits == [0x999]  # 1 is the legacy default stream: nothing to wait for


def test_large_dynamic_shared_memory_raises_the_limit(
    fake: fake_cupy.FakeCuda, mod: pyoxide.Module
) -> None:
    mod.scale_f32.launch(1.0, cuda(8), cuda(8), shared_mem=100_000)
    assert fake.attributes and fake.attributes[0][1:] == (8, 100_000)
    assert fake.launches[0]["shared_mem"] == 100_000


def test_bare_cai_objects_ask_the_driver(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    dev = cuda(8, device=None, device_style="none")
    host = cuda(8, device=None, device_style="none")
    fake.pointers = {dev.ptr: (2, 0), host.ptr: (1, 0)}
    mod.scale_f32(1.0, dev, cuda(8))
    with pytest.raises(pyoxide.ArgumentValueError, match="not device memory"):
        mod.scale_f32(1.0, host, cuda(8))
    unknown = cuda(8, device=None, device_style="none")
    with pytest.raises(pyoxide.ArgumentValueError, match="not device memory"):
        mod.scale_f32(1.0, unknown, cuda(8))
    assert len(fake.launches) == 1


def test_trap_names_the_kernel(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    mod.saxpy(1.0, cuda(8), cuda(8), cuda(8))
    fake.launch_error = "CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction was encountered"
    with pytest.raises(pyoxide.KernelTrapError) as info:
        mod.vecadd(cuda(8), cuda(8), cuda(8))
    assert info.value.kernel == "vecadd"
    assert "'vecadd' or an earlier launch (the last one was 'saxpy')" in str(info.value)
    assert "PYOXIDE_SYNC=1" in str(info.value)


def test_sync_knob_attributes_a_trap_to_one_launch(
    fake: fake_cupy.FakeCuda, mod: pyoxide.Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYOXIDE_SYNC", "1")
    fake.sync_error = "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"
    with pytest.raises(pyoxide.KernelTrapError, match=r"kernel 'vecadd' trapped") as info:
        mod.vecadd(cuda(8), cuda(8), cuda(8))
    assert "earlier launch" not in str(info.value) and fake.syncs == 1


def test_other_launch_failures(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    fake.launch_error = "CUDA_ERROR_INVALID_VALUE: invalid argument"
    with pytest.raises(pyoxide.LaunchError, match="launching 'vecadd' failed") as info:
        mod.vecadd(cuda(8), cuda(8), cuda(8))
    assert not isinstance(info.value, pyoxide.KernelTrapError)


def test_driver_refusing_the_ptx(fake: fake_cupy.FakeCuda, mod: pyoxide.Module) -> None:
    fake.load_error = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an "
    with pytest.raises(pyoxide.NoCompatibleArchError, match="update the NVIDIA driver"):
        mod.vecadd(cuda(8), cuda(8), cuda(8))
    fake.load_error = "CUDA_ERROR_OUT_OF_MEMORY: out of memory"
    with pytest.raises(pyoxide.LoadError, match="could not load"):
        mod.vecadd(cuda(8), cuda(8), cuda(8))


def test_entry_missing_from_the_ptx(fake: fake_cupy.FakeCuda, tmp_path: Path) -> None:
    from helpers.fixtures import KERNELS, kernel, param

    extra = kernel("ghost", [param("out", "disjoint_slice", "f32")])
    m = pyoxide.load(write_manifest(tmp_path, kernels=[*KERNELS, extra]))
    with pytest.raises(pyoxide.LoadError, match="no entry 'ghost'"):
        m.ghost(cuda(8))


def test_device_and_driver_checks_on_load(fake: fake_cupy.FakeCuda, tmp_path: Path) -> None:
    fake.compute_capability = "75"
    m = pyoxide.load(write_manifest(tmp_path))
    with pytest.raises(pyoxide.NoCompatibleArchError, match="sm_75"):
        m.iota(cuda(4, "<u4"))
    fake.compute_capability = "90"
    fake.driver_version = 11020  # takes sm_80's ISA 7.0, not sm_90's 7.8
    m.iota(cuda(4, "<u4"))
    assert fake.loads == [(0, "sm_80")]
    m2 = pyoxide.load(write_manifest(tmp_path / "b"))
    fake.driver_version = 10020
    with pytest.raises(pyoxide.NoCompatibleArchError, match="driver is too old"):
        m2.iota(cuda(4, "<u4"))


def test_cupy_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """(Through a launch, in a fresh process: tests/test_import.py.)"""
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(pyoxide.BackendUnavailableError, match=r"pyoxide\[cuda12\]"):
        cupy_backend.CupyBackend()


def test_backend_module_imports_without_cupy() -> None:
    assert cupy_backend.CupyBackend.name == "cupy"


def test_constants_are_written_where_the_module_loads(fake: fake_cupy.FakeCuda) -> None:
    # `#[constant]` statics (pyoxide/_manifest/constants.py): a value set before the first launch
    # is written when the module loads on the device, one set later at once.
    from helpers.bundled import cuda_oxide_ports_manifest

    ports = pyoxide.load(cuda_oxide_ports_manifest())
    ports.set_scale(2.0)
    assert fake.global_writes == []  # nothing loaded on the GPU yet
    ports.multiply(cuda(8))
    assert fake.global_writes == [("SCALE", np.float32(2.0).tobytes())]
    ports.set_coeffs([1.0, 2.0, 3.0, 4.0])
    assert fake.global_writes[1] == ("COEFFS", np.arange(1, 5, dtype=np.float32).tobytes())


def test_the_occupancy_query_passes_cuda_h_launch_config() -> None:
    """``cuOccupancyMaxActiveClusters`` reads a ``CUlaunchConfig`` (cuda.h): seven
    unsigned ints (grid, block, shared memory), the stream, the attributes' pointer and
    their count, at C's offsets on a 64-bit host; the query leaves the attributes out, so
    the kernel's compiled cluster size is the one counted."""
    from pyoxide.backends.cupy._occupancy import _LaunchConfig

    config = _LaunchConfig(4, 1, 1, 384, 1, 1, 230_560, None, None, 0)
    offsets = {name: getattr(_LaunchConfig, name).offset for name, _ in _LaunchConfig._fields_}
    assert offsets == {
        "grid_x": 0, "grid_y": 4, "grid_z": 8, "block_x": 12, "block_y": 16, "block_z": 20,
        "shared_mem_bytes": 24, "stream": 32, "attrs": 40, "num_attrs": 48,
    }  # fmt: skip
    assert ctypes.sizeof(config) == 56
    assert (config.grid_x, config.block_x, config.shared_mem_bytes) == (4, 384, 230_560)
    assert (config.attrs, config.num_attrs) == (None, 0)
