"""pyoxide.bench.SustainedTimer on a simulated GPU clock: each call advances a clock the
fake CUDA events read, at a rate the test sets (a card whose power limit lowers its clock
after a while, or raises it again)."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import pytest

from pyoxide.bench import SustainedTimer


class SimulatedGpu:
    """``cp`` for the timer: events stamp ``now`` (ms); each call of ``kernel`` takes
    ``per_call(calls so far)`` ms of it."""

    def __init__(self, per_call: Callable[[int], float]) -> None:
        self.now, self.calls, self.per_call = 0.0, 0, per_call
        self.samples: list[float] = []  # every timed sample's length, counted or not
        gpu = self

        class Event:
            def record(self) -> None:
                self.at = gpu.now

            def synchronize(self) -> None:
                pass

        def elapsed(start: Event, end: Event) -> float:
            self.samples.append(end.at - start.at)
            return end.at - start.at

        self.cuda = SimpleNamespace(Event=Event, get_elapsed_time=elapsed)

    def kernel(self) -> None:
        self.now += self.per_call(self.calls)
        self.calls += 1


def test_samples_last_the_target_and_time_the_settled_clock_not_the_cool_start() -> None:
    # 20 µs a call while the card is cool (the first 2,000 calls), then 50 µs at its
    # power limit: the calibration sees the cool rate, the lead-in runs past it.
    gpu = SimulatedGpu(lambda n: 0.02 if n < 2_000 else 0.05)
    times = SustainedTimer(gpu, samples=3, target_ms=200.0, lead_ms=100.0).times(gpu.kernel)
    assert times.median == pytest.approx(0.05) and times.min == pytest.approx(0.05)
    counted = [ms for ms in gpu.samples if ms >= 200.0]
    assert len(counted) == 3


def test_a_sample_cut_short_by_a_rising_clock_is_taken_again_with_more_calls() -> None:
    # 50 µs a call, then 10 µs from call 5,000 on, inside the first sample: it comes out
    # shorter than the target, does not count, and the next ones have more calls.
    gpu = SimulatedGpu(lambda n: 0.05 if n < 5_000 else 0.01)
    timer = SustainedTimer(gpu, samples=2, target_ms=200.0, lead_ms=100.0)
    times = timer.times(gpu.kernel)
    short = [ms for ms in gpu.samples[3:] if ms < 200.0]  # after the calibration's
    assert short, "the simulated clock rise should have cut a sample short"
    # Only samples of the target's length count: none of the mixed one's 50 µs calls.
    assert times.min == pytest.approx(0.01) and times.max == pytest.approx(0.01)
