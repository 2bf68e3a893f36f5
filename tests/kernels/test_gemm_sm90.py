"""`kernels.gemm_bf16(a, b, c)` without a launch configuration: on an sm_90 GPU, shapes
TMA takes (n, k multiples of 8) run kernels_sm90a's wgmma + TMA variant
(`#[variant_of(gemm_bf16)]`), everything else kernels_rs's mma.sync kernel, sized from
c's shape (pyoxide/_launch/variants.py).
One test body on every array library, against the float64 product of the
bf16-rounded inputs (tolerance as tests/kernels/test_gemm.py: f32 sums, 1e-5), with
poisoned outputs.
The emulator's refusal of the twin is tests/backends/test_emu_sm90a.py."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from helpers.arraylibs import ArrayLib, rel_err, skip_on_emu
from helpers.bundled import sm90_gemm_instances, sm90a_kernels_manifest
from helpers.probes import requires_sm90, sm90_device_present
from test_gemm import BF16, bf16_normal, product

import pyoxide

# TMA shapes first (the twin's tails: m, n and k cut tiles of 128, 256 and 64; n = 8 a
# single partial box), then shapes only the plain kernel takes (n or k not a multiple
# of 8).
GPU_SHAPES = [
    (1000, 1000, 1000), (300, 200, 8), (256, 384, 512), (129, 8, 72), (1, 8, 8),
    (520, 264, 4104), (1, 1, 1), (4095, 4097, 129),
]  # fmt: skip
EMU_SHAPES = [(1, 1, 1), (33, 16, 8), (130, 136, 40)]


@pytest.fixture(scope="module")
def twinned(kernels: pyoxide.Module) -> pyoxide.Module:
    """kernels_rs as `from pyoxide import kernels` serves it: gemm_bf16 with its variant,
    whose hand pick runs (its tuned choices, the shipped ones in a packaged build
    included, would pick other instances: tests/bench/test_tune.py has those)."""
    module = pyoxide.load(kernels.manifest)
    variants = pyoxide.load(sm90a_kernels_manifest(), tuned=False)
    assert sorted(module.add_variants(variants)) == [
        "gemm_bf16", "gemm_bf16_bf16",
    ]  # fmt: skip
    return module


def _on_sm90(lib: ArrayLib) -> bool:
    return lib.on_gpu and sm90_device_present()


@pytest.mark.parametrize("name", ["gemm_bf16", "gemm_bf16_bf16"])
def test_plain_call_picks_the_fast_kernel(twinned: pyoxide.Module, lib: ArrayLib, name: str):
    picker = twinned[name]
    # the variant's hand pick (256-wide tiles, no split); its other instances are tuning
    # candidates
    assert [v.name for v in picker.variants] == [f"{name}_sm90_256_1_128"]
    for m, n, k in GPU_SHAPES if lib.on_gpu else EMU_SHAPES:
        a = bf16_normal((m, k))
        b = bf16_normal((k, n))
        a_dev, b_dev = lib.asarray(a), lib.asarray(b)
        out = np.float32 if name == "gemm_bf16" else BF16
        c = lib.poisoned((m, n), out)
        tma = n % 8 == 0 and k % 8 == 0
        want_entry = f"{name}_sm90_256_1_128" if tma and _on_sm90(lib) else name
        assert picker.picks(a_dev, b_dev, c) == want_entry, (m, n, k)
        picker(a_dev, b_dev, c)
        got = lib.to_numpy(c).ravel().astype(np.float32)
        want = product(a, b).ravel()
        # A bf16 result carries its own rounding (2^-9 relative) on top of the f32 sum's.
        tol = 1e-5 if out is np.float32 else 4e-3
        err = rel_err(got, want)
        assert err < tol, f"{want_entry} {m}x{n}x{k}: relative error {err:.2e}"
        assert not np.isnan(got).any(), f"{want_entry} {m}x{n}x{k}: unwritten (NaN) output"


@pytest.mark.parametrize("name", ["gemm_bf16", "gemm_bf16_bf16"])
def test_repeated_calls_reuse_the_checked_route(
    twinned: pyoxide.Module, lib: ArrayLib, name: str
) -> None:
    """A second call with the same arrays goes to the variant's compiled launcher (its
    tensor maps kept) and still writes every element; new arrays of another shape take
    the checked path again."""
    picker = twinned[name]
    out = np.float32 if name == "gemm_bf16" else BF16
    tol = 1e-5 if out is np.float32 else 4e-3
    for m, n, k in [(264, 520, 136), (264, 520, 136), (200, 16, 64)]:
        a = bf16_normal((m, k))
        b = bf16_normal((k, n))
        a_dev, b_dev = lib.asarray(a), lib.asarray(b)
        c = lib.poisoned((m, n), out)
        want = product(a, b).ravel()
        for _ in range(3):
            c[...] = lib.poisoned((m, n), out)
            picker(a_dev, b_dev, c)
            got = lib.to_numpy(c).ravel().astype(np.float32)
            assert not np.isnan(got).any(), f"{m}x{n}x{k}: unwritten (NaN) output"
            assert rel_err(got, want) < tol, (m, n, k)
    if _on_sm90(lib):
        (variant,) = picker.variants
        assert variant.launchers, "no compiled launcher for the variant"


#: Every tuned instance (the tiles and splits its `#[tune]` lists), by its entry's tail.
INSTANCES = [entry.removeprefix("gemm_bf16_sm90_") for entry in sm90_gemm_instances("gemm_bf16")]
#: LLM decode and prefill rows (16, 128) and a tail row tile (200); n a whole number of
#: tiles (4096) or 8 columns into the next (4104); k a whole number of 64-wide slabs, a
#: partial last slab (4160 = 65 slabs), three slabs (136: with SPLIT = 4 the last rank gets
#: none) and one partial slab (8: every rank but the first gets none, its partial sums
#: zeros); then a shape with more tiles than clusters fit (each walks several).
INSTANCE_SHAPES = [
    *((m, n, k) for m in (16, 128, 200) for n in (4096, 4104) for k in (4096, 4160, 136, 8)),
    (1000, 4104, 520),
]  # fmt: skip


@functools.lru_cache(maxsize=4)
def _operands(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs and their float64 product, drawn once per shape for both kernels' instances
    (a few shapes kept: b is up to 34 MB)."""
    a, b = bf16_normal((m, k)), bf16_normal((k, n))
    return a, b, product(a, b).ravel()


@skip_on_emu("the wgmma + TMA kernels run on sm_90 GPUs only (tests/backends/test_emu_sm90a.py)")
@requires_sm90("the wgmma + TMA kernels load on an sm_90 GPU only")
@pytest.mark.parametrize(
    "shape", INSTANCE_SHAPES, ids=["x".join(map(str, s)) for s in INSTANCE_SHAPES]
)
@pytest.mark.parametrize("name", ["gemm_bf16", "gemm_bf16_bf16"])
def test_every_tuned_instance_computes_the_same_product(
    lib: ArrayLib, name: str, shape: tuple[int, int, int]
) -> None:
    """Each instance of the variant called itself: 64-, 128- and 256-wide tiles, the k range
    whole or split across a cluster of 2, 3 or 4 blocks (summed through distributed shared
    memory), on LLM shapes with tails in m, n and k, through the general launch path and
    the compiled one: every element written, the float64 product of the inputs within f32
    (bf16) rounding."""
    m, n, k = shape
    a, b, want = _operands(m, n, k)
    a_dev, b_dev = lib.asarray(a), lib.asarray(b)
    out = np.float32 if name == "gemm_bf16" else BF16
    tol = 1e-5 if out is np.float32 else 4e-3
    # Without tuned choices: a plain call of an instance would run the choice for its
    # shape's bucket (a 16- or 128-row call: a swapped or split instance), not itself.
    sm90 = pyoxide.load(sm90a_kernels_manifest(), tuned=False)
    for tail in INSTANCES:
        kernel = sm90[f"{name}_sm90_{tail}"]
        bn, split, bm = map(int, tail.split("_"))
        assert kernel.spec.launch is not None and kernel.spec.launch.tile[:2] == (bn, bm)
        assert kernel.spec.cluster == (None if split == 1 else (split, 1, 1))
        c = lib.poisoned((m, n), out)
        # The general path (which makes the maps), then the compiled launcher (a split
        # instance's grid in whole clusters: crates/pyoxide-native), on the same arrays.
        for path in ("general", "compiled"):
            c[...] = lib.poisoned((m, n), out)
            kernel(a_dev, b_dev, c)
            got = lib.to_numpy(c).ravel().astype(np.float32)
            what = f"{kernel.name} {m}x{n}x{k} ({path} launch)"
            assert not np.isnan(got).any(), f"{what}: unwritten (NaN) output"
            err = rel_err(got, want)
            assert err < tol, f"{what}: relative error {err:.2e}"
            # Element by element too (a wrong chunk of a rank's share would hardly move
            # the norm): within the rounding of a sum of k unit normals' products, ~sqrt(k).
            worst = float(np.abs(got - want).max()) / np.sqrt(k)
            assert worst < 50 * tol, f"{what}: an element off by {worst:.2e} sqrt(k)"
        assert kernel.launchers, f"{kernel.name}: no compiled launcher"


@pytest.mark.gpu
@requires_sm90("the driver counts a split instance's co-resident clusters on an sm_90 GPU")
@pytest.mark.parametrize("split", [2, 3, 4])
def test_a_split_instance_launches_the_clusters_the_device_runs_at_once(split: int) -> None:
    """A split instance launched with more tiles than clusters fit launches as many
    clusters as the driver says run at once (cuOccupancyMaxActiveClusters), which is no
    more than SMs ÷ cluster (fewer where GPCs strand SMs), and computes the product."""
    import cupy as cp

    from pyoxide.backends.cupy import CupyBackend

    class LaunchesRecorded(CupyBackend):
        def __init__(self) -> None:
            super().__init__()
            self.launches: list[tuple[Any, dict[str, Any]]] = []

        def launch(self, function: Any, **kw: Any) -> None:
            self.launches.append((function, kw))
            super().launch(function, **kw)

    m, n, k = 128, 14336, 520  # 112 tiles of 128×128
    a, b, want = _operands(m, n, k)
    backend = LaunchesRecorded()
    with pyoxide.backends.override("cupy", backend):
        kernel = pyoxide.load(sm90a_kernels_manifest())[f"gemm_bf16_sm90_128_{split}_128"]
        c = cp.full((m, n), np.nan, cp.float32)
        kernel.launch(cp.asarray(a), cp.asarray(b), c)  # the general path, recorded
        ((function, launch),) = backend.launches
        active = backend.active_clusters(
            function, launch["device"], (split, 1, 1), launch["block"], launch["shared_mem"]
        )
    assert 0 < active <= backend.multiprocessors(launch["device"]) // split
    assert launch["grid"] == (min(112, active) * split, 1, 1)
    err = rel_err(cp.asnumpy(c).ravel(), want)
    assert err < 1e-5, f"{kernel.name}: relative error {err:.2e}"


def test_bf16_result_is_the_f32_result_rounded_once(twinned: pyoxide.Module, lib: ArrayLib):
    """The bf16-result kernel rounds each f32 sum to nearest even once (the twin packs
    pairs with one `cvt.rn.bf16x2.f32`): bit for bit the f32-result kernel's output
    rounded by ml_dtypes, on the twin's shapes and tails."""
    for m, n, k in GPU_SHAPES[:6] if lib.on_gpu else EMU_SHAPES:
        a_dev, b_dev = lib.asarray(bf16_normal((m, k))), lib.asarray(bf16_normal((k, n)))
        c32 = lib.poisoned((m, n), np.float32)
        c16 = lib.poisoned((m, n), BF16)
        twinned.gemm_bf16(a_dev, b_dev, c32)
        twinned.gemm_bf16_bf16(a_dev, b_dev, c16)
        want = lib.to_numpy(c32).astype(BF16).view(np.uint16)
        got = lib.to_numpy(c16).view(np.uint16)
        differ = int((got != want).sum())
        assert differ == 0, f"{m}x{n}x{k}: {differ} bf16 results differ from round(f32 result)"


#: The chain's weight: its own draws, so that the test's inputs do not depend on the order
#: the module's tests run in.
RNG_CHAIN = np.random.default_rng(7)


@skip_on_emu("the wgmma + TMA kernels run on sm_90 GPUs only (tests/backends/test_emu_sm90a.py)")
@requires_sm90("the wgmma + TMA kernels load on an sm_90 GPU only")
@pytest.mark.parametrize("tail", ["256_1_128", "128_4_16", "64_2_128"])
def test_a_chain_of_dependent_launches_reads_each_finished_product(
    lib: ArrayLib, tail: str, monkeypatch
) -> None:
    """`#[dependent_launch]`: each GEMM of a chain reads the one before it's output, while
    that one may still be finishing when this one's blocks start (programmatic stream
    serialisation, on the compiled path): every product is whole (no NaN of the poisoned
    outputs), matches float64 chained with bf16 rounding between steps, and is bit for bit
    the chain launched without the attribute (PYOXIDE_DEPENDENT_LAUNCH=0)."""
    m, n, steps = 128, 1024, 6
    b = (RNG_CHAIN.standard_normal((n, n), dtype=np.float32) / np.sqrt(n)).astype(BF16)
    x0 = bf16_normal((m, n))
    b_dev = lib.asarray(b)
    chains = {}
    for knob in ("1", "0"):
        monkeypatch.setenv("PYOXIDE_DEPENDENT_LAUNCH", knob)
        pyoxide.reload_knobs()
        kernel = pyoxide.load(sm90a_kernels_manifest(), tuned=False)[f"gemm_bf16_bf16_sm90_{tail}"]
        assert kernel.spec.dependent_launch
        outs = [lib.poisoned((m, n), BF16) for _ in range(steps)]
        for _ in range(3):  # the first chain on the general path, then compiled ones
            x = lib.asarray(x0)
            for out in outs:
                out[...] = lib.poisoned((m, n), BF16)
            for out in outs:
                kernel(x, b_dev, out)
                x = out
        chains[knob] = [lib.to_numpy(o).astype(np.float32) for o in outs]
        assert kernel.launchers, f"{kernel.name}: no compiled launcher"
    want = x0
    for step, got in enumerate(chains["1"]):
        want = product(want, b).astype(np.float32).astype(BF16)
        assert not np.isnan(got).any(), f"step {step}: unwritten (NaN) output"
        err = rel_err(got.ravel(), want.astype(np.float32).ravel())
        assert err < 2e-2, f"step {step}: relative error {err:.2e}"
        assert np.array_equal(got, chains["0"][step]), f"step {step}: differs without PDL"
