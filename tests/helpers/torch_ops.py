"""Sample arguments for the bundled kernels' torch ops, drawn by their specs
(kernels_rs/specs): one small case per op, as tensors on one device."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

from helpers.bundled import bundled_specs
from helpers.probes import requires_gpu
from pyoxide._launch.torch_plan import OpPlan
from pyoxide.spec import Case, Spec

#: The devices a torch-op test runs on: CPU tensors (the CPU emulator) and CUDA tensors.
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda", id="cuda", marks=[pytest.mark.gpu, requires_gpu("runs the ops on CUDA tensors")]
    ),
]


def tensor(a: Any, device: str) -> Any:
    """A NumPy array (or scalar) as a tensor on `device`; other values as they are."""
    if not isinstance(a, np.ndarray):
        return a
    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":  # ml_dtypes': torch takes its bits
        return torch.from_numpy(a.view(np.uint16).copy()).view(torch.bfloat16).to(device)
    return torch.from_numpy(a.copy()).to(device)


def _small_shape(spec: Spec) -> tuple[int, ...]:
    """A small shape of the spec's, none of its extents 0 or 1."""
    shapes = spec.case_shapes(np.random.default_rng(0), 0)
    ok = [s for s in shapes if min(s) >= 2 and math.prod(s) <= 4096]
    return max(ok, key=math.prod)


def sample_args(plan: OpPlan, device: str, seed: int = 0) -> tuple[list[Any], list[Any]]:
    """The kernel's arguments (outputs included) and the out-of-place form's, drawn by
    the spec of `plan`'s kernel (a generic kernel's for an instance)."""
    spec_of = bundled_specs()
    kernel = plan.instances[0]
    spec = spec_of.get(plan.name) or spec_of[kernel.name]
    dtype = dict(kernel.instance).get("T", spec.dtypes[0]) if kernel.instance else spec.dtypes[0]
    case = Case(_small_shape(spec), dtype, seed=seed)
    values = {**spec.inputs(case, np.random.default_rng(seed))}
    values |= {name: out.make(case) for name, out in spec.outputs.items()}
    full = [tensor(values[p.name], device) for p in plan.params]
    return full, [full[i] for i in plan.inputs]
