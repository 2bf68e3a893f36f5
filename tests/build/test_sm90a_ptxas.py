"""kernels_sm90a as ptxas compiles it, without a GPU: no instance has its wgmmas
serialised (ptxas's performance advice C7512, or another of its causes). A call inside a
`setmaxnreg` region (a panic's, a remainder by a count LLVM cannot see, IEEE division's
slow path) keeps ptxas from giving the region its registers, and it then waits for every
wgmma before the next: correct, and far slower, with nothing else to say so before a GPU
run. Twice the attention kernel's comments record it (attention_sm90.rs's bounds checks
hoisted out of the tile loops; its ring of turns' `pass`).

The build's own ptxas run records what ptxas said of each entry in the manifest
(cargo-oxide's ptx.rs tests that it reads C7512 there); this reads it back."""

from __future__ import annotations

from helpers.bundled import sm90a_kernels_manifest

import pyoxide

#: The manifest schema that first records ptxas's diagnostics (oxide-abi's manifest.rs).
DIAGNOSTICS_SCHEMA = 12


def test_no_instance_has_its_wgmmas_serialised() -> None:
    path = sm90a_kernels_manifest()
    m = pyoxide.read_manifest(path)
    # An older cargo-oxide recorded no diagnostics: its silence would say nothing.
    assert m.schema >= DIAGNOSTICS_SCHEMA, (
        f"{path} predates ptxas's diagnostics in the manifest: rebuild it"
    )
    (art,) = m.artifacts
    assert art.ptxas, "no ptxas report: scripts/setup installs nvidia-cuda-nvcc"
    assert set(art.ptxas) == {k.entry for k in m.kernels} != set()
    serialised = {
        entry: [str(d) for d in r.diagnostics if d.serializes_wgmma]
        for entry, r in art.ptxas.items()
    }
    serialised = {entry: ds for entry, ds in serialised.items() if ds}
    assert not serialised, f"wgmma serialised (ptxas) in {sorted(serialised)}: {serialised}"
    # ptxas may name a device function rather than the entry that calls it.
    elsewhere = [str(d) for d in art.ptxas_diagnostics if d.serializes_wgmma]
    assert not elsewhere, elsewhere
