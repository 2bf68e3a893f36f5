"""Peers of pyoxide's kernels (PyTorch, Triton, CuPy, CUDA C++ through NVRTC), for
`pyoxide bench` (the bundled kernels' specs name them) and scripts/bench_kernels, and
that script's grid sweeps: each peer function returns {peer name: a callable that does
the same operation}, writing where pyoxide's kernel writes, or returning its result."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

Ops = dict[str, Callable[[], Any]]


def _triton() -> tuple[Any, Any] | None:
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None
    return triton, tl


class Peers:
    def __init__(self, cp: Any) -> None:
        self.cp = cp
        self.sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
        try:
            import torch

            self.torch: Any = torch if torch.cuda.is_available() else None
        except ImportError:
            self.torch = None
        self.tri = _triton() if self.torch is not None else None
        self._triton_kernels: dict[str, Any] = {}

    def versions(self) -> str:
        t = f"PyTorch {self.torch.__version__}" if self.torch is not None else "no PyTorch"
        tr = f"Triton {self.tri[0].__version__}" if self.tri is not None else "no Triton"
        return f"{t}, {tr}"

    def t(self, a: Any) -> Any:
        return self.torch.from_dlpack(a)

    # --- roofline -------------------------------------------------------------------

    def copy_bandwidth(self, timer: Any, n: int) -> tuple[float, str]:
        from pyoxide.bench._timing import copy_bandwidth

        return copy_bandwidth(self.cp, timer, n)

    # --- elementwise ----------------------------------------------------------------

    def _elementwise(self, name: str, params: str, body: str) -> Any:
        cp = self.cp
        return cp.ElementwiseKernel(params, "T o", body, f"bench_{name}")

    def _tri(self, name: str) -> Any:
        """Triton versions of the maps, as the Triton tutorial writes them."""
        if self.tri is None:
            return None
        if name in self._triton_kernels:
            return self._triton_kernels[name]
        triton, tl = self.tri

        @triton.jit
        def add(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            x = tl.load(x_ptr + offs, mask=m)
            y = tl.load(y_ptr + offs, mask=m)
            tl.store(o_ptr + offs, x + y, mask=m)

        @triton.jit
        def saxpy(a, x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            x = tl.load(x_ptr + offs, mask=m)
            y = tl.load(y_ptr + offs, mask=m)
            tl.store(o_ptr + offs, a * x + y, mask=m)

        @triton.jit
        def scale(a, x_ptr, o_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(o_ptr + offs, a * tl.load(x_ptr + offs, mask=m), mask=m)

        self._triton_kernels.update(add=add, saxpy=saxpy, scale=scale)
        return self._triton_kernels[name]

    def _triton_ops(self, name: str, args: tuple[Any, ...], n: int) -> Ops:
        k = self._tri(name)
        if k is None:
            return {}
        ops: Ops = {}
        for block in (1024, 4096):
            grid = (math.ceil(n / block),)
            ops[f"Triton (BLOCK {block})"] = lambda k=k, block=block, grid=grid: k[grid](
                *args, n, BLOCK=block
            )
        return ops

    def vecadd(self, x: Any, y: Any, out: Any) -> Ops:
        cp = self.cp
        ops: Ops = {"cupy.add": lambda: cp.add(x, y, out=out)}
        if self.torch is not None:
            tx, ty, to = self.t(x), self.t(y), self.t(out)
            ops["torch.add"] = lambda: self.torch.add(tx, ty, out=to)
            ops.update(self._triton_ops("add", (tx, ty, to), x.size))
        return ops

    def saxpy(self, a: float, x: Any, y: Any, out: Any) -> Ops:
        k = self._elementwise("saxpy", "T a, T x, T y", "o = a * x + y")
        av = np.float32(a)
        ops: Ops = {"cupy ElementwiseKernel": lambda: k(av, x, y, out)}
        if self.torch is not None:
            tx, ty, to = self.t(x), self.t(y), self.t(out)
            ops["torch.add(alpha=)"] = lambda: self.torch.add(ty, tx, alpha=a, out=to)
            ops.update(self._triton_ops("saxpy", (a, tx, ty, to), x.size))
        return ops

    def scale(self, a: float, x: Any, out: Any) -> Ops:
        cp = self.cp
        av = x.dtype.type(a)
        ops: Ops = {"cupy.multiply": lambda: cp.multiply(x, av, out=out)}
        if self.torch is not None:
            tx, to = self.t(x), self.t(out)
            ops["torch.mul"] = lambda: self.torch.mul(tx, a, out=to)
            ops.update(self._triton_ops("scale", (a, tx, to), x.size))
        return ops

    def activate_tanh(self, x: Any, coeffs: Any, out: Any) -> Ops:
        c = [float(v) for v in self.cp.asnumpy(coeffs)]
        k = self._elementwise("act", "T x", f"o = tanh({c[0]}f + x * ({c[1]}f + x * {c[2]}f))")
        return {"cupy ElementwiseKernel (fused)": lambda: k(x, out)}

    # --- reductions -----------------------------------------------------------------

    def sum(self, x: Any) -> Ops:
        ops: Ops = {"cupy.sum": lambda: x.sum()}
        if self.torch is not None:
            tx = self.t(x)
            ops["torch.sum"] = lambda: self.torch.sum(tx)
        return ops

    def bincount(self, v: Any, bins: int) -> Ops:
        cp = self.cp
        ops: Ops = {"cupy.bincount": lambda: cp.bincount(v, minlength=bins)}
        if self.torch is not None:
            tv = self.t(v.view(cp.int32))  # values < bins: the same numbers
            ops["torch.bincount"] = lambda: self.torch.bincount(tv, minlength=bins)
        return {k: (lambda f=f: cp.asarray(f())) for k, f in ops.items()}

    def segmented_scan(self, s: Any, seg: int) -> Ops:
        cp = self.cp
        m = s.reshape(-1, seg)
        ops: Ops = {"cupy.cumsum(axis=1)": lambda: cp.cumsum(m, axis=1, dtype=cp.uint32)}
        if self.torch is not None:
            tm = self.t(m.view(cp.int32))  # wrapping int32 sums have uint32's bits
            ops["torch.cumsum(dim=1)"] = lambda: self.torch.cumsum(
                tm, dim=1, dtype=self.torch.int32
            )
        return {k: (lambda f=f: cp.asarray(f()).view(cp.uint32)) for k, f in ops.items()}

    def cuda_saxpy(
        self, a: float, x: Any, y: Any, out: Any, *, fmad: bool = True
    ) -> Callable[[], Any]:
        """The README's saxpy in CUDA C++, one element per thread, compiled by NVRTC (with
        its default `--fmad=true`, or `--fmad=false`: the multiply and add rounded apart)."""
        cp = self.cp
        src = r"""extern "C" __global__ void saxpy(float a, const float* x, const float* y,
                                                  float* out, unsigned long long n) {
            unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) out[i] = a * x[i] + y[i];
        }"""
        k = cp.RawKernel(src, "saxpy", options=() if fmad else ("--fmad=false",))
        n = x.size
        grid, av, nv = (math.ceil(n / 256),), np.float32(a), np.uint64(n)
        return lambda: k(grid, (256,), (av, x, y, out, nv))

    # --- sweeps (for choosing launch policies) --------------------------------------

    def sweep(self, cp: Any, kernels: Any, timer: Any, n: int, copy_gbs: float) -> None:
        x, y = (
            cp.random.standard_normal(n, dtype=cp.float32),
            cp.random.standard_normal(n, dtype=cp.float32),
        )
        out, acc = cp.empty_like(x), cp.empty(1, cp.float32)
        print("\nsweep: fraction of copy by (grid, block); 'plain' = the launch policy")

        def plain_or(kernel: Any, *args: Any) -> Callable[[Any], Any]:
            return lambda cfg: kernel[cfg](*args) if cfg else kernel(*args)

        cases = {
            "vecadd": (plain_or(kernels.vecadd, x, y, out), 12 * n),
            "scale_f32": (plain_or(kernels.scale_f32, 2.0, x, out), 8 * n),
            "reduce_sum_f32": (plain_or(kernels.reduce_sum_f32, x, acc), 4 * n),
        }
        for name, (fn, nbytes) in cases.items():
            results = []
            configs: list[Any] = [None]
            for block in (256, 512, 1024):
                for per_sm in (1, 2, 4, 8, 16, 64):
                    configs.append((self.sms * per_sm * 256 // block, block))
            if name != "reduce_sum_f32":
                configs += [(math.ceil(n / (4 * b)), b) for b in (128, 256, 512)]
            for cfg in configs:
                ms = timer.median_ms(lambda cfg=cfg, fn=fn: fn(cfg))
                results.append((cfg or "plain", nbytes / (ms * 1e6) / copy_gbs))
            print(f"  {name}: " + ", ".join(f"{c}: {f:.3f}" for c, f in results))
