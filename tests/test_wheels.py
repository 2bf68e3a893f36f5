"""The wheels, for real: pyoxide's wheel (its build backend: the bundling step, then
maturin), installed in a fresh virtualenv with no Rust toolchain reachable, runs the
bundled kernels on NumPy arrays; a `pyoxide new` project builds into a wheel that installs
and runs its kernel there too, and whose own tests pass; and from the installed wheel
alone, `pyoxide new` + `pyoxide build` work offline, with an empty CARGO_HOME.

Slow (a venv, PyPI installs, a kernel crate built from scratch), so it is one module
with one virtualenv for all of it. The GPU side of the installed wheel is checked on the
H200 with scripts/demo.py run against the installed package (docs/performance.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.bundled import PACKAGED, REPO, SM90A_PACKAGED

from pyoxide._manifest.tune_spec import TunedChoice


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def only_the_venv(venv: Path, home: Path) -> dict[str, str]:
    """An environment that reaches the venv's Python and nothing else: no cargo, rustc,
    cargo-oxide (PATH is the venv's bin only, HOME hides ~/.cargo), no checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYOXIDE", "OXIDE"))}
    env.update(PATH=str(venv / "bin"), HOME=str(home), PYOXIDE_CACHE_DIR=str(home / "cache"))
    return env


#: Where the planted tuned choice applies: softmax_rows at 64 rows of 300.
TUNED_SHAPE = (64, 300)


def planted_choices() -> tuple[list[TunedChoice], list[TunedChoice]]:
    """Cache choices for the bundled kernels' build as `pyoxide tune` would keep them
    (kernels_rs's, kernels_sm90a's): one measured on an H200 (a real one, from
    scripts/tune_bundled), one for the emulator at TUNED_SHAPE, so that the installed
    wheel runs it here, and one for kernels_sm90a's tuned GEMM variant (tuned beside
    kernels_rs, shipped beside it), at a place the crate's own tuned.json holds too (its
    128×4096×4096 bucket), so that the cache's is seen to win there."""
    from pyoxide._launch import tune_space
    from pyoxide._manifest import abi
    from pyoxide._manifest.reader import read_manifest

    manifest = read_manifest(PACKAGED)  # what the bundling step rebuilds, unchanged
    (hand,) = [k for k in manifest.kernels if k.entry == "softmax_rows"]
    bucket = tune_space.bucket_of(tune_space.key_dims(hand), [TUNED_SHAPE, TUNED_SHAPE])
    base = {"kernel": "softmax_rows", "entry": "softmax_rows", "launch": (("block", 64),),
            "candidates": 4, "rejected": 0}  # fmt: skip
    choices = [
        TunedChoice(**base, device="NVIDIA H200", arch="sm_90", bucket=(4096, 1024),
                    time_us=16.85, hand_us=24.34, shape=(4096, 1024)),
        TunedChoice(**base, device=abi.EMULATOR_DEVICE, arch=abi.EMULATOR_ARCH, bucket=bucket,
                    time_us=1.0, hand_us=2.0, shape=TUNED_SHAPE),
    ]  # fmt: skip
    wide = TunedChoice(kernel="gemm_bf16_sm90_256_1_128", entry="gemm_bf16_sm90_128_4_64",
                       launch=(),
                       device="NVIDIA H200", arch="sm_90", bucket=(128, 4096, 4096),
                       time_us=30.0, hand_us=40.0, shape=(128, 4096, 4096), candidates=2,
                       rejected=0)  # fmt: skip
    return choices, [wide]


def plant_tuned_choices() -> list[tuple[Path, bytes | None]]:
    """planted_choices() in the cache, as the only choices of the bundled kernels' build.
    The wheel build's bundling step rebuilds the same sources with the same toolchain, so
    its tuning keys are these builds'. Returns each file and what it held before (None:
    nothing)."""
    from pyoxide._launch import tune_store
    from pyoxide._manifest.reader import read_manifest

    rs, sm90a = planted_choices()
    planted = []
    for m, chosen in ((read_manifest(PACKAGED), rs), (read_manifest(SM90A_PACKAGED), sm90a)):
        path = tune_store.cache_file(m)
        planted.append((path, path.read_bytes() if path.exists() else None))
        path.unlink(missing_ok=True)  # the planted choices alone, not beside a developer's
        tune_store.save(m, chosen)
    return planted


@pytest.fixture(scope="module")
def pyoxide_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pyoxide's wheel, built with the bundled kernels' tuned choices (`-C tuned=true`)."""
    out = tmp_path_factory.mktemp("wheels")
    # The prebuilt manifests as the sources stand (a no-op build when they do), so that the
    # choices are planted under the keys the bundling step's build will have.
    run([sys.executable, "-m", "pyoxide", "build", "--bundled", "-q"], cwd=REPO)
    # The environment's cache (its sysroot spares the bundling step a rebuild of `core`),
    # holding the planted choices only while the wheel is built.
    planted = plant_tuned_choices()
    # The bundling step writes the checkout's prebuilt manifests, choices included: the
    # tests after this one load them, and must not run the planted choices.
    untuned = {p: p.read_bytes() for p in (PACKAGED, SM90A_PACKAGED)}
    try:
        wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        run([*wheel, "--disable-pip-version-check", "-C", "tuned=true", "-w", str(out),
             str(REPO)], cwd=REPO)  # fmt: skip
    finally:  # the cache and the checkout as they were: a developer's own choices stay
        for prebuilt, text in untuned.items():
            prebuilt.write_bytes(text)
        for path, kept in planted:
            if kept is None:
                path.unlink()
            else:
                path.write_bytes(kept)
    (wheel,) = out.glob("pyoxide-*.whl")
    return wheel


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, pyoxide_wheel: Path) -> Path:
    root = tmp_path_factory.mktemp("venv") / "v"
    run([sys.executable, "-m", "venv", str(root)], cwd=root.parent)
    pip = [
        str(root / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    run([*pip, str(pyoxide_wheel), "pytest"], cwd=root.parent)
    return root


def test_the_pyoxide_wheel_carries_ptx_manifest_stubs_emulator_and_launcher(
    pyoxide_wheel: Path,
) -> None:
    names = set(zipfile.ZipFile(pyoxide_wheel).namelist())
    pre = "pyoxide/_prebuilt/kernels_rs"
    for f in (".sm_80.ptx", ".sm_90.ptx", ".manifest.json", ".pyi", ".emu.so"):
        assert pre + f in names, f
    assert {"pyoxide/kernels.pyi", "pyoxide/py.typed", "pyoxide/_launch/_native.abi3.so"} <= names
    assert "pyoxide/_build/templates/new/src/lib.rs.tmpl" in names
    # The kernel author's kit: pyoxide's Rust crates (a workspace), the crates.io sources
    # they need, and cargo-oxide.
    kit = "pyoxide/_rust/crates/"
    assert {
        "pyoxide/_bin/cargo-oxide", "pyoxide/_rust/Cargo.toml",
        kit + "oxide-device/src/lib.rs", kit + "oxide-build/src/lib.rs",
        kit + "oxide-macros/Cargo.toml", kit + "oxide-abi/src/lib.rs",
        "pyoxide/_rust/vendor/syn/src/lib.rs", "pyoxide/_rust/vendor/libc/Cargo.toml",
    } <= names  # fmt: skip
    assert not [n for n in names if "__pycache__" in n or n.startswith(("kernels_rs/", "crates/"))]
    # Crates no Linux build uses (windows-sys and its import libraries: 70 MB) are empty
    # stubs, so the wheel stays small.
    windows = [n for n in names if n.startswith("pyoxide/_rust/vendor/windows")]
    assert windows and all(
        n.endswith(("Cargo.toml", "lib.rs", ".cargo-checksum.json")) for n in windows
    )
    assert pyoxide_wheel.stat().st_size < 12_000_000


def test_installed_wheel_runs_the_bundled_kernels_on_numpy_without_rust(
    venv: Path, tmp_path: Path
) -> None:
    env = only_the_venv(venv, tmp_path)
    python = str(venv / "bin" / "python")
    probe = (
        "import shutil, pyoxide\n"
        "assert not [t for t in ('cargo', 'rustc', 'cargo-oxide') if shutil.which(t)]\n"
        "from pyoxide import kernels\n"
        "print(kernels.manifest.path)\n"
    )
    manifest = Path(run([python, "-I", "-c", probe], cwd=tmp_path, env=env).strip())
    assert manifest.is_relative_to(venv) and manifest.parent.name == "_prebuilt"
    # Every bundled kernel against float64 NumPy on the CPU emulator; exit 1 on a miss.
    out = run([python, "-I", str(REPO / "scripts" / "demo.py")], cwd=tmp_path, env=env)
    assert "on the CPU emulator" in out and "scan_blocks_u32" in out


def shipped_under(crate_dir: Path, crate: str, cache: list[TunedChoice]) -> list[TunedChoice]:
    """The choices a `--tuned` build puts in a crate's manifest: the crate's tuned.json,
    with the cache's over it where they share a place (kernel, GPU, architecture,
    bucket)."""
    from pyoxide._launch import tune_store

    over = {c.place for c in cache}
    shipped = tune_store.read_shipped(crate_dir, crate)
    return [c for c in shipped if c.place not in over] + cache


def test_installed_wheel_built_tuned_runs_its_shipped_choice_with_no_tuning(
    venv: Path, tmp_path: Path
) -> None:
    """`pip wheel . -C tuned=true` put the crates' shipped choices and the cache's over
    them in the bundled manifests (the GEMM variants' beside kernels_rs's): the installed
    wheel, with an empty cache, runs
    the emulator's choice at its shape and the hand pick elsewhere, and tunes and writes
    nothing."""
    env = only_the_venv(venv, tmp_path)
    probe = (
        "import sys, numpy as np, pyoxide\n"
        "from pyoxide.bundled import load_bundled\n"
        "from pyoxide._launch.tuned import tuned_for\n"
        "mod = load_bundled()\n"
        "print(sorted(c.device for c in mod.manifest.tuned))\n"
        f"for shape in [{TUNED_SHAPE}, (64, 5000)]:\n"
        "    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)\n"
        "    out = np.full_like(x, np.nan); mod.softmax_rows(x, out)\n"
        "    e = np.exp(x - x.max(1, keepdims=True)); want = e / e.sum(1, keepdims=True)\n"
        "    assert np.allclose(out, want, rtol=1e-5, atol=1e-6)\n"
        "    c = tuned_for(mod.softmax_rows, (x, out))\n"
        "    print(None if c is None else dict(c.launch))\n"
        "from pyoxide.bundled import load_sm90a\n"
        "print(sorted(c.label for c in load_sm90a().manifest.tuned))\n"
        "assert 'pyoxide.bench.tune' not in sys.modules\n"
    )
    out = run([str(venv / "bin" / "python"), "-I", "-c", probe], cwd=tmp_path, env=env)
    rs, sm90a = (
        shipped_under(REPO / crate, crate, planted)
        for crate, planted in zip(("kernels_rs", "kernels_sm90a"), planted_choices(), strict=True)
    )
    want = [str(sorted(c.device for c in rs)), "{'block': 64}", "None",
            str(sorted(c.label for c in sm90a))]  # fmt: skip
    assert out.split("\n")[:4] == want, out
    assert not (tmp_path / "cache" / "tuned").exists()


def test_pyoxide_new_project_builds_installs_and_runs(venv: Path, tmp_path: Path) -> None:
    run([sys.executable, "-m", "pyoxide", "new", "demo"], cwd=tmp_path)
    project = tmp_path / "demo"
    # Built here, with the toolchain (and this checkout's pyoxide for its build script).
    run(["maturin", "build", "--release", "-q", "-o", str(project / "dist")], cwd=project)
    (wheel,) = (project / "dist").glob("demo-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "demo/_oxide/demo.sm_80.ptx", "demo/_oxide/demo.sm_90.ptx",
        "demo/_oxide/demo.manifest.json", "demo/kernels.pyi", "demo/_emu/lib_emu.so",
    } <= names  # fmt: skip

    env = only_the_venv(venv, tmp_path / "home")
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], cwd=tmp_path, env=env)
    use = (
        "import numpy as np, demo\n"
        "x = np.arange(1000, dtype=np.float32); y = np.ones(1000, np.float32)\n"
        "out = np.full(1000, np.nan, np.float32)\n"
        "demo.kernels.saxpy(2.0, x, y, out)\n"
        "assert np.array_equal(out, 2 * x + 1), out[:8]\n"
        "print(demo.kernels.saxpy)\n"
        # Pickled by reference to the installed package; a fresh interpreter runs it.
        "import pickle, subprocess, sys\n"
        "blob = pickle.dumps(demo.kernels.saxpy)\n"
        "assert b'_oxide/demo.manifest.json' in blob and b'lib_emu' in blob, blob\n"
        "child = ('import pickle, sys, numpy as np; k = pickle.loads(sys.stdin.buffer.read()); '\n"
        "         'x = np.ones(4, np.float32); o = np.empty_like(x); k(1.0, x, x, o); '\n"
        "         'print(\"unpickled:\", o.tolist())')\n"
        "print(subprocess.run([sys.executable, '-I', '-c', child], input=blob, check=True,\n"
        "                     capture_output=True, text=False).stdout.decode())\n"
    )
    elsewhere = tmp_path / "elsewhere"  # not the project folder: the installed package
    elsewhere.mkdir()
    printed = run([python, "-I", "-c", use], cwd=elsewhere, env=env)
    assert "saxpy" in printed and "unpickled: [2.0, 2.0, 2.0, 2.0]" in printed
    # The project's own tests, against the installed wheel, pass on the first try.
    shutil.copytree(project / "tests", elsewhere / "tests")
    report = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], elsewhere, env)
    # The summary line, not any "failed": --durations lists tests named test_failed_*.
    assert " passed" in report and not re.search(r"\d+ failed", report), report


def test_pyoxide_new_from_the_installed_wheel_builds_offline_with_its_own_kit(
    venv: Path, tmp_path: Path
) -> None:
    """No checkout and no registry (issue 27.11): `pyoxide new` points the project at the
    Rust crates the wheel ships and at the crates.io sources vendored beside them, and
    `pyoxide build` uses the wheel's cargo-oxide (none on PATH or in ~/.cargo/bin), with
    an empty CARGO_HOME and CARGO_NET_OFFLINE; the machine's Rust toolchain, LLVM tools
    and NVIDIA wheels do the rest."""
    cargo_home = tmp_path / "empty-cargo-home"
    cargo_home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYOXIDE"))}
    env.update(
        PATH=f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",  # not ~/.cargo/bin
        HOME=str(tmp_path),
        CARGO_HOME=str(cargo_home),
        CARGO_NET_OFFLINE="true",
        # The built `core`, where the checkout's own builds keep it (building it needs no
        # registry either: it uses the vendored sources of the distribution's rust-src).
        PYOXIDE_CACHE_DIR=str(Path.home() / ".cache" / "pyoxide"),
        VIRTUAL_ENV=str(venv),
    )
    # libdevice and ptxas come from the NVIDIA wheels of the Python that has them.
    env["OXIDE_PYTHON"] = sys.executable
    python = str(venv / "bin" / "python")
    run([str(venv / "bin" / "pyoxide"), "new", "kit_demo"], cwd=tmp_path, env=env)
    cargo_toml = (tmp_path / "kit_demo" / "Cargo.toml").read_text()
    assert f"{venv}" in cargo_toml and "/_rust/crates/oxide-device" in cargo_toml
    assert "/_rust/vendor" in (tmp_path / "kit_demo" / ".cargo" / "config.toml").read_text()
    built = run([str(venv / "bin" / "pyoxide"), "build"], cwd=tmp_path / "kit_demo", env=env)
    # cargo leaves its lock files there, and nothing else: no index, no crate downloaded.
    fetched = [p for p in cargo_home.rglob("*") if p.is_file()
               and p.parent not in (cargo_home, cargo_home / "registry")]  # fmt: skip
    assert "built kit_demo" in built and not fetched, fetched
    use = (
        "import numpy as np, pyoxide, shutil\n"
        "from pyoxide._build.cargo import find_cargo_oxide, PACKAGED_CARGO_OXIDE\n"
        "assert shutil.which('cargo-oxide') is None\n"
        "assert find_cargo_oxide() == PACKAGED_CARGO_OXIDE, find_cargo_oxide()\n"
        "m = pyoxide.load('kit_demo')\n"
        "x = np.arange(300, dtype=np.float32); out = np.full(300, np.nan, np.float32)\n"
        "m.saxpy(3.0, x, x, out)\n"
        "assert np.array_equal(out, 4 * x), out[:4]\n"
        "print(sorted(m.manifest.archs))\n"
    )
    assert "['sm_80', 'sm_90']" in run([python, "-c", use], cwd=tmp_path, env=env)
