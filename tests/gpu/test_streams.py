"""Streams and devices follow the array library (pyoxide/_launch/devices.py): CuPy arrays run on
CuPy's current device and stream, PyTorch tensors on their own device and PyTorch's
current stream there. So launches are captured by `torch.cuda.graph` and by CuPy stream
capture, go to `s` under `torch.cuda.stream(s)`, run on cuda:1 for tensors on cuda:1, and
work on every rank of a torch.distributed run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.probes import requires_gpu, requires_gpus

import pyoxide

pytestmark = [pytest.mark.gpu, requires_gpu("launches on CuPy arrays and PyTorch tensors")]

N = 1 << 20


@pytest.fixture(scope="module")
def kernels() -> pyoxide.Module:
    from pyoxide import kernels

    return kernels


def test_a_launch_inside_torch_cuda_graph_is_captured_and_replays(kernels) -> None:
    torch = pytest.importorskip("torch")
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    out = torch.zeros(N, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as torch advises
        kernels.saxpy(3.0, x, y, out)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernels.saxpy(3.0, x, y, out)
    out.zero_()
    x.copy_(torch.randn(N, device="cuda"))  # new inputs: the replay must read them
    graph.replay()
    torch.cuda.synchronize()
    want = 3.0 * x.double() + y.double()
    assert torch.allclose(out.double(), want, rtol=1e-6, atol=1e-6)


def test_a_launch_inside_cupy_stream_capture_replays(kernels) -> None:
    import cupy as cp

    x, y = cp.random.standard_normal(N, dtype=cp.float32), cp.ones(N, dtype=cp.float32)
    out = cp.zeros(N, dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        kernels.saxpy(2.0, x, y, out)  # the general path, then the compiled one
        kernels.saxpy(2.0, x, y, out)
        stream.begin_capture()
        kernels.saxpy(2.0, x, y, out)
        graph = stream.end_capture()
    out.fill(0)
    stream.synchronize()
    graph.launch(stream)
    stream.synchronize()
    assert cp.allclose(out, 2.0 * x + y)


def test_tensors_under_torch_cuda_stream_go_to_that_stream(kernels) -> None:
    torch = pytest.importorskip("torch")
    x, y = torch.zeros(N, device="cuda"), torch.ones(N, device="cuda")
    out = torch.full((N,), float("nan"), device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # keep `s` busy, so order on it is visible
        x.fill_(5.0)
        kernels.saxpy(2.0, x, y, out)  # ordered after the fill only if it runs on `s`
        assert not s.query()  # queued on s behind the sleep, not run on another stream
    s.synchronize()
    assert torch.equal(out, torch.full_like(out, 11.0))


def test_cupy_arrays_follow_cupys_stream_and_a_mix_is_refused(kernels) -> None:
    torch = pytest.importorskip("torch")
    import cupy as cp

    t = torch.ones(16, device="cuda")
    c = cp.ones(16, dtype=cp.float32)
    with pytest.raises(pyoxide.ArgumentTypeError, match="PyTorch"):
        kernels.vecadd(t, c, torch.empty(16, device="cuda"))
    out = cp.empty(16, dtype=cp.float32)
    ours = cp.cuda.Stream(non_blocking=True)
    kernels.vecadd.launch(t, c, out, stream=ours)  # a named stream settles it
    ours.synchronize()
    assert float(out.sum()) == 32.0


@requires_gpus(2, "a tensor on cuda:1 while cuda:0 is current")
def test_a_tensor_on_cuda_1_launches_there(kernels) -> None:
    torch = pytest.importorskip("torch")
    assert torch.cuda.current_device() == 0
    x = torch.randn(N, device="cuda:1")
    y = torch.randn(N, device="cuda:1")
    out = torch.full((N,), float("nan"), device="cuda:1")
    for _ in range(2):
        kernels.saxpy(0.5, x, y, out)
    torch.cuda.synchronize(1)
    assert out.device.index == 1 and torch.cuda.current_device() == 0
    assert torch.allclose(out.double(), 0.5 * x.double() + y.double(), rtol=1e-6, atol=1e-6)


@requires_gpus(2, "a torch.distributed run with one process per GPU")
def test_every_rank_of_a_torch_distributed_run_uses_pyoxide(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "ranks.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp

        def main(rank, world, init):
            torch.cuda.set_device(rank)
            dist.init_process_group("nccl", init_method=init, rank=rank, world_size=world)
            from pyoxide import kernels
            x = torch.full((4096,), float(rank + 1), device=f"cuda:{rank}")
            out = torch.empty_like(x)
            kernels.scale(2.0, x, out)  # 2 * (rank + 1) on each rank
            dist.all_reduce(out)  # sum over ranks: 2 * (1 + 2) = 6
            assert torch.all(out == 6.0), out[:4]
            dist.destroy_process_group()

        if __name__ == "__main__":
            mp.spawn(main, args=(2, "file://" + sys.argv[1]), nprocs=2)
            print("ranks ok")
    """)
    )
    env = {**os.environ, "NCCL_NVLS_ENABLE": "0"}
    r = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "rendezvous")],
        capture_output=True, text=True, env=env, timeout=240, check=False,
    )  # fmt: skip
    assert r.returncode == 0 and "ranks ok" in r.stdout, r.stderr[-3000:]
