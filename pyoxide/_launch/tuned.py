"""Tuned choices at launch: a plain call of a tuned kernel runs what ``pyoxide tune``
chose for its GPU and its shapes, and the hand pick everywhere else.

A choice (:class:`~pyoxide._manifest.tune_spec.TunedChoice`, from the manifest that ``pyoxide
build --tuned`` wrote and from ``pyoxide tune``'s cache, pyoxide/_launch/tune_store.py) becomes a
:class:`TunedKernel`: the chosen entry with its tuned launch policy
(:func:`~pyoxide._launch.tune_space.tuned_spec`), installed as a variant of the hand-picked kernel
(pyoxide/_launch/variants.py's mechanism, after the ``#[variant_of]`` ones). So the one launch
decision stays :meth:`Kernel.variant_for <pyoxide._launch.kernel.Kernel.variant_for>` and its
compiled twin (a variant's launchers first): a TunedKernel takes a call when the call's key
extents fall in its bucket (:meth:`TunedKernel.takes`, and the ``bucket`` of its fast plan
for the compiled launchers) and it is the choice for the device (:meth:`TunedKernel.runs_on`,
:class:`Places`). Choices made on the emulator hold there, so the whole path is tested
without a GPU.

The choice for a device, per kernel and bucket, is the one tuned on its GPU model and
architecture; where its model has none there, the first one tuned on another model of the
same architecture (an H200's on an H100: same instruction set and tile shapes, and a
choice measured on a sibling is nearer the best than the hand pick, which is one guess
for every shape), unless ``PYOXIDE_TUNED_FALLBACK=0``. Both launch paths ask
:meth:`TunedKernel.runs_on` per device (the general path per call, the compiled one when
it builds a variant's launchers for a device), so they agree; the knob is a launch knob,
whose change drops the launchers built before it.

The compiled launchers' bucket test reads array extents only: a choice keyed by scalars
(``#[tune(key = [...])]``) cannot be told apart there, so its launchers take configured
calls only and the kernel it is a variant of sends its plain calls to the general path
(:attr:`TunedKernel.decides_in_compiled_code`), where :meth:`Kernel.variant_for` decides.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._manifest import abi as _abi
from .._manifest import knobs as _knobs
from .._manifest.tune_spec import TunedChoice
from . import tune_space as _tune_space
from .kernel import CodeLoader, Kernel

if TYPE_CHECKING:
    from .._manifest.reader import KernelSpec
    from ..backends import Backend
    from .arrays import ArrayView
    from .fastplan import FastPlan


class TunedKernel(Kernel):
    """The candidate a tuned choice picked, as a variant of the kernel it was tuned for."""

    variant_on_host = True

    def __init__(self, spec: KernelSpec, code: CodeLoader, choice: TunedChoice,
                 dims: tuple[_tune_space.KeyDim, ...], places: Places,
                 source: str = "") -> None:  # fmt: skip
        super().__init__(_tune_space.tuned_spec(spec, choice.launch), code)
        self.choice = choice
        #: Where the choice comes from: "shipped" (the crate's tuned.json), "manifest" or
        #: "cache" (pyoxide/_launch/tune_store.py's SOURCES).
        self.source = source
        self._dims = dims
        self._places = places

    def __repr__(self) -> str:
        c = self.choice
        also = f"; also on {self.lent_to}" if self.lent_to else ""
        return (f"<pyoxide.TunedKernel {c.label} for {c.kernel} on {c.device} ({c.arch}), "
                f"bucket {list(c.bucket)}{also}>")  # fmt: skip

    @property
    def lent_to(self) -> str:
        """The GPUs it runs on besides its own model, in words ("": none)."""
        return self._places.lends_to(self.choice)

    def borrowed_on(self, identity: tuple[str, str]) -> bool:
        """Whether it runs on a GPU of ``identity`` (model, architecture) as another
        model's choice: tuned elsewhere, chosen there because that model has none here."""
        return identity != (self.choice.device, self.choice.arch) and self._places.runs(
            self.choice, identity
        )

    def takes(self, args: Sequence[Any], views: Sequence[ArrayView | None]) -> bool:
        values = _tune_space.CallValues(args, views)
        return _tune_space.takes(self._dims, self.choice.bucket, values)

    @property
    def decides_in_compiled_code(self) -> bool:
        rule = _tune_space.bucket_rule(self._dims, self.choice.bucket)
        return rule is not None and super().decides_in_compiled_code

    def runs_on(self, backend: Backend, device: int) -> bool:
        identity = backend.device_identity(device)
        return self._places.runs(self.choice, identity) and super().runs_on(backend, device)

    @property
    def fast_plan(self) -> FastPlan | None:
        plan = super().fast_plan
        if plan is None:
            return None
        rule = _tune_space.bucket_rule(self._dims, self.choice.bucket)
        if rule is None:  # configured calls only: plain ones are variant_for's
            return dataclasses.replace(plan, grid=None)
        return dataclasses.replace(plan, bucket=rule)


class Places:
    """The choices one module installed, by (kernel, bucket, architecture), in the order
    they were listed: which of them runs on a device (:meth:`runs`)."""

    def __init__(self) -> None:
        self._by_place: dict[tuple[str, tuple[int, ...], str], list[TunedChoice]] = {}

    def add(self, choice: TunedChoice) -> None:
        key = (choice.kernel, choice.bucket, choice.arch)
        self._by_place.setdefault(key, []).append(choice)

    def runs(self, choice: TunedChoice, identity: tuple[str, str]) -> bool:
        """Whether ``choice`` is the one for a GPU of ``identity`` (model, architecture)
        at its kernel and bucket: the model's own, else (``PYOXIDE_TUNED_FALLBACK``) the
        first of another model of the architecture."""
        model, arch = identity
        if (choice.device, choice.arch) == identity:
            return True
        if choice.arch != arch or not _knobs.tuned_fallback():
            return False
        rivals = self._by_place.get((choice.kernel, choice.bucket, arch), [])
        if any(c.device == model for c in rivals):
            return False  # the model's own choice wins
        return bool(rivals) and rivals[0] is choice

    def lends_to(self, choice: TunedChoice) -> str:
        """Where ``choice`` runs besides its own model, in words ("" nowhere)."""
        rivals = self._by_place.get((choice.kernel, choice.bucket, choice.arch), [])
        if not rivals or rivals[0] is not choice or choice.arch == _abi.EMULATOR_ARCH:
            return ""
        if not _knobs.tuned_fallback():
            return ""
        return f"other {choice.arch} models without a choice of their own here"


def install(launchers: dict[str, Any], specs: Sequence[KernelSpec], code: CodeLoader,
            choices: Sequence[tuple[TunedChoice, str]]) -> list[TunedKernel]:  # fmt: skip
    """Wire each choice (with its source) whose kernel and entry this module has (and
    whose launch parameters the kernel still tunes) as a variant of its kernel; the rest
    are stale (another build's) and left out. Returns the variants made."""
    by_entry = {s.entry: s for s in specs}
    made: list[TunedKernel] = []
    places = Places()  # the choices installed: which of them runs on a device
    for choice, source in choices:
        kernel, placed = launchers.get(choice.kernel), placement(choice, by_entry)
        if not isinstance(kernel, Kernel) or placed is None:
            continue
        spec, dims = placed
        variant = TunedKernel(spec, code, choice, dims, places, source)
        places.add(choice)
        kernel.set_variants([*kernel.variants, variant])
        made.append(variant)
    return made


def placement(
    choice: TunedChoice, by_entry: dict[str, KernelSpec]
) -> tuple[KernelSpec, tuple[_tune_space.KeyDim, ...]] | None:
    """Where a build whose kernels are ``by_entry`` runs ``choice``: the instance and the
    key's extents its bucket is of; None when the build would not (another build's
    choice: its hand pick or instance gone or renamed, the instance outside the hand
    pick's family, a launch value or a key the kernel no longer has)."""
    spec, hand = by_entry.get(choice.entry), by_entry.get(choice.kernel)
    if spec is None or hand is None or not _fits(hand, choice):
        return None
    in_family = spec.tune is not None and (
        _tune_space.family_key(spec) == _tune_space.family_key(hand)
    )
    if spec is not hand and not in_family:
        return None
    dims = _tune_space.key_dims(hand)
    return (spec, dims) if len(dims) == len(choice.bucket) else None


def _fits(hand: KernelSpec, choice: TunedChoice) -> bool:
    """Whether the kernel still tunes every launch parameter the choice sets, to a value
    it still lists."""
    listed = dict(hand.tune.launch) if hand.tune is not None else {}
    return all(value in listed.get(name, ()) for name, value in choice.launch)


def tuned_for(kernel: Kernel, args: Sequence[Any]) -> TunedChoice | None:
    """The choice a plain call of ``kernel`` with ``args`` runs, or None (the hand pick,
    tuned or not, or a ``#[variant_of]`` kernel)."""
    variant = kernel.variant_for(args)
    if not isinstance(variant, TunedKernel) or variant.choice.keeps_hand_pick:
        return None
    return variant.choice
