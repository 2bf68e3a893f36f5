"""Array protocol adapters and the knobs."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from helpers.fakes import cuda

import pyoxide
from pyoxide._launch.arrays import (
    GPU,
    HOST,
    RUST_TYPESTR,
    dtype_name,
    normalize_typestr,
    numpy_dtype,
    view,
)
from pyoxide._manifest import knobs as _knobs


def test_rust_types_map_to_numpy_dtypes() -> None:
    for rust, typestr in RUST_TYPESTR.items():
        if rust == "bf16":  # no NumPy typestr: ml_dtypes' arrays say "<V2" (opaque)
            bf16 = np.zeros(1, ml_dtypes.bfloat16)
            assert view(bf16) is not None and view(bf16).typestr == typestr == "<E2"
            assert numpy_dtype(rust) == bf16.dtype and dtype_name(typestr) == "bfloat16"
            continue
        expected = {"bool": np.bool_, "usize": np.uint64, "isize": np.int64}.get(rust)
        dtype = (
            np.dtype(expected)
            if expected
            else np.dtype(rust.replace("f", "float").replace("i", "int").replace("u", "uint"))
        )
        assert normalize_typestr(dtype.str) == typestr, rust


def test_typestr_names() -> None:
    assert dtype_name("<f4") == "float32" and dtype_name("|b1") == "bool"
    assert dtype_name(">f8") == "float64 (big-endian)" and dtype_name("<c16") == "complex128"
    assert normalize_typestr("=f4") == "<f4" and normalize_typestr("<u1") == "|u1"


def test_numpy_view() -> None:
    a = np.arange(10, dtype=np.float32)
    v = view(a)
    assert v is not None and v.kind == HOST and v.shape == (10,) and v.ptr == a.ctypes.data
    assert v.typestr == "<f4" and not v.readonly and v.is_c_contiguous()
    a.setflags(write=False)
    assert view(a).readonly  # type: ignore[union-attr]
    assert not view(np.zeros((4, 4))[:, 1]).is_c_contiguous()  # type: ignore[union-attr]
    assert view(np.zeros((4, 4))).is_c_contiguous()  # type: ignore[union-attr]


def test_cai_view_and_device_hints() -> None:
    v = view(cuda(8, device=3))
    assert v is not None and v.kind == GPU and v.device == 3
    assert view(cuda(8, device=2, device_style="torch")).device == 2  # type: ignore[union-attr]
    assert view(cuda(8, device_style="none")).device is None  # type: ignore[union-attr]
    assert view(cuda(8, stream=77)).stream == 77  # type: ignore[union-attr]
    for not_array in (None, 1, 2.0, "s", b"b", True, [1, 2], object()):
        assert view(not_array) is None


class _DLPackOnly:
    def __init__(self, a: Any, device: tuple[int, int] = (1, 0)) -> None:
        self.a, self.device_pair = a, device

    def __dlpack__(self, *args: Any, **kw: Any) -> Any:
        return self.a.__dlpack__(*args, **kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device_pair


def test_cpu_dlpack_producers_are_host_arrays() -> None:
    a = np.arange(6, dtype=np.float64)
    v = view(_DLPackOnly(a))
    assert v is not None and v.kind == HOST and v.ptr == a.ctypes.data and v.shape == (6,)
    assert "via __dlpack__" in v.source


def test_cuda_dlpack_without_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(pyoxide.BackendUnavailableError, match="needs CuPy"):
        view(_DLPackOnly(np.zeros(2), device=(2, 0)))


def test_knobs(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    assert _knobs.backend() == "auto" and _knobs.verbose() == 0 and _knobs.arch() is None
    monkeypatch.setenv("PYOXIDE_BACKEND", "CuPy")
    assert _knobs.backend() == "cupy"
    monkeypatch.setenv("PYOXIDE_ARCH", "sm_80, sm_90a")
    assert _knobs.arch() == ["sm_80", "sm_90a"]
    for var, value in [("PYOXIDE_VERBOSE", "loud"), ("PYOXIDE_SYNC", "yes"),
                       ("PYOXIDE_ARCH", "sm80")]:  # fmt: skip
        monkeypatch.setenv(var, value)
        with pytest.raises(pyoxide.ConfigError, match=var):
            {"PYOXIDE_VERBOSE": _knobs.verbose, "PYOXIDE_SYNC": _knobs.sync_launches,
             "PYOXIDE_ARCH": _knobs.arch}[var]()  # fmt: skip


def test_only_knobs_reads_the_environment() -> None:
    from pathlib import Path

    pkg = Path(pyoxide.__file__).parent
    readers = [
        p.relative_to(pkg).as_posix()
        for p in pkg.rglob("*.py")
        if "os.environ" in p.read_text() or "getenv" in p.read_text()
    ]
    assert readers == ["_manifest/knobs.py"]
