"""Kernel specs: what ``pyoxide verify`` checks and ``pyoxide bench`` measures.

A spec is plain Python next to the kernel: a crate's ``specs/*.py`` files each define
``SPECS``, a list of :class:`Spec` (the bundled kernels' are in ``kernels_rs/specs/``;
``pyoxide new`` writes one for its saxpy). A spec says, for one kernel:

- ``inputs(case, rng)``: the arguments that are not outputs, by parameter name (NumPy
  arrays and Python scalars), drawn for ``case`` (its shape and dtype);
- ``outputs``: each output parameter's shape (default: the case's) and dtype
  (:class:`Out`); verify fills them with poison (NaN, 0xDEADBEEF) or zeros (an
  accumulator) before each launch;
- ``reference(args, case)``: the expected outputs, computed in float64 NumPy;
- ``tolerance``: the largest accepted ‖got − want‖ / ‖want‖ (0: exact), a function of
  the case (:func:`exact_tol`, :func:`compound_tol`; default :func:`tol` of its dtype);
- ``bytes(case)`` and ``flops(case)``: what the kernel must move and compute, for the
  roofline (:func:`per_element` where that is a constant per element);
- ``shapes``: the case shapes (default :func:`sizes_1d`: 0, 1, primes, sizes around
  warp and block multiples, large; then random sizes), ``dtypes`` (the instances of a
  generic kernel), ``bench_shapes`` (what ``pyoxide bench`` times);
- optionally ``launch(kernel, args, case)`` (a kernel without a default launch),
  ``observe`` (what of the outputs is compared, when the kernel's result is only
  defined up to a transformation), ``scale`` (the size of the terms, when the result
  can cancel) and ``peers``: ``{name: factory}``, where ``factory(args)`` gets the
  GPU arguments (CuPy arrays, by parameter name) and returns a callable doing the same
  operation (PyTorch, CuPy, Triton ...; :func:`torch_peer` writes the PyTorch one), or
  a dict ``{name: callable}`` of several (pyoxide/bench/_peers.py's, which
  scripts/bench_kernels times too).

For ``pyoxide tune`` (pyoxide/bench/tune.py), optionally: ``serves``, the kernels that
run this kernel's calls besides its own instances and ``#[variant_of]`` kernels (a
dispatcher's, e.g. ``attention``'s sm_90a kernel, whose extra parameters the call
makes), tuned against this spec; ``derived(args, case)``, the values of the scalar
parameters the launch hook derives from the arrays (``inputs`` gives None for them),
which a scalar tune key (``#[tune(key = [...])]``) buckets by; and ``verify_shape(shape)``,
the shape a candidate is verified on instead of the tuned shape when that one is too
large for the float64 reference (the same flags, extents cut to a few hundred and not
multiples of the tiles; the candidate's own code still runs it); and ``sustained``: the
kernel is one the card's power limit binds in real use (a GEMM), so its candidates are
timed under sustained back-to-back load (pyoxide/bench/tune.py).

Kernels of one family share most of these: ``functools.partial(Spec, shapes=...,
tolerance=..., bench_shapes=...)`` gives them one home, and :meth:`Case.normal` draws
the usual inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Case",
    "Out",
    "Spec",
    "compound_tol",
    "exact_tol",
    "np_dtype",
    "per_element",
    "poison_value",
    "rel_err",
    "shapes_2d",
    "sizes_1d",
    "tol",
    "torch_peer",
]

Shape = tuple[int, ...]
Args = dict[str, Any]


def np_dtype(name: str) -> Any:
    """The NumPy dtype of a manifest element type name (bf16: ml_dtypes' bfloat16)."""
    from ._launch.arrays import numpy_dtype

    dt = numpy_dtype(name)
    if dt is None:
        raise ImportError(
            "bfloat16 cases need ml_dtypes (NumPy has no bfloat16): pip install ml_dtypes"
        )
    return dt


@dataclass(frozen=True)
class Case:
    """One verify case: a shape, an element type, an offset (1: every array is a view
    starting one element into its buffer, so nothing is 16-byte aligned) and the seed
    its data is drawn from."""

    shape: Shape
    dtype: str = "f32"
    offset: int = 0
    seed: int = 0

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def size(self) -> int:
        """The number of elements of the shape."""
        return math.prod(self.shape)

    @property
    def np_dtype(self) -> Any:
        return np_dtype(self.dtype)

    def normal(
        self,
        rng: np.random.Generator,
        *,
        scale: float = 1.0,
        shift: float = 0.0,
        shape: int | Shape | None = None,
    ) -> np.ndarray:
        """Standard normal data times `scale` plus `shift`, of the case's dtype and of its
        shape (or `shape`): the usual input of a float kernel."""
        x = rng.standard_normal(self.shape if shape is None else shape) * scale + shift
        return x.astype(self.np_dtype)

    def describe(self) -> str:
        dims = "×".join(str(d) for d in self.shape)
        view = ", misaligned views" if self.offset else ""
        return f"shape {dims}, {self.dtype}{view}, seed {self.seed}"


@dataclass(frozen=True)
class Out:
    """An output parameter: its shape for a case (None: the case's shape), its dtype
    (None: the case's) and how it starts: ``"poison"`` (every element must be written)
    or ``"zeros"`` (an accumulator the kernel adds to)."""

    shape: Callable[[Case], int | Shape] | None = None
    dtype: str | None = None
    init: str = "poison"

    def make(self, case: Case) -> np.ndarray:
        dt = np_dtype(self.dtype) if self.dtype else case.np_dtype
        shape = case.shape if self.shape is None else self.shape(case)
        if self.init == "zeros":
            return np.zeros(shape, dt)
        return np.full(shape, poison_value(dt), dt)


def _default_tolerance(case: Case) -> float:
    return tol(case.np_dtype) if case.np_dtype.kind == "f" else 0.0


@dataclass(frozen=True)
class Spec:
    """What a kernel computes and moves; see the module documentation."""

    kernel: str
    inputs: Callable[[Case, np.random.Generator], Args]
    outputs: Mapping[str, Out]
    reference: Callable[[Args, Case], dict[str, np.ndarray]]
    tolerance: Callable[[Case], float] = _default_tolerance
    bytes: Callable[[Case], int] | None = None
    flops: Callable[[Case], int] | None = None
    dtypes: tuple[str, ...] = ("f32",)
    shapes: Callable[[np.random.Generator, int], list[Shape]] | None = None
    bench_shapes: Sequence[Shape] = ()
    launch: Callable[[Any, list[Any], Case], None] | None = None
    observe: Callable[[dict[str, np.ndarray], Case], dict[str, np.ndarray]] | None = None
    scale: Callable[[Args, Case], dict[str, np.ndarray]] | None = None
    peers: Mapping[str, Callable[[Args], Any]] = field(default_factory=dict)
    misaligned: bool = True
    serves: tuple[str, ...] = ()
    derived: Callable[[Args, Case], Args] | None = None
    verify_shape: Callable[[Shape], Shape] | None = None
    sustained: bool = False

    def case_shapes(self, rng: np.random.Generator, count: int) -> list[Shape]:
        return (self.shapes or sizes_1d)(rng, count)


# --- shapes ------------------------------------------------------------------------

#: Sizes every 1-D kernel meets: empty, one element, primes (no block size divides
#: them), one off warp (32) and block (128, 256, 512, 1024) multiples, and large ones.
EDGE_SIZES = (
    0, 1, 2, 3, 4, 5, 7, 8, 13, 17, 31, 32, 33, 63, 64, 65, 97, 127, 128, 129, 255, 256,
    257, 509, 511, 512, 513, 1021, 1023, 1024, 1025, 2047, 2048, 2049, 4093, 4096, 4097,
    8191, 65537, 100_003, 262_147,
)  # fmt: skip


def sizes_1d(rng: np.random.Generator, count: int, *, largest: int = 1 << 17) -> list[Shape]:
    """The edge sizes, then sizes drawn log-uniformly up to `largest`, `count` in all
    (at least the edge sizes)."""
    out: list[Shape] = [(n,) for n in EDGE_SIZES]
    while len(out) < count:
        out.append((int(np.exp(rng.uniform(0, np.log(largest)))),))
    return out


#: Dimensions every 2-D kernel meets (tile and warp edges, primes).
EDGE_DIMS = (1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129)


def shapes_2d(
    rng: np.random.Generator, count: int, *, dims: int = 2, max_elems: int = 1 << 16
) -> list[Shape]:
    """Shapes of `dims` dimensions: each edge dimension against a random one (both
    ways), then random shapes, each with at most `max_elems` elements."""
    out: list[Shape] = []

    def fits(s: Shape) -> bool:
        return int(np.prod(s)) <= max_elems

    for d in EDGE_DIMS:
        for pos in range(dims):
            dims_ = [int(x) for x in rng.choice(EDGE_DIMS, dims)]
            dims_[pos] = d
            if fits(tuple(dims_)):
                out.append(tuple(dims_))
    while len(out) < count:
        s = tuple(int(np.exp(rng.uniform(0, np.log(300)))) for _ in range(dims))
        if fits(s):
            out.append(s)
    return out


# --- the tolerance policy --------------------------------------------------------------


def poison_value(dtype: Any) -> float | int:
    """NaN for floats, 0xDEADBEEF (cut to the width) for integers: an element the kernel
    never wrote shows up as NaN or as that pattern."""
    dt = np.dtype(dtype)
    if dt.kind == "f" or dt.name == "bfloat16":  # ml_dtypes' kind is "V"
        return np.nan
    return 0xDEADBEEF & ((1 << (8 * dt.itemsize)) - 1) if dt.kind == "u" else -0x21524111


def rel_err(got: Any, ref: Any, scale: Any = None) -> float:
    """‖got − ref‖ / ‖ref‖ in float64, after checking no poisoned (NaN) element is left.

    With `scale` (an array): ‖got − ref‖ over the larger of ‖ref‖ and ‖scale‖, the size of
    the terms the kernel combined. Where terms cancel (a*x + y near 0, relu of a small
    polynomial) float32 rounding is a fraction of the terms, not of the tiny result."""
    got = np.asarray(got, dtype=np.float64)
    assert np.isfinite(got).all(), "an output element was not written (NaN poison left)"
    ref = np.asarray(ref, dtype=np.float64)
    size = np.linalg.norm(ref)
    if scale is not None:
        size = max(size, np.linalg.norm(np.asarray(scale, dtype=np.float64)))
    return float(np.linalg.norm(got - ref) / max(size, 1e-300))


def exact_tol(case: Case) -> float:
    """The tolerance of a kernel that must match its reference exactly (copies,
    integer work)."""
    return 0.0


def compound_tol(case: Case) -> float:
    """:func:`tol` of the case's dtype for compound work (matrix products, softmax,
    normalisations, transcendental activations)."""
    return tol(case.np_dtype, compound=True)


def per_element(count: float) -> Callable[[Case], int]:
    """``bytes=`` or ``flops=`` of a kernel that moves (or computes) `count` per element
    of the case's shape: ``bytes=per_element(8)`` for a float32 map that reads one array
    and writes one."""
    return lambda case: int(count * case.size)


def tol(dtype: Any, *, compound: bool = False) -> float:
    """The one tolerance policy of pyoxide's kernels, for `rel_err` against float64:
    about 8 units of roundoff of `dtype` for elementwise work and sums; ten times that
    for compound work (matrix products, softmax, transcendental activations)."""
    dt = np.dtype(dtype)
    eps = 2.0**-7 if dt.name == "bfloat16" else float(np.finfo(dt).eps)
    return 8 * eps * (10 if compound else 1)


# --- peers -----------------------------------------------------------------------------


def torch_peer(op: Callable[..., Any], *names: str) -> Callable[[Args], Callable[[], Any]]:
    """A peer doing the operation in PyTorch: the arguments `names` (GPU arrays) become
    tensors (zero-copy, through DLPack) and each call runs ``op(torch, *tensors)``, e.g.
    ``torch_peer(lambda torch, x: torch.softmax(x, dim=-1), "x")``. PyTorch is imported
    when the peer is made, not with the spec."""

    def factory(args: Args) -> Callable[[], Any]:
        import torch

        tensors = [torch.from_dlpack(args[n]) for n in names]
        return lambda: op(torch, *tensors)

    return factory
