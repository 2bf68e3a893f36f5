"""The bundled kernel crate's build artifacts, for tests.

Where the Rust toolchain is present (CI, developer machines) the crate is built with
`cargo oxide build`; on the GPU machine, which has no Rust, the artifacts built here and
carried there (target/oxide/release) are used as they are.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import site
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pyoxide._build import layout as _layout
from pyoxide.spec import Spec
from pyoxide.verify import find_specs, load_specs

REPO = Path(__file__).resolve().parents[2]
KERNELS_CRATE = REPO / "kernels_rs" / "Cargo.toml"
ARCHS = ("sm_80", "sm_90")
PREBUILT = REPO / "target" / "oxide" / "release" / "kernels_rs.manifest.json"
# What `pyoxide build --bundled` writes (and a wheel ships).
PACKAGED = _layout.PREBUILT / "kernels_rs.manifest.json"


@functools.cache
def bundled_specs() -> dict[str, Spec]:
    """The bundled kernels' specs (kernels_rs/specs, or the copy a wheel ships), by kernel."""
    folder = find_specs(None)
    assert folder is not None
    return {s.kernel: s for s in load_specs(folder)}


def cargo_oxide() -> str | None:
    found = shutil.which("cargo-oxide")
    if found:
        return found
    home = Path.home() / ".cargo" / "bin" / "cargo-oxide"
    return str(home) if home.is_file() else None


@functools.cache
def kernels_manifest() -> Path:
    """Build kernels_rs for ARCHS (or use the carried artifacts) and return the manifest path."""
    exe = cargo_oxide()
    if exe is None:
        for prebuilt in (PREBUILT, PACKAGED):
            if prebuilt.is_file():
                return prebuilt
        raise RuntimeError(
            "cargo-oxide is not installed and no prebuilt artifacts exist; run scripts/setup"
        )
    out = subprocess.run(
        [
            exe,
            "oxide",
            "build",
            "--manifest-path",
            str(KERNELS_CRATE),
            "--arch",
            ",".join(ARCHS),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"cargo oxide build failed ({out.returncode}):\n{out.stderr}")
    return Path(json.loads(out.stdout)["manifest"])


def load_manifest() -> dict:
    return json.loads(kernels_manifest().read_text())


def find_ptxas() -> str | None:
    """ptxas from PATH, a CUDA toolkit, or NVIDIA's PyPI wheel."""
    for candidate in (os.environ.get("OXIDE_PTXAS"), shutil.which("ptxas")):
        if candidate and Path(candidate).is_file():
            return candidate
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "ptxas").is_file():
            return str(Path(root) / "bin" / "ptxas")
    for d in [*site.getsitepackages(), site.getusersitepackages()]:
        hits = sorted(Path(d, "nvidia").glob("*/bin/ptxas"), reverse=True)
        if hits:
            return str(hits[0])
    return None


@functools.cache
def workspace_cargo_oxide() -> str | None:
    """This checkout's cargo-oxide, built with cargo (None without cargo): the installed
    one may predate what the tests need (the emulator library)."""
    cargo = shutil.which("cargo")
    if cargo is None:
        return None
    subprocess.run(
        [cargo, "build", "-q", "-p", "cargo-oxide", "--bin", "cargo-oxide"],
        cwd=REPO, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return str(REPO / "target" / "debug" / "cargo-oxide")


@functools.cache
def emu_kernels_manifest() -> Path:
    """kernels_rs built with its emulator library: by this checkout's cargo-oxide where
    cargo is present, else the carried artifacts (which must name an emulator)."""
    exe = workspace_cargo_oxide()
    if exe is None:
        return PREBUILT if PREBUILT.is_file() else PACKAGED
    return cargo_oxide_build(exe, KERNELS_CRATE, ARCHS)


def cargo_oxide_build(
    exe: str, manifest_path: Path, archs: Sequence[str], out_dir: Path | None = None
) -> Path:
    """`cargo oxide build --json` of one crate (its emulator included); the manifest."""
    cmd = [exe, "oxide", "build", "--manifest-path", str(manifest_path), "--arch", ",".join(archs)]
    if out_dir is not None:
        cmd += ["--out-dir", str(out_dir)]
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"cargo oxide build failed ({out.returncode}):\n{out.stderr}")
    return Path(json.loads(out.stdout)["manifest"])


CUDA_OXIDE_PORTS = REPO / "crates" / "oxide-device" / "tests" / "fixtures" / "cuda_oxide_ports"
PORTS_OUT = REPO / "target" / "oxide" / "cuda_oxide_ports"


def fixture_manifest(crate: Path, out_dir: Path, archs: Sequence[str] = ARCHS) -> Path:
    """A test crate built with its emulator into `out_dir` by this checkout's
    cargo-oxide; on a machine without cargo, what was built there before (carry
    `out_dir` to the GPU machine)."""
    exe = workspace_cargo_oxide()
    if exe is None:
        return out_dir / f"{crate.name}.manifest.json"
    manifest = cargo_oxide_build(exe, crate / "Cargo.toml", archs, out_dir)
    if (crate / "specs").is_dir():  # beside the manifest, where verify looks on any machine
        shutil.copytree(crate / "specs", out_dir / "specs", dirs_exist_ok=True)
    return manifest


@functools.cache
def cuda_oxide_ports_manifest() -> Path:
    """The crate of ported cuda-oxide examples (target/oxide/cuda_oxide_ports)."""
    return fixture_manifest(CUDA_OXIDE_PORTS, PORTS_OUT)


@functools.cache
def readme_manifest() -> Path:
    """The README's kernels (crates/oxide-device/tests/fixtures/readme,
    target/oxide/readme)."""
    crate = REPO / "crates" / "oxide-device" / "tests" / "fixtures" / "readme"
    return fixture_manifest(crate, REPO / "target" / "oxide" / "readme")


NATURAL = REPO / "crates" / "oxide-device" / "tests" / "fixtures" / "natural"


@functools.cache
def natural_manifest() -> Path:
    """Issue 23's four kernels in the guide's style (crates/oxide-device/tests/fixtures/
    natural, target/oxide/natural)."""
    return fixture_manifest(NATURAL, REPO / "target" / "oxide" / "natural")


WRONG_KERNELS = REPO / "tests" / "fixtures" / "wrong_kernels"


@functools.cache
def wrong_kernels_manifest() -> Path:
    """The deliberately wrong kernels verify must flag (target/oxide/wrong_kernels)."""
    return fixture_manifest(WRONG_KERNELS, REPO / "target" / "oxide" / "wrong_kernels")


SM90A_CRATE = REPO / "kernels_sm90a" / "Cargo.toml"
SM90A_PACKAGED = _layout.PREBUILT / "kernels_sm90a.manifest.json"


@functools.cache
def sm90a_kernels_manifest() -> Path:
    """kernels_sm90a built for sm_90a with its emulator library (which refuses the
    kernels) by this checkout's cargo-oxide; without cargo, the packaged build
    (`pyoxide build --bundled`) that was carried."""
    exe = workspace_cargo_oxide()
    if exe is None:
        return SM90A_PACKAGED
    return cargo_oxide_build(exe, SM90A_CRATE, ("sm_90a",))


#: kernels_sm90a's GEMM tiles (BN, BM) and k splits, as its #[tune] lists them: each
#: tile with each split is an instance (`{name}_sm90_{BN}_{SPLIT}_{BM}`).
SM90_GEMM_TILES = [(256, 128), (256, 64), (256, 16), (128, 128), (128, 64), (128, 16), (64, 128)]
SM90_GEMM_SPLITS = (1, 2, 3, 4)


def sm90_gemm_instances(name: str) -> list[str]:
    """Every instance of kernels_sm90a's `{name}_sm90` (gemm_bf16 or gemm_bf16_bf16)."""
    return [
        f"{name}_sm90_{bn}_{split}_{bm}" for bn, bm in SM90_GEMM_TILES for split in SM90_GEMM_SPLITS
    ]


CLUSTER_KERNELS = REPO / "tests" / "fixtures" / "cluster_kernels"


@functools.cache
def cluster_kernels_manifest() -> Path:
    """Kernels in thread-block clusters (tests/fixtures/cluster_kernels), built for sm_90
    (clusters start there) into the crate's untracked prebuilt/, which the GPU machine's
    copy of the worktree carries (target/ stays behind)."""
    return fixture_manifest(CLUSTER_KERNELS, CLUSTER_KERNELS / "prebuilt", ("sm_90",))


CLUSTER_TMA_KERNELS = REPO / "tests" / "fixtures" / "cluster_tma_kernels"


@functools.cache
def cluster_tma_kernels_manifest() -> Path:
    """A TMA multicast kernel (tests/fixtures/cluster_tma_kernels), built for sm_90a (TMA
    needs its PTX 8.0) into the crate's untracked prebuilt/, as cluster_kernels."""
    return fixture_manifest(CLUSTER_TMA_KERNELS, CLUSTER_TMA_KERNELS / "prebuilt", ("sm_90a",))


@functools.cache
def half_kernels_manifest() -> Path:
    """Kernels over f16 and bf16 (tests/fixtures/half_kernels, target/oxide/half_kernels)."""
    crate = REPO / "tests" / "fixtures" / "half_kernels"
    return fixture_manifest(crate, REPO / "target" / "oxide" / "half_kernels")


TUNED_KERNELS = REPO / "tests" / "fixtures" / "tuned_kernels"


@functools.cache
def tuned_kernels_manifest() -> Path:
    """`#[tune]` kernels (tests/fixtures/tuned_kernels) with their specs, built into the
    crate's untracked prebuilt/ (carry it to the GPU machine)."""
    return fixture_manifest(TUNED_KERNELS, TUNED_KERNELS / "prebuilt")


HOSTILE_VERIFY = REPO / "tests" / "fixtures" / "hostile_verify"


@functools.cache
def hostile_verify_manifest() -> Path:
    """Kernels and specs that attack `pyoxide verify` (target/oxide/hostile_verify)."""
    return fixture_manifest(HOSTILE_VERIFY, REPO / "target" / "oxide" / "hostile_verify")


GALLERY = REPO / "gallery"


@functools.cache
def gallery_manifest() -> Path:
    """The gallery crate, built with its emulator (target/oxide/gallery)."""
    return fixture_manifest(GALLERY, REPO / "target" / "oxide" / "gallery")
