"""GPU timing shared by ``pyoxide bench`` and scripts/bench_*: CUDA events around each
call, warm-up first, a spin kernel queued ahead so the GPU never waits for the host
between repetitions, and (optionally) the L2 cache flushed before each repetition (a
read of twice its size) so no rep reads what the previous one left in cache; or, for
kernels the card's power limit binds (GEMMs), samples of sustained back-to-back load
(``SustainedTimer``). Also the two roofline ceilings: device-to-device copy bandwidth
(measured) and peak FLOP rates (read from the device's attributes)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Times:
    """Milliseconds per call over the timed repetitions."""

    median: float
    min: float
    max: float

    def as_dict(self) -> dict[str, float]:
        return {"median": self.median, "min": self.min, "max": self.max}


class Timer:
    """CUDA-event timing on CuPy's current stream."""

    def __init__(self, cp: Any, reps: int, warmup: int, *, flush_l2: bool = False) -> None:
        self.cp, self.reps, self.warmup = cp, reps, warmup
        spin = r"""extern "C" __global__ void spin(long long cycles) {
            long long t0 = clock64(); while (clock64() - t0 < cycles) {} }"""
        self._spin = cp.RawKernel(spin, "spin")
        rate = cp.cuda.Device().attributes.get("ClockRate", 2_000_000)  # kHz
        self._cycles = np.int64(rate * 20)  # 20 ms: longer than queueing all the reps
        self._flush: Any = None
        if flush_l2:
            props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
            # Twice the L2, read (not written: written lines are dirty, and writing them
            # back to memory would be charged to the next rep, about 15 µs on an H200).
            words = max(2 * int(props["l2CacheSize"]), 1 << 20) // 4
            self._flush = cp.zeros(words, cp.uint32)

    def times(self, fn: Callable[[], Any]) -> Times:
        cp = self.cp
        for _ in range(self.warmup):
            fn()
        cp.cuda.Device().synchronize()
        self._spin((1,), (1,), (self._cycles,))
        events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(self.reps)]
        for start, end in events:
            if self._flush is not None:
                self._flush.sum(dtype=cp.uint32)  # outside the events: not timed
            start.record()
            fn()
            end.record()
        events[-1][1].synchronize()
        ms = [cp.cuda.get_elapsed_time(s, e) for s, e in events]
        return Times(statistics.median(ms), min(ms), max(ms))

    def median_ms(self, fn: Callable[[], Any]) -> float:
        return self.times(fn).median


def calibrated_calls(time_calls: Callable[[int], float], target_ms: float) -> int:
    """Back-to-back calls for a sample of ``target_ms``: ``time_calls(n)`` (the ms of n
    calls) from 2 calls, four times more until a run lasts ``target_ms / 8``, then scaled
    to the target with a fifth more for the clock's drop under load."""
    calls = 2
    while (ms := time_calls(calls)) < target_ms / 8:
        calls *= 4
    return max(1, math.ceil(1.2 * target_ms * calls / ms))


def retaken_calls(calls: int, ms: float, target_ms: float) -> int:
    """Calls for the next try of a sample of ``calls`` that lasted ``ms`` < ``target_ms``
    (the clock rose): scaled to the target, a fifth more."""
    return math.ceil(calls * 1.2 * target_ms / ms)


def lead_in_calls(calls: int, lead_ms: float, target_ms: float) -> int:
    """Untimed calls for about ``lead_ms`` before a sample of ``calls`` (~``target_ms``)."""
    return math.ceil(calls * lead_ms / target_ms)


class SustainedTimer:
    """Per-call time under sustained load, as a training loop runs a GEMM and the card's
    power limit binds: each of ``samples`` samples is back-to-back calls between two CUDA
    events lasting at least ``target_ms``, after ``lead_ms`` of the same calls untimed (the
    clocks settle to this kernel's own power draw, not the one timed before it). A sample
    that came out shorter than ``target_ms`` (the clock rose) is taken again with more
    calls and does not count. No L2 flush: back to back is what sustained load is.
    (scripts/bench_gemm_rows.py sizes its samples by the same three rules.)"""

    def __init__(
        self, cp: Any, samples: int = 2, target_ms: float = 200.0, lead_ms: float = 100.0
    ) -> None:
        self.cp, self.samples, self.target_ms, self.lead_ms = cp, samples, target_ms, lead_ms

    def _sample(self, fn: Callable[[], Any], calls: int) -> float:
        start, end = self.cp.cuda.Event(), self.cp.cuda.Event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return float(self.cp.cuda.get_elapsed_time(start, end))

    def times(self, fn: Callable[[], Any]) -> Times:
        fn()
        calls = calibrated_calls(lambda n: self._sample(fn, n), self.target_ms)
        per_call: list[float] = []
        while len(per_call) < self.samples:
            for _ in range(lead_in_calls(calls, self.lead_ms, self.target_ms)):
                fn()
            ms = self._sample(fn, calls)
            if ms < self.target_ms:
                calls = retaken_calls(calls, ms, self.target_ms)
                continue
            per_call.append(ms / calls)
        return Times(statistics.median(per_call), min(per_call), max(per_call))


def copy_bandwidth(cp: Any, timer: Timer, n: int) -> tuple[float, str]:
    """Device-to-device copy bandwidth (bytes read + written per second, in GB/s) of `n`
    float32 elements: the best of cudaMemcpyAsync and (when present) PyTorch's copy_."""
    src, dst = cp.random.standard_normal(n, dtype=cp.float32), cp.empty(n, cp.float32)
    nbytes = src.nbytes
    results = {}

    def memcpy() -> None:
        cp.cuda.runtime.memcpyAsync(
            dst.data.ptr, src.data.ptr, nbytes, cp.cuda.runtime.memcpyDeviceToDevice,
            cp.cuda.get_current_stream().ptr,
        )  # fmt: skip

    results["cudaMemcpyAsync"] = timer.median_ms(memcpy)
    torch = _torch()
    if torch is not None:
        ts, td = torch.from_dlpack(src), torch.from_dlpack(dst)
        results["torch copy_"] = timer.median_ms(lambda: td.copy_(ts))
    assert bool((dst == src).all()), "the copy did not copy"
    best = min(results, key=results.__getitem__)
    gbs = 2 * nbytes / (results[best] * 1e6)
    others = ", ".join(f"{k} {2 * nbytes / (v * 1e6):.0f}" for k, v in results.items())
    return gbs, f"best of {others} GB/s"


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


#: Per multiprocessor per clock, by compute capability major: FP32 FMA lanes × 2, and
#: dense BF16 tensor-core FLOPs (NVIDIA's architecture whitepapers: A100 312 TFLOP/s
#: = 108 SMs × 1.41 GHz × 2048; H100 SXM 989 TFLOP/s = 132 SMs × 1.83 GHz × 4096).
_PER_SM_CLOCK = {8: {"f32": 128, "bf16": 2048}, 9: {"f32": 256, "bf16": 4096}}


def peak_flops(cp: Any) -> dict[str, float]:
    """Peak FLOP/s of the current device, read from its attributes (SM count, clock,
    compute capability): ``f32`` on the CUDA cores, ``bf16`` on the tensor cores."""
    dev = cp.cuda.Device()
    attrs = dev.attributes
    sms = int(attrs["MultiProcessorCount"])
    hz = float(attrs.get("ClockRate", 0)) * 1e3
    major = int(dev.compute_capability[0]) if dev.compute_capability else 9
    rates = _PER_SM_CLOCK.get(major, _PER_SM_CLOCK[9 if major > 9 else 8])
    return {k: sms * hz * v for k, v in rates.items()}


def profiled_call(cp: Any, call: Callable[[], Any], synchronize: Callable[[], Any]) -> None:
    """One warm call of `call` between cudaProfilerStart and Stop (CuPy's runtime `cp`,
    as `Timer` takes it), after a warm-up call (a peer's autotuning and first-call work
    happen there): what `ncu --profile-from-start off` measures (scripts/device_run's
    `ncu:` parts)."""
    call()
    synchronize()
    cp.cuda.runtime.profilerStart()
    try:
        call()
        synchronize()
    finally:
        cp.cuda.runtime.profilerStop()


def host_cost(
    call: Callable[[], Any], synchronize: Callable[[], Any], launches: int = 25, reps: int = 7
) -> float:
    """The host's µs a call: the median over `reps` bursts of `launches` calls, each burst
    timed on the host's clock from an idle GPU (so the launch queue never fills and blocks
    the host: the time is the caller's own, not the GPU's)."""
    times = []
    for _ in range(reps):
        synchronize()
        start = time.perf_counter()
        for _ in range(launches):
            call()
        times.append((time.perf_counter() - start) / launches * 1e6)
    synchronize()
    return statistics.median(times)
