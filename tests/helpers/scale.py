"""Helpers of the scale-out tests (pickling by reference, Dask, torch.distributed): code
that runs in other processes, so it lives in an importable module (a spawned process
imports it by name), and the child-process runner the tests share."""

from __future__ import annotations

import base64
import os
import pickle
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

TESTS = Path(__file__).resolve().parents[1]


def run_child(code: str, payload: bytes, env: dict[str, str] | None = None) -> tuple[Any, str]:
    """Run ``code`` in a fresh interpreter (``python -c``) with ``payload`` (a pickle,
    which the code unpickles itself) as ``PAYLOAD``; the code sets ``RESULT``, which comes
    back pickled. Returns (result, the child's stderr)."""
    prelude = (
        "import base64, pickle, sys\n"
        "PAYLOAD = base64.b64decode(sys.stdin.buffer.read())\n"
        "RESULT = None\n"
    )
    epilogue = "\nsys.stdout.write('RESULT:' + base64.b64encode(pickle.dumps(RESULT)).decode())\n"
    child_env = dict(os.environ if env is None else env)
    child_env["PYTHONPATH"] = os.pathsep.join(
        [str(TESTS), *filter(None, [child_env.get("PYTHONPATH")])]
    )
    proc = subprocess.run(
        [sys.executable, "-c", prelude + code + epilogue],
        input=base64.b64encode(payload), env=child_env, capture_output=True,
        timeout=600, check=False,
    )  # fmt: skip
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{out}\n{err}"
    return pickle.loads(base64.b64decode(out.rsplit("RESULT:", 1)[1])), err


def saxpy_block(kernel: Any, a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A block function: ``kernel(a, x, y, out)`` into a new ``out``."""
    out = np.empty_like(x)
    kernel(a, x, y, out)
    return out


def unpickle_and_call(blob: bytes) -> tuple[list[float], int, bool]:
    """In a spawned process: unpickle (kernels, saxpy) twice, run saxpy, and say whether
    both unpickles gave the same objects (the module resolved once) and which process ran."""
    module, kernel = pickle.loads(blob)
    again_module, again_kernel = pickle.loads(blob)
    x = np.arange(8, dtype=np.float32)
    out = saxpy_block(kernel, 2.0, x, x)
    same = module is again_module and kernel is again_kernel and module.saxpy is kernel
    return out.tolist(), os.getpid(), same


def free_port() -> int:
    """A TCP port nobody listens on now (bound to port 0, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- block functions for Dask: NumPy chunks (the emulator) and CuPy chunks (the GPU) ----
# Each allocates its output like its input (`np.empty_like` and `like=` follow CuPy
# arrays), so one function serves both.


def softmax_block(kernel: Any, x: Any) -> Any:
    """``kernel(x, out)`` into a new ``out`` (a row kernel: each block holds whole rows)."""
    out = np.empty_like(x)
    kernel(x, out)
    return out


def _block_sums(kernels: Any, x: Any) -> Any:
    """One pass of ``reduce_blocks_f32``: a partial sum per block of the grid."""
    flat = x.reshape(-1)
    partial = np.empty(max(1, min(1024, flat.size // 4096)), np.float32, like=x)
    kernels.reduce_blocks_f32(flat, partial)
    return partial


def sum_chunk(kernels: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``da.reduction``'s chunk, combine and aggregate: the sum of ``x`` by the kernel,
    in two passes (per-block partials, then one block over those)."""
    total = np.empty(1, np.float32, like=x)
    kernels.reduce_blocks_f32(_block_sums(kernels, x), total)
    return total.reshape((1,) * x.ndim if keepdims else ())


def histogram_block(kernels: Any, bins: int, x: Any) -> Any:
    """The histogram of one chunk of ``x`` (u32) into ``bins`` bins. A distributed
    worker may rebuild a NumPy chunk at an address that is not a multiple of 4, which
    the kernel refuses: such a chunk is copied (docs/guide/scale-out.md)."""
    if isinstance(x, np.ndarray) and not x.flags.aligned:
        x = x.copy()
    counts = np.zeros(bins, np.uint32, like=x)
    kernels.histogram(x.reshape(-1), counts)
    return counts


def pattern_block(bins: int, block_info: Any = None) -> Any:
    """A CuPy block of the u32 array whose element j is ``j % bins`` (made on the worker's
    GPU: nothing crosses from the client)."""
    import cupy

    ((start, stop),) = block_info[None]["array-location"]
    return (cupy.arange(stop - start, dtype=cupy.uint32) + np.uint32(start % bins)) % bins


def gpu_identity() -> tuple[str, bool]:
    """In a worker: the PCI bus of the GPU it sees, and whether pyoxide's build cache was
    ever imported there (a build, or a cache lookup)."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    return f"{props['pciDomainID']}:{props['pciBusID']}", "pyoxide._build.cache" in sys.modules
