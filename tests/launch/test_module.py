"""Module: kernels as attributes, generic dispatch, bundled kernels, host arrays to the emulator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import fake_cargo_oxide
from helpers.fakes import RecordingBackend, cuda
from helpers.fixtures import make_crate, write_manifest

import pyoxide
from pyoxide import backends
from pyoxide import bundled as _bundled
from pyoxide._build import layout as _layout
from pyoxide._launch import handles as _handles
from pyoxide._launch.config import default_block


@pytest.fixture
def mod(tmp_path: Path) -> pyoxide.Module:
    return pyoxide.load(write_manifest(tmp_path))


def test_kernels_are_attributes(mod: pyoxide.Module) -> None:
    assert isinstance(mod.saxpy, pyoxide.Kernel)
    assert isinstance(mod.scale, pyoxide.GenericKernel)
    assert set(mod.scale.instances) == {"scale_f32", "scale_f64"}
    assert mod["scale_f32"] is mod.scale.instances["scale_f32"]
    assert "saxpy" in mod and len(mod) == 10 and "saxpy" in dir(mod)
    assert "fn saxpy(a: f32" in (mod.saxpy.__doc__ or "")
    assert "src/lib.rs:12" in (mod.saxpy.__doc__ or "")
    assert repr(mod).startswith("<pyoxide.Module oxide_fixtures 0.1.0: 10 kernels")
    assert "scale_f32, scale_f64" in repr(mod.scale)


def test_kernels_are_plain_attributes(mod: pyoxide.Module) -> None:
    """The launch hot path (and torch.compile) reads a plain attribute: no
    Module.__getattr__ call."""
    assert vars(mod)["saxpy"] is mod.saxpy is mod["saxpy"]
    # Names the class or the instance already has are never shadowed.
    assert mod.name == "oxide_fixtures" and callable(mod.function)
    with pytest.raises(AttributeError):
        _ = mod.sxapy
    assert "sxapy" not in vars(mod)


def test_unknown_kernel_suggests(mod: pyoxide.Module) -> None:
    with pytest.raises(AttributeError, match=r"no kernel 'sxapy'.*Did you mean 'saxpy'"):
        _ = mod.sxapy
    with pytest.raises(KeyError, match="no kernel"):
        _ = mod["nope"]


def test_generic_dispatch_picks_the_instance(mod: pyoxide.Module) -> None:
    rb = RecordingBackend()
    with backends.override("cupy", rb):
        mod.scale(2.0, cuda(8, "<f4"), cuda(8, "<f4"))
        mod.scale(2.0, cuda(8, "<f8"), cuda(8, "<f8"))
        mod.scale[1, 64](2.0, cuda(8, "<f8"), cuda(8, "<f8"))
    assert [launch.kernel for launch in rb.launches] == ["scale_f32", "scale_f64", "scale_f64"]
    assert [type(launch.args[0]) for launch in rb.launches] == [np.float32, np.float64, np.float64]
    assert rb.launches[2].block == (64, 1, 1)


def test_ambiguous_generic_instances(tmp_path: Path) -> None:
    from helpers.fixtures import kernel, param

    ks = [
        kernel("fill", [param("v", "scalar", t), param("out", "disjoint_slice", "f32")],
               entry=f"fill_{t}", instance=[("S", t)])
        for t in ("f32", "f64")
    ]  # fmt: skip
    m = pyoxide.load(write_manifest(tmp_path, kernels=ks))
    with (
        backends.override("cupy", RecordingBackend()),
        pytest.raises(pyoxide.ArgumentTypeError, match="several instances match"),
    ):
        m.fill(1.0, cuda(4))


def test_numpy_arrays_go_to_the_emulator(mod: pyoxide.Module) -> None:
    x = np.ones(8, np.float32)
    with pytest.raises(pyoxide.EmulatorError, match="this build has no emulator library"):
        mod.saxpy(2.0, x, x.copy(), np.empty_like(x))


def test_keyword_args_are_refused(mod: pyoxide.Module) -> None:
    with pytest.raises(pyoxide.ArgumentTypeError, match=r"in order: \(factor, x, out\)"):
        mod.scale(2.0, cuda(4), out=cuda(4))
    with pytest.raises(pyoxide.ArgumentTypeError, match="positional"):
        mod.vecadd[1, 32](a=cuda(4))


def test_launch_plan_is_built_once(mod: pyoxide.Module) -> None:
    with backends.override("cupy", RecordingBackend()):
        mod.saxpy(1.0, cuda(4), cuda(4), cuda(4))
        plan = mod.saxpy.plan
        mod.saxpy(1.0, cuda(4), cuda(4), cuda(4))
        assert mod.saxpy.plan is plan and plan.grid_param == 3 and default_block(plan) == 256


def test_module_code_is_loaded_once_per_device(mod: pyoxide.Module) -> None:
    rb = RecordingBackend()
    with backends.override("cupy", rb):
        for _ in range(3):
            mod.saxpy(1.0, cuda(4), cuda(4), cuda(4))
            mod.vecadd(cuda(4), cuda(4), cuda(4))
        rb.current = 1
        mod.vecadd(cuda(4, device=1), cuda(4, device=1), cuda(4, device=1))
    assert rb.loads == [("oxide_fixtures", 0), ("oxide_fixtures", 1)]


def test_load_refuses_what_is_neither_crate_nor_manifest(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(pyoxide.LoadError, match="neither a kernel crate"):
        pyoxide.load(tmp_path / "notes.txt")
    m = pyoxide.read_manifest(write_manifest(tmp_path / "m"))
    assert pyoxide.load(m).manifest is m


def _package_at(monkeypatch: pytest.MonkeyPatch, pkg: Path) -> None:
    """Make the layout's package folder ``pkg`` (a checkout's or an installed wheel's).
    The bundled module this makes is the test's own: the process's one bundled module
    (``pyoxide.kernels``, and what an unpickled kernel resolves to) is set aside and put
    back after the test, so later tests do not get the fake one."""
    monkeypatch.setattr(_layout, "PACKAGE", pkg)
    monkeypatch.setattr(_layout, "PREBUILT", pkg / "_prebuilt")
    monkeypatch.setattr(_handles, "_resolved", {})
    monkeypatch.setitem(pyoxide.__dict__, "kernels", None)  # undone: removed or restored
    monkeypatch.delitem(pyoxide.__dict__, "kernels")


def test_bundled_kernels_from_prebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "site" / "pyoxide"
    value = json.loads(write_manifest(tmp_path / "w").read_text())
    value["crate"]["name"] = "kernels_rs"
    pre = pkg / "_prebuilt"
    pre.mkdir(parents=True)
    for a in value["artifacts"]:
        (pre / a["path"]).write_text((tmp_path / "w" / a["path"]).read_text())
    (pre / "kernels_rs.manifest.json").write_text(json.dumps(value))
    _package_at(monkeypatch, pkg)
    from pyoxide import kernels

    assert kernels.name == "kernels_rs" and "saxpy" in kernels
    assert pyoxide.kernels is kernels  # loaded once


def test_bundled_kernels_from_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cargo_oxide.install(tmp_path, monkeypatch)
    pkg = tmp_path / "repo" / "pyoxide"
    pkg.mkdir(parents=True)
    make_crate(tmp_path / "repo" / "kernels_rs", "kernels_rs")
    _package_at(monkeypatch, pkg)
    m = _bundled.load_bundled()
    assert "vecadd" in m and m.manifest.path.is_file()


def test_bundled_kernels_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _package_at(monkeypatch, tmp_path / "pyoxide")
    with pytest.raises(pyoxide.LoadError, match="bundled kernels are missing"):
        _bundled.load_bundled()


def test_unknown_attribute_of_the_package() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = pyoxide.nothing  # type: ignore[attr-defined]


def test_a_checkout_with_a_toolchain_builds_the_bundled_kernels_over_a_stale_prebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A _prebuilt in a source checkout may be older than kernels_rs beside it: with
    cargo-oxide at hand the source wins; without one (a GPU machine the artifacts were
    carried to) the prebuilt artifacts do."""
    fake_cargo_oxide.install(tmp_path, monkeypatch)
    pkg = tmp_path / "repo" / "pyoxide"
    make_crate(tmp_path / "repo" / "kernels_rs", "kernels_rs")
    pre = pkg / "_prebuilt"
    pre.mkdir(parents=True)
    value = json.loads(write_manifest(tmp_path / "w").read_text())
    value["crate"]["name"] = "kernels_rs"
    for a in value["artifacts"]:
        (pre / a["path"]).write_text((tmp_path / "w" / a["path"]).read_text())
    (pre / "kernels_rs.manifest.json").write_text(json.dumps(value))
    _package_at(monkeypatch, pkg)

    # cargo-oxide there (the copy a checkout's pyoxide/_bin holds) but not the Rust
    # toolchain it drives, nothing cached: the prebuilt artifacts (seen on the GPU machine).
    monkeypatch.setenv("FAKE_OXIDE_MODE", "toolchain")
    assert _bundled.load_bundled().manifest.path.parent == pre
    # A cargo-oxide of another release (a stale pyoxide/_bin copy): the same.
    monkeypatch.setenv("FAKE_OXIDE_MODE", "old")
    assert _bundled.load_bundled().manifest.path.parent == pre
    with pytest.raises(pyoxide.ToolchainError, match="another pyoxide release") as info:
        pyoxide.load(tmp_path / "repo" / "kernels_rs")
    assert str(tmp_path / "bin" / "cargo-oxide") in str(info.value)
    monkeypatch.delenv("FAKE_OXIDE_MODE")
    assert _bundled.load_bundled().manifest.path.parent != pre
    monkeypatch.setenv("PYOXIDE_CARGO_OXIDE", str(tmp_path / "missing" / "cargo-oxide"))
    assert _bundled.load_bundled().manifest.path.parent == pre
