"""A manifest's artifacts: the PTX of one architecture, with what ptxas reported of each
kernel's resources, read back only when its bytes still have the manifest's hash."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from . import abi as _abi
from .json_checker import JsonChecker


@dataclass(frozen=True)
class PtxasDiagnostic:
    """A ``ptxas warning`` line, or a ``ptxas info`` line with a code (its advice)."""

    level: str  # "info" or "warning", as ptxas labelled the line
    code: str | None  # "C7512"
    message: str  # the text after the code

    @property
    def serializes_wgmma(self) -> bool:
        """ptxas serialised the wgmmas of the function it names (correct, but slow)."""
        return _abi.PTXAS_WGMMA_SERIALIZED in self.message

    def __str__(self) -> str:
        return f"({self.code}) {self.message}" if self.code else self.message


@dataclass(frozen=True)
class KernelResources:
    registers: int
    shared_bytes: int
    stack_frame_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int
    # ptxas's diagnostics naming this entry (schema 12; none in older manifests).
    diagnostics: tuple[PtxasDiagnostic, ...] = ()


@dataclass(frozen=True)
class PtxArtifact:
    arch: str
    path: Path  # absolute
    sha256: str
    ptx_version: str
    ptxas: Mapping[str, KernelResources] | None = None
    # ptxas's diagnostics naming no entry of this PTX (schema 12).
    ptxas_diagnostics: tuple[PtxasDiagnostic, ...] = ()

    def read(self) -> bytes:
        """The PTX bytes, checked against the manifest's hash."""
        return read_checked(self.path, self.sha256, f"the {self.arch} PTX")


def read_checked(path: Path, sha256: str | None, what: str) -> bytes:
    """The bytes of the artifact ``what`` at ``path``, checked against the manifest's
    ``sha256`` (when it gives one): an ArtifactError names a file that is gone or
    changed since the manifest was written."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ArtifactError(
            f"cannot read {what} {path}: {e.strerror}. Fix: rebuild with `pyoxide build`, "
            "or load a manifest whose files exist."
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ArtifactError(
            f"{path} changed since its manifest was written (sha256 {digest[:12]}…, "
            f"manifest says {sha256[:12]}…). Fix: rebuild with `pyoxide build`."
        )
    return data


def read_diagnostics(c: JsonChecker, value: Any, w: str) -> tuple[PtxasDiagnostic, ...]:
    out = []
    for i, d in enumerate(c.list_(value, w)):
        dw = f"{w}[{i}]"
        d = c.obj(d, dw, ["level", "message"], ["code"])
        out.append(
            PtxasDiagnostic(
                level=c.choice(d["level"], dw + ".level", _abi.PTXAS_LEVELS),
                code=c.opt_str(d.get("code"), dw + ".code"),
                message=c.str_(d["message"], dw + ".message"),
            )
        )
    return tuple(out)


def read_artifact(c: JsonChecker, value: Any, w: str, base: Path) -> PtxArtifact:
    a = c.obj(value, w, ["arch", "path", "sha256", "ptx_version"], ["ptxas", "ptxas_diagnostics"])
    arch = c.str_(a["arch"], w + ".arch")
    try:
        _abi.parse_arch(arch)
    except ValueError as e:
        raise c.fail(w + ".arch", str(e)) from None
    resources = None
    if a.get("ptxas") is not None:
        raw = c.obj(a["ptxas"], w + ".ptxas", [], closed=False)
        resources = {}
        fields = [
            "registers", "shared_bytes", "stack_frame_bytes",
            "spill_store_bytes", "spill_load_bytes", "barriers",
        ]  # fmt: skip
        for entry, r in raw.items():
            rw = f"{w}.ptxas.{entry}"
            r = c.obj(r, rw, fields, ["diagnostics"])
            resources[entry] = KernelResources(
                **{f: c.uint(r[f], f"{rw}.{f}", 64) for f in fields},
                diagnostics=read_diagnostics(c, r.get("diagnostics", []), rw + ".diagnostics"),
            )
    return PtxArtifact(
        arch=arch,
        path=c.path_inside(base, a["path"], w + ".path"),
        sha256=c.str_(a["sha256"], w + ".sha256"),
        ptx_version=c.str_(a["ptx_version"], w + ".ptx_version"),
        ptxas=resources,
        ptxas_diagnostics=read_diagnostics(
            c, a.get("ptxas_diagnostics", []), w + ".ptxas_diagnostics"
        ),
    )
