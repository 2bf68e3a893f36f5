"""The manifest reader against the schema oxide-abi checks in."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers.fixtures import SCHEMA_FILE, manifest_dict, write_manifest

import pyoxide
from pyoxide._manifest.policy_spec import LAUNCH_KINDS, OPTIONAL_FIELDS
from pyoxide._manifest.reader import (
    DESCRIPTOR_VERSION,
    PARAM_KINDS,
    SCALAR_SIZES,
    SCHEMA_VERSION,
    parse_manifest,
)


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())


@pytest.fixture
def good(tmp_path: Path) -> dict[str, Any]:
    return manifest_dict(tmp_path)


def test_fixture_manifests_follow_the_schema(schema: dict[str, Any], tmp_path: Path) -> None:
    jsonschema.validate(manifest_dict(tmp_path), schema)
    jsonschema.validate(manifest_dict(tmp_path, archs=("sm_90a",), profile="dev"), schema)


def test_reader_knows_every_type_and_kind_in_the_schema(schema: dict[str, Any]) -> None:
    types = set()
    for alt in schema["$defs"]["ScalarType"]["oneOf"]:
        types |= set(alt.get("enum", [])) | ({alt["const"]} if "const" in alt else set())
    kinds = {alt["const"] for alt in schema["$defs"]["ParamKind"]["oneOf"]}
    assert types == set(SCALAR_SIZES)
    assert kinds == set(PARAM_KINDS)


def test_reader_knows_every_launch_policy_in_the_schema(schema: dict[str, Any]) -> None:
    """LAUNCH_KINDS is the Python copy of oxide-abi's LaunchPolicy: its kinds and fields."""
    kinds, optional = {}, {}
    for alt in schema["$defs"]["LaunchPolicy"]["oneOf"]:
        kind = alt["properties"]["kind"]["const"]
        kinds[kind] = set(alt["properties"]) - {"kind"}
        optional[kind] = kinds[kind] - set(alt["required"])
    assert kinds == {k: set(v) for k, v in LAUNCH_KINDS.items()}
    assert {k: v for k, v in optional.items() if v} == {
        k: set(v) for k, v in OPTIONAL_FIELDS.items()
    }


def test_launch_policies_are_read_and_checked(good: dict[str, Any], tmp_path: Path) -> None:
    def with_launch(policy: dict[str, Any]) -> dict[str, Any]:
        m = copy.deepcopy(good)
        saxpy = next(k for k in m["kernels"] if k["entry"] == "saxpy")
        saxpy["launch"] = policy
        return m

    ok = {"kind": "elementwise", "over": "out", "per_thread": 4, "block": 128}
    spec = next(
        k for k in parse_manifest(with_launch(ok), tmp_path / "m").kernels if k.entry == "saxpy"
    )
    assert spec.launch is not None
    assert (spec.launch.kind, spec.launch.over, spec.launch.per_thread) == ("elementwise", 3, 4)
    for bad, message in [
        ({**ok, "kind": "per_element"}, "expected one of"),
        ({**ok, "over": "a"}, "not a slice"),
        ({**ok, "over": "nope"}, "expected one of"),
        ({**ok, "block": 2048}, "block at most 1024"),
        ({**ok, "per_thread": 0}, "at least 1"),
        ({**ok, "kind": "grid_stride", "blocks_per_sm": 0}, "at least 1"),
        ({**ok, "kind": "grid_stride", "blocks_per_sm": 65}, "blocks_per_sm at most 64"),
        ({"kind": "segments", "over": "out", "block": 1}, "unknown field"),
    ]:
        with pytest.raises(pyoxide.ManifestError, match=message):
            parse_manifest(with_launch(bad), tmp_path / "m")


def test_a_tuned_blocks_per_sm_of_0_is_one_block_a_row_only(
    good: dict[str, Any], tmp_path: Path
) -> None:
    """oxide-abi's BLOCKS_PER_SM_ZERO_KINDS: a #[tune] candidate blocks_per_sm = 0 of a
    grid_stride kernel is refused (its blocks walk the data; 0 would launch none), as is
    one above MAX_BLOCKS_PER_SM; the row kernels' 0 is read (the bundled manifest's)."""
    m = copy.deepcopy(good)
    saxpy = next(k for k in m["kernels"] if k["entry"] == "saxpy")
    saxpy["launch"] = {"kind": "grid_stride", "over": "out", "per_thread": 4, "block": 128,
                       "blocks_per_sm": 2}  # fmt: skip
    for values, message in [([0, 2], "each at least 1"), ([2, 65], "each at most 64")]:
        saxpy["tune"] = {"launch": [{"param": "blocks_per_sm", "values": values}]}
        with pytest.raises(pyoxide.ManifestError, match=message):
            parse_manifest(m, tmp_path / "m")
    from pyoxide.bundled import load_bundled

    rows = next(k for k in load_bundled().manifest.kernels if k.name == "softmax_rows")
    assert rows.tune is not None and 0 in dict(rows.tune.launch)["blocks_per_sm"]


def test_reads_a_manifest(tmp_path: Path) -> None:
    m = pyoxide.read_manifest(write_manifest(tmp_path))
    assert m.crate_name == "oxide_fixtures" and m.schema == SCHEMA_VERSION
    assert m.archs == ["sm_80", "sm_90"]
    assert m.artifacts[0].path == tmp_path / "oxide_fixtures.sm_80.ptx"
    assert m.artifacts[0].ptxas is not None and m.artifacts[0].ptxas["saxpy"].registers == 12
    saxpy = next(k for k in m.kernels if k.name == "saxpy")
    assert saxpy.signature == "fn saxpy(a: f32, x: &[f32], y: &[f32], out: DisjointSlice<f32>)"
    scale = next(k for k in m.kernels if k.entry == "scale_f64")
    assert scale.instance == (("T", "f64"),)
    assert scale.signature.startswith("fn scale::<f64>(")
    acc = next(k for k in m.kernels if k.name == "accumulate")
    assert acc.signature == "unsafe fn accumulate(x: *const f32, y: &mut [f32])"
    iota = next(k for k in m.kernels if k.name == "iota")
    assert iota.launch_bounds is not None and iota.launch_bounds.max_threads == 128


def test_newer_schema_is_refused_with_upgrade_advice(tmp_path: Path, good: dict[str, Any]) -> None:
    good["schema"] = SCHEMA_VERSION + 1
    good["something_new"] = True  # a newer schema may add fields: the version speaks first
    with pytest.raises(
        pyoxide.ManifestError, match=rf"newer than the {SCHEMA_VERSION}.*upgrade pyoxide"
    ):
        parse_manifest(good, tmp_path / "m.json")


def test_not_json_and_not_a_manifest(tmp_path: Path) -> None:
    bad = tmp_path / "x.manifest.json"
    bad.write_text("{not json")
    with pytest.raises(pyoxide.ManifestError, match="not valid JSON"):
        pyoxide.read_manifest(bad)
    bad.write_text('{"kernels": []}')
    with pytest.raises(pyoxide.ManifestError, match="not a pyoxide manifest"):
        pyoxide.read_manifest(bad)
    with pytest.raises(pyoxide.ManifestError, match="cannot read"):
        pyoxide.read_manifest(tmp_path / "missing.manifest.json")


def _set(path: str, value: Any) -> Any:
    def mutate(m: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = m
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        if value is _DELETE:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value

    return mutate


_DELETE = object()

# Mutations the schema rejects; the reader must reject each one too.
REJECTED = {
    "missing-kernels": _set("kernels", _DELETE),
    "missing-toolchain-hash": _set("toolchain.hash", _DELETE),
    "unknown-top-field": _set("extra", 1),
    "unknown-crate-field": _set("crate.extra", 1),
    "schema-negative": _set("schema", -1),
    "schema-string": _set("schema", "1"),
    "bad-kind": _set("kernels.0.params.0.kind", "tensor"),
    "bad-type": _set("kernels.0.params.0.type", "f128"),
    "mutable-not-bool": _set("kernels.0.params.0.mutable", "no"),
    "params-not-list": _set("kernels.0.params", {}),
    "line-negative": _set("kernels.0.source.line", -3),
    "missing-entry": _set("kernels.0.entry", _DELETE),
    "artifact-no-sha": _set("artifacts.0.sha256", _DELETE),
    "artifact-extra": _set("artifacts.0.cubin", "x"),
    "resources-missing-field": _set("artifacts.0.ptxas.saxpy.registers", _DELETE),
    "sources-not-list": _set("sources", "src/lib.rs"),
    "launch-bounds-no-max": _set("kernels.5.launch_bounds", {"min_blocks": 1}),
    "emulator-no-path": _set("emulator", {"sha256": "0"}),
    "length-not-a-string": _set("kernels.0.params.1.length", 5),
    "fmad-not-bool": _set("codegen.fmad", "yes"),
    "codegen-unknown-field": _set("codegen.ftz", True),
    "diagnostic-bad-level": _set(
        "artifacts.0.ptxas.saxpy.diagnostics", [{"level": "fatal", "message": "x"}]
    ),
    "diagnostic-no-message": _set("artifacts.0.ptxas_diagnostics", [{"level": "warning"}]),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_reader_rejects_what_the_schema_rejects(
    name: str, schema: dict[str, Any], good: dict[str, Any], tmp_path: Path
) -> None:
    bad = copy.deepcopy(good)
    REJECTED[name](bad)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    with pytest.raises(pyoxide.ManifestError) as info:
        parse_manifest(bad, tmp_path / "m.json")
    assert "Fix:" in str(info.value)


def test_reader_accepts_optional_fields_left_out(
    schema: dict[str, Any], good: dict[str, Any], tmp_path: Path
) -> None:
    for k in good["kernels"]:
        for optional in ("instance", "is_unsafe", "launch_bounds"):
            k.pop(optional)
    del good["emulator"]
    good["artifacts"][0]["ptxas"] = None
    good["toolchain"]["ptxas"] = None
    assert parse_manifest(good, tmp_path / "m.json").fmad is True
    del good["codegen"]  # a build before schema 6, which never contracted
    del good["artifacts"][1]["ptxas_diagnostics"]  # before schema 12, which recorded none
    for r in good["artifacts"][1]["ptxas"].values():
        del r["diagnostics"]
    jsonschema.validate(good, schema)
    m = parse_manifest(good, tmp_path / "m.json")
    assert m.emulator is None and m.artifacts[0].ptxas is None and m.fmad is False
    assert m.artifacts[1].ptxas is not None and m.artifacts[1].ptxas["saxpy"].diagnostics == ()


def test_ptxas_diagnostics_are_read(
    schema: dict[str, Any], good: dict[str, Any], tmp_path: Path
) -> None:
    serialised = (
        "Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
        "insufficient register resources for the function 'saxpy'"
    )
    art = good["artifacts"][0]
    art["ptxas"]["saxpy"]["diagnostics"] = [
        {"level": "info", "code": "C7512", "message": serialised}
    ]
    art["ptxas_diagnostics"] = [{"level": "warning", "code": None, "message": "Stack size"}]
    jsonschema.validate(good, schema)
    a = parse_manifest(good, tmp_path / "m.json").artifacts[0]
    assert a.ptxas is not None
    (d,) = a.ptxas["saxpy"].diagnostics
    assert d.serializes_wgmma and str(d) == f"(C7512) {serialised}"
    (w,) = a.ptxas_diagnostics
    assert w.level == "warning" and not w.serializes_wgmma and str(w) == "Stack size"


def test_semantic_checks_beyond_the_schema(good: dict[str, Any], tmp_path: Path) -> None:
    dup = copy.deepcopy(good)
    dup["kernels"].append(copy.deepcopy(dup["kernels"][0]))
    with pytest.raises(pyoxide.ManifestError, match="appears twice"):
        parse_manifest(dup, tmp_path / "m.json")
    other = DESCRIPTOR_VERSION + 1
    v2 = copy.deepcopy(good)
    v2["kernels"][0]["version"] = other
    with pytest.raises(pyoxide.ManifestError, match=f"descriptor version {other}"):
        parse_manifest(v2, tmp_path / "m.json")
    for k, i, length, error in [(1, 0, "n", "no length contract"), (0, 1, "n+1", "not a name")]:
        bad = copy.deepcopy(good)
        bad["kernels"][k]["params"][i]["length"] = length  # a scalar; a slice
        with pytest.raises(pyoxide.ManifestError, match=error):
            parse_manifest(bad, tmp_path / "m.json")
    arch = copy.deepcopy(good)
    arch["artifacts"][0]["arch"] = "compute_80"
    with pytest.raises(pyoxide.ManifestError, match="not a GPU architecture"):
        parse_manifest(arch, tmp_path / "m.json")


def test_missing_ptx_is_an_artifact_error(tmp_path: Path) -> None:
    m = pyoxide.read_manifest(write_manifest(tmp_path))
    m.artifacts[0].path.unlink()
    with pytest.raises(pyoxide.ArtifactError, match="cannot read the sm_80 PTX"):
        m.artifacts[0].read()
    assert m.artifacts[1].read().startswith(b"//")


def test_cluster_shapes_are_read_and_checked(
    schema: dict[str, Any], good: dict[str, Any], tmp_path: Path
) -> None:
    """`cluster` (#[cluster_launch]): three counts; absent means no cluster."""
    m = copy.deepcopy(good)
    m["kernels"][0]["cluster"] = [2, 2, 1]
    jsonschema.validate(m, schema)
    k = parse_manifest(m, tmp_path / "m.json").kernels[0]
    assert k.cluster == (2, 2, 1)
    assert parse_manifest(good, tmp_path / "m.json").kernels[0].cluster is None
    for bad in ([2, 1], "2,1,1", [-1, 1, 1]):  # the schema rejects these too
        m["kernels"][0]["cluster"] = bad
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(m, schema)
        with pytest.raises(pyoxide.ManifestError, match=r"kernels\[0\]\.cluster"):
            parse_manifest(m, tmp_path / "m.json")
    for bad in ([0, 1, 1], [4, 4, 1]):  # beyond the schema: what #[cluster_launch] refuses
        m["kernels"][0]["cluster"] = bad
        with pytest.raises(pyoxide.ManifestError, match="8 blocks in all"):
            parse_manifest(m, tmp_path / "m.json")
