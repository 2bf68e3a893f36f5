"""`pyoxide tune` on the emulator, where its timings mean nothing and everything else
holds: candidates verified before they are timed (a planted fast and wrong one is never
chosen), the choice kept per kernel, device and bucket, plain calls running it (the hand
pick elsewhere), a manifest built with `--tuned` running it in a fresh environment with
no tuning. The timing seam takes planted times (tests/fixtures/tuned_kernels)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import fake_cupy
from helpers.bundled import (
    TUNED_KERNELS,
    bundled_specs,
    sm90_gemm_instances,
    sm90a_kernels_manifest,
    tuned_kernels_manifest,
)
from helpers.fake_launch import FakeNdarray, native_installed
from helpers.probes import requires_gpu, requires_sm90
from helpers.tuning import H200, HAND, OWN, plant_choices, planted, tune
from helpers.tuning import spec as tuned_spec

import pyoxide
from pyoxide import backends
from pyoxide._launch import tune_space as _tune_space
from pyoxide._launch import tune_store as _tune_store
from pyoxide._launch import tuned as _tuned
from pyoxide._manifest import abi as _abi
from pyoxide.bench import tune as _tune
from pyoxide.cli import cli
from pyoxide.spec import Case

SCHEMA = Path(__file__).resolve().parents[2] / "crates" / "oxide-abi" / "tune-report.schema.json"
EMU = (_abi.EMULATOR_DEVICE, _abi.EMULATOR_ARCH)


#: Each test with a cache of its own (tests/bench/conftest.py).
pytestmark = pytest.mark.usefixtures("cache")


def test_a_tuned_kernel_is_its_hand_pick_and_its_candidates_are_instances(manifest: Path) -> None:
    mod = pyoxide.load(manifest, tuned=False)
    assert mod.affine.name == "affine_0"  # the first value of PLANT
    assert mod["affine_1"].spec.instance == (("PLANT", "1"),)
    hand = mod.affine.spec
    labels = [c.label for c in _tune_space.candidates(mod.manifest.kernels, hand)]
    assert labels == ["affine_0 block=256", "affine_0 block=128", "affine_1 block=128",
                      "affine_1 block=256"]  # fmt: skip
    assert [d.name for d in _tune_space.key_dims(hand)] == ["n"]
    assert [d.name for d in _tune_space.key_dims(mod.which.spec)] == ["len(out)"]
    assert isinstance(mod.which_typed, pyoxide.GenericKernel)
    assert sorted(mod.which_typed.instances) == ["which_typed_f32_0", "which_typed_f64_0"]


def test_consts_tuned_together_make_only_the_tuples_listed(manifest: Path) -> None:
    """`(V, W) = [(0, 0), (1, 2), (1, 0)]`: three instances, not a product's four, the
    first the hand pick, each tried with both blocks; the tuner times those six and plain
    calls run its choice."""
    mod = pyoxide.load(manifest, tuned=False)
    assert mod.which_pair.name == "which_pair_0_0"
    hand = mod.which_pair.spec
    assert hand.tune is not None and hand.tune.consts == (("V", ("0", "1")), ("W", ("0", "2")))
    pairs = [(0, 0), (1, 2), (1, 0)]
    labels = [c.label for c in _tune_space.candidates(mod.manifest.kernels, hand)]
    assert labels[0] == "which_pair_0_0 block=128"
    assert sorted(labels) == sorted(f"which_pair_{v}_{w} block={b}" for v, w in pairs
                                    for b in (128, 256))  # fmt: skip
    report = tune(manifest, "which_pair", {"which_pair_1_2 block=256": 10.0}, (1000,))
    (timed,) = report["kernels"]
    assert len(timed["candidates"]) == 6
    out = np.zeros(1000, np.uint32)
    pyoxide.load(manifest).which_pair(out)
    assert set(out.tolist()) == {12256}
    shown = CliRunner().invoke(cli, ["inspect", "which_pair", str(manifest)]).output
    assert "V in ['0', '1']; W in ['0', '2']; block in [128, 256]: 3 instances, 6 candidates" in (
        shown
    )


def test_buckets_are_powers_of_two() -> None:
    dims = (_tune_space.KeyDim(0, 0, "n"), _tune_space.KeyDim(1, 1, "cols"))
    assert _tune_space.bucket_of(dims, [(1000,), (3, 4097)]) == (1024, 8192)
    assert [_tune_space.pow2_bucket(e) for e in (0, 1, 2, 3, 1024, 1025)] == [
        0,
        1,
        2,
        4,
        1024,
        2048,
    ]
    assert _tune_space.bucket_rule(dims, (1024, 8192)) == ((0, 0, 512, 1024), (1, 1, 4096, 8192))


@pytest.mark.parametrize(
    "backend",
    ["emu", pytest.param("cupy", marks=[pytest.mark.gpu, requires_gpu("tunes on the GPU")])],
)
def test_a_planted_fast_and_wrong_candidate_is_refused_never_chosen(
    manifest: Path, backend: str
) -> None:
    times = {"affine_1 block=128": 1.0, "affine_1 block=256": 1.0, "affine_0 block=128": 50.0}
    report = tune(manifest, "affine", times, (1000,), backend=backend)
    (k,) = report["kernels"]
    verdicts = {f"{c['entry']} {c['launch']['block']}": c["verdict"] for c in k["candidates"]}
    assert verdicts == {"affine_0 256": "passed", "affine_0 128": "passed",
                        "affine_1 128": "failed", "affine_1 256": "failed"}  # fmt: skip
    failed = next(c for c in k["candidates"] if c["verdict"] == "failed")
    assert "unwritten" in failed["message"] and failed["time_us"] is None
    chosen = k["candidates"][k["choice"]]
    assert (chosen["entry"], chosen["launch"], k["ratio"]) == ("affine_0", {"block": 128}, 0.5)
    # Kept for this device and bucket, and run by plain calls.
    mod = pyoxide.load(manifest)
    xp: Any = np if backend == "emu" else pytest.importorskip("cupy")
    x, out = xp.arange(1000, dtype=xp.float32), xp.zeros(1000, xp.float32)
    choice = _tuned.tuned_for(mod.affine, (x, out))
    assert choice is not None and (choice.entry, choice.launch) == ("affine_0", (("block", 128),))
    b = backends.get(backend)
    here = b.device_identity(b.current_device())
    assert (choice.device, choice.arch, choice.bucket, choice.rejected) == (*here, (1024,), 2)
    mod.affine(x, out)
    host = np.asarray if xp is np else xp.asnumpy
    np.testing.assert_array_equal(host(out), 2 * host(x) + 1)


def which(mod: Any, n: int, x: Any = None) -> set[int]:
    out = np.zeros(n, np.uint32)
    if x is None:
        mod.which(out)
    else:
        mod.which_typed(x, out)
    return set(out.tolist())


def test_plain_calls_run_the_choice_in_its_bucket_and_the_hand_pick_elsewhere(
    manifest: Path,
) -> None:
    tune(manifest, "which", {"which_1 block=256": 10.0}, (1000,))
    mod = pyoxide.load(manifest)
    assert which(mod, 1000) == which(mod, 600) == {10256}  # 512 < n <= 1024
    assert which(mod, 512) == which(mod, 1025) == {128}  # the hand pick: V=0, block 128
    assert mod.which.picks(np.zeros(700, np.uint32)) == "which_1"
    hand = pyoxide.load(manifest, tuned=False)
    assert which(hand, 1000) == {128} and hand.tuned == []


def test_a_generic_kernel_tunes_each_instance_apart(manifest: Path) -> None:
    tune(manifest, "which_typed", {"which_typed_f64_1": 10.0}, (1000,))
    mod = pyoxide.load(manifest)
    assert which(mod, 1000, np.zeros(1000)) == {10128}  # f64: its tuned choice
    assert which(mod, 1000, np.zeros(1000, np.float32)) == {128}  # f32: its hand pick won


def test_the_hand_pick_stays_unless_beaten_by_the_margin(manifest: Path, cache: Path) -> None:
    tune(manifest, "which", {"which_1 block=256": 10.0}, (1000,))
    mod = pyoxide.load(manifest, tuned=False)
    assert len(_tune_store.cached_choices(mod.manifest)) == 1
    report = tune(manifest, "which", {"which_1 block=256": 99.0}, (1000,))  # 1 % faster
    k = report["kernels"][0]
    assert k["candidates"][k["choice"]]["hand_pick"] and k["ratio"] == 1.0
    # The new measurement replaced the old choice at its place with the hand pick, kept
    # so that another GPU model's choice does not take this model's bucket.
    (kept,) = _tune_store.cached_choices(mod.manifest)
    assert kept.keeps_hand_pick and (kept.entry, kept.bucket) == ("which_0", (1024,))
    tuned = pyoxide.load(manifest)
    assert (
        which(tuned, 1000) == {128}
        and _tuned.tuned_for(tuned.which, (np.zeros(1000, np.uint32),)) is None
    )


@pytest.mark.parametrize(
    ("sustained", "call_us", "under_load"),
    [(False, 100.0, False), (True, 100.0, True), (True, 10.0, False)],
    ids=["not-marked", "marked", "marked-but-short"],
)
def test_a_sustained_spec_is_timed_under_sustained_load_where_its_calls_are_long(
    manifest: Path, sustained: bool, call_us: float, under_load: bool
) -> None:
    # Short runs find which_1 block=256 fastest; sustained load (a GEMM at the card's
    # power limit) finds nothing faster than the hand pick. Calls shorter than
    # SUSTAINED_FROM_US are timed as before (back to back they would time the host).
    spec = dataclasses.replace(tuned_spec("which"), sustained=sustained)
    module = pyoxide.load(manifest, tuned=False)
    report = _tune.tune_crate(module, [spec], backend="emu", sizes=[(1000,)],
                              timing=planted({"which_1 block=256": call_us / 10}, call_us),
                              sustained=planted({}, 2 * call_us))  # fmt: skip
    (k,) = report["kernels"]
    chosen = k["candidates"][k["choice"]]
    assert chosen["hand_pick"] is under_load
    assert chosen["time_us"] == (2 * call_us if under_load else call_us / 10)


@pytest.mark.parametrize(
    ("choices", "fallback", "inside"),
    [
        ([{**OWN, "launch": {"block": 256}}], "1", ("which_1", 256)),
        # Another model of the fake's architecture (sm_90): its choice, unless turned off.
        ([{**H200, "launch": {"block": 256}}], "1", ("which_1", 256)),
        ([{**H200, "launch": {"block": 256}}], "0", HAND),
        ([{**H200, "arch": "sm_80", "launch": {"block": 256}}], "1", HAND),
        # The model's own choice wins, wherever it is listed; a kept hand pick too.
        ([{**H200, "launch": {"block": 256}}, {**OWN, "launch": {"block": 128}}], "1",
         ("which_1", 128)),
        ([{**OWN, "entry": "which_0", "launch": {}}, {**H200, "launch": {"block": 256}}], "1",
         HAND),
        # Of two other models' choices, the first listed.
        ([{**H200, "launch": {"block": 256}},
          {"device": "NVIDIA H100", "arch": "sm_90", "entry": "which_0",
           "launch": {"block": 256}}], "1", ("which_1", 256)),
    ],
    ids=["own", "another-model", "fallback-off", "another-arch", "own-wins",
         "own-hand-pick-wins", "first-other-model"],
)  # fmt: skip
def test_both_launch_paths_run_the_choice_for_the_device_in_its_bucket(
    manifest: Path, monkeypatch: pytest.MonkeyPatch, choices: list[dict[str, Any]],
    fallback: str, inside: tuple[str, int],
) -> None:  # fmt: skip
    """On a (fake) GPU: the choice tuned on its model, else on another model of its
    architecture (pyoxide/_launch/tuned.py). Inside the bucket (512 < n <= 1024) each call
    runs ``inside``, the general path's first and the compiled launchers' after it, and
    ``picks`` names it; outside, the hand pick."""
    monkeypatch.setenv("PYOXIDE_TUNED_FALLBACK", fallback)
    plant_choices(manifest, choices)
    fake = fake_cupy.FakeCuda()
    names = {hash(e) & 0xFFFF: e for e in ("which_0", "which_1")}  # the fake's handles
    ran: dict[int, set[tuple[str, int]]] = {}
    with native_installed(fake) as (_, driver):
        mod = pyoxide.load(manifest)
        assert mod.which.picks(FakeNdarray((1000,), "uint32")) == inside[0]
        for n in (1000, 2000, 1000, 2000, 600, 1024, 1025, 1000):
            before = len(fake.launches), len(driver.launches)
            mod.which(FakeNdarray((n,), "uint32"))
            (launch,) = fake.launches[before[0] :] + driver.launches[before[1] :]
            name = launch.get("name") or names[launch["f"]]
            ran.setdefault(n, set()).add((name, launch["block"][0]))
    assert driver.launches  # the compiled launchers took calls
    assert ran == {1000: {inside}, 600: {inside}, 1024: {inside}, 2000: {HAND}, 1025: {HAND}}


def test_choices_of_another_device_or_an_old_candidate_list_do_not_run(
    manifest: Path,
) -> None:
    plant_choices(manifest, [
        {"device": "NVIDIA H200", "arch": "sm_90", "launch": {"block": 256}},
        {"device": EMU[0], "arch": EMU[1], "bucket": [2048], "launch": {"block": 999}},
    ])  # fmt: skip
    tuned = pyoxide.load(manifest)
    assert [v.choice.device for v in tuned.tuned] == ["NVIDIA H200"]  # block 999: no longer listed
    assert which(tuned, 1000) == which(tuned, 2000) == {128}  # not this device


def test_a_manifest_built_tuned_runs_the_choice_fresh_with_no_tuning(
    manifest: Path, tmp_path: Path
) -> None:
    """The build puts the crate's shipped choices (tests/fixtures/tuned_kernels/tuned.json,
    made on the emulator by scripts/ship_tuned: which_0 block=256 for 512 < n <= 1024,
    which_1 block=128 for 1024 < n <= 2048) in the manifest, and the cache's over them."""
    tune(manifest, "which", {"which_1 block=256": 10.0}, (1000,))
    package = tmp_path / "site-packages" / "pkg"
    result = CliRunner().invoke(cli, ["build", str(TUNED_KERNELS), "--tuned", "--out-dir",
                                      str(tmp_path / "build"), "-q", "--no-stubs"])  # fmt: skip
    assert result.exit_code == 0, result.output
    shipped = TUNED_KERNELS / _tune_store.SHIPPED_FILE
    assert f"2 choice(s) shipped in {shipped} and kept by `pyoxide tune`" in result.output
    shutil.copytree(tmp_path / "build", package)  # installed: elsewhere, no cache
    fresh = tmp_path / "fresh-cache"
    code = (
        "import sys, numpy as np, pyoxide\n"
        f"mod = pyoxide.load({str(package / 'tuned_kernels.manifest.json')!r})\n"
        "ran = []\n"
        "for n in (1000, 2000, 3000):\n"
        "    out = np.zeros(n, np.uint32); mod.which(out); ran += set(out.tolist())\n"
        "assert ran == [10256, 10128, 128], ran  # the cache's, shipped, the hand pick\n"
        "assert 'pyoxide.bench.tune' not in sys.modules  # the tuner never ran\n"
        "print('tuned', *(v.choice.entry for v in mod.tuned))\n"
    )
    env = {**os.environ, "PYOXIDE_CACHE_DIR": str(fresh)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "tuned which_1 which_1"
    assert not (fresh / _tune_store.TUNED_DIR).exists()  # nothing tuned, nothing written


def test_cli_tune_reports_json_by_the_schema_and_a_table(manifest: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    runner = CliRunner()
    result = runner.invoke(cli, ["tune", str(manifest), "-k", "affine", "--shapes", "1000",
                                 "--backend", "emu", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)  # a report per tuned crate
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    (k,) = [k for k in report["kernels"] if k["kernel"] == "affine_0"]  # (not affine_keyed)
    assert [c["verdict"] for c in k["candidates"]].count("failed") == 2  # the planted ones
    assert k["candidates"][k["choice"]]["entry"] == "affine_0"
    text = runner.invoke(cli, ["tune", str(manifest), "-k", "which", "--shapes", "300",
                               "--backend", "emu", "--no-save"])  # fmt: skip
    assert text.exit_code == 0, text.output
    assert "which_0 block=128" in text.output and "tuning time per kernel: which_0" in text.output
    missing = runner.invoke(cli, ["tune", str(manifest), "-k", "nosuch", "--backend", "emu"])
    assert missing.exit_code == _abi.ExitCode.NOT_FOUND


def test_inspect_shows_the_choice_and_why(manifest: Path) -> None:
    tune(manifest, "which", {"which_1 block=256": 10.0}, (1000,))
    result = CliRunner().invoke(cli, ["inspect", "which", str(manifest)])
    assert result.exit_code == 0, result.output
    assert "V in ['0', '1']; block in [128, 256]: 2 instances, 4 candidates" in result.output
    assert "where 512 < len(out) <= 1024: which_1 block=256" in result.output
    assert "10.00 µs against the hand pick's 100.00 µs, 0.100x" in result.output
    assert "from the pyoxide tune's cache" in result.output


def test_a_tuned_tile_launches_its_own_grid(manifest: Path) -> None:
    """`tile = (64, ROWS)`: each instance's policy carries its own tile, and the candidate
    with 32-row tiles, chosen, covers every row (the hand pick's grid of 64-row tiles
    would leave half of them unwritten)."""
    mod = pyoxide.load(manifest, tuned=False)
    tiles = {e: mod[e].spec.launch.tile for e in ("flip_64", "flip_32")}
    assert tiles == {"flip_64": (64, 64, 1), "flip_32": (64, 32, 1)}
    report = tune(manifest, "flip", {"flip_32": 1.0}, (100, 70))
    (k,) = report["kernels"]
    assert {c["verdict"] for c in k["candidates"]} == {"passed"}
    assert k["candidates"][k["choice"]]["entry"] == "flip_32"
    x = np.random.default_rng(0).standard_normal((100, 70)).astype(np.float32)
    out = np.full((70, 100), np.nan, np.float32)
    pyoxide.load(manifest).flip(x, out)
    np.testing.assert_array_equal(out, x.T)


def test_a_row_kernel_tuned_to_fewer_blocks_than_rows_writes_every_row(manifest: Path) -> None:
    """A tuned ``blocks_per_sm`` of a row kernel: the candidate of 2 blocks a
    multiprocessor passes verification (its blocks walk the rows), is chosen, and plain
    calls then write every row."""
    report = tune(manifest, "row_scale", {"row_scale blocks_per_sm=2": 1.0}, (1000, 40))
    (k,) = report["kernels"]
    verdicts = {c["launch"]["blocks_per_sm"]: c["verdict"] for c in k["candidates"]}
    assert verdicts == {0: "passed", 2: "passed"}
    assert k["candidates"][k["choice"]]["launch"] == {"blocks_per_sm": 2}
    x = np.random.default_rng(0).standard_normal((1000, 40)).astype(np.float32)
    out = np.full_like(x, np.nan)
    mod = pyoxide.load(manifest)
    assert _tuned.tuned_for(mod.row_scale, (x, out)) is not None
    mod.row_scale(x, out)
    np.testing.assert_allclose(out, np.arange(1, 1001, dtype=np.float32)[:, None] * x, rtol=1e-6)


def test_a_row_kernels_blocks_per_sm_caps_its_grid_on_both_launch_paths(manifest: Path) -> None:
    """In its bucket a plain call launches min(rows, 2 × multiprocessors) blocks, the
    compiled launchers as the general path; outside it one block per row. An explicit
    grid of any size is taken: the kernel walks its rows."""
    fake = fake_cupy.FakeCuda()
    plant_choices(manifest, [{
        "kernel": "row_scale", "entry": "row_scale", "bucket": [1024, 64], "shape": [1000, 40],
        "device": fake.device_name, "arch": f"sm_{fake.compute_capability}",
        "launch": {"blocks_per_sm": 2},
    }])  # fmt: skip
    grids: dict[int, set[int]] = {}
    with native_installed(fake) as (_, driver):
        mod = pyoxide.load(manifest)
        for rows in (1000, 100, 2000, 1000, 100, 2000):
            x, out = FakeNdarray((rows, 40), "float32"), FakeNdarray((rows, 40), "float32")
            before = len(fake.launches) + len(driver.launches)
            mod.row_scale(x, out)
            (launch,) = (fake.launches + driver.launches)[before:]
            grids.setdefault(rows, set()).add(launch["grid"][0])
        mod.row_scale[7, 64](x, out)
        assert (fake.launches + driver.launches)[-1]["grid"][0] == 7
    assert driver.launches  # the compiled launchers took calls
    assert grids == {1000: {2 * fake.multiprocessors}, 100: {100}, 2000: {2000}}


GEMM_VARIANTS = ("gemm_bf16", "gemm_bf16_bf16")


def variant_hand_pick(name: str) -> Any:
    from pyoxide._manifest.reader import read_manifest

    kernels = read_manifest(sm90a_kernels_manifest()).kernels
    return next(k for k in _tune.hand_picks(kernels, bundled_specs()[name]))[1]


@pytest.mark.parametrize("name", GEMM_VARIANTS)
def test_a_tensor_map_variant_is_verified_on_tails_it_takes(name: str) -> None:
    """kernels_sm90a's GEMMs take rows of whole 16-byte TMA steps on aligned views (the
    rest go to the kernel they are variants of): their second case is 8 bf16 off each
    extent, aligned, in the same bucket; another kernel's stays one element off."""
    hand = variant_hand_pick(name)
    assert hand.variant_of == name and hand.tensor_maps
    spec = bundled_specs()[name]
    for shape, edge in [
        ((1024, 1024, 1024), (1016, 1016, 1016)),
        ((128, 4096, 4096), (120, 4088, 4088)),
    ]:
        case = Case(shape, "bf16", 0, 0)
        bucket = _tune_space.bucket_of(
            _tune_space.key_dims(hand), _tune._key_values(spec, hand, case)
        )
        cases = _tune._cases(spec, hand, case, bucket)
        assert [(c.shape, c.offset) for c in cases] == [(shape, 0), (edge, 0)]
    plain = next(k for k in pyoxide.load(tuned_kernels_manifest()).manifest.kernels)
    assert _tune._edge_step(spec, plain)[0] == 1


@pytest.mark.gpu
@requires_sm90("kernels_sm90a's GEMM variants run on sm_90 only")
@pytest.mark.parametrize("name", GEMM_VARIANTS)
def test_every_instance_of_a_gemm_variant_passes_the_tuners_verification(name: str) -> None:
    from pyoxide.bundled import load_sm90a

    module = load_sm90a(tuned=False)
    hand = next(k for k in module.manifest.kernels if k.entry == variant_hand_pick(name).entry)
    entry, _, _ = _tune.tune_shape(module, bundled_specs()[name], hand, "bf16", (200, 1024, 512),
                                   backend="cupy", timing=planted({}))  # fmt: skip
    verdicts = {c["entry"]: (c["verdict"], c["message"]) for c in entry["candidates"]}
    assert verdicts == dict.fromkeys(sm90_gemm_instances(name), ("passed", None))


def test_each_spec_is_tuned_in_the_first_crate_with_a_tune_kernel_for_it() -> None:
    """`pyoxide tune` and scripts/tune_bundled share the rule: the bundled specs whose
    plain calls run kernels_sm90a's #[tune] kernels on an sm_90 GPU (the GEMMs' variants,
    attention's served kernel) are tuned there, the rest in kernels_rs."""
    from pyoxide.bundled import load_bundled, load_sm90a

    rs, sm90a = load_bundled(tuned=False), load_sm90a(tuned=False)
    assert sm90a is not None
    specs = list(bundled_specs().values())
    groups = _tune.tuning_crates(specs, [rs, sm90a])
    by_crate = {m.manifest.crate_name: sorted(s.kernel for s in specs) for m, specs in groups}
    assert by_crate["kernels_sm90a"] == ["attention", "gemm_bf16", "gemm_bf16_bf16"]
    assert {"reduce_sum_f32", "softmax_rows", "layernorm_rows", "transpose", "sgemm"} <= set(
        by_crate["kernels_rs"]
    )
    assert _tune.tuning_crates(specs, [rs])[0][0] is rs


@pytest.mark.gpu
@requires_sm90("kernels_sm90a's GEMM variants run on sm_90 only")
def test_cli_tune_of_the_bundled_kernels_reaches_the_sm90a_variants() -> None:
    result = CliRunner().invoke(cli, ["tune", "-k", "gemm_bf16_bf16", "--shapes", "200x1024x512",
                                      "--backend", "cupy", "--no-save", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["crate"] == "kernels_sm90a"
    assert {k["kernel"] for k in report["kernels"]} == {"gemm_bf16_bf16_sm90_256_1_128"}
