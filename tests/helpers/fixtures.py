"""Realistic manifests for tests, written the way cargo-oxide writes them.

The kernels mirror what a Rust kernel crate would declare; their PTX is hand-written
(tests/fixtures/oxide_fixtures.ptx) and follows the same ABI, so GPU tests can run
the whole Python path without the Rust toolchain.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from pyoxide._manifest import abi as _abi

TESTS_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = TESTS_DIR.parent
SCHEMA_FILE = REPO_DIR / "crates" / "oxide-abi" / "manifest.schema.json"
PTX_TEMPLATE = TESTS_DIR / "fixtures" / "oxide_fixtures.ptx"
CRATE = "oxide_fixtures"


def param(name: str, kind: str, type_: str, mutable: bool | None = None) -> dict[str, Any]:
    if mutable is None:
        mutable = kind in ("disjoint_slice", "mut_slice")
    return {"name": name, "kind": kind, "type": type_, "mutable": mutable}


def lanes(name: str, type_: str, count: int) -> dict[str, Any]:
    """A ``[T; N]`` of scalar ``T`` by value, as the descriptor lists it (its record laid
    out as the compiler lays out an array: T's alignment)."""
    size = _abi.SCALARS[type_].size
    record = {"rust_type": f"[{type_}; {count}]", "size": size * count, "align": size}
    return {**param(name, "value", type_), "record": record}


def rust_params(signature: str) -> list[dict[str, Any]]:
    """The parameters of a Rust signature as the descriptor lists them: ``"a: f32, x:
    &[f32], out: DisjointSlice<f32>"`` (``&[T]``, ``&mut [T]``, ``DisjointSlice<T>``,
    ``*const T``, ``*mut T``, or a scalar)."""
    kinds = (("&mut [", "mut_slice"), ("&[", "slice"), ("DisjointSlice<", "disjoint_slice"),
             ("*const ", "pointer"), ("*mut ", "pointer"))  # fmt: skip
    out = []
    for p in signature.split(","):
        name, ty = (t.strip() for t in p.split(":"))
        prefix, kind = next(((pre, k) for pre, k in kinds if ty.startswith(pre)), ("", "scalar"))
        elem = ty.removeprefix(prefix).rstrip("]>")
        out.append(param(name, kind, elem, True if prefix == "*mut " else None))
    return out


def kernel(
    name: str,
    params: list[dict[str, Any]],
    *,
    entry: str | None = None,
    instance: list[tuple[str, str]] = (),  # type: ignore[assignment]
    is_unsafe: bool = False,
    launch_bounds: dict[str, Any] | None = None,
    line: int = 1,
) -> dict[str, Any]:
    return {
        "version": _abi.DESCRIPTOR_VERSION,
        "name": name,
        "entry": entry or name,
        "instance": [{"param": p, "value": v} for p, v in instance],
        "params": params,
        "is_unsafe": is_unsafe,
        "launch_bounds": launch_bounds,
        "source": {"module": CRATE, "file": "src/lib.rs", "line": line},
    }


def _scale(t: str) -> dict[str, Any]:
    return kernel(
        "scale",
        rust_params(f"factor: {t}, x: &[{t}], out: DisjointSlice<{t}>"),
        entry=f"scale_{t}",
        instance=[("T", t)],
        line=20,
    )


KERNELS: list[dict[str, Any]] = [
    kernel("vecadd", rust_params("a: &[f32], b: &[f32], c: DisjointSlice<f32>"), line=5),
    kernel("saxpy", rust_params("a: f32, x: &[f32], y: &[f32], out: DisjointSlice<f32>"), line=12),
    _scale("f32"),
    _scale("f64"),
    kernel(
        "mix",
        rust_params(
            "a: i8, b: u16, c: bool, d: i64, e: f64, f: u32, g: usize, out: DisjointSlice<f64>"
        ),
        line=30,
    ),
    kernel(
        "iota",
        rust_params("out: DisjointSlice<u32>"),
        launch_bounds={"max_threads": 128, "min_blocks": None},
        line=40,
    ),
    kernel(
        "accumulate",
        rust_params("x: *const f32, y: &mut [f32]"),
        is_unsafe=True,
        line=50,
    ),
    kernel(
        "count_positive",
        rust_params("x: &[f32], counter: *mut u32"),
        is_unsafe=True,
        line=60,
    ),
    kernel(
        "strided",
        [
            lanes("a", "u64", 3),
            lanes("b", "i32", 2),
            lanes("c", "u8", 3),
            *rust_params("flag: bool, out: DisjointSlice<f32>"),
        ],
        line=70,
    ),
]


#: The PTX ISA each fixture architecture is written with (the lowest that allows it).
PTX_ISA = {"sm_80": "7.0", "sm_86": "7.1", "sm_89": "7.8", "sm_90": "7.8", "sm_90a": "8.0"}


def ptx_for(arch: str, isa: str | None = None) -> str:
    isa = isa or PTX_ISA.get(arch, "7.8")
    text = PTX_TEMPLATE.read_text().replace(".target sm_80", f".target {arch}")
    return text.replace(".version 7.0", f".version {isa}")


def manifest_dict(
    out_dir: Path,
    *,
    crate: str = CRATE,
    archs: tuple[str, ...] = ("sm_80", "sm_90"),
    kernels: list[dict[str, Any]] | None = None,
    sources: list[tuple[str, str]] = (),  # type: ignore[assignment]
    manifest_path: str = "/src/oxide_fixtures/Cargo.toml",
    profile: str = "release",
    ptx_version: str | None = None,
    write_ptx: bool = True,
    emulator: Path | None = None,
) -> dict[str, Any]:
    """A manifest dict for ``out_dir``; writes the PTX files it names there. ``emulator``:
    an emulator library to name (relative to ``out_dir`` when inside it), with its sha256."""
    artifacts = []
    for arch in archs:
        name = f"{crate}.{arch}.ptx"
        isa = ptx_version or PTX_ISA.get(arch, "7.8")
        text = ptx_for(arch, isa)
        if write_ptx:
            (out_dir / name).write_text(text)
        entries = kernels if kernels is not None else KERNELS
        artifacts.append({
            "arch": arch,
            "path": name,
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "ptx_version": isa,
            "ptxas": {
                k["entry"]: {
                    "registers": 12, "shared_bytes": 0, "stack_frame_bytes": 0,
                    "spill_store_bytes": 0, "spill_load_bytes": 0, "barriers": 0,
                    "diagnostics": [],
                }
                for k in entries
            },
            "ptxas_diagnostics": [],
        })  # fmt: skip
    toolchain = {
        "rustc": "rustc 1.96.0 (fixture)",
        "llvm": "22.1.0",
        "llvm_tools": "22.1.0",
        "ptxas": "Cuda compilation tools, release 12.9, V12.9.86",
        "libdevice_sha256": None,
        "cargo_oxide": "0.1.0",
    }
    toolchain["hash"] = hashlib.sha256(json.dumps(toolchain, sort_keys=True).encode()).hexdigest()
    return {
        # pyoxide._manifest.reader.SCHEMA_VERSION (tests/manifest/test_manifest.py checks it)
        "schema": 12,
        "crate": {"name": crate, "version": "0.1.0", "manifest_path": manifest_path},
        "profile": profile,
        "toolchain": toolchain,
        "sources": [{"path": p, "sha256": h} for p, h in sources],
        "artifacts": artifacts,
        "emulator": None if emulator is None else _emulator_entry(out_dir, emulator),
        "kernels": copy.deepcopy(kernels if kernels is not None else KERNELS),
        "codegen": {"fmad": True},
    }


def _emulator_entry(out_dir: Path, library: Path) -> dict[str, str]:
    """The manifest's emulator entry; a library from elsewhere is copied in beside the
    manifest first (a manifest names only files in its own folder)."""
    if not library.is_relative_to(out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)
        library = Path(shutil.copy2(library, out_dir / library.name))
    path = library.relative_to(out_dir)
    return {"path": str(path), "sha256": hashlib.sha256(library.read_bytes()).hexdigest()}


def write_manifest(out_dir: Path, value: dict[str, Any] | None = None, **kw: Any) -> Path:
    """Write a fixture manifest (and its PTX) into ``out_dir``; returns the manifest path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if value is None:
        value = manifest_dict(out_dir, **kw)
    path = out_dir / f"{value['crate']['name']}.manifest.json"
    path.write_text(json.dumps(value, indent=2) + "\n")
    return path


def make_crate(root: Path, name: str = CRATE) -> Path:
    """A kernel crate on disk (sources only: the fake cargo-oxide 'builds' it)."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "Cargo.toml").write_text(f'[package]\nname = "{name}"\nversion = "0.1.0"\n')
    (root / "src" / "lib.rs").write_text("#![no_std]\n// kernels would be here\n")
    return root


def load_with_entry(out_dir: Path, extra: dict[str, Any]) -> Any:
    """The launcher of kernel `extra`, loaded beside the standard kernels from a manifest
    written into `out_dir`. The fake CUDA finds entries by name in the PTX, so each PTX
    gains a line naming `extra`'s entry (and the manifest that PTX's new hash)."""
    import pyoxide

    name = extra["entry"]
    value = manifest_dict(out_dir, kernels=[*KERNELS, extra])
    for art in value["artifacts"]:
        ptx = out_dir / art["path"]
        ptx.write_text(ptx.read_text() + f"\n// .entry {name}(\n")
        art["sha256"] = hashlib.sha256(ptx.read_bytes()).hexdigest()
    return pyoxide.load(write_manifest(out_dir, value))[name]
