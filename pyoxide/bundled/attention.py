"""``kernels.attention(q, k, v, out, causal=False, ...)``: attention forward in one call.

kernels_rs's ``attention`` (mma.sync, sm_80+, and the CPU emulator) and kernels_sm90a's
``attention_sm90`` (wgmma + TMA, sm_90) take the arrays as flat memory plus their
strides, so that (B, S, H, D), (B, H, S, D) and strided views of either run with no
copy. This module is the one place that turns shaped arrays into those arguments
(the checks and scalars are pyoxide/bundled/_attention_args.py's) and picks the kernel:

- ``attention_sm90`` where it runs: every array on a GPU of compute capability 9.0,
  q, k, v and out 16-byte aligned with row, head and batch strides that are multiples
  of 8 elements (TMA's rules; the kernel's 16-byte stores). Its TMA tensor maps are
  made here (the CuPy backend's ``cuTensorMapEncodeTiled``) and kept per arrays. Its
  consumers' schedule, its grid and its tile at d = 64 are tuned (``#[tune(PINGPONG =
  [0, 1], PERSISTENT = [0, 1, 2], D64_ROWS = [192, 128], key = [head_dim, seqlen_k,
  causal])]``): the instance runs that ``pyoxide tune`` chose for this GPU and this
  call's bucket of the key, found by the hand pick's ``variant_for`` with the launch's
  arguments (pyoxide/_launch/tuned.py), else the hand pick (``PINGPONG = 0``,
  ``PERSISTENT = 0``: a block a tile, 1 and 2 a block an SM; ``D64_ROWS = 192``: three
  consumer warpgroups at d = 64, 128 two);
- ``attention`` everywhere else (other GPUs, the CPU emulator, other views).

Which kernel a call would run: :meth:`Attention.picks`. A call with an explicit
configuration (``kernels.attention_bf16[grid, block](...)``) is the plain kernel, with
the kernel's own parameters. :func:`as_attention` of one ``attention_sm90`` instance is
the call that runs that instance wherever the sm_90a kernel can (how ``pyoxide tune``
verifies and times each candidate through the spec's launch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .. import backends
from .._launch.arrays import GPU
from .._launch.module import Module
from .._manifest import knobs as _knobs
from ._attention_args import DTYPES, ArrayLib, Options, Plan, array_view, plan, refuse, span
from ._attention_repeat import KEPT, Kept, Repeat, plain_key

#: kernels_rs's launch: query rows per block (ATTENTION_BM) and threads.
PLAIN_BM, PLAIN_THREADS = 64, 128
#: kernels_sm90a's launch: query rows a tile at d = 128 (ATTENTION_SM90_BM_D128; at d = 64
#: the instance's tuned D64_ROWS), ATTENTION_SM90_THREADS and _SHARED_BYTES (the kernel
#: asserts it got that much shared memory; a test checks these against the Rust).
SM90_BM_D128, SM90_THREADS, SM90_SHARED_BYTES = 128, 512, 197_712
#: The kernel parameters the call derives from the arrays (a spec passes None for them;
#: ``maps``, the sm_90a kernel's tensor maps).
DERIVED = (
    "q_strides", "k_strides", "v_strides", "out_strides", "lse_strides",
    "batch", "heads", "kv_heads", "head_dim", "seqlen_q", "seqlen_k", "maps",
)  # fmt: skip
#: kernels_sm90a's kernel (its hand-picked instances, one per dtype, are its launcher's).
SM90_KERNEL = "attention_sm90"
_MAPS_KEPT = 64
#: Tuned choices kept per (instance, device, scalar arguments) (Attention._choice).
_CHOICES_KEPT = 256
#: The arrays of a plain call that are the caller's (a kept launch makes their flat views
#: again), and the absent ones with the dtype of their zero-size stand-ins.
_OWN = ("q", "k", "v", "out")
_ABSENT = {"lse": "float32", "cu_seqlens_q": "int32", "cu_seqlens_k": "int32"}


def add_attention(module: Module, load_twins: Callable[[], Module | None]) -> None:
    """Serve ``attention`` and its instances in ``module`` through :class:`Attention`."""
    if "attention" not in module:
        return
    plain = {t: module[f"attention_{t}"] for t in DTYPES.values()}
    twins = _Twins(load_twins)
    for name in ("attention", *(f"attention_{t}" for t in DTYPES.values())):
        module.serve(name, Attention(name, module[name], plain, twins))


def as_attention(kernel: Any) -> Attention:
    """`kernel` as the attention call: itself when it is one (``kernels.attention``); the
    call around one instance of kernels_sm90a's ``attention_sm90`` (any of its tuned
    schedules), which runs exactly that instance and refuses calls it cannot take; or
    the call around one plain instance (``attention_bf16`` of a module loaded with
    :func:`pyoxide.load`, which has no sm_90a twin)."""
    if isinstance(kernel, Attention):
        return kernel
    dtype = kernel.spec.params[0].type
    if kernel.spec.name == SM90_KERNEL:
        return Attention(kernel.name, kernel, {}, _Twins(lambda: None, fixed=kernel))
    return Attention(kernel.name, kernel, {dtype: kernel}, _Twins(lambda: None))


def derived_scalars(q: Any, k: Any, v: Any, out: Any, **options: Any) -> dict[str, int]:
    """The integer parameters a call with these arguments derives from the arrays (of
    :data:`DERIVED`), by the call's own checks: what a scalar tune key reads (NumPy
    arrays do; nothing is launched)."""
    p = plan(SM90_KERNEL, q, k, v, out, Options(**options))
    names = ("batch", "heads", "kv_heads", "head_dim", "seqlen_q", "seqlen_k")
    return {n: int(getattr(p, n)) for n in names}


class Launch(NamedTuple):
    """The launch a call makes: ``kernel[grid, block, shared_mem](*args)``."""

    kernel: Any
    grid: tuple[int, int, int]
    block: int
    shared_mem: int
    args: list[Any]


class _Twins:
    """kernels_sm90a, loaded the first time a call could use it, with the tensor maps
    made so far and which devices are sm_90; or one ``fixed`` instance, the only kernel
    the call runs."""

    def __init__(self, load: Callable[[], Module | None], fixed: Any = None) -> None:
        self._load = load
        self.fixed = fixed
        self._module: Module | None = None
        self._tried = False
        self.maps: Kept[tuple[Any, ...], Any] = Kept(_MAPS_KEPT)
        self.cc90: dict[int, bool] = {}
        #: The instance each (hand pick, device, scalar arguments) ran, with the hand
        #: pick's variants and the knob generation it was chosen under.
        self.choices: Kept[tuple[Any, ...], tuple[Any, int, Any]] = Kept(_CHOICES_KEPT)

    def module(self) -> Module | None:
        if not self._tried:
            self._tried = True
            self._module = self._load()
        return self._module


class Attention:
    """The attention call (module docs); ``name`` is the launcher it serves."""

    def __init__(self, name: str, raw: Any, plain: dict[str, Any], twins: _Twins) -> None:
        self.name = name
        self._raw = raw
        self._plain = plain
        self._twins = twins
        #: The launches of plain calls, for calls made again.
        self._repeats: Kept[Any, Repeat] = Kept(KEPT)

    def __repr__(self) -> str:
        return f"<pyoxide attention call {self.name} | attention_sm90 (sm_90a)>"

    def __getitem__(self, config: Any) -> Any:
        return self._raw[config]

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by reference, as the launcher its module serves (pyoxide/_launch/handles.py)."""
        from .._launch.handles import reduce_launcher

        return reduce_launcher(self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def __call__(
        self, q: Any, k: Any, v: Any, out: Any, causal: bool = False, *, scale: float | None = None,
        lse: Any = None, cu_seqlens_q: Any = None, cu_seqlens_k: Any = None,
        max_seqlen_q: int | None = None, max_seqlen_k: int | None = None, layout: str = "bshd",
    ) -> None:  # fmt: skip
        """``out = softmax(scale · q·kᵀ + mask) · v`` (docs/guide/attention.md).

        q (B, Sq, H, D), k and v (B, Sk, Hk, D), out like q (``layout="bhsd"``: heads
        before rows), bf16 or f16, D 64 or 128, H a multiple of Hk; any strides with d
        contiguous. ``causal``: row i sees keys j <= i + Sk - Sq. ``scale``: default
        1/sqrt(D). ``lse``: an f32 (B, H, Sq) array to receive each row's log-sum-exp.
        Variable lengths: q (total_q, H, D) and k, v (total_k, Hk, D) packed, with int32
        ``cu_seqlens_q``/``_k`` of B + 1 offsets (lse then (H, total_q)); the longest
        sequences (``max_seqlen_q``/``_k``) are read from them when not given."""
        key = None  # a plain call's (no lse, no offsets): its launch is kept for the next
        plain = lse is None and cu_seqlens_q is None and cu_seqlens_k is None
        if plain and max_seqlen_q is None and max_seqlen_k is None:
            key = plain_key((q, k, v, out), causal, scale, layout)
        launch = None if key is None else self._again(key, (q, k, v, out))
        if launch is None:
            options = Options(causal, scale, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                              max_seqlen_k, layout)  # fmt: skip
            launch = self._launch(q, k, v, out, options, key)
        if launch is not None:
            launch.kernel[launch.grid, launch.block, launch.shared_mem](*launch.args)

    def picks(self, q: Any, k: Any, v: Any, out: Any, **options: Any) -> str:
        """The kernel entry a call with these arguments runs ("" when it runs none)."""
        launch = self.plan(q, k, v, out, **options)
        return "" if launch is None else str(launch.kernel.name)

    def plan(self, q: Any, k: Any, v: Any, out: Any, **options: Any) -> Launch | None:
        """The launch a call with these arguments makes (None: it launches nothing), for
        code that launches it itself (a CUDA graph, a benchmark of a variant)."""
        return self._launch(q, k, v, out, Options(**options))

    def _again(self, key: Any, arrays: tuple[Any, Any, Any, Any]) -> Launch | None:
        """The launch kept for a plain call with this key (pyoxide/bundled/_attention_repeat.py),
        with this call's arrays; None when none is kept or it is stale: the GPU backend
        changed, or the tuned choice might have (the knobs, the hand pick's variants)."""
        kept = self._repeats.get(key)
        if kept is None:
            return None
        if kept.backend is not None and backends.gpu() is not kept.backend:
            return None
        if kept.twin is not None and not _choice_stands(kept.twin, kept.generation, kept.variants):
            return None
        return Launch(kept.kernel, kept.grid, kept.block, kept.shared_mem, kept.args_for(arrays))

    def _launch(
        self, q: Any, k: Any, v: Any, out: Any, options: Options, key: Any = None
    ) -> Launch | None:
        """The launch of a call, by the full checks; kept under `key` (a plain call's)."""
        p = plan(self.name, q, k, v, out, options)
        if p.batch == 0 or p.seqlen_q == 0 or p.heads == 0:
            return None
        first = p.tensors["q"].view
        # The library of the arrays the views hold (a CPU tensor's may be NumPy's, read
        # through DLPack), which is what the flat views are made of.
        lib = ArrayLib(first.obj)
        values = {n: lib.flat(t.view.obj, t.view) for n, t in p.tensors.items()}
        lse = options.lse
        given = {
            "lse": None if lse is None else lib.flat(lse, array_view(self.name, "lse", lse)),
            "cu_seqlens_q": options.cu_seqlens_q, "cu_seqlens_k": options.cu_seqlens_k,
        }  # fmt: skip
        # An absent one: a zero-size stand-in (the kernel reads none of it).
        values.update({n: lib.empty(first.obj, _ABSENT[n]) if x is None else x
                       for n, x in given.items()})  # fmt: skip
        values.update({
            "lse_strides": p.lse_strides, "batch": p.batch, "heads": p.heads,
            "kv_heads": p.kv_heads, "head_dim": p.head_dim, "seqlen_q": p.seqlen_q,
            "seqlen_k": p.seqlen_k, "scale": p.scale, "causal": bool(options.causal),
        })  # fmt: skip
        values.update({f"{n}_strides": t.strides for n, t in p.tensors.items()})
        found = self._twin(p)
        if found is not None:
            twin, device = found
            values["maps"] = self._tensor_maps(lib, p)
            args = [values[x.name] for x in twin.spec.params]
            # The schedule tuned for this GPU and this call's bucket, else the hand pick.
            kernel = twin if self._twins.fixed is not None else self._choice(twin, device, args)
            grid = self._sm90_grid(kernel, p, device)
            launch = Launch(kernel, grid, SM90_THREADS, SM90_SHARED_BYTES, args)
            if key is not None:
                self._keep(key, launch, lib, p, twin if self._twins.fixed is None else None)
            return launch
        kernel = self._plain.get(p.dtype)
        if kernel is None:
            if self._twins.fixed is not None:
                raise refuse(self.name, "q", "GPU arrays on an sm_90 device, 16-byte aligned "
                             "with strides of whole 8 elements", first.describe(),
                             "call kernels.attention, which runs another kernel there")  # fmt: skip
            raise refuse(self.name, "q", f"a {'/'.join(self._plain)} array", first.describe(),
                         "call kernels.attention, which takes both", kind=True)  # fmt: skip
        grid = (-(-p.seqlen_q // PLAIN_BM), p.heads, p.batch)
        args = [values[x.name] for x in kernel.spec.params]
        launch = Launch(kernel, grid, PLAIN_THREADS, 0, args)
        if key is not None:
            self._keep(key, launch, lib, p)
        return launch

    def _keep(self, key: Any, launch: Launch, lib: ArrayLib, p: Plan, twin: Any = None) -> None:
        """Keep a plain call's launch for the calls made again with its key, less the
        arrays that are the call's own (pyoxide/bundled/_attention_repeat.py); `twin`: the
        hand pick whose tuned choice it launches."""
        backend = None
        if any(t.view.kind == GPU for t in p.tensors.values()):
            backend = backends.gpu()  # asked already: the kernel's pick depends on its answers
        args: list[Any] = list(launch.args)
        flats: list[tuple[int, int, int]] = []
        empties: dict[str, list[int]] = {}
        for at, param in enumerate(launch.kernel.spec.params):
            if param.name in _OWN:
                args[at] = None
                flats.append((at, _OWN.index(param.name), span(p.tensors[param.name].view)))
            elif param.name in _ABSENT:
                args[at] = None
                empties.setdefault(_ABSENT[param.name], []).append(at)
        variants = None if twin is None else twin.variants
        self._repeats.keep(key, Repeat(
            launch.kernel, launch.grid, launch.block, launch.shared_mem, tuple(args), lib,
            tuple(flats), tuple((d, tuple(ats)) for d, ats in empties.items()), backend,
            twin, _knobs.launch_generation(), variants,
        ))  # fmt: skip

    # --- the sm_90a twin -----------------------------------------------------------

    def _twin(self, p: Plan) -> tuple[Any, int] | None:
        """kernels_sm90a's hand-picked instance for this call's dtype (or the fixed one)
        and the arrays' device, when it can run the call; else None."""
        t = p.tensors
        if any(x.view.kind != GPU for x in t.values()) or 0 in (t["q"].rows, t["k"].rows):
            return None  # (and a tensor map cannot describe an empty array)
        if any(x.view.ptr % 16 or any(s % 8 for s in x.strides) for x in t.values()):
            return None  # TMA: 16-byte aligned rows; the epilogue's 16-byte stores
        if any(0 in x.strides[1:] for x in t.values()):
            return None  # a broadcast (stride 0) row or head: no stride a map takes
        device = backends.gpu().device_of_pointer(t["q"].view.ptr)
        if device is None or not self._on_sm90(device):
            return None
        fixed = self._twins.fixed
        if fixed is not None:
            return (fixed, device) if fixed.spec.params[0].type == p.dtype else None
        module = self._twins.module()
        if module is None or SM90_KERNEL not in module:
            return None
        # Imported here: the launch runtime's native module is not built yet when the
        # wheel's build runs `pyoxide build --bundled`, which imports this package.
        from .._launch.kernel import GenericKernel

        generic = module[SM90_KERNEL]  # its hand picks, one per dtype
        hand_picks = generic.instances.values() if isinstance(generic, GenericKernel) else ()
        pick = next((k for k in hand_picks if k.spec.params[0].type == p.dtype), None)
        return None if pick is None else (pick, device)

    def _choice(self, twin: Any, device: int, args: list[Any]) -> Any:
        """``twin.variant_for(args) or twin``: the tuned choice for the call's bucket on
        ``device``, else the hand pick; kept per scalar arguments and device while the
        knobs and the hand pick's variants stay. The arrays do not enter the choice:
        every instance takes the same parameters, the arrays passed the checks above, and
        the launch checks them again. (Asking variant_for on every call described and
        packed every argument once more: about 0.15 ms of a call's 0.45, H100 host.)"""
        scalars = tuple(a for a, p in zip(args, twin.spec.params, strict=True) if not p.is_array)
        key = (twin.name, device, *scalars)
        kept = self._twins.choices.get(key)
        if kept is not None and _choice_stands(twin, kept[1], kept[2]):
            return kept[0]
        chosen = twin.variant_for(args) or twin
        self._twins.choices.keep(key, (chosen, _knobs.launch_generation(), twin.variants))
        return chosen

    def _sm90_grid(self, kernel: Any, p: Plan, device: int) -> tuple[int, int, int]:
        """One block a tile (``PERSISTENT = 0``; a tile is ``D64_ROWS`` rows at d = 64, 128
        at d = 128), or one block an SM of ``device`` walking the tiles (1 and 2, which
        number them differently: kernels_sm90a/src/attention_sm90_tiles.rs's ``Tiles``)."""
        instance = dict(kernel.spec.instance)
        rows = int(instance["D64_ROWS"]) if p.head_dim == 64 else SM90_BM_D128
        tiles = (-(-p.seqlen_q // rows), p.heads, p.batch)
        if instance.get("PERSISTENT", "0") == "0":
            return tiles
        return (min(tiles[0] * tiles[1] * tiles[2], backends.gpu().multiprocessors(device)), 1, 1)

    def _on_sm90(self, device: int) -> bool:
        known = self._twins.cc90.get(device)
        if known is None:
            known = self._twins.cc90[device] = backends.gpu().compute_capability(device) == 90
        return known

    def _tensor_maps(self, lib: ArrayLib, p: Plan) -> Any:
        """q's, k's, v's and out's 4-D TMA maps over (d, rows, heads, batch), boxes of 64 d
        by 128 rows (the loads) and by 64 rows (out's: a consumer warpgroup's store),
        kept per arrays (a map depends on addresses and extents, not on the data)."""
        batch = 1 if p.varlen else p.batch  # a packed batch is one entry: sequences are rows
        qkvo = [p.tensors[n] for n in ("q", "k", "v", "out")]
        key = (
            lib.name,
            p.head_dim,
            batch,
            *((x.view.ptr, x.strides, x.rows, x.heads) for x in qkvo),
        )
        maps = self._twins.maps.get(key)
        if maps is not None:
            return maps
        gpu = backends.gpu()
        raw = b""
        for x in qkvo:
            # A packed batch has no batch stride; TMA wants one for its extent of 1.
            b_stride = max(x.strides[1] * x.rows, 8) if p.varlen else x.strides[0]
            extents = (p.head_dim, x.rows, x.heads, batch)
            strides = (2 * x.strides[1], 2 * x.strides[2], 2 * b_stride)
            # 128 bytes of d by 128 rows (64 for out): the kernel's boxes
            box = (64, 64 if x is qkvo[3] else 128, 1, 1)
            raw += gpu.encode_tensor_map(self.name, x.view.ptr, extents, strides, box, 128, 2)
        maps = lib.device_bytes(raw, qkvo[0].view)
        self._twins.maps.keep(key, maps)
        return maps


def _choice_stands(twin: Any, generation: int, variants: Any) -> bool:
    """Whether a tuned choice made for `twin` under the launch knobs' `generation` and its
    `variants` then is still the one a call would get."""
    return _knobs.launch_generation() == generation and twin.variants == variants
