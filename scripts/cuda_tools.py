"""Where the SASS scripts (scripts/sass_saxpy, scripts/sass_loops) find NVIDIA's tools
with no CUDA toolkit installed: PATH, then the nvidia-* PyPI wheels (ptxas and nvdisasm
in nvidia-cuda-nvcc's bin/, libnvrtc.so in nvidia-cuda-nvrtc's lib/, cuobjdump in
nvidia-cuda-cuobjdump), then the copy Triton bundles (nvdisasm, cuobjdump)."""

from __future__ import annotations

import glob
import shutil
import sys


def find(*names: str) -> str | None:
    """The first of `names` (a tool, or a library's file name prefix) that is found."""
    for name in names:
        found = shutil.which(name) or next(
            (hit for d in sys.path
             for pattern in (f"{d}/nvidia/*/*/{name}*", f"{d}/triton/backends/nvidia/bin/{name}")
             for hit in sorted(glob.glob(pattern))),
            None,
        )  # fmt: skip
        if found:
            return found
    return None
