"""Row and tile kernels (softmax_rows, layernorm_rows, transpose) on every array library
(`lib`), against float64 NumPy: fresh random inputs, poisoned outputs, rows that fit the
registers and rows that do not, misaligned views, odd shapes; and size checks that refuse
rather than read or write out of bounds (emulator only: a GPU trap ends the CUDA context)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, poison_value, rel_err, tol
from helpers.rows import layernorm64, softmax64

import pyoxide

RNG = np.random.default_rng()

# The suite's tolerance for compound work (exp, sums, divisions) against float64.
TOL = tol(np.float32, compound=True)

# (rows, cols): one element; a warp's worth; not multiples of 4 or of the block; a row
# of 4096 (vector path); 2000 (with one warp: the 16-chunk register cache, 63 elements
# a thread); rows longer than 64 x 512 registers (the streamed path).
SHAPES = [(1, 1), (7, 31), (300, 257), (3, 4096), (5, 1000), (3, 2000), (2, 70000)]


def block_for(cols: int) -> int:
    """cols / 32 in whole warps, 128..=512: the 8-chunk register cache, up to the
    kernels' largest block (their plain calls stop at 256: the test of long rows)."""
    per_thread_32 = -(-cols // 32)
    return min(512, max(128, -(-per_thread_32 // 32) * 32))


def misaligned(lib: ArrayLib, host: np.ndarray) -> object:
    """`host` (same shape) as a view starting at element 1 of a larger device array (4
    bytes past a 16-byte boundary), so the kernels must take their scalar path."""
    flat = lib.asarray(np.concatenate([np.zeros(1, host.dtype), host.ravel()]))
    return flat[1:].reshape(host.shape)


@pytest.mark.parametrize(("rows", "cols"), SHAPES)
@pytest.mark.parametrize("one_warp", [False, True])
def test_softmax_rows(
    kernels: pyoxide.Module, lib: ArrayLib, rows: int, cols: int, one_warp: bool
) -> None:
    x = (RNG.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = lib.poisoned((rows, cols), np.float32)
    block = 32 if one_warp else block_for(cols)
    kernels.softmax_rows[rows, block](lib.asarray(x), out)
    assert rel_err(lib.to_numpy(out), softmax64(x)) < TOL


@pytest.mark.parametrize(("rows", "cols"), [(7, 31), (3, 4096), (2, 70000)])
def test_softmax_rows_misaligned_views(
    kernels: pyoxide.Module, lib: ArrayLib, rows: int, cols: int
) -> None:
    x = (RNG.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = misaligned(lib, np.full((rows, cols), np.nan, np.float32))
    kernels.softmax_rows[rows, 128](misaligned(lib, x), out)
    assert rel_err(lib.to_numpy(out), softmax64(x)) < TOL


def test_softmax_rows_covers_every_row_with_any_grid(
    kernels: pyoxide.Module, lib: ArrayLib
) -> None:
    """A plain call covers every row, and so does an explicit grid of fewer blocks than
    rows: the kernel walks rows `blockIdx.x`, `+ gridDim.x`, … (it tunes
    `blocks_per_sm`), so the launcher takes any grid (issue #16: `softmax_rows[10, 32]`
    once wrote nothing, silently, from blocks that did not walk)."""
    x = (RNG.standard_normal((37, 300)) * 4).astype(np.float32)
    for config in (None, (5, 64), (1, 32)):
        out = lib.poisoned(x.shape, np.float32)
        launch = kernels.softmax_rows if config is None else kernels.softmax_rows[config]
        launch(lib.asarray(x), out)
        assert rel_err(lib.to_numpy(out), softmax64(x)) < TOL, config


@pytest.mark.parametrize(("rows", "cols"), [(2, 16384), (3, 12000), (2, 9000)])
def test_row_kernels_plain_calls_on_long_rows(
    kernels: pyoxide.Module, lib: ArrayLib, rows: int, cols: int
) -> None:
    """A plain call's 256 threads hold rows of 8193..16384 columns in registers (64
    elements a thread, the last chunks partly or wholly past the row's end at 12000
    and 9000 columns)."""
    x = (RNG.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = lib.poisoned((rows, cols), np.float32)
    kernels.softmax_rows(lib.asarray(x), out)
    assert rel_err(lib.to_numpy(out), softmax64(x)) < TOL
    xs = x + 100
    w = RNG.standard_normal(cols).astype(np.float32)
    b = RNG.standard_normal(cols).astype(np.float32)
    out = lib.poisoned((rows, cols), np.float32)
    kernels.layernorm_rows(lib.asarray(xs), lib.asarray(w), lib.asarray(b), out, 1e-5)
    assert rel_err(lib.to_numpy(out), layernorm64(xs, w, b, 1e-5)) < TOL


def test_softmax_rows_extreme_values(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    """Large logits do not overflow (the max is subtracted first), -inf entries give 0."""
    x = (RNG.standard_normal((4, 5000)) * 50 + 80).astype(np.float32)
    x[:, ::7] = -np.inf
    out = lib.poisoned(x.shape, np.float32)
    kernels.softmax_rows[4, 128](lib.asarray(x), out)
    got = lib.to_numpy(out)
    assert rel_err(got, softmax64(x)) < TOL
    assert (got[:, ::7] == 0).all()


@pytest.mark.parametrize(("rows", "cols"), SHAPES)
def test_layernorm_rows(kernels: pyoxide.Module, lib: ArrayLib, rows: int, cols: int) -> None:
    # An offset far from 0 is what breaks a one-pass E[x²] − E[x]² variance.
    x = (RNG.standard_normal((rows, cols)) * 3 + 100).astype(np.float32)
    w = RNG.standard_normal(cols).astype(np.float32)
    b = RNG.standard_normal(cols).astype(np.float32)
    out = lib.poisoned((rows, cols), np.float32)
    eps = 1e-5
    kernels.layernorm_rows[rows, block_for(cols)](
        lib.asarray(x), lib.asarray(w), lib.asarray(b), out, eps
    )
    ref = layernorm64(x, w, b, eps)
    # cols == 1: x - mean is exactly 0, out is the bias.
    assert rel_err(lib.to_numpy(out), ref) < (TOL if cols > 1 else tol(np.float32))


@pytest.mark.parametrize(("rows", "cols"), [(7, 31), (3, 4096), (2, 70000)])
def test_layernorm_rows_misaligned_views(
    kernels: pyoxide.Module, lib: ArrayLib, rows: int, cols: int
) -> None:
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    w = RNG.standard_normal(cols).astype(np.float32)
    b = RNG.standard_normal(cols).astype(np.float32)
    out = misaligned(lib, np.full((rows, cols), np.nan, np.float32))
    kernels.layernorm_rows[rows, 256](lib.asarray(x), misaligned(lib, w), lib.asarray(b), out, 1e-5)
    assert rel_err(lib.to_numpy(out), layernorm64(x, w, b, 1e-5)) < TOL


def transpose_launch(rows: int, cols: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The launch transpose's doc gives: 32 x 8 threads, one block per 64 x 64 tile."""
    return (-(-cols // 64), min(-(-rows // 64), 65535)), (32, 8)


@pytest.mark.parametrize(
    ("rows", "cols"),
    [(1, 1), (1, 300), (300, 1), (33, 65), (1000, 1001), (64, 32), (128, 192), (130, 97)],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint32])
def test_transpose(
    kernels: pyoxide.Module, lib: ArrayLib, rows: int, cols: int, dtype: type
) -> None:
    x = (RNG.standard_normal((rows, cols)) * 1000).astype(dtype)
    out = lib.poisoned((cols, rows), dtype)
    kernels.transpose(lib.asarray(x), out)  # the tiles policy: (32, 8) blocks, 64x64 tiles
    np.testing.assert_array_equal(lib.to_numpy(out), x.T)
    out = lib.poisoned((cols, rows), dtype)
    grid, block = transpose_launch(rows, cols)
    kernels.transpose[grid, block](lib.asarray(x), out)
    np.testing.assert_array_equal(lib.to_numpy(out), x.T)


def test_transpose_small_grid(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    """A grid smaller than the tile count strides over the tiles."""
    rows, cols = 97, 130
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    out = lib.poisoned((cols, rows), np.float32)
    kernels.transpose[(2, 3), (32, 8)](lib.asarray(x), out)
    np.testing.assert_array_equal(lib.to_numpy(out), x.T)


def test_transpose_misaligned_view(kernels: pyoxide.Module, lib: ArrayLib) -> None:
    rows, cols = 33, 65
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    out = misaligned(lib, np.full((cols, rows), np.nan, np.float32))
    grid, block = transpose_launch(rows, cols)
    kernels.transpose[grid, block](misaligned(lib, x), out)
    np.testing.assert_array_equal(lib.to_numpy(out), x.T)


# Wrong sizes: the kernel traps with a message before touching memory. On the emulator
# only (NumPy arrays): a trap on the GPU makes the CUDA context unusable.
def _refused(launch: object, *args: object, says: str) -> None:
    with pytest.raises(pyoxide.errors.EmulatorError, match="trapped") as info:
        launch(*args)  # type: ignore[operator]
    assert says in str(info.value)  # gpu_assert!'s message is in the error


def test_row_kernels_refuse_blocks_that_are_not_whole_warps(
    kernels: pyoxide.Module, lib: ArrayLib
) -> None:
    """The row kernels shuffle over the full warp (the manifest's `whole_warps`): a block
    of 48 is refused by the launcher, before anything runs, on every backend."""
    x = lib.asarray(np.ones((3, 4), np.float32))
    out = lib.poisoned((3, 4), np.float32)
    with pytest.raises(pyoxide.ArgumentValueError, match="whole number of warps") as e:
        kernels.softmax_rows[3, 48](x, out)
    assert e.value.param == "block" and "32 or 64 threads" in str(e.value)
    assert np.isnan(lib.to_numpy(out)).all()


def test_transpose_refuses_wrong_blocks(kernels: pyoxide.Module) -> None:
    x = np.ones((3, 4), np.float32)
    out = np.full((4, 3), poison_value(np.float32), np.float32)
    _refused(kernels.transpose[(1, 1), (16, 8)], x, out, says="block of (32, 8)")
    assert np.isnan(out).all()
