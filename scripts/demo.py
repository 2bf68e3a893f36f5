"""Build the bundled kernels and run each one against a float64 NumPy reference.

Run through scripts/demo (which installs what is missing first).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import pyoxide

REPO = Path(__file__).resolve().parents[1]
N = 1_000_003  # not a multiple of the block size


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


def cases(rng: np.random.Generator):
    """(label, kernel name, host args, output index, float64 reference)."""
    a, b = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
    yield "vecadd", "vecadd", [a, b, np.full(N, np.nan, np.float32)], 2, a.astype(np.float64) + b
    alpha = float(np.float32(1.5))
    yield (
        "saxpy",
        "saxpy",
        [alpha, a, b, np.full(N, np.nan, np.float32)],
        3,
        alpha * a.astype(np.float64) + b,
    )
    for dt in (np.float32, np.float64):
        x = rng.standard_normal(N).astype(dt)
        out = np.full(N, np.nan, dt)
        label = f"scale<{np.dtype(dt).name}>"
        yield label, "scale", [-2.5, x, out], 2, -2.5 * x.astype(np.float64)


def main() -> int:
    start = time.perf_counter()
    kernels = pyoxide.load(REPO / "kernels_rs")
    m = kernels.manifest
    took = time.perf_counter() - start
    archs = ", ".join(m.archs)
    n = len(m.kernels)
    print(f"\n{m.crate_name} built (or found fresh) in {took:.1f}s: {n} kernels, PTX for {archs}")
    tc = m.toolchain
    print(f"toolchain: {tc.rustc}; LLVM {tc.llvm}; ptxas: {tc.ptxas or 'absent'}")
    print(f"\n{'entry':<12}{'signature':<84}{'regs sm_90':>11}")
    sm90 = next((a for a in m.artifacts if a.arch == "sm_90"), None)
    for k in m.kernels:
        params = ", ".join(f"{p.name}: {p.kind}<{p.type}>" for p in k.params)
        regs = sm90.ptxas[k.entry].registers if sm90 and sm90.ptxas else "-"
        print(f"{k.entry:<12}{k.name + '(' + params + ')':<84}{regs:>11}")

    if not gpu_available():
        print(
            "\nno CUDA device here: the kernels were built and verified by ptxas, but running "
            "them on NumPy arrays needs the CPU emulator (issue 5); run this on a GPU machine "
            "to execute them."
        )
        return 0

    import cupy as cp

    rng = np.random.default_rng()
    print(f"\n{'kernel':<18}{'n':>10}{'rel err vs fp64':>18}")
    worst = 0.0
    for label, name, args, out_index, ref in cases(rng):
        dev = [cp.asarray(x) if isinstance(x, np.ndarray) else x for x in args]
        getattr(kernels, name)(*dev)
        got = cp.asnumpy(dev[out_index]).astype(np.float64)
        if not np.isfinite(got).all():
            print(f"{label}: an output element was not written")
            return 1
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        worst = max(worst, err)
        print(f"{label:<18}{N:>10}{err:>18.2e}")
    return 0 if worst < 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
