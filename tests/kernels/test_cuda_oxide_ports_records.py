"""cuda-oxide's examples whose kernels take non-scalar types (pyoxide/_manifest/records.py):
structs by value, slices of structs and of arrays `[T; N]`, ported by renaming the
crate and removing host code (crates/oxide-device/tests/fixtures/cuda_oxide_ports),
checked against NumPy on every array library (`lib`)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err

import pyoxide
from pyoxide import backends
from pyoxide.errors import ArgumentTypeError, ArgumentValueError, BackendUnavailableError

RNG = np.random.default_rng()

# cuda-oxide's `#[repr(C)] struct GridShape { counts: [u32; 3], periodic: [bool; 3] }`.
GRID_SHAPE = np.dtype([("counts", "<u4", (3,)), ("periodic", "?", (3,))], align=True)


@pytest.mark.parametrize("n", [1, 1000])
def test_slices_of_an_aligned_struct(ports: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    # `&[Quad]` / `DisjointSlice<Quad>`, Quad = #[repr(C, align(16))] struct([f32; 4]):
    # a struct known by its bytes takes rows of 16 bytes.
    x = RNG.standard_normal((n, 4)).astype(np.float32)
    out = lib.poisoned((n, 4), np.float32)
    ports.copy_quads(lib.asarray(x), out)
    np.testing.assert_array_equal(lib.to_numpy(out), x)


@pytest.mark.parametrize("n", [5, 700])
def test_struct_by_value(ports: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    shape = np.array(([4, 7, 9], [True, False, True]), dtype=GRID_SHAPE)[()]
    out = lib.poisoned(n, np.uint32)
    ports.borrowed_copy_aggregate(out, shape)
    axis = np.arange(n) % 3
    want = np.array([4, 7, 9])[axis] + 1000 * np.array([1, 0, 1])[axis]
    np.testing.assert_array_equal(lib.to_numpy(out), want)


def test_struct_by_value_from_ctypes_and_bytes(ports: pyoxide.Module, lib: ArrayLib) -> None:
    class GridShape(ctypes.Structure):
        _fields_ = [("counts", ctypes.c_uint32 * 3), ("periodic", ctypes.c_bool * 3)]

    for value in (
        GridShape((1, 2, 3), (False, True, False)),
        bytes(GridShape((1, 2, 3), (0, 1, 0))),
    ):
        out = lib.poisoned(6, np.uint32)
        ports.borrowed_copy_aggregate(out, value)
        np.testing.assert_array_equal(lib.to_numpy(out), [1, 1002, 3, 1, 1002, 3])


def test_record_layout_is_in_the_manifest(ports: pyoxide.Module) -> None:
    spec = {p.name: p for p in ports.borrowed_copy_aggregate.spec.params}
    record = spec["shape"].record
    assert spec["shape"].kind == "value" and record is not None
    assert (record.rust_type, record.size, record.align) == ("GridShape", 16, 4)
    out = {p.name: p for p in ports.math_functions.spec.params}["out"]
    assert out.type == "f32" and out.record is not None
    assert (out.record.rust_type, out.record.size, out.record.align) == ("[f32; 7]", 28, 4)


def test_wrong_record_values_are_refused(ports: pyoxide.Module) -> None:
    out = np.zeros(4, np.uint32)
    with pytest.raises(ArgumentValueError, match=r"GridShape.*16 bytes"):
        ports.borrowed_copy_aggregate(out, b"\0" * 12)
    with pytest.raises(ArgumentTypeError, match="GridShape"):
        ports.borrowed_copy_aggregate(out, {"counts": [1, 2, 3], "periodic": [0, 0, 0]})
    with pytest.raises(ArgumentValueError, match=r"\(n, 7\)"):
        ports.math_functions(
            np.zeros(3, np.float32), np.zeros(3, np.float32), np.zeros((3, 6), np.float32)
        )
    with pytest.raises(ArgumentTypeError, match=r"\[f32; 7\]"):
        ports.math_functions(np.zeros(3, np.float32), np.zeros(3, np.float32), np.zeros((3, 7)))


@pytest.mark.parametrize("n", [1, 513])
def test_array_elements_out(ports: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    # `DisjointSlice<[f32; 7]>`: one row of 7 results per thread.
    x = RNG.uniform(-0.9, 0.9, n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    out = lib.poisoned((n, 7), np.float32)
    ports.math_functions(lib.asarray(x), lib.asarray(y), out)
    d = x.astype(np.float64)
    want = np.stack(
        [
            np.sin(d),
            np.exp(d),
            np.sqrt(d + 1.25),
            np.arctan(d),
            np.arctan2(y, d),
            np.arccos(d),
            np.tan(d),
        ],
        axis=1,
    )
    assert rel_err(lib.to_numpy(out), want) < 1e-5


@pytest.mark.parametrize("n", [3, 300])
def test_nested_array_and_struct_elements(ports: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    out = lib.poisoned((n, 8), np.float32)
    ports.write_index_assign(out)
    np.testing.assert_array_equal(lib.to_numpy(out), np.tile(7.0 + np.arange(8), (n, 1)))
    out = lib.poisoned((n, 8), np.float32)
    ports.write_get_mut_if_let(out)
    np.testing.assert_array_equal(lib.to_numpy(out), np.tile(100.0 + np.arange(8), (n, 1)))
    # `DisjointSlice<[Cell; 2]>`, Cell = #[repr(C)] { lo: f32, hi: f32 }: rows of 16 bytes.
    out = lib.poisoned((n, 4), np.float32)
    ports.write_struct_field_get_mut(out)
    np.testing.assert_array_equal(lib.to_numpy(out), np.tile([1.5, 2.5, 2.5, 3.5], (n, 1)))
    # `DisjointSlice<[[f32; 2]; 2]>`, as (n, 2, 2).
    out = lib.poisoned((n, 2, 2), np.float32)
    ports.write_nested_slice_const_row_ref(out)
    want = np.empty((n, 2, 2), np.float32)
    want[:] = [[10.0, 77.0], [0.0, 99.0]]
    want[:, 1, 0] = 62.0 + np.arange(n)
    np.testing.assert_array_equal(lib.to_numpy(out), want)


@pytest.mark.parametrize(
    "name",
    ["test_unrolled_baseline", "test_closure_indexes_into_array", "test_closure_indexes_via_match"],
)
def test_slice_of_pairs(ports: pyoxide.Module, lib: ArrayLib, name: str) -> None:
    # `&[[f32; 2]]`, given as (n, 2).
    x = RNG.standard_normal((257, 2)).astype(np.float32)
    out = lib.poisoned(257, np.float32)
    ports[name](lib.asarray(x), out)
    want = (x[:, 1] + np.float32(1)) - (x[:, 0] + np.float32(1))
    np.testing.assert_array_equal(lib.to_numpy(out), want)


def test_structured_arrays_on_the_host(ports: pyoxide.Module) -> None:
    # NumPy's structured arrays carry the layout themselves (host arrays only: CuPy and
    # PyTorch have no structured dtypes).
    quad = np.dtype([("v", "<f4", (4,))], align=True)
    x = RNG.standard_normal((64, 4)).astype(np.float32)
    src = np.zeros(64, dtype=quad)
    src["v"] = x
    out = np.full(64, np.nan, dtype=np.dtype([("v", "<f4", (4,))]))
    ports.copy_quads(src, out)
    np.testing.assert_array_equal(out["v"], x)


def test_no_arrays_runs_on_the_emulator_without_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    # A call whose arguments are all scalars or records names no memory: without CuPy
    # it runs on the emulator instead of failing.
    real_get = backends.get

    def get(name: str) -> object:
        if name == "cupy":
            raise BackendUnavailableError("GPU arrays need CuPy (test)")
        return real_get(name)

    monkeypatch.setattr(backends, "get", get)
    monkeypatch.delenv("PYOXIDE_BACKEND", raising=False)
    assert backends.select("k", []) is real_get("emu")


def test_constant_memory(ports: pyoxide.Module, lib: ArrayLib) -> None:
    # `#[constant] static SCALE: ConstantMemory<f32>` and `COEFFS: ConstantMemory<[f32; 4]>`,
    # set as cuda-oxide's host sets them (`set_<name>`), before and after a launch.
    ports.set_scale(3.0)
    out = lib.poisoned(8, np.float32)
    ports.multiply(out)
    np.testing.assert_array_equal(lib.to_numpy(out), 3.0 * np.arange(8))
    ports.set_constant("SCALE", -0.5)
    ports.multiply(out)
    np.testing.assert_array_equal(lib.to_numpy(out), -0.5 * np.arange(8))
    ports.set_coeffs(np.array([2.0, 1.0, 0.0, 0.0], np.float32))
    out = lib.poisoned(1000, np.float32)
    ports.compute(out)
    np.testing.assert_array_equal(lib.to_numpy(out), 2.0 * np.arange(1000, dtype=np.float32) + 1)


def test_constant_values_are_checked(ports: pyoxide.Module) -> None:
    with pytest.raises(ArgumentTypeError, match="set_scale"):
        ports.set_scale("3")
    with pytest.raises(ArgumentValueError, match=r"\[f32; 4\]"):
        ports.set_coeffs([1.0, 2.0, 3.0])
    with pytest.raises(KeyError, match="COEFFS"):
        ports.set_constant("NOPE", 1.0)
    assert {c.name: c.rust_type for c in ports.manifest.constants} == {
        "COEFFS": "[f32; 4]",
        "SCALE": "f32",
        "UNUSED": "f32",
    }


def test_swizzled_transpose(ports: pyoxide.Module, lib: ArrayLib) -> None:
    # cuda-oxide's swizzle_smem: a 32x32 tile through `Swizzle<5, 0, 5>` on both sides.
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    out = lib.poisoned(32 * 32, np.float32)
    ports.swizzled_transpose.launch(lib.asarray(x.ravel()), out, grid=1, block=(32, 32))
    np.testing.assert_array_equal(lib.to_numpy(out).reshape(32, 32), x.T)


@pytest.mark.parametrize("dynamic", [0, 1024])
def test_shared_memory_sizes(ports: pyoxide.Module, lib: ArrayLib, dynamic: int) -> None:
    out = lib.poisoned(2, np.uint32)
    ports.smem_sizes.launch(out, grid=1, block=32, shared_mem=dynamic)
    got = lib.to_numpy(out)
    assert got[0] == dynamic and got[1] >= dynamic


def test_cooperative_group_tiles(ports: pyoxide.Module, lib: ArrayLib) -> None:
    x = RNG.integers(0, 1000, 512, dtype=np.uint32)
    out = lib.poisoned((512, 4), np.uint32)
    ports.tile_collectives(lib.asarray(x), out)
    tiles = x.reshape(-1, 8)
    rank = np.tile(np.arange(8, dtype=np.uint32), 64)
    ballot = ((tiles % 2).astype(np.uint32) << np.arange(8, dtype=np.uint32)).sum(axis=1)
    down = np.concatenate([tiles[:, 1:], tiles[:, 7:]], axis=1).ravel()
    want = np.stack([rank, np.repeat(ballot, 8), np.repeat(tiles[:, 0], 8), down], axis=1)
    np.testing.assert_array_equal(lib.to_numpy(out), want)


def test_generic_kernels_without_instances_build_without_entries(ports: pyoxide.Module) -> None:
    # parity.rs's `#[cuda_module] mod host_instanced`: cuda-oxide's host would name the
    # instances; with the host code gone there are none, and the crate still builds.
    assert not [k for k in ports.kernels if k.startswith("copy_generic")]
    assert "copy_quads" in ports.kernels  # the crate's other kernels are there


def _f16_bits(x: np.ndarray, toward_zero: bool) -> np.ndarray:
    with np.errstate(over="ignore"):  # 70000 rounds to infinity: what the GPU does too
        rn = x.astype(np.float16)
    if toward_zero:  # nearest, then one step back where that went past x
        past = np.abs(rn.astype(np.float32)) > np.abs(x)
        rn = np.where(past & np.isfinite(x), np.nextafter(rn, np.float16(0)), rn)
    return rn.view(np.uint16).astype(np.uint32)


def _bf16_bits(x: np.ndarray, toward_zero: bool) -> np.ndarray:
    b = x.view(np.uint32).astype(np.uint64)
    if not toward_zero:  # nearest, ties to even
        b = b + 0x7FFF + ((b >> 16) & 1)
    return ((b >> 16) & 0xFFFF).astype(np.uint32)


@pytest.mark.parametrize("lo, hi", [(1.00048828125, -3.14159), (-0.7, 70000.0), (1e-6, 2.5)])
def test_packed_conversions(ports: pyoxide.Module, lib: ArrayLib, lo: float, hi: float) -> None:
    # cuda-oxide's cvt_packed: f32 pairs to f16x2/bf16x2 with each rounding, and back.
    x = np.array([lo, hi], np.float32)
    relu = np.maximum(x, np.float32(0))

    def pack(bits: np.ndarray) -> int:
        return int(bits[0] | (bits[1] << 16))

    want = [
        pack(_f16_bits(x, False)),
        pack(_f16_bits(x, True)),
        pack(_f16_bits(relu, False)),
        pack(_bf16_bits(relu, False)),
        pack(_bf16_bits(x, True)),
    ]
    out = lib.zeros(5, np.uint32)
    ports.cvt_packed_variants(lo, hi, out)
    assert lib.to_numpy(out).tolist() == want
    f16 = _f16_bits(x, False).astype(np.uint16).view(np.float16).astype(np.float32)
    bf16 = (_bf16_bits(x, True) << 16).astype(np.uint32).view(np.float32)
    unpacked = lib.zeros(8, np.float32)
    ports.cvt_packed_unpack(lo, hi, unpacked)
    np.testing.assert_array_equal(lib.to_numpy(unpacked), np.concatenate([f16, f16, bf16, bf16]))
