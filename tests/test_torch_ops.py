"""pyoxide kernels as torch ops (pyoxide/torch.py), on CPU tensors (the CPU emulator)
and CUDA tensors: the schemas the manifest gives, torch.library.opcheck for the op of
every bundled kernel, fakes that follow #[shapes], and torch.compile(fullgraph=True,
dynamic=True) tracing five ops once for twenty shapes with no graph break."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from helpers.bundled import emu_kernels_manifest
from helpers.torch_ops import DEVICES, sample_args
from torch._dynamo.testing import CompileCounterWithBackend
from torch._subclasses.fake_tensor import FakeTensorMode

import pyoxide
import pyoxide.torch
from pyoxide._launch.torch_plan import plan_kernel
from pyoxide._manifest.reader import KernelSpec, ParamSpec, SourceLocation
from pyoxide._manifest.shape_spec import ArraySpec

NS = "pyoxide_kernels_rs"


@pytest.fixture(scope="module")
def kernels() -> pyoxide.Module:
    return pyoxide.load(emu_kernels_manifest())


@pytest.fixture(scope="module")
def ops(kernels: pyoxide.Module) -> pyoxide.torch.TorchOps:
    return pyoxide.torch.ops(kernels)


def test_the_ops_carry_the_kernel_signatures(ops: pyoxide.torch.TorchOps) -> None:
    """The `.out` overload is the kernel's signature with its outputs mutated; the
    default overload takes the inputs and returns the outputs; integers are SymInt."""
    schemas = {
        n: str(getattr(getattr(torch.ops, NS), n).out._schema) for n in ("softmax_rows", "activate")
    }
    assert schemas == {
        "softmax_rows": f"{NS}::softmax_rows.out(Tensor x, Tensor(a!) out) -> ()",
        "activate": f"{NS}::activate.out(Tensor x, Tensor coeffs, SymInt activation, "
        "Tensor(a!) out) -> ()",
    }
    assert str(torch.ops.pyoxide_kernels_rs.layernorm_rows.default._schema) == (
        f"{NS}::layernorm_rows(Tensor x, Tensor weight, Tensor bias, float eps) -> Tensor"
    )
    assert ops.layernorm_rows is torch.ops.pyoxide_kernels_rs.layernorm_rows
    # An output without a #[shapes] extent: the kernel's own form only, and why.
    assert "saxpy" in ops.plans and ops.plans["saxpy"].schema is None
    assert ops.skipped["saxpy"] == "no out-of-place form: output 'out' has no #[shapes] length"
    with pytest.raises(AttributeError, match="no op 'nope'"):
        _ = ops.nope


def _param(name: str, kind: str, mutable: bool = False, **kw: Any) -> ParamSpec:
    return ParamSpec(name, kind, "f32", mutable, **kw)


def _kernel(*params: ParamSpec) -> KernelSpec:
    return KernelSpec("k", "k", params, SourceLocation("m", "f.rs", 1))


def test_the_plan_derives_outputs_from_the_contract_or_says_why_not() -> None:
    x = _param("x", "array", array=ArraySpec("c", ("m", 4)))
    out = _param("out", "disjoint_array", True, array=ArraySpec("c", (4, "m")))
    plan = plan_kernel("k", [_kernel(x, out)])
    assert not isinstance(plan, str)
    assert plan.schema == "k(Tensor x) -> Tensor" and plan.outputs[0].dims == (4, (0, 0))
    free = _param("out", "disjoint_array", True, array=ArraySpec("c", ("n",)))
    plan = plan_kernel("k", [_kernel(x, free)])
    assert not isinstance(plan, str) and plan.schema is None
    assert plan.no_functional == "output 'out' dimension 'n' is no input's"
    inout = _param("acc", "mut_slice", True)
    plan = plan_kernel("k", [_kernel(x, inout)])
    assert not isinstance(plan, str)
    assert plan.schema == "k(Tensor x, Tensor acc) -> Tensor"
    assert plan.out_schema == "k.out(Tensor x, Tensor(a!) acc) -> ()"
    pointer = _param("p", "pointer", True)
    assert plan_kernel("k", [_kernel(pointer)]) == (
        "parameter 'p' is a raw pointer (*mut f32): no shape to trace"
    )


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_passes_for_the_op_of_every_bundled_kernel(
    ops: pyoxide.torch.TorchOps, device: str
) -> None:
    """Both overloads of every op: schema (what is mutated), fake against real, autograd
    registration, and AOT dispatch with dynamic shapes."""
    failed: dict[str, Any] = {}
    for name, plan in ops.plans.items():
        full, inputs = sample_args(plan, device)
        packet = getattr(ops, name)
        checks = [("out", packet.out, full)]
        if plan.schema is not None:
            checks.append(("default", packet.default, inputs))
        for overload, op, args in checks:
            try:
                torch.library.opcheck(op, tuple(args))
            except Exception as e:
                failed[f"{name}.{overload}"] = f"{type(e).__name__}: {str(e)[:300]}"
    assert failed == {}


@pytest.mark.parametrize("device", DEVICES)
def test_both_forms_give_what_the_kernel_gives(
    kernels: pyoxide.Module, ops: pyoxide.torch.TorchOps, device: str
) -> None:
    x, w, b = (torch.randn(s, device=device) for s in ((37, 300), (300,), (300,)))
    direct = torch.full_like(x, float("nan"))
    kernels.layernorm_rows(x, w, b, direct, 1e-5)
    out = torch.full_like(x, float("nan"))
    ops.layernorm_rows.out(x, w, b, out, 1e-5)
    assert torch.equal(out, direct)
    assert torch.equal(ops.layernorm_rows(x, w, b, 1e-5), direct)
    want = torch.nn.functional.layer_norm(x.double(), (300,), w.double(), b.double(), 1e-5)
    assert torch.allclose(direct.double(), want, atol=1e-5)


def test_fakes_follow_the_shape_contract(ops: pyoxide.torch.TorchOps) -> None:
    with FakeTensorMode():
        a, b = torch.empty(3, 5), torch.empty(5, 7)
        assert ops.sgemm(a, b).shape == (3, 7)
        assert ops.transpose(b).shape == (7, 5) and ops.transpose(b).dtype == torch.float32
        assert ops.transpose(b.double()).dtype == torch.float64  # a generic kernel's instance
        x, w = torch.empty(4, 6), torch.empty(6)
        grad_x, mean, rstd = ops.layernorm_rows_backward(x, w, x, 1e-5)
        assert (grad_x.shape, mean.shape, rstd.shape) == ((4, 6), (4,), (4,))


def five_ops(x: Any, w: Any, b: Any) -> Any:
    """Five pyoxide ops (three out of place, one `.out`, one generic) and torch between."""
    ops = torch.ops.pyoxide_kernels_rs
    h = ops.layernorm_rows(x, w, b, 1e-5)
    p = ops.softmax_rows(h * 2)
    t = ops.transpose(p)
    c = torch.empty_like(t)
    ops.copy_2d.out(t, c)
    return ops.sgemm(c, h) + 1


# Twenty (rows, cols), none 0 or 1 (which torch.compile specialises).
SHAPES = [(r, c) for r in (2, 5, 9, 16, 33) for c in (3, 8, 31, 64)]


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_traces_five_ops_once_for_twenty_shapes(
    ops: pyoxide.torch.TorchOps, device: str
) -> None:
    """fullgraph=True (a graph break would raise), dynamic=True: one compilation for
    all twenty shapes, results equal to eager. The CPU uses the aot_eager backend (the
    tracing, fakes and functionalisation all run; no C++ compile), CUDA Inductor."""
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if device == "cuda" else "aot_eager")
    compiled = torch.compile(five_ops, backend=counter, fullgraph=True, dynamic=True)
    rng = np.random.default_rng(0)
    for rows, cols in SHAPES:
        x, w, b = (torch.from_numpy(rng.standard_normal(s).astype(np.float32)).to(device)
                   for s in ((rows, cols), (cols,), (cols,)))  # fmt: skip
        got, want = compiled(x, w, b), five_ops(x, w, b)
        assert got.shape == (cols, cols)
        assert torch.equal(got, want), (rows, cols)
    assert counter.frame_count == 1
