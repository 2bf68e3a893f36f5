"""The Rust → PTX pipeline on the bundled kernels: manifest contents, schema, ptxas."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers.bundled import ARCHS, REPO, find_ptxas, kernels_manifest, load_manifest

from pyoxide._manifest.reader import SCHEMA_VERSION

SCHEMA = REPO / "crates" / "oxide-abi" / "manifest.schema.json"


def test_manifest_validates_against_the_checked_in_schema():
    import jsonschema  # a dev dependency; imported here so GPU-only runs need not carry it

    jsonschema.validate(load_manifest(), json.loads(SCHEMA.read_text()))


def test_manifest_records_toolchain_and_every_arch():
    m = load_manifest()
    assert m["schema"] == SCHEMA_VERSION
    assert m["crate"]["name"] == "kernels_rs"
    assert m["toolchain"]["rustc"].startswith("rustc ")
    assert re.fullmatch(r"\d+\.\d+\.\d+", m["toolchain"]["llvm"])
    assert m["toolchain"]["llvm_tools"].split(".")[0] == m["toolchain"]["llvm"].split(".")[0]
    assert len(m["toolchain"]["hash"]) == 64
    assert [a["arch"] for a in m["artifacts"]] == list(ARCHS)
    assert any(s["path"].endswith("kernels_rs/src/lib.rs") for s in m["sources"])


def _kernel(m: dict, entry: str) -> dict:
    matches = [k for k in m["kernels"] if k["entry"] == entry]
    assert len(matches) == 1, f"{entry} not in {[k['entry'] for k in m['kernels']]}"
    return matches[0]


def _params(k: dict) -> list[tuple[str, str, str, bool]]:
    return [(p["name"], p["kind"], p["type"], p["mutable"]) for p in k["params"]]


def test_vecadd_and_saxpy_signatures():
    m = load_manifest()
    vecadd = _kernel(m, "vecadd")
    assert vecadd["name"] == "vecadd" and vecadd["instance"] == []
    assert _params(vecadd) == [
        ("a", "slice", "f32", False),
        ("b", "slice", "f32", False),
        ("c", "disjoint_slice", "f32", True),
    ]
    saxpy = _kernel(m, "saxpy")
    assert [p[1:] for p in _params(saxpy)] == [
        ("scalar", "f32", False),
        ("slice", "f32", False),
        ("slice", "f32", False),
        ("disjoint_slice", "f32", True),
    ]


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_generic_scale_has_one_entry_per_instance(ty: str):
    k = _kernel(load_manifest(), f"scale_{ty}")
    assert k["name"] == "scale"
    assert k["instance"] == [{"param": "T", "value": ty}]
    assert {p["type"] for p in k["params"]} == {ty}


def test_every_kernel_is_an_entry_in_every_ptx_and_ptxas_accepts_it():
    ptxas = find_ptxas()
    assert ptxas, "ptxas is missing: scripts/setup installs nvidia-cuda-nvcc"
    manifest_path = kernels_manifest()
    m = load_manifest()
    entries = {k["entry"] for k in m["kernels"]}
    for art in m["artifacts"]:
        ptx = Path(manifest_path).parent / art["path"]
        text = ptx.read_text()
        assert set(re.findall(r"\.entry (\w+)\(", text)) == entries
        assert f".target {art['arch']}" in text
        out = subprocess.run(
            [ptxas, f"-arch={art['arch']}", "-v", str(ptx), "-o", "/dev/null"],
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        assert set(art["ptxas"]) == entries
        for entry in entries:
            assert f"Compiling entry function '{entry}' for '{art['arch']}'" in out.stderr
