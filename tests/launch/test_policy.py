"""pyoxide/_launch/policy.py: a kernel's launch policy (`#[launch(...)]`) and its arguments to a
grid and block, and the explicit grids it refuses. Pure Python: specs made here."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.bundled import kernels_manifest

import pyoxide
from pyoxide._launch import policy as _policy
from pyoxide._manifest import abi as _abi
from pyoxide._manifest.reader import (
    KernelSpec,
    LaunchBounds,
    LaunchPolicy,
    ParamSpec,
    SourceLocation,
)

X = ParamSpec("x", "slice", "f32", False)
OUT = ParamSpec("out", "disjoint_slice", "f32", True)
BINS = ParamSpec("bins", "atomic_slice", "u32", True)
COLS = ParamSpec("cols", "scalar", "u32", False)


def spec(
    params: tuple[ParamSpec, ...], launch: LaunchPolicy | None = None, bounds: int | None = None
) -> KernelSpec:
    return KernelSpec(
        name="k", entry="k", params=params, source=SourceLocation("m", "f.rs", 1),
        launch_bounds=LaunchBounds(bounds) if bounds else None, launch=launch,
    )  # fmt: skip


def no_sms() -> int:
    raise AssertionError("the multiprocessor count was not needed here")


def config(s: KernelSpec, lengths: list[Any], grid: Any = None, block: Any = None,
           args: tuple[Any, ...] = (), sms: Any = no_sms) -> tuple[Any, Any]:  # fmt: skip
    return _policy.configure(s, lengths, args, grid, block, sms)


def test_without_a_policy_one_thread_per_output_element() -> None:
    s = spec((X, OUT))
    assert config(s, [None, 1000]) == ((4, 1, 1), (256, 1, 1))
    assert config(s, [None, 0]) == ((0, 1, 1), (256, 1, 1))  # nothing to launch
    assert config(s, [None, 1000], block=(100, 1, 1)) == ((10, 1, 1), (100, 1, 1))
    assert _policy.plain_rule(s) == (1, 256, 256)
    assert config(spec((X, OUT), bounds=64), [None, 1000]) == ((16, 1, 1), (64, 1, 1))


def test_without_an_output_or_a_policy_the_grid_must_be_given() -> None:
    s = spec((X, BINS))
    with pytest.raises(pyoxide.ArgumentValueError, match="explicit launch configuration"):
        config(s, [10, 4])
    assert config(s, [], grid=(3, 1, 1)) == ((3, 1, 1), (256, 1, 1))
    assert _policy.plain_rule(s) is None


def test_elementwise_with_several_elements_per_thread() -> None:
    s = spec((X, OUT), LaunchPolicy("elementwise", 1, per_thread=4, block=128))
    assert config(s, [None, 1 << 20]) == ((2048, 1, 1), (128, 1, 1))
    assert config(s, [None, 513]) == ((2, 1, 1), (128, 1, 1))
    assert config(s, [], grid=(7, 1, 1)) == ((7, 1, 1), (128, 1, 1))  # any grid: it strides
    assert _policy.plain_rule(s) == (1, 128, 512)
    assert not _policy.validates_grid(s)


def test_grid_stride_fills_the_device_and_no_more() -> None:
    s = spec((X, BINS), LaunchPolicy("grid_stride", 0, per_thread=16, block=256, blocks_per_sm=4))
    assert config(s, [1 << 28, 256], sms=lambda: 132) == ((528, 1, 1), (256, 1, 1))
    assert config(s, [5000, 256], sms=lambda: 132) == ((2, 1, 1), (256, 1, 1))
    # An empty input still gets one block: the kernel may have an output to write.
    assert config(s, [0, 256], sms=lambda: 132) == ((1, 1, 1), (256, 1, 1))
    assert config(s, [1 << 28, 256], grid=(9, 1, 1)) == ((9, 1, 1), (256, 1, 1))
    assert _policy.plain_rule(s) is None


def test_block_per_element_refuses_another_grid() -> None:
    s = spec((X, OUT), LaunchPolicy("block_per_element", 1, block=256))
    assert config(s, [10**6, 132]) == ((132, 1, 1), (256, 1, 1))
    assert config(s, [10**6, 132], grid=(132, 1, 1), block=(64, 1, 1)) == ((132, 1, 1), (64, 1, 1))
    # The right block count in two dimensions: block b's element is blockIdx.x, which a
    # 2-D grid repeats along y (wrong elements, no error), so it is refused.
    with pytest.raises(pyoxide.ArgumentValueError, match=r"repeat blockIdx\.x") as e:
        config(s, [10**6, 132], grid=(12, 11, 1), block=(64, 1, 1))
    assert e.value.param == "grid" and "grid=132" in str(e.value)
    with pytest.raises(
        pyoxide.ArgumentValueError, match=r"132 block\(s\): one per element of 'out'"
    ) as e:
        config(s, [10**6, 132], grid=(1, 1, 1))
    assert "grid=132" in str(e.value)
    assert _policy.validates_grid(s)


def test_block_per_row_reads_the_row_length_from_its_argument() -> None:
    s = spec((X, OUT, COLS), LaunchPolicy("block_per_row", 1, cols=2, block=128))
    assert config(s, [None, 300 * 1000, None], args=(None, None, 1000)) == (
        (300, 1, 1),
        (128, 1, 1),
    )
    with pytest.raises(pyoxide.ArgumentValueError, match="rows of cols elements"):
        config(s, [None, 1001, None], args=(None, None, 10))
    with pytest.raises(pyoxide.ArgumentValueError, match=r"300 block\(s\): one per row"):
        config(s, [None, 300 * 1000, None], grid=(10, 1, 1), args=(None, None, 1000))


def test_segments_need_the_block() -> None:
    s = spec((X, OUT), LaunchPolicy("segments", 1), bounds=1024)
    with pytest.raises(pyoxide.ArgumentValueError, match="block size is part of the result"):
        config(s, [None, 1000])
    assert config(s, [None, 1000], block=(64, 1, 1)) == ((16, 1, 1), (64, 1, 1))
    with pytest.raises(pyoxide.ArgumentValueError, match=r"16 block\(s\)"):
        config(s, [None, 1000], grid=(15, 1, 1), block=(64, 1, 1))


def test_a_block_past_the_launch_bounds_is_refused() -> None:
    s = spec((X, OUT), bounds=128)
    with pytest.raises(pyoxide.ArgumentValueError, match="at most 128 threads per block"):
        config(s, [None, 10], block=(256, 1, 1))


def test_the_default_block_is_oxide_abis() -> None:
    """vecadd's `#[launch]` gives no block, so its manifest records oxide-abi's
    DEFAULT_BLOCK: the block that kernels without a policy get here."""
    m = pyoxide.read_manifest(kernels_manifest())
    vecadd = next(k for k in m.kernels if k.entry == "vecadd")
    assert vecadd.launch is not None and vecadd.launch.block == _policy.DEFAULT_BLOCK


def test_shaped_outputs_get_2d_and_3d_grids() -> None:
    """Without a policy, one thread per element of a 2-D (16×16 blocks) or 3-D (8×8×4)
    output, x over its last dimension; an explicit block is its own tile; launch bounds
    shrink the block."""
    from pyoxide._manifest.shape_spec import ArraySpec

    out2 = ParamSpec("out", "disjoint_array", "f32", True, ArraySpec("c", ("m", "n")))
    out3 = ParamSpec("out", "disjoint_array", "f32", True, ArraySpec("c", (None,) * 3))
    s2, s3 = spec((out2,)), spec((out3,))
    assert _policy.configure(s2, [0], (), None, None, no_sms, [(40, 33)]) == (
        (3, 3, 1), (16, 16, 1),
    )  # fmt: skip
    assert _policy.configure(s3, [0], (), None, None, no_sms, [(5, 9, 17)]) == (
        (3, 2, 2), (8, 8, 4),
    )  # fmt: skip
    assert _policy.configure(s2, [0], (), None, (32, 8, 1), no_sms, [(40, 33)]) == (
        (2, 5, 1), (32, 8, 1),
    )  # fmt: skip
    assert _policy.configure(s2, [0], (), (7, 1, 1), None, no_sms, []) == ((7, 1, 1), (16, 16, 1))
    small = spec((out2,), bounds=64)
    assert _policy.configure(small, [0], (), None, None, no_sms, [(40, 33)])[1] == (16, 4, 1)
    assert _policy.tile_rule(s2) == (0, (16, 16, 1), (16, 16, 1))
    with pytest.raises(pyoxide.errors.ShapeError, match="dimension 'm'"):
        _policy.configure(s2, [0], (), None, None, no_sms, [(16 * 65536, 1)])


def test_tiles_policy_covers_each_tile_with_one_block() -> None:
    from pyoxide._manifest.shape_spec import ArraySpec

    c = ParamSpec("c", "disjoint_array", "f32", True, ArraySpec("c", ("m", "n")))
    tiles = LaunchPolicy("tiles", 0, block=256, block3=(256, 1, 1), tile=(128, 128, 1))
    s = spec((c,), tiles, bounds=256)
    assert _policy.configure(s, [0], (), None, None, no_sms, [(1000, 4097)]) == (
        (33, 8, 1), (256, 1, 1),
    )  # fmt: skip
    assert _policy.tile_rule(s) == (0, (256, 1, 1), (128, 128, 1))
    assert not _policy.validates_grid(s)


@pytest.mark.parametrize("kind", sorted(_abi.ONE_D_POLICIES))
def test_one_d_policies_refuse_2d_and_3d_launches(kind: str) -> None:
    """Every policy but tiles is 1-D: its kernel's entry assumes a 1-D launch, and a
    block-per-element or per-row kernel numbers its blocks along x."""
    s = spec((X, OUT, COLS), LaunchPolicy(kind, 1, per_thread=1, block=256, blocks_per_sm=4,
                                         cols=2 if kind == "block_per_row" else None))  # fmt: skip
    if kind in ("elementwise", "grid_stride"):
        assert config(s, [], grid=(7, 1, 1), block=(64, 1, 1)) == ((7, 1, 1), (64, 1, 1))
    bad = [((2, 2, 1), None, "grid"), ((2, 1, 3), None, "grid"),
           ((4, 1, 1), (32, 2, 1), "block"), (None, (8, 1, 8), "block")]  # fmt: skip
    for grid, block, what in bad:
        with pytest.raises(pyoxide.ArgumentValueError, match="1-D") as e:
            config(s, [None, 1000, None], grid=grid, block=block, sms=lambda: 132,
                   args=(None, None, 10))  # fmt: skip
        assert e.value.param == what and "pass" in str(e.value)
    # Without a declared policy (the default elementwise one) nothing is assumed; tiles
    # (test_tiles_policy_covers_each_tile_with_one_block) are 2-D by nature.
    assert config(spec((X, OUT)), [], grid=(2, 2, 1), block=(16, 16, 1))[0] == (2, 2, 1)
    assert "tiles" not in _abi.ONE_D_POLICIES


def test_whole_warp_kernels_refuse_partial_warps() -> None:
    """A kernel whose code shuffles over the full warp (``whole_warps``, from the link
    step) takes only whole warps: a block of 100 is refused before launch, naming the
    instruction and two block sizes that work; a plain call's block is whole warps."""
    import dataclasses

    s = dataclasses.replace(
        spec((X, OUT), LaunchPolicy("block_per_element", 1, block=256)),
        whole_warps="shfl.sync.bfly",
    )
    plain = dataclasses.replace(spec((X, OUT)), whole_warps="redux.sync.add")  # 2-D blocks too
    for s_, block in [(s, (100, 1, 1)), (s, (48, 1, 1)), (s, (33, 1, 1)), (plain, (10, 10, 1)),
                      (s, (1, 1, 1))]:  # fmt: skip
        with pytest.raises(pyoxide.ArgumentValueError, match="whole number of warps") as e:
            config(s_, [None, 4], block=block)
        err = e.value
        assert (err.kernel, err.param) == ("k", "block")
        assert s_.whole_warps in str(err) and "Fix: pass a block of" in str(err)
    with pytest.raises(pyoxide.ArgumentValueError, match="96 or 128 threads"):
        config(s, [None, 4], block=(100, 1, 1))
    assert config(s, [None, 4], block=(96, 1, 1)) == ((4, 1, 1), (96, 1, 1))
    # A plain call's block: the launch bounds' 100, rounded down to whole warps.
    bounded = dataclasses.replace(s, launch_bounds=LaunchBounds(100))
    assert config(bounded, [None, 4]) == ((4, 1, 1), (96, 1, 1))
    assert _policy.default_block(dataclasses.replace(s, launch_bounds=LaunchBounds(20))) == 32
    # Without the collective, any block.
    assert config(dataclasses.replace(s, whole_warps=None), [None, 4], block=(100, 1, 1))[1] == (
        100, 1, 1,
    )  # fmt: skip


def test_the_link_step_marks_the_kernels_that_shuffle() -> None:
    """kernels_rs' reductions and row kernels shuffle over the full warp (so the
    manifest says so); its element-wise kernels do not."""
    m = pyoxide.read_manifest(kernels_manifest())
    marks = {k.entry: k.whole_warps for k in m.kernels}
    for entry in ("reduce_sum_f32", "reduce_blocks_f32", "softmax_rows", "layernorm_rows"):
        assert marks[entry] == "shfl.sync.bfly", entry
    assert marks["scan_blocks_u32"] == "shfl.sync.up"
    assert marks["gemm_bf16"] == "ldmatrix.sync.aligned"
    for entry in ("saxpy", "vecadd", "histogram", "transpose_f32_64"):
        assert marks[entry] is None, entry
