"""Stage 2 input: read and check ``<crate>.manifest.json``.

The manifest is defined in Rust (``crates/oxide-abi``) and described by the
checked-in JSON schema; this module mirrors that schema by hand (the runtime does not
depend on ``jsonschema``) and a test keeps the two in step. Errors name the JSON path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ManifestError
from . import abi as _abi
from .artifacts import PtxArtifact, read_artifact, read_checked
from .constants import ConstantSpec, parse_constants
from .json_checker import JsonChecker
from .policy_spec import (
    LaunchPolicy,
    TensorMapSpec,
    read_cluster,
    read_launch_policy,
    read_tensor_maps,
)
from .records import RecordLayout, parse_record
from .shape_spec import LAYOUTS, ArraySpec, read_array_spec, read_length
from .tune_spec import TunedChoice, TuneSpec, read_choices, read_tune

#: Newest manifest schema this reader understands.
SCHEMA_VERSION = _abi.MANIFEST_SCHEMA_VERSION
#: Kernel descriptor encoding this reader understands.
DESCRIPTOR_VERSION = _abi.DESCRIPTOR_VERSION

#: Scalar types in their Rust (= manifest) spelling, with their size in bytes.
SCALAR_SIZES: Mapping[str, int] = {t.name: t.size for t in _abi.SCALARS.values()}
#: Parameter kinds in their manifest spelling (what each means: ``_abi.PARAM_KINDS``).
PARAM_KINDS = tuple(_abi.PARAM_KINDS)


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str
    type: str
    mutable: bool
    array: ArraySpec | None = None  # shaped arrays only
    length: str | int | None = None  # slices only: #[shapes(x[n])]'s name or number
    #: A non-scalar value or element type's layout (pyoxide/_manifest/records.py); None for scalars.
    record: RecordLayout | None = None

    @property
    def is_array(self) -> bool:
        return _abi.PARAM_KINDS[self.kind].is_array

    @property
    def takes_address(self) -> bool:
        """An array parameter passed as a bare pointer (``unsafe`` kernels' ``*const T`` /
        ``*mut T``): it also takes an ``int`` address."""
        k = _abi.PARAM_KINDS[self.kind]
        return k.is_array and not k.is_slice and not k.is_shaped

    @property
    def rust_type(self) -> str:
        """How the parameter is written in Rust, for messages."""
        t = _abi.PARAM_KINDS[self.kind].rust.replace("{mut}", "mut" if self.mutable else "const")
        if self.array is not None:
            t = t.replace("{r}", str(self.array.rank)).replace("{l}", LAYOUTS[self.array.layout])
        return t.replace("{t}", self.record.rust_type if self.record else self.type)


@dataclass(frozen=True)
class LaunchBounds:
    max_threads: int
    min_blocks: int | None = None


@dataclass(frozen=True)
class SourceLocation:
    module: str
    file: str
    line: int


@dataclass(frozen=True)
class KernelSpec:
    """One kernel, or one instance of a generic kernel (a KernelDescriptor)."""

    name: str
    entry: str
    params: tuple[ParamSpec, ...]
    source: SourceLocation
    instance: tuple[tuple[str, str], ...] = ()
    is_unsafe: bool = False
    launch_bounds: LaunchBounds | None = None
    launch: LaunchPolicy | None = None
    cluster: tuple[int, int, int] | None = None  # #[cluster_launch(x, y, z)]
    #: `#[variant_of(name)]`: a faster kernel for some calls of the kernel `name` (of
    #: another crate), which its plain calls run where this one takes them.
    variant_of: str | None = None
    #: Dynamic shared memory a plain launch gives (`#[launch(..., shared = N)]`).
    shared_bytes: int = 0
    #: `#[tensor_maps(...)]`: the derived parameter holding them, and the maps.
    maps_param: str | None = None
    tensor_maps: tuple[TensorMapSpec, ...] = ()
    #: `#[tune(...)]` (pyoxide/_manifest/tune_spec.py): its tuned consts and launch parameters.
    tune: TuneSpec | None = None
    #: The full-warp collective its code runs (schema 8, from the link step): it takes
    #: only blocks of whole warps.
    whole_warps: str | None = None
    #: `#[dependent_launch]`: it waits for the grid before it on the stream itself
    #: (`griddepcontrol.wait`), so the compiled launcher starts it with programmatic
    #: stream serialisation (pyoxide/_launch/fastplan.py).
    dependent_launch: bool = False

    @property
    def passed_params(self) -> tuple[ParamSpec, ...]:
        """The parameters a caller passes: all but a derived tensor-map parameter."""
        if self.maps_param is None:
            return self.params
        return tuple(p for p in self.params if p.name != self.maps_param)

    @property
    def signature(self) -> str:
        generics = ""
        if self.instance:
            generics = "::<" + ", ".join(v for _, v in self.instance) + ">"
        params = ", ".join(f"{p.name}: {p.rust_type}" for p in self.params)
        unsafe = "unsafe " if self.is_unsafe else ""
        return f"{unsafe}fn {self.name}{generics}({params})"


@dataclass(frozen=True)
class Toolchain:
    rustc: str
    llvm: str
    llvm_tools: str
    cargo_oxide: str
    hash: str
    ptxas: str | None = None
    libdevice_sha256: str | None = None


@dataclass(frozen=True)
class Manifest:
    path: Path  # absolute path of the manifest file
    schema: int
    crate_name: str
    crate_version: str
    crate_manifest_path: str
    profile: str
    toolchain: Toolchain
    sources: tuple[tuple[str, str], ...]  # (path, sha256)
    artifacts: tuple[PtxArtifact, ...]
    # (path, sha256); sha256 None for a library supplied apart from the build (a wheel's
    # own host build of the crate, see load(emulator=)), which has no hash to check.
    emulator: tuple[Path, str | None] | None
    kernels: tuple[KernelSpec, ...] = field(default=())
    constants: tuple[ConstantSpec, ...] = field(default=())  # `#[constant]` statics
    # Whether the PTX fuses a multiply and an add into one rounding (`codegen.fmad`,
    # schema 6; older builds did not). The emulator always rounds them apart.
    fmad: bool = False
    # Tuned choices `pyoxide build --tuned` put here (schema 9; pyoxide/_manifest/tune_spec.py).
    tuned: tuple[TunedChoice, ...] = field(default=())

    @property
    def archs(self) -> list[str]:
        return [a.arch for a in self.artifacts]

    def read_emulator(self) -> bytes | None:
        """The emulator library's bytes, checked against the manifest's hash (None when
        the build has none)."""
        if self.emulator is None:
            return None
        path, sha256 = self.emulator
        return read_checked(path, sha256, "the emulator library")


# --- reading ---------------------------------------------------------------------


def read_manifest(path: str | Path) -> Manifest:
    """Read, check and resolve a manifest file (artifact paths become absolute)."""
    file = Path(path).resolve()
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ManifestError(
            f"manifest {file} is not UTF-8 text (damaged). Fix: rebuild with `pyoxide build`."
        ) from None
    except OSError as e:
        raise ManifestError(
            f"cannot read manifest {file}: {e.strerror}. "
            "Fix: pass the `<crate>.manifest.json` that `pyoxide build` wrote, or a crate folder."
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{file} is not valid JSON ({e}). Fix: rebuild it with `pyoxide build`."
        ) from None
    return parse_manifest(value, file)


def parse_manifest(value: Any, file: Path) -> Manifest:
    c = JsonChecker(file)
    if not isinstance(value, dict) or "schema" not in value:
        raise ManifestError(
            f"{file} is not a pyoxide manifest (no 'schema' field). "
            "Fix: pass the `<crate>.manifest.json` that `pyoxide build` wrote."
        )
    schema = c.uint(value["schema"], "schema")
    if schema > SCHEMA_VERSION:
        raise ManifestError(
            f"{file} has manifest schema {schema}, newer than the {SCHEMA_VERSION} this "
            "pyoxide reads. Fix: upgrade pyoxide (`pip install -U pyoxide`), or rebuild the "
            "crate with the cargo-oxide that matches this pyoxide."
        )
    if schema < 1:
        raise c.fail("schema", f"schema {schema} does not exist")
    top = c.obj(
        value,
        "$",
        ["schema", "crate", "profile", "toolchain", "sources", "artifacts", "kernels"],
        ["emulator", "constants", "codegen", "tuned"],
    )
    codegen = c.obj(top.get("codegen", {"fmad": False}), "codegen", ["fmad"])
    crate = c.obj(top["crate"], "crate", ["name", "version", "manifest_path"])
    tc = c.obj(
        top["toolchain"],
        "toolchain",
        ["rustc", "llvm", "llvm_tools", "cargo_oxide", "hash"],
        ["ptxas", "libdevice_sha256"],
    )
    toolchain = Toolchain(
        rustc=c.str_(tc["rustc"], "toolchain.rustc"),
        llvm=c.str_(tc["llvm"], "toolchain.llvm"),
        llvm_tools=c.str_(tc["llvm_tools"], "toolchain.llvm_tools"),
        cargo_oxide=c.str_(tc["cargo_oxide"], "toolchain.cargo_oxide"),
        hash=c.str_(tc["hash"], "toolchain.hash"),
        ptxas=c.opt_str(tc.get("ptxas"), "toolchain.ptxas"),
        libdevice_sha256=c.opt_str(tc.get("libdevice_sha256"), "toolchain.libdevice_sha256"),
    )
    sources = []
    for i, s in enumerate(c.list_(top["sources"], "sources")):
        w = f"sources[{i}]"
        s = c.obj(s, w, ["path", "sha256"])
        sources.append((c.str_(s["path"], w + ".path"), c.str_(s["sha256"], w + ".sha256")))
    base = file.parent
    artifacts = [
        read_artifact(c, a, f"artifacts[{i}]", base)
        for i, a in enumerate(c.list_(top["artifacts"], "artifacts"))
    ]
    emulator = None
    if top.get("emulator") is not None:
        e = c.obj(top["emulator"], "emulator", ["path", "sha256"])
        emulator = (
            c.path_inside(base, e["path"], "emulator.path"),
            c.str_(e["sha256"], "emulator.sha256"),
        )
    kernels = [
        _kernel(c, k, f"kernels[{i}]") for i, k in enumerate(c.list_(top["kernels"], "kernels"))
    ]
    seen: dict[str, str] = {}
    for k in kernels:
        if k.entry in seen:
            raise c.fail("kernels", f"entry symbol '{k.entry}' appears twice")
        seen[k.entry] = k.name
    return Manifest(
        path=file,
        schema=schema,
        crate_name=c.str_(crate["name"], "crate.name"),
        crate_version=c.str_(crate["version"], "crate.version"),
        crate_manifest_path=c.str_(crate["manifest_path"], "crate.manifest_path"),
        profile=c.str_(top["profile"], "profile"),
        toolchain=toolchain,
        sources=tuple(sources),
        artifacts=tuple(artifacts),
        emulator=emulator,
        kernels=tuple(kernels),
        constants=parse_constants(c, top.get("constants", []), "constants"),
        fmad=c.bool_(codegen["fmad"], "codegen.fmad"),
        tuned=read_choices(c, top.get("tuned", []), "tuned"),
    )


_OPTIONAL_DESCRIPTOR_FIELDS = ("instance", "is_unsafe", "launch_bounds", "launch", "cluster",
                               "variant_of", "shared_bytes", "tensor_maps", "tune",
                               "whole_warps", "dependent_launch")  # fmt: skip


def _kernel(c: JsonChecker, value: Any, w: str) -> KernelSpec:
    # KernelDescriptor is open in the schema (no additionalProperties: false).
    k = c.obj(
        value,
        w,
        ["version", "name", "entry", "params", "source"],
        list(_OPTIONAL_DESCRIPTOR_FIELDS),
        closed=False,
    )
    version = c.uint(k["version"], w + ".version")
    if version != DESCRIPTOR_VERSION:
        raise c.fail(
            w + ".version",
            f"kernel descriptor version {version}, this pyoxide reads {DESCRIPTOR_VERSION}",
        )
    name = c.str_(k["name"], w + ".name")
    if not name.isidentifier():
        raise c.fail(w + ".name", f"{name!r} is not an identifier")
    params = []
    for i, p in enumerate(c.list_(k["params"], w + ".params")):
        pw = f"{w}.params[{i}]"
        p = c.obj(p, pw, ["name", "kind", "type", "mutable"], closed=False)
        kind = c.choice(p["kind"], pw + ".kind", PARAM_KINDS)
        params.append(
            ParamSpec(
                name=c.str_(p["name"], pw + ".name"),
                kind=kind,
                type=c.choice(p["type"], pw + ".type", list(SCALAR_SIZES)),
                mutable=c.bool_(p["mutable"], pw + ".mutable"),
                array=read_array_spec(c, p.get("array"), pw + ".array", kind),
                length=read_length(c, p.get("length"), pw + ".length", kind),
                record=parse_record(c, p["record"], pw + ".record") if "record" in p else None,
            )
        )
    instance = []
    for i, g in enumerate(c.list_(k.get("instance", []), w + ".instance")):
        gw = f"{w}.instance[{i}]"
        g = c.obj(g, gw, ["param", "value"], closed=False)
        instance.append((c.str_(g["param"], gw + ".param"), c.str_(g["value"], gw + ".value")))
    bounds = None
    if k.get("launch_bounds") is not None:
        lb = c.obj(k["launch_bounds"], w + ".launch_bounds", ["max_threads"], closed=False)
        max_threads = c.uint(lb["max_threads"], w + ".launch_bounds.max_threads")
        if max_threads == 0:
            raise c.fail(w + ".launch_bounds.max_threads", "must be at least 1")
        min_blocks = lb.get("min_blocks")
        bounds = LaunchBounds(
            max_threads,
            None if min_blocks is None else c.uint(min_blocks, w + ".launch_bounds.min_blocks"),
        )
    src = c.obj(k["source"], w + ".source", ["module", "file", "line"], closed=False)
    maps_param: str | None = None
    maps: tuple[TensorMapSpec, ...] = ()
    if k.get("tensor_maps") is not None:
        maps_param, maps = read_tensor_maps(c, k["tensor_maps"], w + ".tensor_maps", params)
    shared = c.uint(k.get("shared_bytes", 0), w + ".shared_bytes", 32)
    if shared > _abi.MAX_DYNAMIC_SHARED_BYTES:
        raise c.fail(w + ".shared_bytes", f"at most {_abi.MAX_DYNAMIC_SHARED_BYTES}")
    variant_of = k.get("variant_of")
    launch = (
        None
        if k.get("launch") is None
        else read_launch_policy(c, k["launch"], w + ".launch", params)
    )
    return KernelSpec(
        name=name,
        entry=c.str_(k["entry"], w + ".entry"),
        params=tuple(params),
        source=SourceLocation(
            c.str_(src["module"], w + ".source.module"),
            c.str_(src["file"], w + ".source.file"),
            c.uint(src["line"], w + ".source.line"),
        ),
        instance=tuple(instance),
        is_unsafe=c.bool_(k.get("is_unsafe", False), w + ".is_unsafe"),
        launch_bounds=bounds,
        launch=launch,
        cluster=None if k.get("cluster") is None else read_cluster(c, k["cluster"], w + ".cluster"),
        variant_of=None if variant_of is None else c.str_(variant_of, w + ".variant_of"),
        shared_bytes=shared,
        maps_param=maps_param,
        tensor_maps=maps,
        tune=None
        if k.get("tune") is None
        else read_tune(c, k["tune"], w + ".tune", params, None if launch is None else launch.kind),
        whole_warps=None
        if k.get("whole_warps") is None
        else c.str_(k["whole_warps"], w + ".whole_warps"),
        dependent_launch=c.bool_(k.get("dependent_launch", False), w + ".dependent_launch"),
    )
