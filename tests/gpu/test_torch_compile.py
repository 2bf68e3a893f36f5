"""A `torch.compile`d function may call a pyoxide kernel directly (not through a
torch.library op): Dynamo breaks the graph at the call (a compiled call it does not
trace) and runs it eagerly, and pyoxide's own Python runs with Dynamo disabled
(crates/pyoxide-native/src/kernel.rs), so the result is eager's and nothing raises. With
``fullgraph=True`` the graph break itself is the error, as for any untraceable call."""

from __future__ import annotations

import pytest
from helpers.probes import requires_gpu

import pyoxide

pytestmark = [pytest.mark.gpu, requires_gpu("launches on PyTorch tensors")]


@pytest.fixture(scope="module")
def kernels() -> pyoxide.Module:
    from pyoxide import kernels

    return kernels


def saxpy_then_add(kernels: pyoxide.Module, torch, x, y):  # type: ignore[no-untyped-def]
    out = torch.empty_like(x)
    kernels.saxpy(2.0, x * 0.5, y, out)  # a direct call, between two torch ops
    return out + 1.0


@pytest.mark.parametrize("first_call", ["eager first", "compiled first"])
def test_a_compiled_function_calling_a_kernel_runs_as_eager(kernels, first_call) -> None:
    """ "compiled first": a fresh module, whose kernel's first launch (the general path,
    which builds its compiled launcher) happens inside the compiled function."""
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    module = kernels if first_call == "eager first" else pyoxide.load(kernels.manifest)

    def f(x, y):  # type: ignore[no-untyped-def]
        return saxpy_then_add(module, torch, x, y)

    compiled = torch.compile(f)  # default options
    for n in (4096, 1000, 4096, 1 << 20):  # new shapes recompile; repeats reuse
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        if first_call == "eager first":
            want = f(x, y)
            got = compiled(x, y)
        else:
            got = compiled(x, y)
            want = f(x, y)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        torch.testing.assert_close(got, 2.0 * (x * 0.5) + y + 1.0)


def test_the_call_is_a_graph_break(kernels) -> None:
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")

    def f(x, y):  # type: ignore[no-untyped-def]
        return saxpy_then_add(kernels, torch, x, y)

    explained = torch._dynamo.explain(f)(x, y)
    assert explained.graph_break_count >= 1
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(f, fullgraph=True)(x, y)


def test_a_configured_call_too(kernels) -> None:
    """`kernel[grid, block](...)` in a compiled function: the same graph break, the same
    results."""
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()

    def f(x, y):  # type: ignore[no-untyped-def]
        out = torch.empty_like(x)
        kernels.saxpy[(x.numel() + 1023) // 1024, 256](3.0, x, y, out)
        return out + 1.0  # elementwise: a reduction's order may differ under Inductor

    x, y = torch.randn(1 << 16, device="cuda"), torch.randn(1 << 16, device="cuda")
    got = torch.compile(f)(x, y)
    torch.testing.assert_close(got, f(x, y), rtol=0, atol=0)
    torch.testing.assert_close(got, 3.0 * x + y + 1.0)
