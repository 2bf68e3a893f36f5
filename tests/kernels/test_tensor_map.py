"""Tensor maps by value (`map: TmaDescriptor`, kind `tensor_map`), with the kernels of
tests/fixtures/cluster_tma_kernels (sm_90a): `box_by_value` TMA-loads a box of a 2-D
array through the map as it lies in parameter space, checked against NumPy on the GPU;
`map_bytes` reads the map's bytes, on every backend (the emulator passes the 128 bytes
through). The launchers refuse what is not a map before launch."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib
from helpers.bundled import cluster_tma_kernels_manifest

import pyoxide
from pyoxide.errors import ArgumentTypeError, ArgumentValueError, EmulatorError

ROWS, COLS, BLOCK = 8, 32, 256  # the fixture's box (TILE_ROWS x TILE_COLS f32)


def test_the_map_crosses_as_its_bytes(cluster_tma: pyoxide.Module, lib: ArrayLib) -> None:
    raw = np.random.default_rng().integers(0, 256, 128, dtype=np.uint8)
    for given in (raw.tobytes(), raw):
        out = lib.poisoned(128, np.uint8)
        cluster_tma.map_bytes[1, 128](given, out)
        np.testing.assert_array_equal(lib.to_numpy(out), raw)


def test_a_map_of_a_gpu_array_is_what_the_kernel_reads(
    cluster_tma: pyoxide.Module, lib: ArrayLib
) -> None:
    if not lib.on_gpu:
        with pytest.raises(ArgumentTypeError) as e:
            pyoxide.tma.tensor_map(np.zeros((ROWS, COLS), np.float32), box=(ROWS, COLS))
        assert "host memory" in e.value.got and e.value.param == "array", str(e.value)
        return
    src = lib.asarray(np.zeros((2 * ROWS, COLS), np.float32))
    m = pyoxide.tma.tensor_map(src, box=(ROWS, COLS))
    assert m.array is src and len(m.raw) == 128 and m.shape == (2 * ROWS, COLS)
    out = lib.poisoned(128, np.uint8)
    cluster_tma.map_bytes[1, 128](m, out)
    np.testing.assert_array_equal(lib.to_numpy(out), np.frombuffer(m.raw, np.uint8))


@pytest.mark.parametrize(("row0", "col0"), [(0, 0), (8, 0), (20, 0), (3, 16)])
def test_box_by_value_loads_the_box(
    cluster_tma: pyoxide.Module, lib: ArrayLib, row0: int, col0: int
) -> None:
    rng = np.random.default_rng()
    host = rng.standard_normal((3 * ROWS, COLS)).astype(np.float32)  # 24 rows
    src = lib.asarray(host)
    out = lib.poisoned(BLOCK, np.float32)
    if not lib.on_gpu:
        with pytest.raises(EmulatorError, match="is not emulated"):
            cluster_tma.box_by_value[1, BLOCK](bytes(128), row0, col0, out)
        return
    m = pyoxide.tma.tensor_map(src, box=(ROWS, COLS))
    want = np.zeros((ROWS, COLS), np.float32)  # beyond the array: zeros
    part = host[row0 : row0 + ROWS, col0 : col0 + COLS]
    want[: part.shape[0], : part.shape[1]] = part
    for _ in range(2):  # a first launch, then one of a kernel already loaded
        out = lib.poisoned(BLOCK, np.float32)
        cluster_tma.box_by_value[1, BLOCK](m, row0, col0, out)
        got = lib.to_numpy(out).reshape(ROWS, COLS)
        assert (got != -1.0).any(), "the box never arrived (the barrier timed out)"
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("given", "cls", "got"),
    [
        (7, ArgumentTypeError, "int"),
        (np.zeros(128, np.float32), ArgumentTypeError, "ndarray"),
        (bytes(100), ArgumentValueError, "100 bytes"),
        (np.zeros(129, np.uint8), ArgumentValueError, "129 bytes"),
    ],
    ids=["int", "float32-array", "short-bytes", "long-array"],
)
def test_what_is_not_a_map_is_refused_before_launch(
    cluster_tma: pyoxide.Module, lib: ArrayLib, given: object, cls: type, got: str
) -> None:
    out = lib.poisoned(128, np.uint8)
    with pytest.raises(cls) as e:
        cluster_tma.map_bytes[1, 128](given, out)
    err = e.value
    assert (err.kernel, err.param) == ("map_bytes", "map"), str(err)
    assert "tensor map" in err.expected and got in err.got, str(err)
    assert "pyoxide.tma.tensor_map" in err.fix, str(err)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls and str(again) == str(err)
    assert (lib.to_numpy(out) == lib.to_numpy(lib.poisoned(128, np.uint8))).all()


def test_tensor_map_refuses_what_the_driver_would(lib: ArrayLib) -> None:
    if not lib.on_gpu:
        with pytest.raises(ArgumentTypeError, match="not a GPU array"):
            pyoxide.tma.tensor_map([[1.0] * 4] * 4, box=(4, 4))
        return
    a = lib.asarray(np.zeros((16, 32), np.float32))
    cases = [
        (lib.asarray(np.zeros((2, 16, 32), np.float32)), (8, 32), None, "2-D"),
        (lib.asarray(np.zeros((16, 3), np.float32)), (8, 3), None, "16 bytes"),
        (a, (8, 300), None, "1 to 256"),
        (a, (8, 32), 48, "None, 32, 64 or 128"),
        (a, (8, 32), 64, "swizzle span"),
    ]
    for array, box, swizzle, expected in cases:
        with pytest.raises(ArgumentValueError, match=re.escape(expected)):
            pyoxide.tma.tensor_map(array, box=box, swizzle=swizzle)


def test_the_stub_types_the_map(cluster_tma: pyoxide.Module) -> None:
    stub = pyoxide.render_stub(cluster_tma.manifest)
    assert "from pyoxide.tma import TensorMap" in stub
    assert "map: TensorMap | bytes, out: Array, /" in stub, stub


def test_the_ptx_keeps_the_map_in_parameter_space() -> None:
    """`.param .align 64 .b8 …[128]`, its address by `cvta.param`, no local copy."""
    ptx = (cluster_tma_kernels_manifest().parent / "cluster_tma_kernels.sm_90a.ptx").read_text()
    body = ptx.split(".entry box_by_value(", 1)[1].split("\n}\n", 1)[0]
    assert ".param .align 64 .b8 box_by_value_param_0[128]" in body
    assert re.search(r"mov\.b64\s+(%rd\d+), box_by_value_param_0;", body), body[:600]
    assert "cvta.param.u64" in body
    assert ".local" not in body and "__local_depot" not in body
    load = re.search(r"cp\.async\.bulk\.tensor\.2d\S* \[%r\d+\], \[(%rd\d+),", body)
    assert load is not None, "no TMA load"
    assert re.search(rf"cvta\.param\.u64\s+{re.escape(load.group(1))},", body)
