"""kernels_sm90a as ptxas compiles it, without a GPU: no instance has its wgmmas
serialised (ptxas's performance warning C7512). A call inside a `setmaxnreg` region (a
panic's, a remainder by a count LLVM cannot see, IEEE division's slow path) keeps ptxas
from giving the region its registers, and it then waits for every wgmma before the next:
correct, and far slower, with nothing else to say so before a GPU run. Twice the
attention kernel's comments record it (attention_sm90.rs's bounds checks hoisted out of
the tile loops; its ring of turns' `pass`)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from helpers.bundled import find_ptxas, sm90a_kernels_manifest


def test_no_instance_has_its_wgmmas_serialised() -> None:
    ptxas = find_ptxas()
    assert ptxas, "ptxas is missing: scripts/setup installs nvidia-cuda-nvcc"
    path = Path(sm90a_kernels_manifest())
    (art,) = json.loads(path.read_text())["artifacts"]
    ptx = path.parent / art["path"]
    out = subprocess.run(
        [ptxas, f"-arch={art['arch']}", "-O3", "-v", str(ptx), "-o", "/dev/null"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    compiled = re.findall(r"Compiling entry function '(\w+)'", out.stderr)
    assert len(compiled) == len(art["ptxas"]) > 0, out.stderr[-2000:]
    serialised = re.findall(r"\(C7512\).*?function '(\w+)'", out.stderr)
    assert not serialised, f"wgmma serialised (ptxas C7512) in {sorted(set(serialised))}"
