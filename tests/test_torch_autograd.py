"""Autograd through pyoxide's torch ops (pyoxide/torch.py): the bundled softmax_rows and
layernorm_rows pair with their backward kernels by name, gradients match float64 finite
differences of the float64 reference, torch.compile traces forward and backward, and a
Python backward pairs as torch.library.register_autograd takes it. On CPU tensors (the
CPU emulator) and CUDA tensors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from helpers.arraylibs import rel_err, tol
from helpers.bundled import emu_kernels_manifest
from helpers.rows import column_gradient, layernorm64, softmax64
from helpers.torch_ops import DEVICES

import pyoxide
import pyoxide.torch

EPS = 1e-5
TOL = tol(np.float32, compound=True)


@pytest.fixture(scope="module")
def ops() -> pyoxide.torch.TorchOps:
    return pyoxide.torch.ops(pyoxide.load(emu_kernels_manifest()))


def test_backward_kernels_pair_with_their_forward_by_name(ops: pyoxide.torch.TorchOps) -> None:
    assert ops.autograd == {
        "softmax_rows": "softmax_rows_backward",
        "layernorm_rows": "layernorm_rows_backward, layernorm_rows_backward_affine",
    }


def norm_softmax(x: Any, w: Any, b: Any) -> Any:
    ops = torch.ops.pyoxide_kernels_rs
    return ops.softmax_rows(ops.layernorm_rows(x, w, b, EPS))


def norm_softmax64(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return softmax64(layernorm64(x, w, b, EPS))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_gradients_match_float64_finite_differences(
    ops: pyoxide.torch.TorchOps, device: str, compiled: bool
) -> None:
    """d/dx, d/dweight, d/dbias of Σ g · softmax(layernorm(x)), through both backward
    chains; compiled: the same with torch.compile(fullgraph=True) (AOT autograd traces
    the backward kernels too)."""
    rng = np.random.default_rng(7)
    rows, cols = 9, 45
    x = rng.standard_normal((rows, cols)) * 2 + 3
    w, b = rng.standard_normal(cols), rng.standard_normal(cols)
    g = rng.standard_normal((rows, cols))
    leaves = [torch.tensor(v, dtype=torch.float32, device=device, requires_grad=True)
              for v in (x, w, b)]  # fmt: skip
    fn = norm_softmax
    if compiled:
        torch._dynamo.reset()
        backend = "inductor" if device == "cuda" else "aot_eager"
        fn = torch.compile(norm_softmax, backend=backend, fullgraph=True, dynamic=True)
    y = fn(*leaves)
    (y * torch.tensor(g, dtype=torch.float32, device=device)).sum().backward()
    grads = [t.grad.double().cpu().numpy() for t in leaves]
    want = [
        column_gradient(lambda v: (norm_softmax64(v, w, b) * g).sum(axis=-1), x),
        column_gradient(lambda v: (norm_softmax64(x, v, b) * g).sum(), w),
        column_gradient(lambda v: (norm_softmax64(x, w, v) * g).sum(), b),
    ]
    for name, got, ref in zip(("x", "weight", "bias"), grads, want, strict=True):
        assert rel_err(got, ref) < TOL, name


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_passes_with_gradients_flowing(ops: pyoxide.torch.TorchOps, device: str) -> None:
    x = torch.randn(6, 40, device=device, requires_grad=True)
    w = torch.randn(40, device=device, requires_grad=True)
    b = torch.randn(40, device=device, requires_grad=True)
    torch.library.opcheck(ops.softmax_rows.default, (x,))
    torch.library.opcheck(ops.layernorm_rows.default, (x, w, b, EPS))


def test_an_unmatched_backward_parameter_is_refused_with_its_name(
    ops: pyoxide.torch.TorchOps,
) -> None:
    with pytest.raises(pyoxide.LoadError, match=r"transpose takes 'x', which neither sgemm"):
        ops.register_autograd("sgemm", "transpose")
    with pytest.raises(pyoxide.LoadError, match="saxpy has no out-of-place op"):
        ops.register_autograd("saxpy", "vecadd")


def test_a_python_backward_pairs_like_torch_library_register_autograd(
    ops: pyoxide.torch.TorchOps,
) -> None:
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(*inputs)

    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved_tensors
        grad = grad.contiguous()  # the gradient of a sum: an expanded scalar
        grad_a = ops.matmul_tiled(grad, b.t().contiguous())
        return grad_a, ops.matmul_tiled(a.t().contiguous(), grad)

    ops.register_autograd("matmul_tiled", backward, setup_context=setup_context)
    assert ops.autograd["matmul_tiled"] == "backward"
    a = torch.randn(5, 7, requires_grad=True)
    b = torch.randn(7, 3, requires_grad=True)
    ops.matmul_tiled(a, b).sum().backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    (a2 @ b2).sum().backward()
    assert torch.allclose(a.grad, a2.grad, atol=1e-5) and torch.allclose(b.grad, b2.grad, atol=1e-5)
