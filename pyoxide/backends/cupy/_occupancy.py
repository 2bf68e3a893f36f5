"""How many clusters of a kernel the device runs at once: the driver's
``cuOccupancyMaxActiveClusters``, which CuPy does not wrap (ctypes on ``libcuda``,
loaded on first use, never at import).

Why the SM count is not enough: a cluster's blocks run on the SMs of one GPC, and the
GPCs of a part hold uneven numbers of SMs. An H200 (132 SMs) with one 230 KiB block an
SM holds 132 blocks alone but 30 clusters of 4 (120 blocks) and 39 of 3 (117). A
persistent grid sized as SMs ÷ cluster (33 clusters of 4) leaves its last clusters
waiting for a first one to finish all its tiles: a second wave as long as the first.
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any


class _LaunchConfig(ctypes.Structure):
    """cuda.h's ``CUlaunchConfig``."""

    _fields_ = [
        ("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
        ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint), ("block_z", ctypes.c_uint),
        ("shared_mem_bytes", ctypes.c_uint), ("stream", ctypes.c_void_p),
        ("attrs", ctypes.c_void_p), ("num_attrs", ctypes.c_uint),
    ]  # fmt: skip


@cache
def _query() -> Any:
    """``cuOccupancyMaxActiveClusters``, or None where the driver lacks it (before CUDA
    12.0) or cannot be loaded."""
    try:
        fn = ctypes.CDLL("libcuda.so.1").cuOccupancyMaxActiveClusters
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.POINTER(_LaunchConfig)]
    fn.restype = ctypes.c_int
    return fn


def max_active_clusters(
    function: int, cluster: tuple[int, int, int], block: tuple[int, int, int], shared_mem: int
) -> int:
    """The clusters of the kernel ``function`` (a ``CUfunction`` compiled with the
    ``cluster`` size, ``.reqnctapercluster``) that the current context's device runs at
    once with blocks of ``block`` threads and ``shared_mem`` bytes of dynamic shared memory
    (whose opt-in attribute is already set); 0 where the driver cannot say (then the
    caller keeps its SM-count estimate). The kernel's compiled cluster size is the one
    the driver uses: the config names none, with a grid of one cluster."""
    query = _query()
    if query is None:
        return 0
    config = _LaunchConfig(*cluster, *block, shared_mem, None, None, 0)
    count = ctypes.c_int(0)
    status = query(ctypes.byref(count), function, ctypes.byref(config))
    return count.value if status == 0 and count.value > 0 else 0
