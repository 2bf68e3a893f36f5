"""``pyoxide tune``: for each tuned kernel with a spec and each shape, every candidate
(:func:`~pyoxide._launch.tune_space.candidates`) is verified against the spec, then timed, and
the fastest that passed is kept for the kernel's bucket on this GPU (pyoxide/_launch/tune_store.py).

- Verified first: a candidate runs the spec's case at the shape, and one more case in the
  same bucket (one off each extent, on misaligned views where the spec allows them),
  with poisoned outputs, guard bytes around every array and the inputs checked unchanged
  (pyoxide/verify/_case.py), against the float64 reference. Where the spec has a
  ``verify_shape`` (a tuned shape too large for its reference: attention's), the case is
  at the shape it gives instead, run by the same candidate; the report's ``verified``
  names the shapes. One that fails is reported and never timed, so never chosen.
- Timed through a seam (:data:`Timing`): on the GPU, the bench harness's CUDA events with
  the L2 flushed between repetitions (pyoxide/bench/_timing.py), or, for a spec marked
  ``sustained`` (GEMMs), samples of at least 200 ms of back-to-back calls, as a training
  loop runs them (at shapes whose calls take 20 µs or more: shorter ones back to back
  would time the host): the card's power limit then sets the clock, and it can reorder the
  candidates (H100, 128×14336×4096 under such load: the short runs' pick, 256-wide tiles,
  0.961× cuBLAS in one run, the 128-wide instance 0.983× in another); on the emulator, the wall
  clock (meaningless for a GPU, but it exercises everything else); tests plant their own.
- Chosen with a margin: another candidate replaces the hand pick only when it is faster
  by ``margin`` (3 %) in a second, confirming measurement of both, so noise does not
  turn into a slower choice. A hand pick kept is kept as a choice too (its entry, no
  launch values), so this GPU model's measurement holds its bucket against a choice
  another model made (pyoxide/_launch/tuned.py).

The result is a report (oxide-abi ``TuneReport``, ``pyoxide tune --json``) and the choices.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._launch import tune_space as _tune_space
from .._launch import tune_store as _tune_store
from .._launch.kernel import Kernel
from .._launch.tuned import tuned_for as tuned_for  # public here: what a plain call runs
from .._manifest import abi as _abi
from .._manifest.reader import KernelSpec
from .._manifest.tune_spec import TunedChoice
from ..spec import Case, Shape, Spec
from ..verify._case import Arrays, param_names, run_case

#: Microseconds of one call of ``run`` (a candidate at a shape), however measured.
Timing = Callable[[_tune_space.Candidate, Shape, Callable[[], None]], float]

#: How much faster (a fraction) another candidate must be to replace the hand pick.
DEFAULT_MARGIN = 0.03


def gpu_timing(reps: int = 20, warmup: int = 3) -> Timing:
    """CUDA events around each call, the L2 flushed between repetitions: the median."""
    from .. import backends
    from ._timing import Timer

    timer = Timer(backends.gpu().xp, reps, warmup, flush_l2=True)
    return lambda candidate, shape, run: timer.times(run).median * 1e3


def sustained_timing(samples: int = 2, target_ms: float = 200.0, lead_ms: float = 100.0) -> Timing:
    """Samples of at least ``target_ms`` of back-to-back calls after ``lead_ms`` of them
    (pyoxide/bench/_timing.py's ``SustainedTimer``): the median, for the specs marked
    ``sustained`` (GEMMs), whose ranking the card's power limit can change."""
    from .. import backends
    from ._timing import SustainedTimer

    timer = SustainedTimer(backends.gpu().xp, samples, target_ms, lead_ms)
    return lambda candidate, shape, run: timer.times(run).median * 1e3


#: The shortest call (µs, by the events' timing) timed under sustained load: a shorter
#: one back to back would come near the host's own cost a plain call (5-8 µs, the H100's
#: bench_gemm rows), time the launches rather than the GPU and leave every candidate
#: equal. 20 µs keeps 128×14336×4096 (48 µs under load), the shape that asked for it.
SUSTAINED_FROM_US = 20.0


def per_shape_timing(timing: Timing, sustained: Timing | None) -> Timing:
    """One shape's timing: ``sustained`` for all its calls when the first one timed runs
    at least :data:`SUSTAINED_FROM_US` a call by ``timing``, else ``timing`` (also
    scripts/tune_bundled's, for its table)."""
    if sustained is None:
        return timing
    chosen: Timing | None = None

    def per_shape(candidate: _tune_space.Candidate, shape: Shape, run: Callable[[], None]) -> float:
        nonlocal chosen
        if chosen is None:
            us = timing(candidate, shape, run)
            chosen = sustained if us >= SUSTAINED_FROM_US else timing
            if chosen is timing:
                return us
        return chosen(candidate, shape, run)

    return per_shape


def wall_timing(reps: int = 3) -> Timing:
    """The wall clock's median over ``reps`` calls after one (the emulator's)."""

    def timing(candidate: _tune_space.Candidate, shape: Shape, run: Callable[[], None]) -> float:
        run()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e6

    return timing


def hand_picks(kernels: Sequence[KernelSpec], spec: Spec) -> list[tuple[str, KernelSpec]]:
    """(dtype, the tuned kernel a plain call of that dtype names) for each of the spec's
    dtypes that has one: the spec's kernel, a ``#[variant_of]`` it, or a kernel the spec
    ``serves`` (each computes what the spec's kernel does, so its spec verifies it)."""
    out = []
    for dtype in spec.dtypes:
        for k in kernels:
            untuned = _tune_space.family_key(k)[1]
            if ((spec.kernel in (k.name, k.variant_of) or k.name in spec.serves)
                    and k.tune is not None
                    and _tune_space.is_hand_pick(k)
                    and (not untuned or dtype in (v for _, v in untuned))):  # fmt: skip
                out.append((dtype, k))
                break
    return out


def tuning_crates(specs: Sequence[Spec], modules: Sequence[Any]) -> list[tuple[Any, list[Spec]]]:
    """The specs grouped by the module that tunes each: the first of ``modules`` (in
    order) with a hand pick for it (:func:`hand_picks`); a spec none has is left out."""
    groups: dict[int, tuple[Any, list[Spec]]] = {}
    for spec in specs:
        module = next((m for m in modules if hand_picks(m.manifest.kernels, spec)), None)
        if module is not None:
            groups.setdefault(id(module), (module, []))[1].append(spec)
    return list(groups.values())


def _shapes(spec: Spec, sizes: Sequence[Shape] | None) -> list[Shape]:
    shapes = [tuple(s) for s in spec.bench_shapes]
    if sizes:
        ndim = len(shapes[0]) if shapes else 1
        shapes = [tuple(s) for s in sizes if len(s) == ndim] or shapes
    return shapes


def _memoized(spec: Spec) -> Spec:
    """``spec`` drawing each case's inputs, reference and error scale once (every
    candidate runs the same cases; at a bench shape each is a pass over the whole data)."""

    @functools.cache
    def inputs(case: Case) -> dict[str, Any]:
        return spec.inputs(case, np.random.default_rng(case.seed))

    @functools.cache
    def reference(case: Case) -> dict[str, np.ndarray]:
        return spec.reference(inputs(case), case)

    @functools.cache
    def scale(case: Case) -> dict[str, np.ndarray]:
        assert spec.scale is not None
        return spec.scale(inputs(case), case)

    return dataclasses.replace(
        spec, inputs=lambda case, rng: inputs(case), reference=lambda args, case: reference(case),
        scale=None if spec.scale is None else lambda args, case: scale(case),
    )  # fmt: skip


def _key_values(spec: Spec, kernel: KernelSpec, case: Case) -> list[Any]:
    """Each kernel parameter's array shape, or scalar value, for ``case`` (as
    :func:`~pyoxide._launch.tune_space.extents` takes them): the spec's inputs, with the
    values its launch derives (``Spec.derived``)."""
    values = {**spec.inputs(case, np.random.default_rng(case.seed)),
              **{n: o.make(case) for n, o in spec.outputs.items()}}  # fmt: skip
    if spec.derived is not None:
        values.update(spec.derived(values, case))
    return [np.shape(v) if isinstance(v := values.get(n), np.ndarray) else v
            for n in param_names(kernel)]  # fmt: skip


def _edge_step(spec: Spec, hand: KernelSpec) -> tuple[int, int]:
    """(how far off each extent the second case is, its view offset). One element, on
    misaligned views where the spec allows them; a kernel with tensor maps takes only
    rows of whole TMA steps (16 bytes) on aligned views (pyoxide/_launch/variants.py's
    check_mapped), and refuses the rest to the kernel it is a variant of, so its tails
    are one step off."""
    if not hand.tensor_maps:
        return 1, 1 if spec.misaligned else 0
    by_name = {p.name: p for p in hand.params}
    sizes = [_abi.SCALARS[by_name[m.array].type].size for m in hand.tensor_maps]
    return max(_abi.TMA_ALIGN_BYTES // s for s in sizes), 0


def _cases(spec: Spec, hand: KernelSpec, case: Case, bucket: tuple[int, ...] | None) -> list[Case]:
    """The spec's case at the tuned shape, and one more in its bucket: each extent one
    step off (:func:`_edge_step`) when that stays in the bucket. With the spec's
    ``verify_shape``, the one case at the shape it gives."""
    if spec.verify_shape is not None:
        return [Case(tuple(spec.verify_shape(case.shape)), case.dtype, 0, case.seed)]
    step, offset = _edge_step(spec, hand)
    edge = Case(tuple(max(step, d - step) for d in case.shape), case.dtype, offset, case.seed + 1)
    dims = _tune_space.key_dims(hand)
    if (
        edge.shape == case.shape
        or _tune_space.bucket_of(dims, _key_values(spec, hand, edge)) != bucket
    ):
        edge = Case(case.shape, case.dtype, offset, case.seed + 1)
    return [case] if edge == case else [case, edge]


class ShapeRun:
    """One shape of one kernel: the spec's arrays on the backend, and each candidate run
    on them as a plain call."""

    def __init__(self, spec: Spec, hand: KernelSpec, case: Case, backend: str) -> None:
        self.spec, self.case = spec, case
        host = spec.inputs(case, np.random.default_rng(case.seed))
        outs = {name: out.make(case) for name, out in spec.outputs.items()}
        xp: Any = np
        if backend == "cupy":
            from .. import backends

            xp = backends.gpu().xp
        self.dev = {k: xp.asarray(v) if isinstance(v, np.ndarray) else v
                    for k, v in {**host, **outs}.items()}  # fmt: skip
        self.args = [self.dev[n] for n in param_names(hand)]
        self.zeroed = [self.dev[n] for n, o in spec.outputs.items() if o.init == "zeros"]

    def runner(self, kernel: Kernel) -> Callable[[], None]:
        def run() -> None:
            for z in self.zeroed:  # an accumulator starts at 0 each time, as in bench
                z.fill(0)
            if self.spec.launch is not None:
                self.spec.launch(kernel, self.args, self.case)
            else:
                kernel(*self.args)

        return run


def tune_shape(
    module: Any, spec: Spec, hand: KernelSpec, dtype: str, shape: Shape, *,
    backend: str, timing: Timing, margin: float = DEFAULT_MARGIN, seed: int = 0,
    step: Callable[[str], None] = lambda label: None,
) -> tuple[dict[str, Any], TunedChoice | None, tuple[int, ...] | None]:  # fmt: skip
    """Verify and time every candidate of ``hand`` at ``shape``: (the report's entry, the
    choice: another candidate when it beat the hand pick by the margin, else the hand
    pick; the bucket)."""
    start = time.perf_counter()
    kernels = module.manifest.kernels
    by_entry = {k.entry: k for k in kernels}
    memo = _memoized(spec)
    case = Case(tuple(shape), dtype, 0, seed)
    dims = _tune_space.key_dims(hand)
    bucket = _tune_space.bucket_of(dims, _key_values(memo, hand, case))
    cases = _cases(memo, hand, case, bucket)
    arrays = Arrays(backend)
    run = ShapeRun(memo, hand, case, backend)
    results: list[dict[str, Any]] = []
    timed: dict[int, tuple[Kernel, float]] = {}
    for cand in _tune_space.candidates(kernels, hand):
        step(f"{cand.label} {'×'.join(map(str, shape))}")
        row: dict[str, Any] = {
            "entry": cand.entry, "launch": dict(cand.launch), "hand_pick": cand.hand_pick,
            "time_us": None, "message": None,
        }  # fmt: skip
        results.append(row)
        # A fresh launcher per candidate: no variants, no tuned choices of its own. The
        # hand pick runs as a plain call does (a row kernel's block follows its rows).
        launch = () if cand.hand_pick else cand.launch
        kernel = Kernel(_tune_space.tuned_spec(by_entry[cand.entry], launch), module.function)
        failure = next(
            (f"{c.describe()}: {o.failure.what}: {o.failure.message}" for c in cases
             if (o := run_case(kernel, kernel.spec, memo, c, arrays)).failure is not None),
            None,
        )  # fmt: skip
        if failure is not None:
            row.update(verdict="failed", message=failure)
            continue
        row.update(verdict="passed", time_us=timing(cand, case.shape, run.runner(kernel)))
        timed[len(results) - 1] = (kernel, row["time_us"])
    hand_at = next((i for i, r in enumerate(results) if r["hand_pick"]), 0)
    choice_at = _choose(results, timed, hand_at, margin, timing, case, run)
    entry: dict[str, Any] = {
        "kernel": hand.entry, "shape": list(shape), "bucket": list(bucket or ()),
        "verified": [list(c.shape) for c in cases],
        "seconds": round(time.perf_counter() - start, 3), "candidates": results,
        "choice": choice_at, "ratio": None,
    }  # fmt: skip
    hand_us = results[hand_at]["time_us"]
    if choice_at is not None and hand_us:
        entry["ratio"] = results[choice_at]["time_us"] / hand_us
    if choice_at is None or bucket is None:
        return entry, None, bucket
    return entry, choice_of(entry, *_identity(backend)), bucket


def choice_of(entry: dict[str, Any], device: str, arch: str) -> TunedChoice | None:
    """The choice a report's entry (one kernel at one shape, tuned on ``device`` of
    ``arch``) keeps; None where no candidate passed or the key has no bucket. The hand
    pick kept is a choice too (its entry, no launch values): this GPU model's own
    measurement, which another model's choice for the bucket must not replace
    (pyoxide/_launch/tuned.py's fallback)."""
    results, at = entry["candidates"], entry["choice"]
    if at is None or not entry["bucket"]:
        return None
    hand_at = next((i for i, r in enumerate(results) if r["hand_pick"]), 0)
    chosen = results[at]
    launch = () if at == hand_at else tuple(sorted(chosen["launch"].items()))
    return TunedChoice(
        kernel=entry["kernel"], device=device, arch=arch, bucket=tuple(entry["bucket"]),
        entry=chosen["entry"], launch=launch, time_us=chosen["time_us"],
        hand_us=results[hand_at]["time_us"] or 0.0, shape=tuple(entry["shape"]),
        candidates=len(results), rejected=sum(r["verdict"] == "failed" for r in results),
    )  # fmt: skip


def _choose(
    results: list[dict[str, Any]], timed: dict[int, tuple[Kernel, float]], hand_at: int,
    margin: float, timing: Timing, case: Case, run: ShapeRun,
) -> int | None:  # fmt: skip
    """The index of the candidate to keep: the fastest that passed, when it beats the hand
    pick by ``margin`` in a second measurement of both (else the hand pick); None when
    none passed."""
    if not timed:
        return None
    best = min(timed, key=lambda i: timed[i][1])
    if hand_at not in timed:
        return best  # the hand pick failed: the fastest that passed
    if best == hand_at:
        return hand_at
    labels = {
        i: _tune_space.Candidate(
            results[i]["entry"], tuple(results[i]["launch"].items()), results[i]["hand_pick"]
        )
        for i in (best, hand_at)
    }
    again = {i: timing(labels[i], case.shape, run.runner(timed[i][0])) for i in (hand_at, best)}
    for i, t in again.items():  # the better of the two measurements of each
        results[i]["time_us"] = min(results[i]["time_us"], t)
    if results[best]["time_us"] <= results[hand_at]["time_us"] * (1 - margin):
        return best
    return hand_at


def _identity(backend: str) -> tuple[str, str]:
    from .. import backends

    b = backends.get(backend)
    return b.device_identity(b.current_device())


def tune_crate(
    module: Any, specs: Sequence[Spec], *, backend: str, timing: Timing,
    sizes: Sequence[Shape] | None = None, margin: float = DEFAULT_MARGIN, save: bool = True,
    progress: Callable[[int], Callable[[str], None]] | None = None,
    sustained: Timing | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Tune every tuned kernel of ``specs`` at the specs' bench shapes (or ``sizes``), keep
    the choices in the cache (``save``) and return the report (tune-report.schema.json).
    The kernels of a spec marked ``sustained`` are timed by ``sustained`` where given
    (:func:`sustained_timing` on the GPU) at the shapes whose calls are long enough
    (:data:`SUSTAINED_FROM_US`), the others by ``timing``."""
    start = time.perf_counter()
    manifest = module.manifest
    work = [(spec, hand, dtype, shape)
            for spec in specs
            for dtype, hand in hand_picks(manifest.kernels, spec)
            for shape in _shapes(spec, sizes)]  # fmt: skip
    total = sum(len(_tune_space.candidates(manifest.kernels, hand)) for _, hand, _, _ in work)
    step = progress(total) if progress is not None else (lambda label: None)
    entries, choices, places = [], [], []
    device, arch = _identity(backend)
    saved = None
    for spec, hand, dtype, shape in work:
        timed_by = per_shape_timing(timing, sustained if spec.sustained else None)
        entry, choice, bucket = tune_shape(module, spec, hand, dtype, shape, backend=backend,
                                           timing=timed_by, margin=margin, step=step)  # fmt: skip
        entries.append(entry)
        if bucket is not None:
            places.append((hand.entry, device, arch, bucket))
        if choice is not None:
            choices.append(choice)
        if save:  # after each shape, so a search stopped later keeps what it measured
            saved = _tune_store.save(manifest, choices, places)
    return {
        "version": _abi.TUNE_REPORT_VERSION, "crate": manifest.crate_name,
        "key": _tune_store.tuning_key(manifest), "backend": backend, "device": device,
        "arch": arch, "saved": None if saved is None else str(saved),
        "seconds": round(time.perf_counter() - start, 3), "kernels": entries,
    }  # fmt: skip
