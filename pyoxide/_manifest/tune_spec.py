"""Tuning as the manifest records it (oxide-abi ``crates/oxide-abi/src/tune.rs``): a
kernel's ``#[tune(...)]`` lists (:class:`TuneSpec`) and the tuned choices ``pyoxide build
--tuned`` puts in the manifest and ``pyoxide tune`` keeps in its cache
(:class:`TunedChoice`); the data and their readers. pyoxide/_launch/tune_space.py turns them
into candidates and buckets, pyoxide/_launch/tuned.py into launches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import abi as _abi
from .json_checker import JsonChecker


@dataclass(frozen=True)
class TuneSpec:
    """A kernel's ``#[tune(...)]``: tuned const generics with their values as written (the
    first is the hand pick), tuned launch parameters with theirs (the policy's own value
    is the hand pick), and the scalar parameters of its ``key`` (empty: its array
    extents place a call in a bucket; pyoxide/_launch/tune_space.py)."""

    consts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    launch: tuple[tuple[str, tuple[int, ...]], ...] = ()
    key: tuple[str, ...] = ()

    @property
    def const_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.consts)


@dataclass(frozen=True)
class TunedChoice:
    """For plain calls of ``kernel`` on a ``device`` of ``arch`` whose key extents fall in
    ``bucket``: run ``entry`` with the launch parameters ``launch``. The rest says why:
    the medians of the choice and of the hand pick (µs) at ``shape`` (the spec's), and the
    candidates timed and refused."""

    kernel: str
    device: str
    arch: str
    bucket: tuple[int, ...]
    entry: str
    launch: tuple[tuple[str, int], ...]
    time_us: float
    hand_us: float
    shape: tuple[int, ...] = ()
    candidates: int = 0
    rejected: int = 0

    @property
    def label(self) -> str:
        """``softmax_rows block=64``: the entry and its tuned launch parameters."""
        return f"{self.entry} {launch_text(self.launch)}".rstrip()

    @property
    def keeps_hand_pick(self) -> bool:
        """Whether it runs the hand pick: measured fastest (within the margin) on its GPU,
        kept so that another model's choice does not take the bucket there."""
        return self.entry == self.kernel and not self.launch

    @property
    def place(self) -> tuple[str, str, str, tuple[int, ...]]:
        """What a choice is kept per: kernel, GPU model, architecture, bucket."""
        return (self.kernel, self.device, self.arch, self.bucket)

    def as_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel, "device": self.device, "arch": self.arch,
            "bucket": list(self.bucket), "entry": self.entry, "launch": dict(self.launch),
            "time_us": self.time_us, "hand_us": self.hand_us, "shape": list(self.shape),
            "candidates": self.candidates, "rejected": self.rejected,
        }  # fmt: skip


def read_tune(
    c: JsonChecker, value: Any, w: str, params: Sequence[Any] = (), kind: str | None = None
) -> TuneSpec:
    """A kernel descriptor's ``tune`` (schema 9; ``key``, schema 11) of a kernel with
    ``params`` and a launch policy of ``kind``."""
    v = c.obj(value, w, [], ["consts", "launch", "key"])
    consts = []
    for i, k in enumerate(c.list_(v.get("consts", []), w + ".consts")):
        kw = f"{w}.consts[{i}]"
        k = c.obj(k, kw, ["param", "values"])
        values = tuple(
            c.str_(x, f"{kw}.values[{j}]") for j, x in enumerate(c.list_(k["values"], kw))
        )
        if not values:
            raise c.fail(kw + ".values", "at least one value")
        consts.append((c.str_(k["param"], kw + ".param"), values))
    launch = []
    for i, k in enumerate(c.list_(v.get("launch", []), w + ".launch")):
        kw = f"{w}.launch[{i}]"
        k = c.obj(k, kw, ["param", "values"])
        name = c.choice(k["param"], kw + ".param", list(_abi.TUNABLE_LAUNCH))
        ints = tuple(c.uint(x, f"{kw}.values[{j}]") for j, x in enumerate(c.list_(k["values"], kw)))
        zero = name == "blocks_per_sm" and kind in _abi.BLOCKS_PER_SM_ZERO_KINDS
        if not ints or (0 in ints and not zero):
            raise c.fail(kw + ".values", "at least one value, each at least 1")
        if name == "blocks_per_sm" and max(ints) > _abi.MAX_BLOCKS_PER_SM:
            raise c.fail(kw + ".values", f"each at most {_abi.MAX_BLOCKS_PER_SM}")
        launch.append((name, ints))
    key = tuple(
        c.str_(x, f"{w}.key[{i}]") for i, x in enumerate(c.list_(v.get("key", []), w + ".key"))
    )
    scalars = {p.name for p in params if p.kind == "scalar"}
    for i, name in enumerate(key):
        if name not in scalars:
            raise c.fail(f"{w}.key[{i}]", f"a scalar parameter of the kernel, not {name!r}")
    return TuneSpec(tuple(consts), tuple(launch), key)


_CHOICE_FIELDS = ("kernel", "device", "arch", "bucket", "entry", "launch", "time_us", "hand_us",
                  "shape", "candidates", "rejected")  # fmt: skip


def read_choice(c: JsonChecker, value: Any, w: str) -> TunedChoice:
    """One tuned choice (the manifest's ``tuned``, the cache's ``choices``)."""
    v = c.obj(value, w, list(_CHOICE_FIELDS))

    def number(key: str) -> float:
        x = v[key]
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not x >= 0:
            raise c.fail(f"{w}.{key}", f"expected a number of microseconds, got {x!r}")
        return float(x)

    launch = c.obj(v["launch"], w + ".launch", [], list(_abi.TUNABLE_LAUNCH))
    return TunedChoice(
        kernel=c.str_(v["kernel"], w + ".kernel"),
        device=c.str_(v["device"], w + ".device"),
        arch=c.str_(v["arch"], w + ".arch"),
        bucket=_uints(c, v["bucket"], w + ".bucket"),
        entry=c.str_(v["entry"], w + ".entry"),
        launch=tuple(sorted((k, c.uint(x, f"{w}.launch.{k}")) for k, x in launch.items())),
        time_us=number("time_us"),
        hand_us=number("hand_us"),
        shape=_uints(c, v["shape"], w + ".shape"),
        candidates=c.uint(v["candidates"], w + ".candidates"),
        rejected=c.uint(v["rejected"], w + ".rejected"),
    )


def _uints(c: JsonChecker, value: Any, w: str) -> tuple[int, ...]:
    return tuple(c.uint(x, f"{w}[{i}]", 64) for i, x in enumerate(c.list_(value, w)))


def read_choices(c: JsonChecker, value: Any, w: str) -> tuple[TunedChoice, ...]:
    choices = tuple(read_choice(c, x, f"{w}[{i}]") for i, x in enumerate(c.list_(value, w)))
    seen: dict[Any, int] = {}
    for i, choice in enumerate(choices):
        if choice.place in seen:
            raise c.fail(f"{w}[{i}]", f"a second choice for the place of {w}[{seen[choice.place]}]")
        seen[choice.place] = i
    return choices


def layered(*layers: Sequence[TunedChoice]) -> list[tuple[TunedChoice, int]]:
    """The choices of each layer with the index of the layer each comes from, a later
    layer's replacing an earlier one's at the same place (kernel, GPU, architecture,
    bucket)."""
    by_place: dict[Any, tuple[TunedChoice, int]] = {}
    for i, layer in enumerate(layers):
        for choice in layer:
            by_place[choice.place] = (choice, i)
    return list(by_place.values())


def merged(*layers: Sequence[TunedChoice]) -> tuple[TunedChoice, ...]:
    """:func:`layered`'s choices, without their layers."""
    return tuple(choice for choice, _ in layered(*layers))


def launch_text(launch: Mapping[str, int] | tuple[tuple[str, int], ...]) -> str:
    """``block=512 per_thread=16`` (empty: the policy's own)."""
    items = launch.items() if isinstance(launch, Mapping) else launch
    return " ".join(f"{k}={v}" for k, v in items)
