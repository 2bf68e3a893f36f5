"""NVIDIA cuda-oxide's cp.async, mbarrier, packed-half and dynamic-shared-memory
examples, ported by renaming the crate and removing host code
(crates/oxide-device/tests/fixtures/cuda_oxide_ports), on every array library (`lib`)
against NumPy. The emulator runs `cp.async`, `f16x2` arithmetic and the packed atomics
bit for bit; it refuses `mbarrier` and `cvta.to.shared` by name, which these tests
check on the emulator where the GPU runs them."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib

import pyoxide
from pyoxide.errors import PyoxideError

RNG = np.random.default_rng()


def f16_bits(x: object) -> np.ndarray:
    return np.asarray(x, np.float64).astype(np.float16).view(np.uint16).astype(np.uint32)


def halves(word: int) -> np.ndarray:
    return np.array([word & 0xFFFF, word >> 16], np.uint16).view(np.float16)


def pack(lanes: np.ndarray) -> int:
    bits = lanes.astype(np.float16).view(np.uint16).astype(np.uint32)
    return int(bits[0] | bits[1] << 16)


def flush(h: np.ndarray) -> np.ndarray:
    """Subnormal halves to a zero of their sign (what `.ftz` does)."""
    tiny = (np.abs(h) < np.float16(2.0**-14)) & (h != 0)
    return np.where(tiny, np.copysign(np.float16(0), h), h).astype(np.float16)


def fma(a: int, b: int, c: int, ftz: bool = False, sat: bool = False, relu: bool = False) -> int:
    x, y, z = halves(a), halves(b), halves(c)
    if ftz:
        x, y, z = flush(x), flush(y), flush(z)
    # A half product is exact in float64 and so is its sum with a half of these sizes:
    # one rounding, to float16, as the instruction does.
    r = (x.astype(np.float64) * y + z).astype(np.float16)
    if ftz:
        r = flush(r)
    if sat:
        r = np.clip(r, 0, 1)
    if relu:
        r = np.maximum(r, np.float16(0))
    return pack(r)


def test_f16x2_arith_rounds_as_the_gpu(ports: pyoxide.Module, lib: ArrayLib) -> None:
    a, b, c, neg_one, sub, one = (
        0x4400_4000,
        0x4500_4200,
        0x4980_4700,
        0xBC00_BC00,
        0x2_0001,
        0x3C00_3C00,
    )
    x, y = halves(a), halves(b)
    want = [
        pack(x + y),
        pack(x - y),
        pack(x * y),
        fma(a, b, c),
        pack(np.minimum(x, y)),
        pack(np.maximum(x, y)),
        pack(-x),
        pack(x),
        fma(a, neg_one, 0, relu=True),
        fma(sub, one, 0),
        fma(sub, one, 0, ftz=True),
        fma(a, b, c, sat=True),
        fma(a, b, c, ftz=True, sat=True),
        fma(sub, one, 0, ftz=True, relu=True),
    ]
    assert want[9] == sub and want[10] == 0 and want[11] == one  # the cases that tell apart
    out = lib.poisoned((3, 14), np.uint32)
    ports.test_f16x2_arith(out)
    got = lib.to_numpy(out)
    for row in got:
        assert [hex(v) for v in row] == [hex(v) for v in want]


def test_packed_atomic_adds(ports: pyoxide.Module, lib: ArrayLib) -> None:
    base = lib.asarray(np.zeros(2, np.uint32))
    old_f16, old_bf16 = lib.poisoned(32, np.uint32), lib.poisoned(32, np.uint32)
    ports.add_packed[1, 64](base, old_f16, old_bf16)
    k = np.arange(32, dtype=np.float32)
    bf16 = lambda v: (np.asarray(v, np.float32).view(np.uint32) >> 16).astype(np.uint32)  # noqa: E731 (exact: small integers)
    assert lib.to_numpy(base).tolist() == [
        int(f16_bits(32) | f16_bits(64) << 16),
        int(bf16(32) | bf16(64) << 16),
    ]
    for old, enc in [(lib.to_numpy(old_f16), f16_bits), (lib.to_numpy(old_bf16), bf16)]:
        # Each thread saw the counters after some number of the others' adds.
        np.testing.assert_array_equal(np.sort(old & 0xFFFF), enc(k))
        np.testing.assert_array_equal(np.sort(old >> 16), enc(2 * k))


@pytest.mark.parametrize("src_size", [0, 1, 3, 4])
def test_cp_async_zero_fill(ports: pyoxide.Module, lib: ArrayLib, src_size: int) -> None:
    x = RNG.integers(1, 2**32, 32, dtype=np.uint32)
    out = lib.poisoned(32, np.uint32)
    ports.test_zfill_4[1, 32](lib.asarray(x), src_size, out)
    mask = np.uint32((1 << (8 * src_size)) - 1)
    np.testing.assert_array_equal(lib.to_numpy(out), x & mask)


def test_cp_async_small_copies(ports: pyoxide.Module, lib: ArrayLib) -> None:
    x = RNG.integers(0, 2**32, 64, dtype=np.uint32)
    out = lib.poisoned(32, np.uint32)
    ports.test_cp_async_4[1, 32](lib.asarray(x), out)
    np.testing.assert_array_equal(lib.to_numpy(out), x[:32])
    out = lib.poisoned(64, np.uint32)
    ports.test_cp_async_8[1, 32](lib.asarray(x), out)
    np.testing.assert_array_equal(lib.to_numpy(out), x)


def refused_or(lib: ArrayLib, instruction: str, launch: object) -> bool:
    """Run `launch`: on the emulator it must stop, naming `instruction`; True on a GPU."""
    if lib.on_gpu:
        launch()  # type: ignore[operator]
        return True
    with pytest.raises(PyoxideError) as e:
        launch()  # type: ignore[operator]
    assert "is not emulated" in str(e.value) and instruction in str(e.value), str(e.value)
    return False


def test_mbarrier_examples(ports: pyoxide.Module, lib: ArrayLib) -> None:
    x = RNG.integers(0, 2**32, 4, dtype=np.uint32)
    ones, neighbours, bridged = (lib.poisoned(n, np.uint32) for n in (512, 512, 4))
    if refused_or(lib, "mbarrier.init", lambda: ports.barrier_sync_test[2, 256](ones)):
        ports.barrier_shared_data_test[2, 256](neighbours)
        ports.test_cp_async_mbarrier_bridges[1, 1](lib.asarray(x), bridged)
        np.testing.assert_array_equal(lib.to_numpy(ones), np.ones(512, np.uint32))
        tid = np.arange(512) % 256
        np.testing.assert_array_equal(lib.to_numpy(neighbours), (tid + 1) % 256)
        np.testing.assert_array_equal(lib.to_numpy(bridged), x)


def test_shared_offset_is_the_shared_window_offset(ports: pyoxide.Module, lib: ArrayLib) -> None:
    out, generic = lib.poisoned(1, np.uint64), lib.poisoned(1, np.uint64)
    if refused_or(lib, "cvta.to.shared", lambda: ports.test_smem_addr_shared_offset[1, 1](out)):
        ports.test_smem_addr_via_ptr_u8[1, 1](generic)
        offset, address = int(lib.to_numpy(out)[0]), int(lib.to_numpy(generic)[0])
        # A 128-byte-aligned array inside a block's 227 KiB window, not the generic address.
        assert offset % 128 == 0 and offset < 227 * 1024 and offset != address


def test_dynamic_shared_memory_views(ports: pyoxide.Module, lib: ArrayLib) -> None:
    blocks, block = 3, 256
    a, b, c = (RNG.standard_normal(blocks * block).astype(np.float32) for _ in range(3))
    nb = (np.arange(blocks * block) // block) * block + (
        np.arange(blocks * block) % block + 1
    ) % block
    A, B, C = (lib.asarray(v) for v in (a, b, c))
    cases = [
        ("dynamic_smem_basic", (A,), 1024, a[nb]),
        ("dynamic_smem_partition", (A, B), 2048, a[nb] + b[nb]),
        ("dynamic_smem_explicit_align", (A,), 1024, 2 * a[nb]),
        ("dynamic_smem_mixed_align", (A, B, C), 3072, a[nb] + b[nb] + c[nb]),
    ]
    for name, args, shared, want in cases:
        out = lib.poisoned(blocks * block, np.float32)
        ports[name][blocks, block, shared](*args, out)
        np.testing.assert_array_equal(lib.to_numpy(out), want, err_msg=name)
