"""Generated .pyi stubs: right signatures, and mypy accepts good calls and flags bad ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.fixtures import KERNELS, REPO_DIR, kernel, manifest_dict, param, write_manifest

import pyoxide
from pyoxide._manifest.reader import parse_manifest

USER = """
import cupy
import numpy as np
import fixture_kernels as k

x = cupy.zeros(8, dtype=cupy.float32)
k.saxpy(2.0, x, x, x)
k.saxpy(np.float32(2.0), x, x, x)
k.saxpy[4, 256](2, x, x, x)
k.saxpy.launch(2.0, x, x, x, grid=(4,), block=256, stream=None)
k.scale(1.5, x, x)
k.scale_f64(1.5, np.zeros(8), np.zeros(8))
k.mix(-1, 2, True, 3, 0.5, 4, 5, x)
k.accumulate(0x1234, x)
"""

BAD = """
import cupy
import fixture_kernels as k

x = cupy.zeros(8, dtype=cupy.float32)
k.saxpy(2.0, x, x)  # too few
k.saxpy("2", x, x, x)  # str for f32
k.vecadd(x, x, 3.0)  # float for an array
k.mix(-1, 2, 1.5, 3, 0.5, 4, 5, x)  # float for bool
k.nosuch(x)  # unknown kernel
"""


def _mypy(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "user.py").write_text(code)
    cupy_stub = tmp_path / "cupy.pyi"
    cupy_stub.write_text("from typing import Any\ndef __getattr__(name: str) -> Any: ...\n")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / ".mypy_cache"), "user.py", "fixture_kernels.pyi"],
        cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "MYPYPATH": str(REPO_DIR)},  # editable installs hide from mypy
    )  # fmt: skip


@pytest.fixture
def stub_dir(tmp_path: Path) -> Path:
    m = pyoxide.read_manifest(write_manifest(tmp_path / "m"))
    pyoxide.write_stub(m, tmp_path / "fixture_kernels.pyi")
    return tmp_path


def test_stub_text(stub_dir: Path) -> None:
    text = (stub_dir / "fixture_kernels.pyi").read_text()
    assert "saxpy: _Kernel_saxpy" in text and "scale: _Kernel_scale" in text
    assert "def __call__(self, a: Float, x: Array, y: Array, out: Array, /) -> None" in text
    assert "def __call__(self, x: Array | int, y: Array, /)" in text  # pointer param
    assert "c: Bool" in text and "g: Int" in text


def test_mypy_accepts_good_calls(stub_dir: Path) -> None:
    r = _mypy(stub_dir, USER)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_flags_bad_calls(stub_dir: Path) -> None:
    r = _mypy(stub_dir, BAD)
    assert r.returncode == 1
    lines = [line for line in r.stdout.splitlines() if "user.py:" in line and "error" in line]
    assert {int(line.split(":")[1]) for line in lines} == {6, 7, 8, 9, 10}, r.stdout


def test_names_python_cannot_spell(tmp_path: Path) -> None:
    odd = [
        *KERNELS,
        kernel("lambda", [param("out", "disjoint_slice", "f32")]),
        kernel("copy", [param("from", "slice", "f32"), param("to", "disjoint_slice", "f32")]),
    ]
    m = parse_manifest(manifest_dict(tmp_path, kernels=odd), tmp_path / "m.json")
    text = pyoxide.render_stub(m)
    assert "# kernel 'lambda' is a Python keyword" in text
    assert "from_: Array, to: Array, /" in text
    (tmp_path / "fixture_kernels.pyi").write_text(text)
    r = _mypy(tmp_path, "import fixture_kernels as k\nreveal_type(k.copy)\n")
    assert "_Kernel_copy" in r.stdout, r.stdout
    assert pyoxide.load(m)["lambda"].name == "lambda"


def test_bundled_stub_types_from_pyoxide_import_kernels(tmp_path: Path) -> None:
    # `pyoxide build --bundled` writes pyoxide/kernels.pyi; check it against a copy.
    import shutil

    pkg = tmp_path / "site" / "pyoxide"
    shutil.copytree(Path(pyoxide.__file__).parent, pkg, ignore=shutil.ignore_patterns("*.pyc"))
    m = pyoxide.read_manifest(write_manifest(tmp_path / "m"))
    pyoxide.write_stub(m, pkg / "kernels.pyi")
    (tmp_path / "user.py").write_text(
        "from pyoxide import kernels\nreveal_type(kernels.saxpy)\nkernels.saxpy(1.0)\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / ".mypy_cache"), "user.py"],
        cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "MYPYPATH": str(tmp_path / "site")},
    )  # fmt: skip
    assert "pyoxide.kernels._Kernel_saxpy" in r.stdout, r.stdout
    assert 'user.py:3: error: Too few arguments for "__call__"' in r.stdout, r.stdout


def test_shaped_arrays_show_their_dimensions(tmp_path: Path) -> None:
    """Shaped array parameters (schema 3) show their contract in the stub, and mypy takes
    a call with NumPy arrays and refuses a missing argument."""
    shaped = [
        kernel("mm", [
            {**param("a", "array", "f32"), "array": {"layout": "c", "dims": ["m", "k"]}},
            {**param("b", "array", "f32"), "array": {"layout": "strided", "dims": ["k", "_"]}},
            {**param("c", "disjoint_array", "f32", True),
             "array": {"layout": "c", "dims": ["m", "3"]}},
        ]),
        kernel("sx", [
            {**param("x", "slice", "f32"), "length": "n"},
            {**param("out", "disjoint_slice", "f32"), "length": "n"},
        ]),
    ]  # fmt: skip
    m = parse_manifest(manifest_dict(tmp_path, kernels=shaped), tmp_path / "m.json")
    text = pyoxide.render_stub(m)
    assert (
        'a: Annotated[Array, "[m, k]"], b: Annotated[Array, "[k, _] strided"], '
        'c: Annotated[Array, "[m, 3]"], /'
    ) in text
    assert "fn mm(a: Array2<f32>, b: Array2<f32, Strided>, c: DisjointArray2<f32>)" in text
    assert 'x: Annotated[Array, "[n]"], out: Annotated[Array, "[n]"], /' in text
    (tmp_path / "fixture_kernels.pyi").write_text(text)
    code = (
        "import numpy as np\nimport fixture_kernels as k\nx = np.ones((2, 2), np.float32)\n"
        "k.mm(x, x, x)\nk.mm(x, x)\n"
    )
    r = _mypy(tmp_path, code)
    errors = [line for line in r.stdout.splitlines() if "user.py:" in line and "error" in line]
    assert [int(line.split(":")[1]) for line in errors] == [5], r.stdout
