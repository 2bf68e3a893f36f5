"""The card's power, SM clock and energy over a timed sample, read from NVML (issue 25).

Under sustained load a GEMM runs at the clock the card's power limit allows, so a kernel
that spends more energy a call than its peer loses there even when it is as fast at
locked clocks. :class:`PowerMeter` reads NVML's total-energy counter (mJ since the driver
loaded) at the start and the end of a window and the SM clock during it, through
``pynvml`` (PyPI: ``nvidia-ml-py``, in ``pyoxide[bench]``), imported on first use: a
benchmark runs unchanged where it is missing.

The window is timed on the host's monotonic clock. That is fine here: a bench sample is
≥ 200 ms of back-to-back launches, the bench opens the window once the GPU has reached the
sample's start event and closes it once it has reached the end event (it synchronizes on
both), and the counter's unit is a millijoule (a 200 ms sample at 700 W is 140 000 mJ),
so the host's reads add tens of µs at either end, ~0.01 %. What bounds a window's
accuracy is how often the driver updates the counter (every ~10 ms was reported on Volta;
not measured here): a window can be off by one update at either end, so longer samples
(bench_gemm --sample-ms) give steadier numbers.

The device is found by its PCI bus id (:func:`bus_id`), never by index: NVML numbers
every card of the host, CUDA only those CUDA_VISIBLE_DEVICES lets through, in its order.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PowerWindow:
    """One window: the card's energy (J) over its length (s), their ratio (W), and the
    mean of the SM clock reads taken during it (MHz; nan when none was)."""

    joules: float
    seconds: float
    watts: float
    mhz: float

    def mj_per_call(self, launches: int) -> float:
        """The window's energy a launch, in mJ (the window covering exactly `launches`)."""
        return self.joules * 1e3 / launches


def median_window(windows: Sequence[PowerWindow]) -> PowerWindow:
    """Each field's median over `windows` (the clock's over the windows that read it)."""
    if not windows:
        raise ValueError("median_window: no windows")
    clocks = [w.mhz for w in windows if not math.isnan(w.mhz)]
    return PowerWindow(
        joules=statistics.median(w.joules for w in windows),
        seconds=statistics.median(w.seconds for w in windows),
        watts=statistics.median(w.watts for w in windows),
        mhz=statistics.median(clocks) if clocks else math.nan,
    )


def bus_id(device: Any) -> str:
    """The PCI bus id NVML knows `device` by, ``DDDDDDDD:BB:DD.0``: from PyTorch's device
    properties (``torch.cuda.get_device_properties(i)``: pci_domain_id, pci_bus_id,
    pci_device_id) or a CuPy ``Device`` (whose ``pci_bus_id`` is that string already)."""
    bus = device.pci_bus_id
    if isinstance(bus, str):
        return bus
    return f"{device.pci_domain_id:08X}:{bus:02X}:{device.pci_device_id:02X}.0"


class PowerMeter:
    """Energy and SM clock of one card over windows: ``start()``, ``read_clock()`` while
    the window's work runs, ``stop()`` → :class:`PowerWindow`.

    Made by :meth:`open`. Once a read fails (the device does not count energy, the counter
    went backwards) the meter is unavailable for good: :attr:`reason` says why, and
    ``stop()`` returns None from then on; it never raises into the benchmark."""

    def __init__(
        self, nvml: Any, handle: Any, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._nvml, self._handle, self._clock = nvml, handle, clock
        self.reason = ""
        self._start: tuple[int, float] | None = None
        self._mhz: list[float] = []

    @classmethod
    def open(
        cls, bus: str, *, nvml: Any = None, clock: Callable[[], float] = time.monotonic
    ) -> tuple[PowerMeter | None, str]:
        """A meter on the card at PCI bus id `bus` and "", or None and why there is none
        (pynvml not importable, NVML not initialised, no such device, no energy counter).
        `nvml`: the pynvml module to use (default: import it)."""
        if nvml is None:
            try:
                import pynvml
            except ImportError as e:
                return None, f"pynvml is not importable ({e}): pip install nvidia-ml-py"
            nvml = pynvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as e:
            return None, f"NVML did not initialise: {e}"
        try:
            handle = nvml.nvmlDeviceGetHandleByPciBusId(bus)
            nvml.nvmlDeviceGetTotalEnergyConsumption(handle)  # does it count energy?
        except nvml.NVMLError as e:
            nvml.nvmlShutdown()
            return None, _why(nvml, e, f"device {bus}")
        return cls(nvml, handle, clock=clock), ""

    @property
    def available(self) -> bool:
        return not self.reason

    def start(self) -> None:
        """Open a window: the energy counter and the time now."""
        self._mhz = []
        self._start = None
        if (mj := self._energy()) is not None:
            self._start = (mj, self._clock())

    def read_clock(self) -> None:
        """Read the SM clock into the open window (call it while the card is under load).
        A failed read is left out of the mean; it does not end the meter."""
        if self._start is None:
            return
        with contextlib.suppress(self._nvml.NVMLError):
            mhz = self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM)
            self._mhz.append(float(mhz))

    def stop(self) -> PowerWindow | None:
        """Close the window: its energy, length, power and mean SM clock, or None when the
        meter is (or just became) unavailable."""
        began, self._start = self._start, None
        end = self._energy()
        if began is None or end is None:
            return None
        seconds = self._clock() - began[1]
        if end < began[0]:
            self.reason = (
                f"NVML's energy counter went backwards ({began[0]} → {end} mJ: wrapped, or "
                "the driver reloaded)"
            )
            return None
        joules = (end - began[0]) / 1e3
        return PowerWindow(
            joules=joules,
            seconds=seconds,
            watts=joules / seconds if seconds > 0 else math.nan,
            mhz=statistics.fmean(self._mhz) if self._mhz else math.nan,
        )

    def close(self) -> None:
        self._start = None
        with contextlib.suppress(self._nvml.NVMLError):
            self._nvml.nvmlShutdown()

    def __enter__(self) -> PowerMeter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _energy(self) -> int | None:
        """The total-energy counter (mJ), or None (the meter unavailable, with why)."""
        if self.reason:
            return None
        try:
            return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except self._nvml.NVMLError as e:
            self.reason = _why(self._nvml, e, "the energy counter")
            return None


def _why(nvml: Any, error: Exception, what: str) -> str:
    if isinstance(error, getattr(nvml, "NVMLError_NotSupported", ())):
        return f"NVML: {what}: not supported (no total-energy counter on this device)"
    return f"NVML: {what}: {type(error).__name__}: {error}"
