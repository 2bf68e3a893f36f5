"""torch.distributed ranks for the scale-out tests, started as ``torchrun`` starts them:
one process per rank with RANK, LOCAL_RANK and WORLD_SIZE in its environment.

The rendezvous is a TCPStore that the test process opens on port 0 and holds for the
whole run, so no port is chosen, released and raced for; the ranks join it as clients.
Every wait has a deadline: the store's and the process group's timeouts, and
:func:`run_ranks`'s, which ends the ranks and fails when they overrun it."""

from __future__ import annotations

import contextlib
import json
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

TIMEOUT = timedelta(seconds=120)
#: Each rank's report (a JSON file in the run's folder).
REPORT = "rank{}.json"


def run_ranks(target: Any, world: int, backend: str, out: Path, *args: Any) -> list[dict[str, Any]]:
    """Run ``target(rank_env, backend, out, *args)`` in ``world`` spawned processes, as
    torchrun does, within a deadline; each rank's report (what it wrote with
    :func:`report`), by rank."""
    import torch.distributed as dist
    import torch.multiprocessing as mp

    store = dist.TCPStore("127.0.0.1", 0, world + 1, is_master=True, timeout=TIMEOUT,
                          wait_for_workers=False)  # fmt: skip
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(store.port), "GLOO_SOCKET_IFNAME": "lo"}
    ctx = mp.start_processes(
        _rank_main, (world, env, target, backend, out, args), nprocs=world, join=False,
        start_method="spawn",
    )  # fmt: skip
    deadline = time.monotonic() + TIMEOUT.total_seconds() * 2
    try:
        while not ctx.join(timeout=5):
            if time.monotonic() > deadline:
                raise AssertionError(f"{world} ranks did not finish within the deadline")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.terminate()
    del store
    return [json.loads((out / REPORT.format(r)).read_text()) for r in range(world)]


def _rank_main(local_rank: int, world: int, env: dict[str, str], target: Any, backend: str,
               out: Path, args: tuple[Any, ...]) -> None:  # fmt: skip
    started = time.perf_counter()
    os.environ.update(env, RANK=str(local_rank), LOCAL_RANK=str(local_rank),
                      WORLD_SIZE=str(world))  # fmt: skip
    import torch.distributed as dist

    store = dist.TCPStore(env["MASTER_ADDR"], int(env["MASTER_PORT"]), world + 1,
                          is_master=False, timeout=TIMEOUT)  # fmt: skip
    if backend == "nccl":
        import torch

        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(backend, store=store, rank=local_rank, world_size=world,
                            timeout=TIMEOUT)  # fmt: skip
    try:
        facts = target(backend, *args)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    facts["seconds"] = time.perf_counter() - started
    (out / REPORT.format(local_rank)).write_text(json.dumps(facts))


def device_for(backend: str) -> Any:
    """The rank's device: its current GPU under NCCL (a spawned rank sets LOCAL_RANK's, a
    one-rank group in the test process GPU 0), the CPU (the emulator) under gloo."""
    import torch

    if backend == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def kernel_then_all_reduce(backend: str, module: Any, n: int) -> dict[str, Any]:
    """A rank: ``saxpy`` of rank-dependent inputs into a poisoned output, then an
    ``all_reduce`` of it on the same (current) stream, no synchronisation between; on a
    GPU, also both captured into one CUDA graph and replayed with new inputs. Reports
    the results' errors against the sums every rank can compute, and the device."""
    import torch
    import torch.distributed as dist

    device, rank, world = device_for(backend), dist.get_rank(), dist.get_world_size()

    def inputs(step: int, r: int) -> Any:
        return torch.arange(n, dtype=torch.float32, device=device) * (r + 1) + step

    def expected(step: int) -> Any:
        return sum(2 * inputs(step, r) + 1 for r in range(world))

    out = torch.full((n,), float("nan"), device=device)
    ones = torch.ones(n, device=device)
    # On a stream of its own (made current): the kernel and the collective follow it.
    stream = torch.cuda.Stream(device) if device.type == "cuda" else None
    if stream is not None:
        stream.wait_stream(torch.cuda.current_stream(device))  # out and ones are made
    with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
        module.saxpy(2.0, inputs(0, rank), ones, out)
        dist.all_reduce(out)  # no synchronisation between the two
    if stream is not None:
        torch.cuda.current_stream(device).wait_stream(stream)  # before reading out here
    facts: dict[str, Any] = {"device": str(out.device), "local_rank": rank}
    facts["eager_error"] = float((out - expected(0)).abs().max())
    if device.type == "cuda":
        facts["graph_errors"] = _graph_replays(module, inputs, expected, rank, n)
    return facts


def _graph_replays(module: Any, inputs: Any, expected: Any, rank: int, n: int) -> list[float]:
    """Capture saxpy + all_reduce into one torch.cuda.graph; replay with new inputs."""
    import torch
    import torch.distributed as dist

    x = inputs(0, rank).clone()
    ones, out = torch.ones_like(x), torch.empty_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up outside the capture, as PyTorch asks
        module.saxpy(2.0, x, ones, out)
        dist.all_reduce(out)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        module.saxpy(2.0, x, ones, out)
        dist.all_reduce(out)
    errors = []
    for step in (1, 2, 3):
        x.copy_(inputs(step, rank))
        out.fill_(float("nan"))
        graph.replay()
        errors.append(float((out - expected(step)).abs().max()))
    return errors


# --- a DDP step with pyoxide's torch ops ------------------------------------------------


def tiny_model(ops: Any, dim: int) -> Any:
    """Linear -> layer norm (pyoxide) -> linear -> softmax (pyoxide), seeded."""
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.a = torch.nn.Linear(dim, dim)
            self.w = torch.nn.Parameter(torch.ones(dim))
            self.b = torch.nn.Parameter(torch.zeros(dim))
            self.c = torch.nn.Linear(dim, dim)

        def forward(self, x: Any, y: Any) -> Any:
            h = ops.layernorm_rows(self.a(x), self.w, self.b, 1e-5)
            p = ops.softmax_rows(self.c(h))
            return -p.gather(1, y[:, None]).log().mean()

    return Tiny()


def batch(dim: int, rows: int, step: int) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(rows, dim, generator=g), torch.randint(dim, (rows,), generator=g)


def train(model: Any, device: Any, dim: int, rows: int, steps: int, shard: slice) -> list[Any]:
    """``steps`` SGD steps on this process's ``shard`` of each batch; the parameters."""
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for step in range(steps):
        x, y = batch(dim, rows, step)
        loss = model(x[shard].to(device), y[shard].to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().cpu() for p in model.parameters()]


def ddp_rank(backend: str, module: Any, dim: int, rows: int, steps: int) -> dict[str, Any]:
    """A rank of data-parallel training: its half of every batch, gradients averaged by
    DistributedDataParallel; reports the parameters after ``steps`` steps."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    import pyoxide.torch

    device, rank, world = device_for(backend), dist.get_rank(), dist.get_world_size()
    model = tiny_model(pyoxide.torch.ops(module), dim).to(device)
    ids = [device.index] if device.type == "cuda" else None
    ddp = DistributedDataParallel(model, device_ids=ids)
    per = rows // world
    params = train(ddp, device, dim, rows, steps, slice(rank * per, (rank + 1) * per))
    return {"device": str(device), "params": [p.flatten().tolist() for p in params]}
