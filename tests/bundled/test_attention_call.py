"""pyoxide/bundled/attention.py, the attention call, on the host: its copies of the kernels'
launch constants equal the Rust ones, every bad argument is refused before a launch
with an error that names the parameter and a fix (and pickles), and the emulator
refuses kernels_sm90a's attention by naming the instruction. What the kernels compute
is tests/kernels/test_attention.py and the spec, kernels_rs/specs/attention.py. On a fake
sm_90 GPU: a call from PyTorch tensors or CuPy arrays leaves the general launch path after
its first."""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from helpers import fake_cupy, fake_torch
from helpers.bundled import emu_kernels_manifest, sm90a_kernels_manifest
from helpers.fake_launch import FakeNdarray, general_bytes, native_installed, record_aligns

import pyoxide
from pyoxide.bundled import attention as _attention
from pyoxide.errors import ArgumentError, PyoxideError

REPO = Path(__file__).resolve().parents[2]
BF16 = ml_dtypes.bfloat16


def rust_consts(path: Path) -> dict[str, int]:
    found = re.findall(r"pub const (\w+): (?:u32|usize) = ([0-9_]+);", path.read_text())
    return {name: int(value.replace("_", "")) for name, value in found}


def test_the_launches_match_the_kernels() -> None:
    sm90 = rust_consts(REPO / "kernels_sm90a" / "src" / "attention_sm90.rs")
    assert sm90["ATTENTION_SM90_BM_D128"] == _attention.SM90_BM_D128
    assert sm90["ATTENTION_SM90_THREADS"] == _attention.SM90_THREADS
    assert sm90["ATTENTION_SM90_SHARED_BYTES"] == _attention.SM90_SHARED_BYTES
    plain = rust_consts(REPO / "kernels_rs" / "src" / "attention.rs")
    assert plain["ATTENTION_BM"] == _attention.PLAIN_BM
    assert plain["ATTENTION_THREADS"] == _attention.PLAIN_THREADS


@pytest.fixture(scope="module")
def attention() -> _attention.Attention:
    module = pyoxide.load(emu_kernels_manifest())
    _attention.add_attention(module, lambda: None)
    call = module.attention
    assert isinstance(call, _attention.Attention)
    return call


def arrays(b: int = 1, s: int = 8, h: int = 2, d: int = 64, dt: Any = BF16) -> list[np.ndarray]:
    return [np.zeros((b, s, h, d), dt) for _ in range(4)]


def bad_calls() -> list[tuple[str, str, Any]]:
    """(the parameter the error must name, what it must say, the call)."""
    q, k, v, o = arrays()
    q32 = q.astype(np.float32)
    q4, gqa = np.zeros((1, 8, 4, 64), BF16), np.zeros((1, 8, 3, 64), BF16)
    cu, far = np.array([0, 8], np.int32), np.array([0, 9], np.int32)
    cu64 = cu.astype(np.int64)
    packed = (q[0], k[0], v[0], o[0])
    lse = np.zeros((1, 8, 2), np.float32)
    return [
        ("q", "bfloat16 or float16", lambda f: f(q32, k, v, o)),
        ("k", "dtype of q", lambda f: f(q, k.astype(np.float16), v, o)),
        ("q", "head dimension 64 or 128", lambda f: f(*arrays(d=32))),
        ("q", "4-D", lambda f: f(q[0], k, v, o)),
        ("k", "divides", lambda f: f(q4, gqa, gqa, q4.copy())),
        ("out", "shape", lambda f: f(q, k, v, o[:, :4])),
        ("v", "shape", lambda f: f(q, k, v[:, :4], o)),
        ("q", "contiguous last", lambda f: f(q.transpose(0, 1, 3, 2)[..., :2, :], k, v, o)),
        ("causal", "bool", lambda f: f(q, k, v, o, causal=1)),
        ("scale", "positive", lambda f: f(q, k, v, o, scale=-1.0)),
        ("scale", "positive", lambda f: f(q, k, v, o, scale=True)),
        ("layout", "'bshd' or 'bhsd'", lambda f: f(q, k, v, o, layout="sbhd")),
        ("cu_seqlens_k", "both", lambda f: f(*packed, cu_seqlens_q=cu)),
        ("cu_seqlens_q", "int32", lambda f: f(*packed, cu_seqlens_q=cu64, cu_seqlens_k=cu)),
        ("cu_seqlens_q", "non-decreasing", lambda f: f(*packed, cu_seqlens_q=far, cu_seqlens_k=cu)),
        ("lse", "float32 array of shape (1, 2, 8)", lambda f: f(q, k, v, o, lse=lse)),
    ]  # fmt: skip


@pytest.mark.parametrize("case", range(len(bad_calls())))
def test_bad_arguments_are_refused_by_name(attention: _attention.Attention, case: int) -> None:
    param, says, call = bad_calls()[case]
    out = arrays()[3]
    out[...] = 7
    with pytest.raises(ArgumentError) as e:
        call(attention)
    err = e.value
    assert (err.kernel, err.param) == ("attention", param), err
    assert says in err.expected, err
    assert err.fix
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err)


def test_the_emulator_runs_the_plain_kernel(attention: _attention.Attention) -> None:
    q, k, v, o = arrays()
    assert attention.picks(q, k, v, o) == "attention_bf16"
    assert attention.picks(*arrays(dt=np.float16)) == "attention_f16"


def test_numpy_scalars_pass_as_python_ones(attention: _attention.Attention) -> None:
    """A scale and a causal flag that came out of NumPy (``np.float32(d ** -0.5)``,
    ``np.bool_``) run the call as the Python numbers do."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, 8, 2, 64)).astype(BF16) for _ in range(3))
    want, got = np.full_like(q, np.nan), np.full_like(q, np.nan)
    attention(q, k, v, want, True, scale=0.25)
    attention(q, k, v, got, np.bool_(True), scale=np.float32(0.25))
    assert np.isfinite(want.astype(np.float32)).all()
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    attention(q, k, v, got, np.bool_(False), scale=np.float64(0.25))
    assert not np.array_equal(got.view(np.uint16), want.view(np.uint16))  # causal was off


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cpu_tensors_run_on_the_emulator_as_numpy_arrays_do(
    attention: _attention.Attention, dtype: str
) -> None:
    """CPU PyTorch tensors reach the emulator through DLPack, as NumPy arrays for f16 (the
    call's flat views are then NumPy's) and as tensors for bf16, which NumPy lacks; both
    give the NumPy call's bits, on a first call and a repeated one."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    np_dtype = np.float16 if dtype == "float16" else BF16
    q, k, v = (rng.standard_normal((1, 8, 2, 64)).astype(np_dtype) for _ in range(3))
    want = np.full_like(q, np.nan)
    attention(q, k, v, want, True)
    as_tensor = lambda x: torch.from_numpy(x.view(np.uint16).copy()).view(  # noqa: E731
        getattr(torch, dtype)
    )
    tq, tk, tv = (as_tensor(x) for x in (q, k, v))
    for _ in range(2):
        out = torch.full(q.shape, float("nan"), dtype=getattr(torch, dtype))
        attention(tq, tk, tv, out, True)
        got = out.view(torch.int16).numpy().view(np.uint16)
        np.testing.assert_array_equal(got, want.view(np.uint16))


def test_the_emulator_refuses_the_wgmma_attention() -> None:
    """The sm_90a kernel stops at its first sm_90 instruction on the emulator, named."""
    sm90 = pyoxide.load(sm90a_kernels_manifest())
    q, k, v, o = (x.reshape(-1) for x in arrays())
    raw = np.zeros(4 * 128 + 64, np.uint8)
    at = -raw.ctypes.data % 64
    maps = raw[at : at + 4 * 128]
    e32, ef = np.zeros(0, np.int32), np.zeros(0, np.float32)
    strides = (8 * 2 * 64, 2 * 64, 64)
    config = ((1, 2, 1), _attention.SM90_THREADS, _attention.SM90_SHARED_BYTES)
    with pytest.raises(PyoxideError) as e:
        sm90.attention_sm90_bf16_0_0_192[config](
            q, k, v, maps, o, ef, e32, e32, strides, strides, strides, strides, (0, 0),
            1, 2, 2, 64, 8, 8, 0.125, False,
        )  # fmt: skip
    text = str(e.value)
    assert "is not emulated" in text and "sm_90 GPU" in text, text


class FakeSm90:
    """A fake sm_90 GPU with the native launcher on, and fake PyTorch beside it: the bundled
    attention call of a module loaded on it (its sm_90a twin untuned), its fake CUDA and
    driver, and the zero-size arrays the call made (by dtype)."""

    def __init__(self, fake: Any, driver: Any, module: Any, made: dict[Any, Any]) -> None:
        self.fake, self.driver, self.module, self._made = fake, driver, module, made
        self.emptied: list[str] = []

    def on_gpu(self, x: Any) -> Any:
        self.fake.pointers[x.ptr] = (2, 0)  # cudaMemoryTypeDevice, device 0
        return x

    def tensor(self, shape: Any, dtype: str, ptr: int | None = None, key: Any = None,
               **kw: Any) -> Any:  # fmt: skip
        """A fake tensor on the GPU; one per `key` (the call's small arrays: the same each
        call, as its bytes)."""
        if key in self._made:
            return self._made[key]
        t = self.on_gpu(fake_torch.Tensor(shape, dtype, ptr=ptr, **kw))
        self._made[key if key is not None else object()] = t
        return t

    def array(self, library: str, shape: Any, dtype: str = "float16", ptr: int | None = None,
              strides: Any = None, **kw: Any) -> Any:  # fmt: skip
        """q, k, v or out: a fake tensor or CuPy array (`strides` in elements)."""
        if library == "torch":
            return self.tensor(shape, dtype, ptr, strides=strides, **kw)
        dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
        if strides is not None:
            kw["strides"] = tuple(s * np.dtype(dt).itemsize for s in strides)
        return self.on_gpu(FakeNdarray(shape, dt, ptr=ptr, **kw))


@pytest.fixture
def sm90(monkeypatch: pytest.MonkeyPatch) -> Any:
    from pyoxide.backends.cupy import CupyBackend

    class NoDriverMaps(CupyBackend):
        encode_tensor_map = staticmethod(lambda *args: bytes(128))  # no driver to encode

    fake = fake_cupy.FakeCuda()
    made: dict[Any, Any] = {}
    with native_installed(fake, backend_class=NoDriverMaps) as (cp, driver), \
            fake_torch.installed() as torch:  # fmt: skip
        module = pyoxide.load(emu_kernels_manifest())
        gpu = FakeSm90(fake, driver, module, made)
        monkeypatch.setattr(fake_torch.Tensor, "as_strided", lambda t, shape, strides: gpu.tensor(
            shape, t.dtype.name, t.ptr, ("flat", t.ptr)), raising=False)  # fmt: skip
        torch.empty = lambda n, dtype, device: gpu.emptied.append(dtype.name) or gpu.tensor(
            n, dtype.name, key=dtype.name)  # fmt: skip
        torch.frombuffer = lambda raw, dtype: type("Host", (), {
            "to": lambda self, device: gpu.tensor(len(raw), "uint8", key="maps")})()  # fmt: skip
        empty = cp.empty
        cp.empty = lambda n, dtype: gpu.emptied.append(np.dtype(dtype).name) or empty(n, dtype)
        cp.asarray = lambda host: made.setdefault("maps", gpu.on_gpu(FakeNdarray(host.shape, "u1")))
        sm90 = pyoxide.load(sm90a_kernels_manifest(), tuned=False)
        _attention.add_attention(module, lambda: sm90)
        yield gpu


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_a_plain_call_takes_the_compiled_launcher_after_the_first(
    sm90: FakeSm90, library: str
) -> None:
    """kernels.attention(q, k, v, out) from PyTorch tensors or CuPy arrays on a fake sm_90
    GPU: the first call launches the sm_90a instance through the general path, which opts
    the function in to its ~200 KiB of shared memory and builds its compiled launcher; the
    next calls launch there (flat views of the library's own array type, five stride
    records as tuples of ints, the shared memory within the opt-in) with the general
    path's parameter bytes. The absent lse and offsets are one zero-size array a dtype,
    made by the first call and kept."""
    q, k, v, out = (sm90.array(library, (1, 300, 4, 128)) for _ in range(4))
    for _ in range(3):
        sm90.module.attention(q, k, v, out, True)
    kernel = sm90.module.attention.plan(q, k, v, out, causal=True).kernel
    (slow,) = sm90.fake.launches
    first, second = sm90.driver.launches
    assert sorted(sm90.emptied) == ["float32", "int32"], sm90.emptied
    assert slow["name"] == kernel.name == "attention_sm90_f16_0_0_192"
    assert first["smem"] == slow["shared_mem"] == _attention.SM90_SHARED_BYTES
    assert [v for _, _, v in sm90.fake.attributes] == [_attention.SM90_SHARED_BYTES]
    assert (first["grid"], first["block"]) == (slow["grid"], slow["block"])
    assert first["buffer"] == second["buffer"] == general_bytes(slow["args"], record_aligns(kernel))


SHAPE = (1, 300, 4, 128)
#: A call after kept ones (q, k, v, out of SHAPE, f16, causal) with one thing changed:
#: (the change, what to call with, given the arrays and a maker of arrays at q's address).
CHANGES: dict[str, Any] = {
    "not causal": lambda a, at: (a, {"causal": False}),
    "a scale": lambda a, at: (a, {"causal": True, "scale": 0.25}),
    "causal 1 (int)": lambda a, at: (a, {"causal": 1}),
    "a negative scale": lambda a, at: (a, {"causal": True, "scale": -1.0}),
    "layout bhsd": lambda a, at: (a, {"causal": True, "layout": "bhsd"}),
    "layout sbhd": lambda a, at: (a, {"causal": True, "layout": "sbhd"}),
    "q's and out's shape": lambda a, at: (
        [at((1, 200, 4, 128)), *a[1:3], at((1, 200, 4, 128), ptr=a[3].ptr)],
        {"causal": True},
    ),
    "out's shape": lambda a, at: ([*a[:3], at((1, 150, 4, 128), ptr=a[3].ptr)], {"causal": True}),
    "q's strides": lambda a, at: (
        [at(SHAPE, strides=(4 * 300 * 128, 128, 300 * 128, 1)), *a[1:]],
        {"causal": True},
    ),
    "q's d stride": lambda a, at: (
        [at((1, 300, 4, 64), strides=(300 * 4 * 128, 4 * 128, 128, 2)), *a[1:]],
        {"causal": True},
    ),
    "out's dtype": lambda a, at: ([*a[:3], at(SHAPE, "float32", ptr=a[3].ptr)], {"causal": True}),
    "bfloat16": lambda a, at: (
        [at(SHAPE, "bfloat16"), *(at(SHAPE, "bfloat16", ptr=x.ptr) for x in a[1:])],
        {"causal": True},
    ),
    "out is q": lambda a, at: ([*a[:3], a[0]], {"causal": True}),
    "q requires grad": lambda a, at: ([at(SHAPE, requires_grad=True), *a[1:]], {"causal": True}),
}


#: Each change from each library, but grad from CuPy's arrays, which have none.
KEPT_CASES = [
    (library, change)
    for change in CHANGES
    for library in ("torch", "cupy")
    if not (library == "cupy" and change == "q requires grad")
]


@pytest.mark.parametrize(("library", "change"), KEPT_CASES)
def test_a_kept_launch_serves_only_calls_like_its_own(
    sm90: FakeSm90, library: str, change: str
) -> None:
    """A plain call's launch is kept for calls made again (pyoxide/bundled/_attention_repeat.py);
    a call with one thing changed (shape, strides, dtype, causal, scale or their types,
    layout, aliasing, grad) at the same addresses gets what the full path gives (``plan``,
    which keeps nothing): the same launch, or the same error with nothing launched, and
    the same again when repeated."""
    call, driver = sm90.module.attention, sm90.driver
    q, k, v, out = (sm90.array(library, SHAPE) for _ in range(4))

    def at(shape: Any, dtype: str = "float16", ptr: int | None = None, **kw: Any) -> Any:
        return sm90.array(library, shape, dtype, q.ptr if ptr is None else ptr, **kw)

    def did(f: Any) -> Any:
        """The launch a call made through the compiled launcher, or the error it raised."""
        before = len(driver.launches), len(sm90.fake.launches)
        try:
            f()
        except PyoxideError as e:
            assert (len(driver.launches), len(sm90.fake.launches)) == before, "launched"
            return type(e), str(e)
        (made,) = driver.launches[before[0] :] or sm90.fake.launches[before[1] :]
        return [made.get(x) for x in ("f", "name", "grid", "block", "smem", "buffer")]

    def full(*args: Any, **kw: Any) -> None:
        launch = call.plan(*args, **kw)
        launch.kernel[launch.grid, launch.block, launch.shared_mem](*launch.args)

    kept = [did(lambda: call(q, k, v, out, causal=True)) for _ in range(3)][-1]
    args, kw = CHANGES[change]([q, k, v, out], at)
    want = [did(lambda: full(*args, **kw)) for _ in range(2)][-1]  # the second: compiled
    assert want != kept
    assert [did(lambda: call(*args, **kw)) for _ in range(2)] == [want, want]
