"""pyoxide's torch ops under CUDA graphs: captured by torch.cuda.graph and replayed with
new inputs, and compiled with torch.compile(mode="reduce-overhead") (Inductor's CUDA
graph trees), forward and backward, with results equal to eager. The ops run on
PyTorch's current stream, which is the capture stream during capture."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from helpers.bundled import emu_kernels_manifest
from helpers.probes import requires_gpu
from torch._dynamo.utils import counters

import pyoxide
import pyoxide.torch

pytestmark = [pytest.mark.gpu, requires_gpu("captures CUDA graphs of pyoxide's torch ops")]

EPS = 1e-5


@pytest.fixture(scope="module")
def ops() -> pyoxide.torch.TorchOps:
    return pyoxide.torch.ops(pyoxide.load(emu_kernels_manifest()))


def block(x: Any, w: Any, b: Any) -> Any:
    """Out-of-place ops, the `.out` form into a buffer, and torch between them."""
    ops = torch.ops.pyoxide_kernels_rs
    h = ops.layernorm_rows(x, w, b, EPS)
    p = ops.softmax_rows(h)
    t = torch.empty_like(p)
    ops.copy_2d.out(p, t)
    return ops.sgemm(t, ops.transpose(h)) * 0.5


def layer(x: Any, w: Any, b: Any) -> Any:
    """The differentiable ops (each with its backward kernels) and torch around them."""
    ops = torch.ops.pyoxide_kernels_rs
    return ops.softmax_rows(ops.layernorm_rows(x * 2, w, b, EPS)) @ x.t()


def inputs(rows: int = 64, cols: int = 256, grad: bool = False) -> list[Any]:
    shapes = ((rows, cols), (cols,), (cols,))
    return [torch.randn(s, device="cuda", requires_grad=grad) for s in shapes]


def test_torch_cuda_graph_captures_the_ops_and_replays_with_new_inputs(ops: Any) -> None:
    x, w, b = inputs()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as torch advises
        block(x, w, b)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = block(x, w, b)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        w.copy_(torch.randn_like(w))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, block(x, w, b))


def test_reduce_overhead_compiles_to_cuda_graphs_forward_and_backward(ops: Any) -> None:
    """Inductor records the compiled forward and backward as CUDA graphs (no skip is
    counted), and every replay matches eager, the gradients too."""
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(layer, mode="reduce-overhead", fullgraph=True)
    for step in range(5):
        x, w, b = inputs(grad=True)
        twins = [t.detach().clone().requires_grad_() for t in (x, w, b)]
        got = compiled(x, w, b)
        got.sum().backward()
        want = layer(*twins)
        want.sum().backward()
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), step
        for t, u in zip((x, w, b), twins, strict=True):
            assert torch.allclose(t.grad, u.grad, rtol=1e-4, atol=1e-5), step
    assert dict(counters["inductor"]).get("cudagraph_skips", 0) == 0
    assert counters["stats"]["unique_graphs"] == 1
