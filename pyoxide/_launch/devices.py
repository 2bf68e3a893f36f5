"""Which GPU a launch runs on, and on which stream when the arrays are PyTorch tensors.

CuPy arrays (and any other ``__cuda_array_interface__`` array) must be on the current
device, as CuPy's own kernels require. PyTorch tensors run on their own device, as
PyTorch's ops do (the backend makes it current for the launch), on PyTorch's current
stream there. A call that mixes the two is refused unless it names its stream.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentTypeError, ArgumentValueError

if TYPE_CHECKING:
    from .._manifest.reader import ParamSpec
    from ..backends import Backend
    from .arrays import ArrayView


def _is_torch(v: ArrayView) -> bool:
    return type(v.obj).__module__.startswith("torch")


def device_of(
    kernel: str, backend: Backend, arrays: Sequence[tuple[ParamSpec, ArrayView]], stream: Any
) -> tuple[int, bool]:
    """(the device to launch on, whether PyTorch owns the arrays)."""
    first: tuple[str, int, ArrayView] | None = None
    torch_param: str | None = None
    other_param: str | None = None
    for p, v in arrays:
        if _is_torch(v):
            torch_param = torch_param or p.name
        else:
            other_param = other_param or p.name
        dev = v.device
        if dev is None:
            if math.prod(v.shape) == 0:
                continue  # nothing will be read through it
            dev = backend.device_of_pointer(v.ptr)
            if dev is None:
                raise ArgumentValueError(
                    kernel, p.name, "GPU memory", f"{v.describe()} whose pointer "
                    f"{v.ptr:#x} is not device memory",
                    "pass an array allocated on the GPU (cupy.asarray(x))",
                )  # fmt: skip
            v.device = dev
        if first is None:
            first = (p.name, dev, v)
        elif dev != first[1]:
            raise ArgumentValueError(
                kernel, p.name, f"an array on device {first[1]}, like '{first[0]}'",
                f"{v.describe()} on device {dev}",
                f"put all arrays on one device ({p.name}.to('cuda:{first[1]}') for a tensor, "
                f"with cupy.cuda.Device({first[1]}): cupy.asarray({p.name}) for a CuPy array)",
            )  # fmt: skip
    if torch_param is not None and other_param is not None and stream is None:
        raise ArgumentTypeError(
            kernel, other_param,
            f"arrays of one library: '{torch_param}' is a PyTorch tensor (PyTorch's stream) "
            "and this one is not (CuPy's stream)", "a mix of PyTorch and other GPU arrays",
            f"pass all as tensors (torch.as_tensor({other_param}, device='cuda') shares the "
            "memory), or say which stream to use with .launch(..., stream=...)",
        )  # fmt: skip
    if torch_param is not None and other_param is None:
        return (first[1] if first is not None else _torch_current()), True
    current = backend.current_device()
    if first is not None and first[1] != current:
        raise ArgumentValueError(
            kernel, first[0], f"an array on the current device ({current})",
            f"{first[2].describe()} on device {first[1]}",
            f"run the call inside `with cupy.cuda.Device({first[1]}):`",
        )  # fmt: skip
    return current, False


def _torch_current() -> int:
    return int(sys.modules["torch"].cuda.current_device())


def torch_stream(device: int) -> int:
    """PyTorch's current stream on ``device`` (the capture stream inside
    ``torch.cuda.graph``, ``s`` under ``torch.cuda.stream(s)``), as a raw handle: read as
    Triton and Inductor read it, ``torch._C._cuda_getCurrentRawStream(device)``, a C
    function (``torch.cuda.current_stream()`` makes a Python object per call); the
    compiled launchers call the same function (pyoxide/backends/cupy/_native.py)."""
    return int(sys.modules["torch"]._C._cuda_getCurrentRawStream(device))
