"""NVIDIA cuda-oxide's examples, ported by renaming the crate and removing host code
(crates/oxide-device/tests/fixtures/cuda_oxide_ports), on every array library (`lib`)
against NumPy: elementwise, math, integer and control-flow kernels. The warp and
shared-memory ones are in test_cuda_oxide_ports_warp.py."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err

import pyoxide

RNG = np.random.default_rng()


def run(lib: ArrayLib, out: object) -> np.ndarray:
    return lib.to_numpy(out)


@pytest.mark.parametrize("n", [1, 300])
def test_array_for_loop(ports: pyoxide.Module, lib: ArrayLib, n: int) -> None:
    t = np.arange(n, dtype=np.uint32)
    for name, want in [
        ("sum_u32_array", 4 * t + 6),
        ("sum_point_array", 10 * t + 20),
        ("map_generated_array", 12 * t + 22),
    ]:
        out = lib.poisoned(n, np.uint32)
        ports[name](out)
        np.testing.assert_array_equal(run(lib, out), want, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "name, ref, lo, hi",
    [
        ("asin", np.arcsin, -1.0, 1.0),
        ("acos", np.arccos, -1.0, 1.0),
        ("atan", np.arctan, -50.0, 50.0),
        ("tan", np.tan, -1.5, 1.5),
    ],
)
def test_math_examples(
    ports: pyoxide.Module, lib: ArrayLib, dtype: type, name: str, ref: object, lo: float, hi: float
) -> None:
    x = RNG.uniform(lo, hi, 1000).astype(dtype)
    out = lib.poisoned(x.size, dtype)
    suffix = "f32" if dtype == np.float32 else "f64"
    ports[f"{name}_{suffix}"](lib.asarray(x), out)
    tol = 2e-6 if dtype == np.float32 else 1e-14
    assert rel_err(run(lib, out), ref(x.astype(np.float64))) < tol  # type: ignore[operator]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atan2(ports: pyoxide.Module, lib: ArrayLib, dtype: type) -> None:
    y, x = RNG.standard_normal(777).astype(dtype), RNG.standard_normal(777).astype(dtype)
    out = lib.poisoned(y.size, dtype)
    suffix = "f32" if dtype == np.float32 else "f64"
    ports[f"atan2_{suffix}"](lib.asarray(y), lib.asarray(x), out)
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    assert rel_err(run(lib, out), want) < (2e-6 if dtype == np.float32 else 1e-14)


def test_checked_arith(ports: pyoxide.Module, lib: ArrayLib) -> None:
    a = RNG.integers(0, 256, 1000).astype(np.uint8)
    b = RNG.integers(0, 256, 1000).astype(np.uint8)
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    for name, exact in [
        ("checked_add", wide_a + wide_b),
        ("checked_sub", wide_a - wide_b),
        ("checked_mul", wide_a * wide_b),
    ]:
        out = lib.poisoned(a.size, np.uint32)
        ports[name](lib.asarray(a), lib.asarray(b), out)
        overflow = (exact < 0) | (exact > 255)
        want = (exact & 0xFF) | (overflow.astype(np.int64) << 8)
        np.testing.assert_array_equal(run(lib, out), want, err_msg=name)


def test_complex_square_add(ports: pyoxide.Module, lib: ArrayLib) -> None:
    cr, ci = np.float32(0.3), np.float32(-0.7)
    out = lib.poisoned(100, np.float32)
    ports.complex_square_add(float(cr), float(ci), out)
    # z = 0; z = z*z + c twice, in f32 as the kernel does: z1 = c, z2 = c*c + c.
    re = cr * cr - ci * ci + cr
    im = cr * ci + ci * cr + ci
    assert rel_err(run(lib, out), np.full(100, re + im, np.float64)) < 1e-6


def test_write_len(ports: pyoxide.Module, lib: ArrayLib) -> None:
    out = lib.poisoned(513, np.uint32)
    ports.write_len(out)
    np.testing.assert_array_equal(run(lib, out), np.full(513, 513))


def test_float_rounding(ports: pyoxide.Module, lib: ArrayLib) -> None:
    halves = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5]
    for dtype, bits in [(np.float32, np.uint32), (np.float64, np.uint64)]:
        x = np.array([*halves, 2.7, -2.7, 0.25, -0.0, 1e10, -7.0], dtype)
        x = np.concatenate([x, RNG.uniform(-100, 100, 200).astype(dtype)])
        out = lib.poisoned(5 * x.size, bits)
        ports["rounding_f32" if dtype == np.float32 else "rounding_f64"](lib.asarray(x), out)
        # Rust's round() takes halves away from zero; round_ties_even is rint.
        away = np.copysign(np.floor(np.abs(x.astype(np.float64)) + 0.5), x).astype(dtype)
        want = np.stack([np.floor(x), np.ceil(x), np.trunc(x), away, np.rint(x)], axis=1)
        np.testing.assert_array_equal(run(lib, out), want.astype(dtype).view(bits).ravel())


def test_vecadd_and_helper(ports: pyoxide.Module, lib: ArrayLib) -> None:
    a, b = RNG.standard_normal(1025, np.float32), RNG.standard_normal(1025, np.float32)
    for name in ("vecadd", "vecadd_with_helper"):
        c = lib.poisoned(a.size, np.float32)
        ports[name](lib.asarray(a), lib.asarray(b), c)
        assert rel_err(run(lib, c), a.astype(np.float64) + b) < 1e-6, name


def test_copy_2d_const_width(ports: pyoxide.Module, lib: ArrayLib) -> None:
    # WIDTH = 16 columns, 8 rows; a block wider than the array: columns 16.. get None.
    x = RNG.standard_normal(16 * 8, np.float32)
    out = lib.poisoned(x.size, np.float32)
    ports.copy_2d_const_width[(1, 2), (32, 4)](lib.asarray(x), out, 8)
    np.testing.assert_array_equal(run(lib, out), x)


def test_map_sum(ports: pyoxide.Module, lib: ArrayLib) -> None:
    data = RNG.integers(-1000, 1000, 50).astype(np.int64)
    out = lib.poisoned(40, np.int64)
    ports.map_sum_i64(lib.asarray(data), out)
    np.testing.assert_array_equal(run(lib, out), np.full(40, 2 * data.sum()))
    udata = RNG.integers(0, 1000, 50).astype(np.uint64)
    uout = lib.poisoned(40, np.uint64)
    ports.map_sum_usize(lib.asarray(udata), uout)
    np.testing.assert_array_equal(run(lib, uout), np.full(40, (udata + 1).sum()))


def test_mem_swap(ports: pyoxide.Module, lib: ArrayLib) -> None:
    a = RNG.integers(-999, 999, 64).astype(np.int32)
    b = RNG.integers(-999, 999, 64).astype(np.int32)
    out = lib.poisoned(64, np.int32)
    ports.swap_kernel[1, 64](lib.asarray(a), lib.asarray(b), out)  # it reads a[i] unchecked
    np.testing.assert_array_equal(run(lib, out), b * 1000 + a)


def test_ord_cmp(ports: pyoxide.Module, lib: ArrayLib) -> None:
    out = lib.poisoned(27, np.int32)
    ports.cmp_kernel(out)
    # The 27 comparisons of the kernel: (less, equal, greater) per integer type, then
    # i8, u8 and u16 pairs and three chars.
    want = [-1, 0, 1] * 6 + [-1, 0, 1, -1, -1, 1, -1, 1, 0]
    np.testing.assert_array_equal(run(lib, out), want)
    out = lib.poisoned(4, np.int32)
    ports.cmp_cast_kernel(out)
    np.testing.assert_array_equal(run(lib, out), [-1, -1, 1, 0])
    out = lib.poisoned(10, np.int32)
    ports.ordering_match_kernel(out)
    np.testing.assert_array_equal(run(lib, out), np.full(10, -1))
    out = lib.poisoned(4, np.int32)
    ports.enum_repr_kernel(out)
    np.testing.assert_array_equal(run(lib, out), [100, 200, -5, -4])


def test_slice_reslice(ports: pyoxide.Module, lib: ArrayLib) -> None:
    n = 100
    data = RNG.integers(0, 256, 2 * n).astype(np.uint8)
    out = lib.poisoned(n, np.uint32)
    ports.slice_reslice(lib.asarray(data), out)
    words = data[0::2].astype(np.uint32) | (data[1::2].astype(np.uint32) << 8)
    np.testing.assert_array_equal(run(lib, out), words[0] + words)


def test_step_by(ports: pyoxide.Module, lib: ArrayLib) -> None:
    for name in ("step_by_sum", "step_by_sum_control"):
        out = lib.poisoned(64, np.uint64)
        ports[name][1, 64](out)
        want = [sum(range(t, 256, 64)) for t in range(64)]
        np.testing.assert_array_equal(run(lib, out), want, err_msg=name)


def test_tuple_return_through_get_mut_indexed(ports: pyoxide.Module, lib: ArrayLib) -> None:
    out = lib.poisoned(300, np.float32)
    ports.run(out)
    np.testing.assert_array_equal(run(lib, out), 2 * np.arange(300, dtype=np.float32))


def test_dotprod(ports: pyoxide.Module, lib: ArrayLib) -> None:
    a4, b4 = RNG.integers(0, 256, 4), RNG.integers(0, 256, 4)
    a2, b2 = RNG.integers(0, 1 << 16, 2), RNG.integers(0, 256, 2)
    cs, cu = int(RNG.integers(-1000, 1000)), int(RNG.integers(0, 1000))
    pack4 = int(sum(int(v) << (8 * k) for k, v in enumerate(a4)))
    packb = int(sum(int(v) << (8 * k) for k, v in enumerate(b4)))
    pack2 = int(a2[0]) | int(a2[1]) << 16
    packb2 = int(b2[0]) | int(b2[1]) << 8
    out = lib.poisoned(4, np.int32)
    ports.dotprod_test(pack4, packb, cs, cu, pack2, packb2, out)

    def s8(v: np.ndarray) -> np.ndarray:
        return v.astype(np.int64) - 256 * (v >= 128)

    s16 = a2.astype(np.int64) - 65536 * (a2 >= 32768)
    want = [
        cs + int((s8(a4) * s8(b4)).sum()),
        cu + int((a4 * b4).sum()),
        cs + int((s16 * s8(b2)).sum()),
        cu + int((a2 * b2).sum()),
    ]
    np.testing.assert_array_equal(run(lib, out), np.array(want, np.int64).astype(np.int32))
