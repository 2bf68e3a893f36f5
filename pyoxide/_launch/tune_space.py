"""What a tuned kernel may run, and where a choice holds.

A kernel with ``#[tune(...)]`` (its :class:`~pyoxide._manifest.tune_spec.TuneSpec`) is a *family*:
its hand-picked instance (each tuned const at its first value), which plain calls name,
and its other instances (one entry each, like generic instances). A :class:`Candidate` is
one instance of the family with one combination of the tuned launch parameters;
:func:`candidates` lists them, the hand pick first, and :func:`tuned_spec` is the
manifest entry a candidate launches as (its launch policy with the tuned values).

A choice holds for a *bucket* of calls: :func:`key_dims` names the extents that matter
(the scalar parameters of ``#[tune(key = [...])]``, each one's value; else the
``#[shapes]`` names in order of first appearance; else the extents of the launch's
``over``), and :func:`bucket_of` rounds each up to a power of two (0 stays 0, so a bool
key's false and true fall in buckets 0 and 1). :func:`in_bucket` is the one test of
whether an extent is in a bucket. The same functions serve the tuner (where a measured
shape falls) and the launcher (whether a call is in a choice's bucket), and
:func:`bucket_rule` gives the compiled launchers the same test where it can be written
as theirs (array extents in nonzero buckets; None otherwise).
"""

from __future__ import annotations

import dataclasses
import itertools
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._manifest.reader import KernelSpec
from .._manifest.tune_spec import launch_text
from . import policy as _policy


def is_hand_pick(spec: KernelSpec) -> bool:
    """Whether plain calls name ``spec``: a kernel without tuned consts, or the instance
    whose tuned consts all have their first value."""
    if spec.tune is None:
        return True
    bound = dict(spec.instance)
    return all(bound.get(name) == values[0] for name, values in spec.tune.consts)


def family_key(spec: KernelSpec) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The kernel name and the untuned generic arguments: equal for a hand pick and the
    instances it is tuned among."""
    tuned = spec.tune.const_names if spec.tune is not None else frozenset()
    return spec.name, tuple((p, v) for p, v in spec.instance if p not in tuned)


@dataclass(frozen=True)
class Candidate:
    """One thing a tuned kernel may run: ``entry`` launched with ``launch`` (the tuned
    launch parameters; the policy's own values for the rest)."""

    entry: str
    launch: tuple[tuple[str, int], ...]
    hand_pick: bool

    @property
    def label(self) -> str:
        return f"{self.entry} {launch_text(self.launch)}".strip()


def family(kernels: Sequence[KernelSpec], spec: KernelSpec) -> list[KernelSpec]:
    """The instances ``spec`` (a hand pick) is tuned among, itself first."""
    key = family_key(spec)
    others = [k for k in kernels if k.tune is not None and k is not spec and family_key(k) == key]
    return [spec, *others]


def hand_launch(spec: KernelSpec) -> tuple[tuple[str, int], ...]:
    """The policy's own values of the tuned launch parameters (the hand pick's)."""
    if spec.tune is None or not spec.tune.launch:
        return ()
    policy = _policy.policy_of(spec)
    assert policy is not None  # the macro requires a policy for tuned launch parameters
    return tuple((name, int(getattr(policy, name))) for name, _ in spec.tune.launch)


def candidates(kernels: Sequence[KernelSpec], spec: KernelSpec) -> list[Candidate]:
    """Every candidate of the hand pick ``spec``: each instance of its family with each
    combination of tuned launch values; the hand pick (its own policy's values) first."""
    hand = hand_launch(spec)
    lists = [
        [(name, v) for v in values] for name, values in (spec.tune.launch if spec.tune else ())
    ]
    out = [Candidate(spec.entry, hand, True)]
    for member in family(kernels, spec):
        for combo in itertools.product(*lists):
            c = Candidate(member.entry, tuple(combo), member is spec and tuple(combo) == hand)
            if not c.hand_pick:
                out.append(c)
    return out


def tuned_spec(spec: KernelSpec, launch: Sequence[tuple[str, int]]) -> KernelSpec:
    """``spec`` (the entry a candidate runs) with its launch policy's tuned values: a tuned
    ``block`` of a row kernel is the block of every call (not only the largest)."""
    if not launch:
        return spec
    policy = _policy.policy_of(spec)
    assert policy is not None
    values: dict[str, Any] = dict(launch)
    changed = dataclasses.replace(policy, **values)
    if policy.kind == "block_per_row" and "block" in values:
        changed = dataclasses.replace(changed, least_block=values["block"])
    return dataclasses.replace(spec, launch=changed)


# --- buckets ---------------------------------------------------------------------


@dataclass(frozen=True)
class KeyDim:
    """One extent that places a call in a bucket: axis ``axis`` of parameter ``param``
    (a slice's length is its axis 0), or with ``axis`` None the value of the scalar
    parameter ``param``; called ``name``."""

    param: int
    axis: int | None
    name: str


def key_dims(spec: KernelSpec) -> tuple[KeyDim, ...]:
    """The extents a choice is kept per: the scalars of the kernel's tune key
    (``#[tune(key = [...])]``, in its order); else the shape contract's names in order
    of first appearance; without names, the extents of the launch's ``over``."""
    if spec.tune is not None and spec.tune.key:
        index = {p.name: i for i, p in enumerate(spec.params)}
        return tuple(KeyDim(index[name], None, name) for name in spec.tune.key)
    dims: list[KeyDim] = []
    seen: set[str] = set()
    for i, p in enumerate(spec.params):
        named = p.array.dims if p.array is not None else (p.length,)
        for axis, d in enumerate(named):
            if isinstance(d, str) and d not in seen:
                seen.add(d)
                dims.append(KeyDim(i, axis, d))
    if dims:
        return tuple(dims)
    policy = _policy.policy_of(spec)
    if policy is None:
        return ()
    over = spec.params[policy.over]
    name = over.name
    if over.array is None:
        return (KeyDim(policy.over, 0, f"len({name})"),)
    return tuple(KeyDim(policy.over, a, f"{name}.shape[{a}]") for a in range(over.array.rank))


def pow2_bucket(extent: int) -> int:
    """The power of two at or above ``extent`` (0 for 0: a bool's false and true, and
    an empty extent and one element, do not share a bucket)."""
    return 0 if extent <= 0 else 1 << (extent - 1).bit_length()


def in_bucket(extent: int, bucket: int) -> bool:
    """Whether ``extent`` falls in ``bucket`` (``pow2_bucket(extent) == bucket``)."""
    return extent == 0 if bucket == 0 else bucket // 2 < extent <= bucket


def bucket_text(name: str, bucket: int) -> str:
    """:func:`in_bucket` in words: ``512 < n <= 1024``, ``causal == 0``."""
    return f"{name} == 0" if bucket == 0 else f"{bucket // 2} < {name} <= {bucket}"


#: Per parameter of a call: an array's shape (a tuple), a scalar's value, or None.
KeyValues = Sequence[Any]


def extents(dims: Sequence[KeyDim], values: KeyValues) -> tuple[int, ...] | None:
    """The key extents of a call whose arguments have ``values`` (per parameter: an
    array's shape, a scalar's value, None when unknown); None when one is missing or is
    not an integer (a negative one has no bucket)."""
    out = []
    for d in dims:
        v = values[d.param] if d.param < len(values) else None
        if d.axis is None:
            if isinstance(v, tuple) or v is None or not _is_integer(v) or int(v) < 0:
                return None
            out.append(int(v))
        else:
            if not isinstance(v, tuple) or d.axis >= len(v):
                return None
            out.append(int(v[d.axis]))
    return tuple(out)


class CallValues(Sequence[Any]):
    """A call's :data:`KeyValues`, read only where a key dimension looks (a plain call
    asks each of a kernel's tuned choices in turn whether its bucket takes the call)."""

    __slots__ = ("args", "views")

    def __init__(self, args: Sequence[Any], views: Sequence[Any]) -> None:
        self.args, self.views = args, views

    def __len__(self) -> int:
        return min(len(self.args), len(self.views))

    def __getitem__(self, i: Any) -> Any:
        v = self.views[i]
        return self.args[i] if v is None else tuple(v.shape)


def _is_integer(v: Any) -> bool:
    if type(v) is int:
        return True
    return isinstance(v, numbers.Integral) or (
        hasattr(v, "dtype") and getattr(v, "shape", None) == () and v.dtype.kind in "biu"
    )


def bucket_of(dims: Sequence[KeyDim], values: KeyValues) -> tuple[int, ...] | None:
    found = extents(dims, values)
    return None if found is None else tuple(pow2_bucket(e) for e in found)


def takes(dims: Sequence[KeyDim], bucket: Sequence[int], values: KeyValues) -> bool:
    """Whether a call whose arguments have ``values`` (as :func:`extents`) is in ``bucket``."""
    found = extents(dims, values)
    return found is not None and all(in_bucket(e, b) for e, b in zip(found, bucket, strict=True))


def bucket_rule(
    dims: Sequence[KeyDim], bucket: Sequence[int]
) -> tuple[tuple[int, int, int, int], ...] | None:
    """The compiled launchers' form of a bucket: ``(param, axis, low, high)`` per key
    extent, taken when ``low < extent <= high``; None when that cannot say it (a scalar
    key, whose value the compiled rule does not read, or a bucket of 0)."""
    if any(d.axis is None for d in dims) or 0 in bucket:
        return None
    return tuple(
        (d.param, d.axis, b // 2, b)
        for d, b in zip(dims, bucket, strict=True)
        if d.axis is not None
    )
