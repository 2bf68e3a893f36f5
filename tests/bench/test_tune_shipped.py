"""Tuned choices beyond the GPU they were tuned on: the knob that keeps a choice made on one
GPU model off the other models of its architecture (pyoxide/_launch/tuned.py; both launch
paths' table of which choice runs where is tests/bench/test_tune.py's) and what says a
choice is borrowed; the choices a crate ships in its source tree (its tuned.json,
pyoxide/_launch/tune_store.py), and scripts/ship_tuned, which writes that file from a
cache's tuned/ folder or a tune report. On the emulator
and a fake sm_90 GPU (tests/fixtures/tuned_kernels, whose tuned.json holds two choices
made on the emulator: which_0 block=256 for 512 < n <= 1024, which_1 block=128 for
1024 < n <= 2048)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import fake_cupy
from helpers.bundled import TUNED_KERNELS
from helpers.fake_launch import FakeNdarray, native_installed
from helpers.scripts import load_script
from helpers.tuning import H200, HAND, OWN, plant_choices, tune

import pyoxide
from pyoxide._launch import tune_store as _tune_store
from pyoxide.cli import cli

#: Each test with a cache of its own (tests/bench/conftest.py).
pytestmark = pytest.mark.usefixtures("cache")


def runs(mod: Any, fake: Any, driver: Any, n: int, calls: int = 3) -> set[tuple[str, int]]:
    """(entry, block) of each of ``calls`` plain calls of ``which`` over ``n`` elements:
    the first on the general path, the next on the compiled launchers it built."""
    names = {hash(e) & 0xFFFF: e for e in ("which_0", "which_1")}  # the fake's handles
    ran = set()
    for _ in range(calls):
        before = len(fake.launches), len(driver.launches)
        mod.which(FakeNdarray((n,), "uint32"))
        (launch,) = fake.launches[before[0] :] + driver.launches[before[1] :]
        ran.add((launch.get("name") or names[launch["f"]], launch["block"][0]))
    return ran


def test_turning_the_fallback_off_applies_at_the_next_launch(
    manifest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PYOXIDE_TUNED_FALLBACK is a launch knob: after its change and pyoxide.reload_knobs()
    (or any launch the general path makes) the compiled launchers built before it, the
    borrowed choice's too, step aside."""
    plant_choices(manifest, [{**H200, "launch": {"block": 256}}])
    fake = fake_cupy.FakeCuda()
    with native_installed(fake) as (_, driver):
        mod = pyoxide.load(manifest)
        assert runs(mod, fake, driver, 1000) == {("which_1", 256)}
        compiled = len(driver.launches)
        monkeypatch.setenv("PYOXIDE_TUNED_FALLBACK", "0")
        pyoxide.reload_knobs()
        assert runs(mod, fake, driver, 1000) == {HAND}
        monkeypatch.setenv("PYOXIDE_TUNED_FALLBACK", "1")
        pyoxide.reload_knobs()
        assert runs(mod, fake, driver, 1000) == {("which_1", 256)}
    assert compiled and len(driver.launches) > compiled


def test_a_borrowed_choice_says_so(manifest: Path) -> None:
    plant_choices(manifest, [{**H200, "launch": {"block": 256}},
                             {**OWN, "bucket": [2048], "launch": {"block": 128}}])  # fmt: skip
    fake = fake_cupy.FakeCuda()
    with native_installed(fake):
        lent, own = pyoxide.load(manifest).tuned
        assert "also on other sm_90 models without a choice of their own here" in repr(lent)
        assert lent.borrowed_on((OWN["device"], "sm_90")) and not own.borrowed_on(
            (OWN["device"], "sm_90")
        )
        shown = CliRunner().invoke(cli, ["inspect", "which", str(manifest)]).output
    assert "on NVIDIA H200 (sm_90) where 512 < len(out) <= 1024: which_1 block=256" in shown
    assert "runs here (Fake GPU): another model's choice" in shown
    assert shown.count("runs here") == 1  # the fake's own choice is not borrowed


def which_values(mod: pyoxide.Module, n: int) -> set[int]:
    out = np.zeros(n, np.uint32)
    mod.which(out)
    return set(out.tolist())


@pytest.mark.parametrize(
    ("from_source", "tuned", "expected"),
    [(True, True, [256, 10128, 128]), (False, True, [128, 128, 128]),
     (True, False, [128, 128, 128])],
    ids=["crate-folder", "manifest-file", "untuned"],
)  # fmt: skip
def test_a_module_built_from_its_crate_folder_runs_the_shipped_choices(
    manifest: Path, from_source: bool, tuned: bool, expected: list[int]
) -> None:
    """A build of the crate's folder (``pyoxide.load(crate)``) reads its tuned.json under the
    manifest's and the cache's choices; a manifest file alone does not (`pyoxide build`
    embeds the file: tests/bench/test_tune.py)."""
    mod = pyoxide.Module(pyoxide.read_manifest(manifest), tuned=tuned, from_source=from_source)
    sources = ["shipped", "shipped"] if from_source and tuned else []
    assert [v.source for v in mod.tuned] == sources
    assert [next(iter(which_values(mod, n))) for n in (1000, 2000, 3000)] == expected


@pytest.mark.parametrize("source", ["tuned-dir", "report"])
def test_ship_tuned_writes_the_choices_a_run_kept(
    manifest: Path, cache: Path, tmp_path: Path, source: str
) -> None:
    """scripts/ship_tuned from a copy of the cache's tuned/ folder or from the tune report:
    the file then holds the cache's choices (a kept hand pick included), replaces the
    file's at the places measured, leaves the others, and --check passes."""
    crate = tmp_path / "crate"
    crate.mkdir()
    (crate / "Cargo.toml").write_text('[package]\nname = "tuned-kernels"\nversion = "0.1.0"\n')
    old = _tune_store.read_shipped(TUNED_KERNELS, "tuned_kernels")
    _tune_store.write_shipped(crate, "tuned_kernels", "old", old)  # at 1024 and 2048
    reports = [tune(manifest, "which", {"which_1 block=256": 10.0}, (1000,)),
               tune(manifest, "which", {}, (3000,))]  # fmt: skip
    path = tmp_path / "report.json"
    path.write_text(json.dumps(reports))
    given = cache / _tune_store.TUNED_DIR if source == "tuned-dir" else path
    ship = load_script("ship_tuned").main
    args = ["--emulator", "--crate-dir", str(crate), str(given)]
    assert ship(args) == 0
    shipped = _tune_store.read_shipped(crate, "tuned_kernels")
    cached = _tune_store.cached_choices(pyoxide.read_manifest(manifest))
    by_place = {c.bucket: (c.entry, c.launch, c.keeps_hand_pick) for c in shipped}
    assert by_place == {(1024,): ("which_1", (("block", 256),), False),
                        (2048,): ("which_1", (("block", 128),), False),
                        (4096,): ("which_0", (), True)}  # fmt: skip
    assert set(cached) <= set(shipped)
    assert ship(["--check", *args]) == 0
    assert ship(["--check", "--fresh", *args]) == 1  # would drop the choice at 2048


@pytest.mark.parametrize("given", [True, False])
def test_ship_tuned_drops_the_choices_of_instances_the_build_lacks(
    manifest: Path, cache: Path, tmp_path: Path, given: bool
) -> None:
    """With --manifest, the file's choices of an instance that build does not have (a
    renamed one) go, the rest stay; without it (and a --crate-dir of its own) the file
    keeps them."""
    crate = tmp_path / "crate"
    crate.mkdir()
    (crate / "Cargo.toml").write_text('[package]\nname = "tuned-kernels"\nversion = "0.1.0"\n')
    old = _tune_store.read_shipped(TUNED_KERNELS, "tuned_kernels")  # at 1024 and 2048
    renamed = dataclasses.replace(old[0], entry="which_0_0", bucket=(8192,))
    _tune_store.write_shipped(crate, "tuned_kernels", "old", (*old, renamed))
    report = tmp_path / "report.json"
    report.write_text(json.dumps([tune(manifest, "which", {}, (3000,))]))
    ship = load_script("ship_tuned").main
    args = ["--emulator", "--crate-dir", str(crate), str(report)]
    assert ship([*args, *(["--manifest", str(manifest)] if given else [])]) == 0
    buckets = {c.bucket for c in _tune_store.read_shipped(crate, "tuned_kernels")}
    assert buckets == {(1024,), (2048,), (4096,)} | (set() if given else {(8192,)})
