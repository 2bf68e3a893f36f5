"""pyoxide kernels in torch.distributed jobs (docs/guide/scale-out.md): a kernel followed
by a collective on the same stream with no synchronisation between; both captured into
one CUDA graph and replayed; ranks started as torchrun starts them, each launching on
LOCAL_RANK's device, loading the kernels pickled by reference and building nothing; and
a DistributedDataParallel step with pyoxide's torch ops (backward kernels included)
matching one process trained on the whole batch. On CPU tensors (gloo, the emulator)
here; on GPUs (NCCL) with `pytest -m gpu`."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from helpers.bundled import emu_kernels_manifest
from helpers.probes import requires_gpu, requires_gpus
from helpers.ranks import (
    _graph_replays,
    ddp_rank,
    kernel_then_all_reduce,
    run_ranks,
    tiny_model,
    train,
)

import pyoxide
import pyoxide.torch

N = 1 << 20
#: (process-group backend, what it runs on): gloo on CPU tensors, NCCL on GPUs.
ONE_RANK = [
    "gloo",
    pytest.param("nccl", marks=[pytest.mark.gpu, requires_gpu("NCCL runs on a GPU")]),
]
TWO_RANKS = [
    "gloo",
    pytest.param("nccl", marks=[pytest.mark.gpu, requires_gpus(2, "a rank per GPU")]),
]


@pytest.fixture(scope="module")
def kernels() -> pyoxide.Module:
    return pyoxide.load(emu_kernels_manifest())


@contextlib.contextmanager
def one_rank_group(backend: str) -> Iterator[None]:
    """A process group of this process alone (an in-memory store: no port, no peer)."""
    if backend == "nccl":
        torch.cuda.set_device(0)
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("backend", ONE_RANK)
def test_a_kernel_then_an_all_reduce_on_a_one_rank_group(
    kernels: pyoxide.Module, backend: str
) -> None:
    with one_rank_group(backend):
        facts = kernel_then_all_reduce(backend, kernels, N)
    assert facts["eager_error"] == 0.0
    assert facts["device"] == ("cuda:0" if backend == "nccl" else "cpu")


@pytest.mark.gpu
@requires_gpu("CUDA graphs and NCCL run on a GPU")
def test_a_kernel_and_an_all_reduce_capture_into_one_cuda_graph(kernels: pyoxide.Module) -> None:
    def inputs(step: int, rank: int) -> Any:
        return torch.arange(N, dtype=torch.float32, device="cuda") + step

    with one_rank_group("nccl"):
        errors = _graph_replays(kernels, inputs, lambda s: 2 * inputs(s, 0) + 1, 0, N)
    assert errors == [0.0, 0.0, 0.0]


def _tripwire(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cargo-oxide that records being run (a build, or asking for a cache key) and
    fails; the ranks inherit it. Returns the file it writes."""
    calls = tmp_path / "cargo-oxide-calls"
    exe = tmp_path / "cargo-oxide"
    exe.write_text(f"#!{sys.executable}\nimport sys\nopen({str(calls)!r}, 'a').write(' '.join("
                   "sys.argv) + '\\n')\nsys.exit(1)\n")  # fmt: skip
    exe.chmod(0o755)
    monkeypatch.setenv("PYOXIDE_CARGO_OXIDE", str(exe))
    return calls


@pytest.mark.parametrize("backend", TWO_RANKS)
def test_two_ranks_launch_on_their_local_rank_device_and_build_nothing(
    kernels: pyoxide.Module, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _tripwire(tmp_path, monkeypatch)
    reports = run_ranks(kernel_then_all_reduce, 2, backend, tmp_path, kernels, N)
    for rank, facts in enumerate(reports):
        assert facts["local_rank"] == rank and facts["eager_error"] == 0.0
        assert facts["device"] == (f"cuda:{rank}" if backend == "nccl" else "cpu")
        if backend == "nccl":
            assert facts["graph_errors"] == [0.0, 0.0, 0.0]
        print(f"rank {rank}: {facts['seconds']:.1f} s from start to done, 0 builds")
    assert not calls.exists(), f"a rank ran cargo-oxide: {calls.read_text()}"


@pytest.mark.parametrize("backend", TWO_RANKS)
def test_a_ddp_step_with_pyoxide_ops_matches_one_process(
    kernels: pyoxide.Module, backend: str, tmp_path: Path
) -> None:
    dim, rows, steps = 64, 32, 4
    reports = run_ranks(ddp_rank, 2, backend, tmp_path, kernels, dim, rows, steps)
    device = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
    model = tiny_model(pyoxide.torch.ops(kernels), dim).to(device)
    expected = train(model, device, dim, rows, steps, slice(None))
    for facts in reports:
        for got, want in zip(facts["params"], expected, strict=True):
            torch.testing.assert_close(torch.tensor(got), want.flatten(), rtol=1e-4, atol=1e-5)
    assert reports[0]["params"] == reports[1]["params"]  # the replicas stayed equal
    # The ranks trained: their parameters left the start.
    start = tiny_model(pyoxide.torch.ops(kernels), dim)
    assert not torch.equal(torch.tensor(reports[0]["params"][0]), start.a.weight.flatten())
