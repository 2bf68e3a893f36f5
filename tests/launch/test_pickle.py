"""Kernel handles pickle by reference (pyoxide/_launch/handles.py): modules, kernels,
generic kernels and their instances, configured launches; in this process (the same
objects come back), in a fresh interpreter and in a spawned process (each module made
once per process, from the build cache or the files as they are, never compiled); and a
crate the other process cannot find raises MissingCrateError, which pickles too."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import fake_cargo_oxide
from helpers.bundled import emu_kernels_manifest
from helpers.fixtures import make_crate
from helpers.scale import run_child, unpickle_and_call

import pyoxide

N = 1024


@pytest.fixture(scope="module")
def kernels() -> pyoxide.Module:
    return pyoxide.load(emu_kernels_manifest())


def _x(dtype: Any = np.float32) -> np.ndarray:
    return np.arange(N, dtype=dtype) / 8


def _call(saxpy: Any) -> np.ndarray:
    out = np.empty(N, np.float32)
    saxpy(2.0, _x(), _x(), out)
    return out


def _scale(scale: Any, dtype: Any = np.float32) -> np.ndarray:
    out = np.empty(N, dtype)
    scale(2.0, _x(dtype), out)
    return out


#: handle -> (how to get it from the module, a call that runs it and what it should give)
HANDLES: dict[str, tuple[Callable[[Any], Any], Callable[[Any], np.ndarray], np.ndarray]] = {
    "module": (lambda m: m, lambda m: _call(m.saxpy), 3 * _x()),
    "kernel": (lambda m: m.saxpy, _call, 3 * _x()),
    "generic kernel": (lambda m: m.scale, lambda k: _scale(k, np.float64), 2 * _x(np.float64)),
    "generic instance": (lambda m: m.scale_f32, _scale, 2 * _x()),
    "configured": (lambda m: m.saxpy[N // 256, 256], _call, 3 * _x()),
    "configured, shared memory": (lambda m: m.saxpy[N // 256, 256, 0], _call, 3 * _x()),
}


@pytest.mark.parametrize("handle", HANDLES)
def test_a_handle_round_trips_in_process_as_itself_and_runs(
    kernels: pyoxide.Module, handle: str
) -> None:
    get, call, expected = HANDLES[handle]
    original = get(kernels)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(original, protocol))
        if handle.startswith("configured"):
            assert type(back) is type(original) and back is not None
        else:
            assert back is original
        np.testing.assert_array_equal(call(back), expected)


@pytest.mark.parametrize("handle", HANDLES)
def test_a_handle_unpickles_in_a_fresh_interpreter_and_runs(
    kernels: pyoxide.Module, handle: str
) -> None:
    """A fresh interpreter (no module loaded) resolves the handle from the manifest."""
    get, _, expected = HANDLES[handle]
    code = (
        "import pickle, numpy as np\n"
        "from test_pickle import HANDLES\n"
        "handle, blob = pickle.loads(PAYLOAD)\n"
        "back = pickle.loads(blob)\n"
        "RESULT = (type(back).__name__, HANDLES[handle][1](back).tolist())\n"
    )
    here = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": here}
    (kind, got), _ = run_child(code, pickle.dumps((handle, pickle.dumps(get(kernels)))), env)
    assert kind == type(get(kernels)).__name__
    np.testing.assert_array_equal(np.asarray(got, expected.dtype), expected)


def test_a_spawned_worker_resolves_the_bundled_kernels_once_without_building(
    tmp_path: Path,
) -> None:
    """``pyoxide.kernels`` pickled here; a spawned process (multiprocessing's spawn, as Dask
    uses) unpickles it and a kernel twice: one module, the same objects, the right result,
    and nothing built (the build cache holds the same builds; a build would say so on
    stderr at PYOXIDE_VERBOSE=1)."""
    from pyoxide import kernels
    from pyoxide.bundled import load_bundled

    load_bundled()  # this test's build cache holds what the worker will look for
    # The bundled attention call (a launcher the module serves) round-trips too.
    assert pickle.loads(pickle.dumps(kernels.attention)) is kernels.attention
    blob = pickle.dumps((kernels, kernels.saxpy))
    builds = _builds()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        first = pool.apply(unpickle_and_call, (blob,))
        second = pool.apply(unpickle_and_call, (blob,))
    expected = (3 * np.arange(8, dtype=np.float32)).tolist()
    assert first[0] == second[0] == expected
    assert first[1] == second[1] and first[2] and second[2]
    assert _builds() == builds

    # And a fresh interpreter, saying what it does.
    code = "import pickle\nfrom helpers.scale import unpickle_and_call\n"
    code += "RESULT = unpickle_and_call(PAYLOAD)\n"
    env = {**os.environ, "PYOXIDE_VERBOSE": "1"}
    (out, _, same), err = run_child(code, blob, env)
    assert out == expected and same
    assert "building" not in err and _builds() == builds


def _builds() -> list[str]:
    from pyoxide._manifest import knobs

    folder = knobs.cache_dir() / "builds"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _installed_package(site: Path, manifest: Path) -> Path:
    """A kernel package ``kernpkg`` in ``site`` whose module is the built crate of
    ``manifest`` (its files copied into ``kernpkg/_oxide``, as a wheel installs them)."""
    folder = site / "kernpkg" / "_oxide"
    folder.mkdir(parents=True)
    (site / "kernpkg" / "__init__.py").write_text("")
    value = json.loads(manifest.read_text())
    names = [a["path"] for a in value["artifacts"]] + [value["emulator"]["path"]]
    for name in [manifest.name, *names]:
        shutil.copy2(manifest.parent / name, folder / name)
    return folder / manifest.name


def test_a_kernel_of_an_installed_package_resolves_through_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pickled as (package, path inside it): another process finds the package wherever
    its installation put it; without the package, MissingCrateError names it."""
    site_here, site_there = tmp_path / "here", tmp_path / "there"
    manifest = _installed_package(site_here, emu_kernels_manifest())
    shutil.copytree(site_here, site_there)
    monkeypatch.syspath_prepend(str(site_here))
    module = pyoxide.load(manifest)
    assert (module.origin.source, module.origin.where) == ("package", "kernpkg")
    blob = pickle.dumps(module.saxpy)
    code = (
        "import pickle, numpy as np\n"
        "k = pickle.loads(PAYLOAD)\n"
        "x = np.arange(8, dtype=np.float32); out = np.empty_like(x); k(2.0, x, x, out)\n"
        "import kernpkg\n"
        "RESULT = (out.tolist(), kernpkg.__file__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site_there)}
    (out, where), _ = run_child(code, blob, env)
    assert out == (3 * np.arange(8, dtype=np.float32)).tolist()
    assert Path(where).parent.parent == site_there

    missing = _unpickle_error(blob)
    assert isinstance(missing, pyoxide.MissingCrateError)
    assert missing.crate == "kernels_rs" and "installed package 'kernpkg'" in missing.where
    assert "pip install" in missing.fix


def _unpickle_error(blob: bytes, env: dict[str, str] | None = None) -> Any:
    """What unpickling ``blob`` raises in a fresh interpreter, pickled back here."""
    code = (
        "import pickle\ntry:\n    pickle.loads(PAYLOAD)\nexcept Exception as e:\n    RESULT = e\n"
    )
    error, _ = run_child(code, blob, env)
    return error


def test_a_crate_resolves_from_the_build_cache_or_raises_missing_crate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pyoxide.load(crate)`` pickles as the crate folder and its load options: a fresh
    interpreter loads it through the build cache without building (cargo-oxide is asked
    for the cache key only); once the folder is gone, MissingCrateError names the crate,
    the folder, the interpreter's prefix and pyoxide's version, and a fix."""
    fake_cargo_oxide.install(tmp_path, monkeypatch)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_OXIDE_LOG", str(log))
    crate = make_crate(tmp_path / "crate")
    module = pyoxide.load(crate, arch=["sm_80"], fmad=False)
    assert module.origin.source == "crate" and module.origin.where == str(crate.resolve())
    assert ("arch", ("sm_80",)) in module.origin.options
    calls = len(log.read_text().splitlines())

    code = "import pickle\nm = pickle.loads(PAYLOAD)\nRESULT = (m.name, sorted(m))\n"
    (name, names), _ = run_child(code, pickle.dumps(module))
    assert name == module.name and names == sorted(module)
    child_calls = [json.loads(line) for line in log.read_text().splitlines()[calls:]]
    assert child_calls and all(c[0] == "oxide" and c[1] == "key" for c in child_calls)

    blob = pickle.dumps(module.saxpy)
    shutil.move(crate, tmp_path / "elsewhere")
    error = _unpickle_error(blob)
    assert isinstance(error, pyoxide.MissingCrateError)
    assert (error.crate, error.prefix) == (module.name, sys.prefix)
    assert str(crate.resolve()) in error.where and error.version
    assert f"Python prefix {sys.prefix}" in str(error) and "Fix:" in str(error)


#: Handles that would mean something else in another process, and why they are refused.
REFUSED: dict[str, tuple[Callable[[Any], Any], str]] = {
    "a launch on a stream": (lambda m: m.saxpy[4, 256, 0, 0], "a stream belongs to the process"),
    "a kernel no module serves": (
        lambda m: pyoxide.Kernel(m.saxpy.spec, m.function),
        "no module serves it",
    ),
}


@pytest.mark.parametrize("handle", REFUSED)
def test_a_handle_that_cannot_cross_is_refused(kernels: pyoxide.Module, handle: str) -> None:
    make, why = REFUSED[handle]
    with pytest.raises(pickle.PicklingError, match=why):
        pickle.dumps(make(kernels))
