"""A plain attention call made again: the launch a checked call made, kept per everything
that decided it, so that the next call with arrays of the same geometry skips the checks
and derivations of pyoxide/bundled/attention.py (about two thirds of a call's host time,
tests/bundled/test_attention_call.py's fake GPU) and only makes its flat views.

What decides a plain call (no lse, no offsets): for each of q, k, v and out, what the
array protocols report (pyoxide/_launch/arrays.py's ``view``), read here straight from the
two libraries whose arrays the compiled launchers take: an exact ``torch.Tensor``'s dtype,
shape, strides, address, device, layout and requires_grad (all that its
``__cuda_array_interface__`` and pyoxide's bfloat16 reading look at), or an exact
``cupy.ndarray``'s dtype, shape, strides, address and device; and causal, scale and layout
with their types (``np.float32(0.125)`` and ``0.125`` are checked apart). The address is
in the key because the launch depends on it: 16-byte alignment and the driver's device of
the pointer pick the kernel, and the sm_90 kernel's tensor maps describe it. Every check
is a function of the key, so a call only ever gets the launch of one that passed them all
(nothing is kept for a refused call), and a call of any other kind of array, or with
lse or offsets, takes the full path each time.

What is kept holds no caller array: the flat views of q, k, v and out are made again for
each call (a kept view would keep the caller's memory alive), and the zero-size stand-ins
for the absent arrays are asked again (CuPy's are per current device, not in the key)."""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any, Generic, NamedTuple, TypeVar

#: Launches kept per attention call (keys of distinct geometry or address).
KEPT = 64

K = TypeVar("K")
V = TypeVar("V")

_scalar_types: frozenset[type] | None = None


def _scalars() -> frozenset[type]:
    """The types of causal and scale a key takes: Python's and NumPy's bools and real
    numbers (whose equality is their value), and None; made at the first call, not at
    ``import pyoxide``."""
    global _scalar_types
    if _scalar_types is None:
        import numpy as np

        _scalar_types = frozenset(
            {type(None), bool, int, float, np.bool_, np.float16, np.float32, np.float64}
        )
    return _scalar_types


def plain_key(arrays: tuple[Any, Any, Any, Any], causal: Any, scale: Any, layout: Any) -> Any:
    """The key of a plain call (module docs), or None when it has none: an array of
    another type, a causal or scale of another type, or attributes that fail to read
    (the full path then says what is wrong)."""
    kinds = _scalars()
    if type(causal) not in kinds or type(scale) not in kinds or type(layout) is not str:
        return None
    torch, cupy = sys.modules.get("torch"), sys.modules.get("cupy")
    tensor = getattr(torch, "Tensor", None) if torch is not None else None
    ndarray = getattr(cupy, "ndarray", None) if cupy is not None else None
    key: list[Any] = [type(causal), causal, type(scale), scale, layout]
    try:
        for x in arrays:
            cls = type(x)
            if cls is tensor:
                if not x.is_cuda:  # the emulator's: its views may be NumPy's (DLPack)
                    return None
                key.append((cls, x.dtype, x.shape, x.stride(), x.data_ptr(), x.device,
                            getattr(x, "layout", None), x.requires_grad))  # fmt: skip
            elif cls is ndarray:
                data = x.data
                key.append((cls, x.dtype, x.shape, x.strides, data.ptr, data.device_id))
            else:
                return None
        made = tuple(key)
        hash(made)
    except Exception:
        return None
    return made


class Repeat(NamedTuple):
    """A launch kept for its key: its arguments with None where a call's own arrays go."""

    kernel: Any
    grid: tuple[int, int, int]
    block: int
    shared_mem: int
    args: tuple[Any, ...]
    lib: Any  # the call's ArrayLib
    flats: tuple[tuple[int, int, int], ...]  # (argument, which of q k v out, elements)
    empties: tuple[tuple[str, tuple[int, ...]], ...]  # (a stand-in's dtype, its arguments)
    backend: Any  # the GPU backend the plan asked (None: host arrays)
    twin: Any  # the sm_90a hand pick whose tuned choice `kernel` is, else None
    generation: int  # the launch knobs' generation the choice was made in
    variants: Any  # and the hand pick's variants then

    def args_for(self, arrays: tuple[Any, Any, Any, Any]) -> list[Any]:
        args = list(self.args)
        lib = self.lib
        for at, which, n in self.flats:
            args[at] = lib.flat_elements(arrays[which], n)
        for dtype, ats in self.empties:  # one stand-in a dtype (lse's, the offsets' two)
            made = lib.empty(arrays[0], dtype)
            for at in ats:
                args[at] = made
        return args


class Kept(Generic[K, V]):
    """At most ``limit`` values by key, the least recently used dropped first: attention's
    kept launches, tensor maps and tuned choices."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._kept: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
        return kept

    def keep(self, key: K, value: V) -> None:
        self._kept[key] = value
        self._kept.move_to_end(key)
        if len(self._kept) > self._limit:
            self._kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)
