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


def find_cargo_oxide_or_none() -> str | None:
    import shutil

    exe = shutil.which("cargo-oxide") or str(Path.home() / ".cargo" / "bin" / "cargo-oxide")
    return exe if Path(exe).is_file() else None


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


class HostArrays:
    """The few CuPy calls run_all makes, on NumPy arrays: the kernels then run on the CPU
    emulator (pyoxide picks the backend from the arrays)."""

    asarray = staticmethod(np.asarray)
    asnumpy = staticmethod(np.asarray)
    full = staticmethod(np.full)
    zeros = staticmethod(np.zeros)


def run_all(kernels, cp, rng: np.random.Generator) -> list[tuple[str, str, float]]:
    """Run every bundled kernel once on the arrays of ``cp`` (CuPy: the GPU; HostArrays:
    the CPU emulator); (kernel, shape, error vs float64)."""
    dev, f32, u32 = cp.asarray, np.float32, np.uint32

    def rel(got, ref) -> float:
        got = cp.asnumpy(got).astype(np.float64).ravel()
        if not np.isfinite(got).all():
            return float("inf")  # an output element was not written
        return float(np.linalg.norm(got - ref.ravel()) / max(np.linalg.norm(ref), 1e-300))

    def poisoned(n, dt=f32):
        return cp.full(n, np.nan if np.dtype(dt).kind == "f" else 0xDEADBEEF, dtype=dt)

    rows = []
    a, b = rng.standard_normal(N, dtype=f32), rng.standard_normal(N, dtype=f32)
    out = poisoned(N)
    kernels.vecadd(dev(a), dev(b), out)
    rows.append(("vecadd", f"n={N}", rel(out, a.astype(np.float64) + b)))
    kernels.saxpy(1.5, dev(a), dev(b), out)
    rows.append(("saxpy", f"n={N}", rel(out, 1.5 * a.astype(np.float64) + b)))
    for dt in (np.float32, np.float64):
        x, o = rng.standard_normal(N).astype(dt), poisoned(N, dt)
        kernels.scale(-2.5, dev(x), o)  # generic: the instance is picked by dtype
        rows.append((f"scale<{np.dtype(dt).name}>", f"n={N}", rel(o, -2.5 * x.astype(np.float64))))
    total = cp.zeros(1, f32)
    kernels.reduce_sum_f32[264, 256](dev(a), total)
    err = abs(float(total[0]) - a.astype(np.float64).sum()) / np.abs(a).astype(np.float64).sum()
    rows.append(("reduce_sum_f32", f"n={N}", err))
    v = rng.integers(0, 300, N, dtype=u32)
    for name in ("histogram", "histogram_global"):
        bins = cp.zeros(256, u32)
        getattr(kernels, name)[132, 256](dev(v), bins)
        want = np.bincount(v[v < 256], minlength=256)
        rows.append((name, f"n={N}", float(np.abs(cp.asnumpy(bins) - want).max())))
    m, k, n = 300, 257, 129
    ma, mb = rng.standard_normal((m, k), dtype=f32), rng.standard_normal((k, n), dtype=f32)
    mc = poisoned((m, n))
    kernels.matmul_tiled(dev(ma), dev(mb), mc)  # grid and m, n, k from the shapes
    rows.append(("matmul_tiled", f"{m}x{k}·{k}x{n}", rel(mc, ma.astype(np.float64) @ mb)))
    rows_, cols = 300, 1000
    sx = rng.standard_normal((rows_, cols), dtype=f32)
    so = poisoned((rows_, cols))
    kernels.softmax_rows(dev(sx), so)  # one block per row
    e = np.exp(sx - sx.max(axis=1, keepdims=True).astype(np.float64))
    rows.append(("softmax_rows", f"{rows_}x{cols}", rel(so, e / e.sum(axis=1, keepdims=True))))
    coeffs = np.array([0.1, 1.0, -0.5, 0.25], f32)
    kernels.activate(dev(a), dev(coeffs), 2, out)
    poly = sum(float(c) * a.astype(np.float64) ** j for j, c in enumerate(coeffs))
    rows.append(("activate (tanh)", f"n={N}", rel(out, np.tanh(poly))))
    sc = poisoned(N, u32)
    kernels.scan_blocks_u32[-(-N // 256), 256, 32](dev(v), sc)
    pad = np.zeros(-(-N // 256) * 256, np.uint64)
    pad[:N] = v
    want = (np.cumsum(pad.reshape(-1, 256), axis=1) % 2**32).ravel()[:N]
    rows.append(("scan_blocks_u32", f"n={N}", float(np.abs(cp.asnumpy(sc) - want).max())))
    return rows


def main() -> int:
    start = time.perf_counter()
    if find_cargo_oxide_or_none() is not None:
        kernels = pyoxide.load(REPO / "kernels_rs")  # rebuilt when its sources changed
    else:
        from pyoxide import kernels  # no Rust toolchain here: the prebuilt artifacts
    m = kernels.manifest
    took = time.perf_counter() - start
    archs = ", ".join(m.archs)
    n = len(m.kernels)
    print(f"\n{m.crate_name} built (or found fresh) in {took:.1f}s: {n} kernels, PTX for {archs}")
    tc = m.toolchain
    print(f"toolchain: {tc.rustc}; LLVM {tc.llvm}; ptxas: {tc.ptxas or 'absent'}")
    width = max(len(k.entry) for k in m.kernels) + 2
    print(f"\n{'entry':<{width}}{'signature':<84}{'regs sm_90':>11}")
    sm90 = next((a for a in m.artifacts if a.arch == "sm_90"), None)
    for k in m.kernels:
        params = ", ".join(f"{p.name}: {p.rust_type}" for p in k.params)
        regs = sm90.ptxas[k.entry].registers if sm90 and sm90.ptxas else "-"
        print(f"{k.entry:<{width}}{k.name + '(' + params + ')':<84}{regs:>11}")

    if gpu_available():
        import cupy as cp

        arrays, where = cp, "on the GPU (CuPy arrays)"
    elif m.emulator is not None:
        arrays, where = HostArrays, "on the CPU emulator (NumPy arrays)"
    else:
        print(
            "\nno CUDA device here and this build has no emulator library: the kernels were "
            "built and verified by ptxas; rebuild with the emulator (`pyoxide build`, without "
            "--no-emu) to run them on NumPy arrays, or run this on a GPU machine."
        )
        return 0

    print(f"\nrunning every kernel {where}")
    print(f"\n{'kernel':<20}{'shape':<18}{'error vs float64 NumPy':>24}")
    worst = 0.0
    for name, shape, err in run_all(kernels, arrays, np.random.default_rng()):
        worst = max(worst, err)
        print(f"{name:<20}{shape:<18}{err:>24.2e}")
    print("(histograms and the scan must match exactly: their error is the largest difference)")
    return 0 if worst < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
