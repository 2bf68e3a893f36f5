"""Variants (pyoxide/_launch/variants.py): a kernel of another crate declared
``#[variant_of(mm)]`` runs a plain call of ``mm`` where it takes it, from its own
manifest entry (launch policy, shared memory, tensor maps), and ``mm`` runs the rest.
On a fake CuPy: which entry a call picks, the fallbacks, the tensor maps the backend is
asked for, and the compiled launchers' order (the variant's first, deferring to the
general path for maps it has not seen). tests/kernels/test_gemm_sm90.py runs the bundled
GEMM pair on the GPU; the last tests here check the bundled crates' declarations."""

from __future__ import annotations

import contextlib
import hashlib
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import fake_cupy
from helpers.fake_launch import FakeNdarray, native_installed
from helpers.fakes import FakeCudaArray, fresh_ptr
from helpers.fixtures import REPO_DIR, kernel, manifest_dict, param, write_manifest

import pyoxide
from pyoxide._manifest import abi as _abi
from pyoxide.backends.cupy import CupyBackend
from pyoxide.errors import ArgumentValueError


def shaped(name: str, kind: str, dims: list[str]) -> dict[str, Any]:
    return {**param(name, kind, "f32", kind == "disjoint_array"),
            "array": {"layout": "c", "dims": dims}}  # fmt: skip


ARRAYS = [shaped("a", "array", ["m", "k"]), shaped("b", "array", ["k", "n"]),
          shaped("c", "disjoint_array", ["m", "n"])]  # fmt: skip
PLAIN = {
    **kernel("mm", ARRAYS),
    "launch": {"kind": "tiles", "over": "c", "block": [16, 16, 1], "tile": [16, 16, 1]},
}
SHARED = 230_560
VARIANT = {
    **kernel("mm_sm90", [*ARRAYS, param("maps", "slice", "u8")]),
    "variant_of": "mm",
    "launch": {"kind": "persistent_tiles", "over": "c", "block": [384, 1, 1],
               "tile": [256, 128, 1], "blocks_per_sm": 1},
    "shared_bytes": SHARED,
    "tensor_maps": {"param": "maps", "maps": [
        {"array": a, "box_rows": r, "box_bytes": 128, "swizzle_bytes": 128}
        for a, r in (("a", 128), ("b", 64), ("c", 64))
    ]},
}  # fmt: skip


def crate(
    out_dir: Path,
    name: str,
    k: dict[str, Any] | list[dict[str, Any]],
    arch: str,
    tuned: list[dict[str, Any]] = [],  # noqa: B006 (read only)
) -> pyoxide.Module:
    """A crate of the kernel(s) `k` with PTX for `arch` (the fake finds the entries) and
    the tuned choices `tuned` in its manifest (`pyoxide build --tuned`'s)."""
    ks = k if isinstance(k, list) else [k]
    out_dir.mkdir(parents=True)
    value = manifest_dict(out_dir, crate=name, archs=(arch,), kernels=ks)
    if tuned:
        value["tuned"] = tuned
    for art in value["artifacts"]:
        ptx = out_dir / art["path"]
        ptx.write_text(ptx.read_text() + "".join(f"\n// .entry {x['entry']}(\n" for x in ks))
        art["sha256"] = hashlib.sha256(ptx.read_bytes()).hexdigest()
    return pyoxide.load(write_manifest(out_dir, value))


@pytest.fixture
def mods(tmp_path: Path) -> tuple[pyoxide.Module, pyoxide.Module]:
    plain = crate(tmp_path / "plain", "plain", PLAIN, "sm_80")
    fast = crate(tmp_path / "fast", "fast", VARIANT, "sm_90a")
    assert plain.add_variants(fast) == ["mm"]
    return plain, fast


class MapsRecorded(CupyBackend):
    """The CuPy backend, with tensor maps recorded instead of encoded by the driver."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.maps: list[list[Any]] = []

    def tensor_maps(self, kernel: str, device: int, stream: Any, maps: Any) -> tuple[Any, int]:
        self.maps.append(list(maps))
        return ("maps", len(self.maps)), fresh_ptr()


@pytest.fixture
def gpu() -> Any:
    fake = fake_cupy.FakeCuda()
    with fake_cupy.installed(fake, backend_class=MapsRecorded):
        yield fake, pyoxide.backends.get("cupy")


def arrays(m: int = 300, n: int = 200, k: int = 64, **kw: Any) -> tuple[Any, ...]:
    return (FakeCudaArray((m, k), **kw), FakeCudaArray((k, n)), FakeCudaArray((m, n)))


def test_the_manifest_records_the_variant(mods) -> None:
    _, fast = mods
    spec = fast.mm_sm90.spec
    assert spec.variant_of == "mm" and spec.shared_bytes == SHARED
    assert spec.maps_param == "maps" and [m.array for m in spec.tensor_maps] == ["a", "b", "c"]
    assert [p.name for p in spec.passed_params] == ["a", "b", "c"]
    assert fast.mm_sm90.plan.params == spec.passed_params  # callers pass three arrays


def test_a_plain_call_runs_the_variant_with_its_own_launch(mods, gpu) -> None:
    plain, _ = mods
    fake, backend = gpu
    a, b, c = arrays()
    assert plain.mm.picks(a, b, c) == "mm_sm90"
    plain.mm(a, b, c)
    (launch,) = fake.launches
    tiles = -(-300 // 128) * -(-200 // 256)
    assert launch["name"] == "mm_sm90" and launch["grid"] == (min(tiles, 132), 1, 1)
    assert launch["block"] == (384, 1, 1) and launch["shared_mem"] == SHARED
    assert fake.attributes and fake.attributes[-1][2] == SHARED  # opted in to that much
    # The maps of a (m×k), b (k×n), c (m×n): boxes of 128 bytes' worth of f32 columns.
    ((ma, mb, mc),) = backend.maps
    assert (ma.ptr, ma.rows, ma.cols, ma.box_rows, ma.box_cols) == (a.ptr, 300, 64, 128, 32)
    assert (mb.rows, mb.cols, mb.box_rows) == (64, 200, 64)
    assert (mc.rows, mc.cols, mc.box_rows, mc.swizzle_bytes) == (300, 200, 64, 128)
    assert int(launch["args"][-1]) == 3 * _abi.TENSOR_MAP_BYTES
    plain.mm(a, b, c)
    assert len(backend.maps) == 1  # the same arrays: the same maps, kept


@pytest.mark.parametrize(
    ("why", "call"),
    [
        ("n not a multiple of 4 (rows of 16 bytes)", lambda: arrays(n=202)),
        ("k not a multiple of 4", lambda: arrays(k=66)),
        (
            "a misaligned for TMA",
            lambda: (FakeCudaArray((300, 64), ptr=fresh_ptr() + 4), *arrays()[1:]),
        ),
        ("an empty extent", lambda: arrays(m=0)),
        ("a strided view", lambda: (FakeCudaArray((300, 64), strides=(512, 4)), *arrays()[1:])),
    ],
)
def test_the_kernel_itself_runs_what_the_variant_does_not_take(mods, gpu, why, call) -> None:
    plain, _ = mods
    fake, backend = gpu
    args = call()
    assert plain.mm.picks(*args) == "mm", why
    with contextlib.suppress(pyoxide.ArgumentError):
        plain.mm(*args)  # the kernel runs it, or explains what is wrong with it
    assert [launch["name"] for launch in fake.launches] in ([], ["mm"]) and backend.maps == []


def tuned_variant() -> tuple[dict[str, Any], dict[str, Any]]:
    """The hand pick and the other instance of a variant declared `#[tune(BN = [256, 128])]`."""
    tune = {"consts": [{"param": "BN", "values": ["256", "128"]}]}
    hand, other = (
        {**VARIANT, "entry": f"mm_sm90_{bn}", "instance": [{"param": "BN", "value": bn}],
         "tune": tune}
        for bn in ("256", "128")
    )  # fmt: skip
    return hand, other


def test_a_tuned_variant_takes_plain_calls_with_its_hand_pick(tmp_path: Path, gpu) -> None:
    """A variant with `#[tune]` instances: the kernel it is a variant of gets one variant,
    the hand pick (the instance of each tuned const's first value), whatever the order of
    the manifest; the other instances are its tuning candidates, not more variants."""
    hand, other = tuned_variant()
    plain = crate(tmp_path / "plain", "plain", PLAIN, "sm_80")
    fast = crate(tmp_path / "fast", "fast", [other, hand], "sm_90a")
    assert plain.add_variants(fast) == ["mm"]
    assert [v.spec.entry for v in plain.mm.variants] == ["mm_sm90_256"]
    assert plain.mm.picks(*arrays()) == "mm_sm90_256"


def test_a_tuned_variants_choice_runs_the_calls_in_its_bucket(tmp_path: Path) -> None:
    """A plain call of `mm` that the tuned variant takes runs the variant's tuned choice
    where the call falls in the choice's bucket, and the variant's hand pick elsewhere:
    first through the general path (which makes the maps), then through the compiled
    launchers, which try the variant's own variants (its choices) before its launcher."""
    fake = fake_cupy.FakeCuda()
    hand, other = tuned_variant()
    choice = {"kernel": "mm_sm90_256", "device": fake.device_name, "arch": "sm_90",
              "bucket": [512, 64, 256], "entry": "mm_sm90_128", "launch": {}, "time_us": 1.0,
              "hand_us": 2.0, "shape": [300, 200, 64], "candidates": 2, "rejected": 0}  # fmt: skip
    plain = crate(tmp_path / "plain", "plain", PLAIN, "sm_80")
    fast = crate(tmp_path / "fast", "fast", [hand, other], "sm_90a", tuned=[choice])
    assert plain.add_variants(fast) == ["mm"]
    with native_installed(fake, backend_class=MapsRecorded) as (_, driver):
        # (m, k, n) in the bucket (512, 64, 256), and m outside it
        inside = tuple(FakeNdarray(s) for s in ((300, 64), (64, 200), (300, 200)))
        outside = tuple(FakeNdarray(s) for s in ((1000, 64), (64, 200), (1000, 200)))
        assert plain.mm.picks(*inside) == "mm_sm90_128"
        assert plain.mm.picks(*outside) == "mm_sm90_256"
        for call in (inside, inside, outside, outside, inside):
            plain.mm(*call)
    assert [launch["name"] for launch in fake.launches] == ["mm_sm90_128", "mm_sm90_256"]
    functions = {hash(name) & 0xFFFF: name for name in ("mm_sm90_128", "mm_sm90_256")}
    compiled = [functions.get(launch["f"]) for launch in driver.launches]
    assert compiled == ["mm_sm90_128", "mm_sm90_256", "mm_sm90_128"]


def test_another_architecture_runs_the_kernel_itself(mods, gpu) -> None:
    plain, _ = mods
    fake, _ = gpu
    fake.compute_capability = "80"  # sm_90a code runs on sm_90 alone
    plain.mm(*arrays())
    assert [launch["name"] for launch in fake.launches] == ["mm"]


def test_a_configured_call_is_the_kernels_own(mods, gpu) -> None:
    plain, _ = mods
    fake, _ = gpu
    plain.mm[(13, 19), (16, 16)](*arrays())
    plain.mm.launch(*arrays(), grid=(13, 19), block=(16, 16))
    assert [launch["name"] for launch in fake.launches] == ["mm", "mm"]


def test_a_variant_called_itself_refuses_what_tma_cannot_read(mods, gpu) -> None:
    _, fast = mods
    with pytest.raises(ArgumentValueError, match="TMA") as e:
        fast.mm_sm90(*arrays(n=202))
    assert e.value.param == "b"
    fast.mm_sm90(*arrays())  # the maps made for its arrays


def test_the_compiled_launchers_try_the_variant_first(mods) -> None:
    """The variant's launcher takes the calls it can with maps it has seen; new arrays
    defer to the general path (which makes their maps), never to the kernel's launcher;
    what the variant does not take goes to the kernel's launcher."""
    plain, _ = mods
    fake = fake_cupy.FakeCuda()
    with native_installed(fake, backend_class=MapsRecorded) as (_, driver):
        backend = pyoxide.backends.get("cupy")
        bad = tuple(FakeNdarray(s) for s in ((300, 64), (64, 202), (300, 202)))
        good = tuple(FakeNdarray(s) for s in ((300, 64), (64, 200), (300, 200)))
        plain.mm(*bad)  # the kernel's general launch: builds its launcher
        plain.mm(*good)  # the variant's: builds the variant's launcher and the maps
        plain.mm(*good)  # the variant's launcher
        plain.mm(*bad)  # declined by the variant's: the kernel's launcher
        fresh = tuple(FakeNdarray(s) for s in ((300, 64), (64, 200), (300, 200)))
        plain.mm(*fresh)  # deferred: the general path makes the maps
        plain.mm(*fresh)
    assert [launch["name"] for launch in fake.launches] == ["mm", "mm_sm90", "mm_sm90"]
    assert [launch["smem"] for launch in driver.launches] == [SHARED, 0, SHARED]
    assert [launch["grid"] for launch in driver.launches] == [(3, 1, 1), (13, 19, 1), (3, 1, 1)]
    assert len(backend.maps) == 2
    buffer = np.frombuffer(driver.launches[0]["buffer"], np.uint64)
    assert buffer[-1] == 3 * _abi.TENSOR_MAP_BYTES  # the maps' slice, after c's words


# --- the bundled crates' declarations ----------------------------------------------------


def rust_consts(path: Path) -> dict[str, int]:
    found = re.findall(r"pub const (\w+): (?:u32|usize) = ([0-9_]+);", path.read_text())
    return {name: int(value.replace("_", "")) for name, value in found}


def test_the_bundled_twins_declare_their_launch() -> None:
    """kernels_sm90a's GEMMs state their launch in attributes (literals): they must agree
    with the constants the kernel body computes with (it traps on too little shared
    memory, and leaves tiles of c unwritten on a wrong tile)."""
    from helpers.bundled import sm90_gemm_instances, sm90a_kernels_manifest

    rust = rust_consts(REPO_DIR / "kernels_sm90a" / "src" / "gemm_sm90.rs")
    sm90 = pyoxide.read_manifest(sm90a_kernels_manifest())
    # (its attention kernels are launched by pyoxide/bundled/attention.py:
    # tests/bundled/test_attention_call.py)
    specs = {k.entry: k for k in sm90.kernels if k.name.startswith("gemm")}
    assert {s.variant_of for s in specs.values()} == {"gemm_bf16", "gemm_bf16_bf16"}
    # two kernels, each tile (BN, BM) with each split
    assert sorted(specs) == sorted([*sm90_gemm_instances("gemm_bf16"),
                                    *sm90_gemm_instances("gemm_bf16_bf16")])  # fmt: skip
    for spec in specs.values():
        assert spec.shared_bytes == rust["SM90_SHARED_BYTES"]
        assert spec.launch is not None and spec.launch.kind == "persistent_tiles"
        # each tuned tile launches its own tiles (the hand pick's is SM90_BN × SM90_BM),
        # each split in clusters of its own (SPLIT blocks share a tile; the hand pick's
        # has none), and a's map boxes the tile's rows
        inst = dict(spec.instance)
        width, split, rows = int(inst["BN"]), int(inst["SPLIT"]), int(inst["BM"])
        assert spec.launch.tile[:2] == (width, rows)
        assert spec.cluster == (None if split == 1 else (split, 1, 1))
        assert [m.box_rows for m in spec.tensor_maps] == [rows, 64, 64]  # (a, b, c)
        assert spec.tune is not None and spec.tune.consts == (
            ("BN", (str(rust["SM90_BN"]), "128", "64")), ("SPLIT", ("1", "2", "3", "4")),
            ("BM", (str(rust["SM90_BM"]), "64", "16")),
        )  # fmt: skip
        assert spec.launch.block3 == (rust["SM90_THREADS"], 1, 1)
        assert [m.array for m in spec.tensor_maps] == ["a", "b", "c"]
    assert rust["TENSOR_MAP_BYTES"] == _abi.TENSOR_MAP_BYTES
