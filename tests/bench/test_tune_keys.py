"""Tune keys over scalar parameters (``#[tune(key = [...])]``): the bucket rule
(pyoxide/_launch/tune_space.py), a fixture kernel keyed by scalars tuned on the emulator
(tests/fixtures/tuned_kernels), the planted wrong candidate refused under a scalar key,
the compiled launchers declining plain calls they cannot place, and attention's
sm_90a kernel, whose schedule is tuned per (head_dim, seqlen_k, causal)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import fake_cupy
from helpers.bundled import (
    bundled_specs,
    emu_kernels_manifest,
    sm90a_kernels_manifest,
)
from helpers.fake_launch import FakeNdarray, native_installed
from helpers.probes import requires_sm90
from helpers.tuning import cache_choices, plant_choices, planted, tune

import pyoxide
from pyoxide._launch import tune_space as _tune_space
from pyoxide._launch import tuned as _tuned
from pyoxide._manifest.reader import read_manifest
from pyoxide.bench import tune as _tune
from pyoxide.cli import cli
from pyoxide.spec import Case

#: Each test with a cache of its own (tests/bench/conftest.py).
pytestmark = pytest.mark.usefixtures("cache")


def test_a_scalar_key_buckets_by_value_and_a_bools_false_and_true_apart() -> None:
    dims = (_tune_space.KeyDim(0, None, "n"), _tune_space.KeyDim(2, None, "flag"))
    assert _tune_space.bucket_of(dims, [1000, (64,), True]) == (1024, 1)
    assert _tune_space.bucket_of(dims, [1000, (64,), False]) == (1024, 0)
    assert _tune_space.bucket_of(dims, [np.uint32(3), None, np.bool_(True)]) == (4, 1)
    assert [_tune_space.pow2_bucket(e) for e in (0, 1, 2, 3, 1025)] == [0, 1, 2, 4, 2048]
    assert _tune_space.takes(dims, (1024, 1), [600, None, True])
    assert not _tune_space.takes(dims, (1024, 1), [600, None, False])
    assert not _tune_space.takes(dims, (1024, 0), [600, None, True])
    assert not _tune_space.takes(dims, (1024, 1), [1025, None, True])
    # Not an integer, negative, or an array where a scalar is keyed: no bucket.
    for bad in ([2.5, None, True], [-1, None, True], [(3,), None, True], [None, None, True]):
        assert _tune_space.bucket_of(dims, bad) is None
    # The compiled launchers' rule reads array extents only.
    assert _tune_space.bucket_rule(dims, (1024, 1)) is None
    array = (_tune_space.KeyDim(0, 0, "n"),)
    assert _tune_space.bucket_rule(array, (0,)) is None
    assert _tune_space.bucket_rule(array, (8,)) == ((0, 0, 4, 8),)
    assert [_tune_space.bucket_text("causal", b) for b in (0, 1)] == [
        "causal == 0", "0 < causal <= 1"]  # fmt: skip


def test_the_manifest_records_the_key_and_key_dims_read_it(manifest: Path) -> None:
    mod = pyoxide.load(manifest, tuned=False)
    spec = mod.which_keyed.spec
    assert spec.tune is not None and spec.tune.key == ("size", "flag")
    assert _tune_space.key_dims(spec) == (
        _tune_space.KeyDim(0, None, "size"),
        _tune_space.KeyDim(1, None, "flag"),
    )
    assert mod["which_keyed_1"].spec.tune == spec.tune


def which_keyed(mod: Any, size: int, flag: bool) -> set[int]:
    out = np.zeros(64, np.uint32)
    mod.which_keyed(size, flag, out)
    return set(out.tolist())


def test_a_scalar_keyed_choice_runs_only_in_its_bucket(manifest: Path) -> None:
    report = tune(manifest, "which_keyed", {"which_keyed_1": 10.0}, (1000, 1))
    (k,) = report["kernels"]
    assert (k["bucket"], k["verified"]) == ([1024, 1], [[1000, 1], [999, 1]])
    mod = pyoxide.load(manifest)
    assert which_keyed(mod, 1000, True) == which_keyed(mod, 513, True) == {10128}
    assert which_keyed(mod, 1000, False) == {128}  # false and true: other buckets
    assert which_keyed(mod, 512, True) == which_keyed(mod, 1025, True) == {128}
    assert mod.which_keyed.picks(700, True, np.zeros(64, np.uint32)) == "which_keyed_1"
    assert mod.which_keyed.picks(700, False, np.zeros(64, np.uint32)) == "which_keyed_0"
    shown = CliRunner().invoke(cli, ["inspect", "which_keyed", str(manifest)])
    assert "V in ['0', '1']; key size, flag" in shown.output, shown.output
    assert "where 512 < size <= 1024, 0 < flag <= 1: which_keyed_1" in shown.output


def test_a_planted_wrong_candidate_is_never_chosen_under_a_scalar_key(manifest: Path) -> None:
    report = tune(manifest, "affine_keyed", {"affine_keyed_1": 1.0, "affine_keyed_0": 50.0},
                  (1000, 3))  # fmt: skip
    (k,) = report["kernels"]
    assert k["bucket"] == [4]
    verdicts = {c["entry"]: c["verdict"] for c in k["candidates"]}
    assert verdicts == {"affine_keyed_0": "passed", "affine_keyed_1": "failed"}
    assert k["candidates"][k["choice"]]["hand_pick"]
    mod = pyoxide.load(manifest)
    x, out = np.arange(1000, dtype=np.float32), np.zeros(1000, np.float32)
    assert _tuned.tuned_for(mod.affine_keyed, (3, x, out)) is None
    mod.affine_keyed(3, x, out)
    np.testing.assert_array_equal(out, 3 * x + 1)


def test_the_compiled_launchers_leave_scalar_keyed_plain_calls_to_the_general_path(
    manifest: Path,
) -> None:
    """Their bucket rule reads array extents: with a choice keyed by scalars, the plain
    calls go where variant_for decides (each runs the right instance, every time), and
    configured calls keep the compiled path."""
    fake = fake_cupy.FakeCuda()
    plant_choices(manifest, [{"kernel": "which_keyed_0", "entry": "which_keyed_1",
                              "bucket": [1024, 1], "device": fake.device_name,
                              "arch": f"sm_{fake.compute_capability}", "launch": {}}])  # fmt: skip
    with native_installed(fake) as (_, driver):
        mod = pyoxide.load(manifest)
        (variant,) = mod.tuned
        assert not variant.decides_in_compiled_code and variant.fast_plan.grid is None
        assert not mod.which_keyed.decides_in_compiled_code
        ran = []
        for size, flag in [(1000, True), (1000, False), (2000, True)] * 3:
            mod.which_keyed(size, flag, FakeNdarray((64,), "uint32"))
            ran.append(fake.launches[-1]["name"])
        assert driver.launches == []  # no plain call took the compiled path
        assert ran == ["which_keyed_1", "which_keyed_0", "which_keyed_0"] * 3
        for _ in range(3):
            mod.which_keyed[1, 64](1000, True, FakeNdarray((64,), "uint32"))
        assert driver.launches  # a configured call names its kernel: compiled


# --- attention's sm_90a kernel -------------------------------------------------------


def test_attention_sm90_is_tuned_per_head_dim_seqlen_k_and_causal() -> None:
    kernels = read_manifest(sm90a_kernels_manifest()).kernels
    spec = bundled_specs()["attention"]
    picks = _tune.hand_picks(kernels, spec)
    assert [(d, k.entry) for d, k in picks] == [
        ("bf16", "attention_sm90_bf16_0_0_192"), ("f16", "attention_sm90_f16_0_0_192")]  # fmt: skip
    hand = picks[0][1]
    every = {f"attention_sm90_bf16_{p}_{g}_{r}" for p in "01" for g in "012"
             for r in ("192", "128")}  # fmt: skip
    # The hand pick first, then its family in the manifest's (entry) order.
    assert [c.entry for c in _tune_space.candidates(kernels, hand)] == [
        hand.entry, *sorted(every - {hand.entry})]  # fmt: skip
    assert not any(k.name == "attention_sm90_pingpong" for k in kernels)
    dims = _tune_space.key_dims(hand)
    assert [d.name for d in dims] == ["head_dim", "seqlen_k", "causal"]
    # The bench grid's bucket: the call's own derived scalars, causal apart.
    for shape, bucket in [
        ((1, 16384, 16384, 16, 1, 1, 1, 0, 0), (128, 16384, 1)),
        ((8, 2048, 2048, 32, 1, 0, 0, 0, 0), (64, 2048, 0)),
    ]:
        case = Case(shape, "bf16", 0, 0)
        assert _tune_space.bucket_of(dims, _tune._key_values(spec, hand, case)) == bucket
        # Verified at a shape the float64 reference affords: S cut, everything else kept.
        (verify,) = _tune._cases(spec, hand, case, bucket)
        assert verify.shape == (min(shape[0], 2), 300, 300, *shape[3:])


@pytest.mark.gpu
@requires_sm90("kernels_sm90a's attention runs on sm_90 only")
def test_every_schedule_passes_the_tuners_verification_at_its_verify_shape() -> None:
    from pyoxide.bundled import load_sm90a

    module = load_sm90a(tuned=False)
    assert module is not None
    hand = module["attention_sm90_bf16_0_0_192"].spec
    shape = (1, 4096, 4096, 16, 1, 1, 1, 0, 0)
    entry, _, bucket = _tune.tune_shape(module, bundled_specs()["attention"], hand, "bf16", shape,
                                        backend="cupy", timing=planted({}))  # fmt: skip
    assert bucket == (128, 4096, 1) and entry["verified"] == [[1, 300, 300, 16, 1, 1, 1, 0, 0]]
    verdicts = {c["entry"]: (c["verdict"], c["message"]) for c in entry["candidates"]}
    every = [f"attention_sm90_bf16_{p}_{g}_{r}" for p in "01" for g in "012"
             for r in ("192", "128")]  # fmt: skip
    assert verdicts == dict.fromkeys(every, ("passed", None))


def test_a_candidate_instance_runs_through_the_calls_argument_preparation() -> None:
    """as_attention of one attention_sm90 instance runs exactly it: on the emulator (no
    sm_90 GPU) it refuses the call rather than run another kernel."""
    from pyoxide.bundled import load_sm90a
    from pyoxide.bundled.attention import as_attention
    from pyoxide.errors import ArgumentError

    module = load_sm90a(tuned=False)
    assert module is not None
    call = as_attention(module["attention_sm90_bf16_1_1_128"])
    spec = bundled_specs()["attention"]
    case = Case((1, 70, 70, 1, 1, 0, 0, 0, 0), "bf16", 0, 0)
    a = spec.inputs(case, np.random.default_rng(0))
    out = np.zeros_like(a["q"])
    with pytest.raises(ArgumentError, match="sm_90 device"):
        call(a["q"], a["k"], a["v"], out)


def test_the_attention_call_runs_the_schedule_tuned_for_its_bucket_on_a_fake_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a (fake) sm_90 GPU the call asks the hand pick's variant_for which instance runs:
    the choice in its (head_dim, seqlen_k, causal) bucket, the hand pick elsewhere; picks
    names it and the launch is of it, on the grid of that instance's tiles; a call with
    the same scalars after the hand pick's variants change runs the new choice. (The fake is
    a model of its own: a packaged manifest's choices for real sm_90 GPUs stay out.)"""
    monkeypatch.setenv("PYOXIDE_TUNED_FALLBACK", "0")
    from pyoxide.backends.cupy import CupyBackend
    from pyoxide.bundled.attention import add_attention

    class NoDriverMaps(CupyBackend):
        """The fake GPU has no driver to encode TMA maps: 128 zero bytes each."""

        encode_tensor_map = staticmethod(lambda *args: bytes(128))

    fake = fake_cupy.FakeCuda()
    sm90_manifest = sm90a_kernels_manifest()
    where = {"device": fake.device_name, "arch": f"sm_{fake.compute_capability}", "launch": {}}
    hand = "attention_sm90_f16_0_0_192"
    cache_choices(sm90_manifest, [
        {"kernel": hand, "entry": "attention_sm90_f16_1_0_192", "bucket": [128, 512, 1],
         **where},
        *({"kernel": hand, "entry": f"attention_sm90_f16_0_{g}_192", "bucket": [128, s, 0],
           **where} for s, g in ((2048, 1), (8192, 2))),
        {"kernel": hand, "entry": "attention_sm90_f16_0_0_128", "bucket": [64, 2048, 0],
         **where},
    ])  # fmt: skip

    def gpu_array(shape: tuple[int, ...], dtype: str) -> FakeNdarray:
        a = FakeNdarray(shape, dtype)
        fake.pointers[a.ptr] = (2, 0)  # cudaMemoryTypeDevice, device 0
        return a

    with native_installed(fake, backend_class=NoDriverMaps) as (cp, driver):
        # The few CuPy calls the attention call makes for its small arrays.
        cp.empty = lambda n, dtype: gpu_array((n,), dtype)
        cp.asarray = lambda a: gpu_array(a.shape, a.dtype.str)
        module = pyoxide.load(emu_kernels_manifest())
        sm90 = pyoxide.load(sm90_manifest)
        add_attention(module, lambda: sm90)

        def launch(*args: Any) -> tuple[str | None, Any]:
            """(kernel, grid) of the call's launch: an instance's first goes through the
            general path, its next ones through its compiled launcher."""
            compiled = len(driver.launches)
            module.attention(*args)
            fast = len(driver.launches) > compiled
            grid = (driver.launches if fast else fake.launches)[-1]["grid"]
            return pyoxide.backends.gpu().record.last, grid

        ran = {}
        for d, s, causal in [(128, 300, True), (128, 300, False), (128, 600, True),
                             (128, 300, True), (128, 2000, False), (128, 5000, False),
                             (64, 300, True), (64, 2000, False)]:  # fmt: skip
            q, k, v, out = (gpu_array((1, s, 4, d), "float16") for _ in range(4))
            picked = module.attention.picks(q, k, v, out, causal=causal)
            ran[(d, s, causal)] = (picked, *launch(q, k, v, out, causal))
        # The choice a call's scalars got is kept, and follows the hand pick's variants.
        q, k, v, out = (gpu_array((1, 300, 4, 128), "float16") for _ in range(4))
        sm90[hand].set_variants(())
        assert launch(q, k, v, out, True)[0] == hand
    # One block a tile and head, or (PERSISTENT = 1 or 2) one an SM, at most one a tile: 16 x
    # 4 tiles of 2000 rows, 40 x 4 of 5000 on the fake's 132 SMs. A tile is 128 rows at
    # d = 128, and D64_ROWS at d = 64: 192 for the hand pick, 128 for the choice at 2000.
    assert ran == {
        (128, 300, True): ("attention_sm90_f16_1_0_192", "attention_sm90_f16_1_0_192", (3, 4, 1)),
        (128, 300, False): (hand, hand, (3, 4, 1)),
        (128, 600, True): (hand, hand, (5, 4, 1)),
        (128, 2000, False): ("attention_sm90_f16_0_1_192", "attention_sm90_f16_0_1_192",
                             (64, 1, 1)),
        (128, 5000, False): ("attention_sm90_f16_0_2_192", "attention_sm90_f16_0_2_192",
                             (132, 1, 1)),
        (64, 300, True): (hand, hand, (2, 4, 1)),
        (64, 2000, False): ("attention_sm90_f16_0_0_128", "attention_sm90_f16_0_0_128",
                            (16, 4, 1)),
    }  # fmt: skip
