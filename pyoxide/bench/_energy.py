"""The card's power and SM clock over timed windows, sampled from NVML by a thread (issue 25).

Under sustained load a GEMM runs at the clock the card's power limit allows, so a kernel
that spends more energy a call than its peer loses there even when it is as fast at
locked clocks. :class:`PowerMeter` runs a thread that reads, every ~5 ms, the card's
instantaneous power (NVML field ``NVML_FI_DEV_POWER_INSTANT``, mW) and its SM clock, each
reading stamped with ``time.monotonic()``; a window ``[t0, t1]`` of host time is then the
mean of the readings stamped inside it (:meth:`PowerMeter.window`). NVML comes through
``pynvml`` (PyPI: ``nvidia-ml-py``, in ``pyoxide[bench]``), imported on first use: a
benchmark runs unchanged where it is missing.

Each poll also reads the card's clock event reasons (NVML's bitmask of what holds the
clocks down, formerly "throttle reasons") and its GPU temperature: a window gives the mean
°C and, for each reason of :data:`REASONS`, the fraction of its readings that had it set,
to tell a power cap from a thermal or hardware slowdown. A failed read of either leaves
it out of that reading, as a failed clock read does.

Why not NVML's total-energy counter over each window: on an H100 it advances in coarse
steps (~100 ms), so a 200 ms window caught one to three of them and read 380-956 W on a
card limited to 700 W. Over a whole run of minutes its steps no longer matter: the meter
reads it at :meth:`~PowerMeter.start` and :meth:`~PowerMeter.stop` as a cross-check of
the readings' mean (:attr:`PowerMeter.check`).

What bounds a window's accuracy is how often the driver refreshes the power value, which
is not documented: the meter may read the same value several times. Each window says how
many readings it holds and how many distinct values followed one another among them
(:class:`PowerWindow`'s ``readings`` and ``distinct``): a sensor refreshed every 50 ms
shows ~4 distinct values in 200 ms, and its value may lag the load by up to one refresh.
Where the field is missing (an older driver or pynvml) the meter falls back to
``nvmlDeviceGetPowerUsage``, which on Ampere and newer (but GA100) is a 1-s average, and
says so (:attr:`PowerMeter.source`).

The device is found by its PCI bus id (:func:`bus_id`), never by index: NVML numbers
every card of the host, CUDA only those CUDA_VISIBLE_DEVICES lets through, in its order.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import itertools
import math
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

#: Fewer readings than this in a window: too short to say (PowerMeter.window gives None).
LEAST_READINGS = 3

INSTANT = "NVML_FI_DEV_POWER_INSTANT"
AVERAGE = (
    "nvmlDeviceGetPowerUsage (NVML_FI_DEV_POWER_INSTANT unavailable; on Ampere and newer, "
    "GA100 aside, a 1-s average, so a window's W lags its load and blurs into its neighbours')"
)
#: pynvml's value types → the member of its value union that holds them.
_UNION = {"DOUBLE": "dVal", "UNSIGNED_INT": "uiVal", "UNSIGNED_LONG": "ulVal",
          "UNSIGNED_LONG_LONG": "ullVal", "SIGNED_LONG_LONG": "sllVal",
          "SIGNED_INT": "siVal", "UNSIGNED_SHORT": "usVal"}  # fmt: skip


#: The clock event reasons a window reports: short name → pynvml's constant, by its
#: current name and its older one ("Throttle" for "Event"), and NVML's bit
#: (nvml.h) where pynvml has neither.
REASONS: tuple[tuple[str, str, int], ...] = (
    ("sw_power_cap", "SwPowerCap", 0x4),
    ("hw_slowdown", "HwSlowdown", 0x8),
    ("hw_power_brake", "HwPowerBrakeSlowdown", 0x80),
    ("hw_thermal", "HwThermalSlowdown", 0x40),
    ("sw_thermal", "SwThermalSlowdown", 0x20),
    ("sync_boost", "SyncBoost", 0x10),
    ("gpu_idle", "GpuIdle", 0x1),
    ("applications_clocks", "ApplicationsClocksSetting", 0x2),
)


def reason_bits(nvml: Any) -> tuple[tuple[str, int], ...]:
    """:data:`REASONS` as (short name, bit), the bits taken from `nvml` by name."""
    return tuple(
        (name, int(getattr(nvml, f"nvmlClocksEventReason{suffix}",
                           getattr(nvml, f"nvmlClocksThrottleReason{suffix}", bit))))
        for name, suffix, bit in REASONS
    )  # fmt: skip


class Reading(NamedTuple):
    """One poll: host monotonic time (s), board power (W), SM clock (MHz), GPU temperature
    (°C) and clock event reasons (NVML's bitmask); nan / None where a read failed."""

    t: float
    watts: float
    mhz: float
    temp: float = math.nan
    reasons: int | None = None


@dataclass(frozen=True)
class PowerWindow:
    """One window: the mean power (W) and SM clock (MHz; nan when no clock read succeeded)
    of the readings stamped inside it, its length (s), how many readings it holds and how
    many distinct power values followed one another among them (1 for a constant value);
    their mean GPU temperature (°C; nan where none was read) and `reasons`: (name, fraction
    of the readings that read the reasons and had that one set) for each of
    :data:`REASONS`, () where none read them."""

    watts: float
    mhz: float
    seconds: float
    readings: int
    distinct: int
    temp_c: float = math.nan
    reasons: tuple[tuple[str, float], ...] = ()

    @property
    def joules(self) -> float:
        return self.watts * self.seconds

    def mj_per_call(self, launches: int) -> float:
        """The window's energy a launch, in mJ (the window covering exactly `launches`)."""
        return self.joules * 1e3 / launches

    def share(self, reason: str) -> float:
        """The fraction of the readings with clock event `reason` set (nan: not read)."""
        return dict(self.reasons).get(reason, math.nan)


def median_window(windows: Sequence[PowerWindow]) -> PowerWindow:
    """Each field's median over `windows` (the clock's, temperature's and each reason's
    fraction over the windows that read them)."""
    if not windows:
        raise ValueError("median_window: no windows")

    def mid(values: Iterable[float]) -> float:
        read = [v for v in values if not math.isnan(v)]
        return statistics.median(read) if read else math.nan

    shares = {name: mid(w.share(name) for w in windows) for name, _, _ in REASONS}
    return PowerWindow(
        watts=statistics.median(w.watts for w in windows),
        mhz=mid(w.mhz for w in windows),
        seconds=statistics.median(w.seconds for w in windows),
        readings=round(statistics.median(w.readings for w in windows)),
        distinct=round(statistics.median(w.distinct for w in windows)),
        temp_c=mid(w.temp_c for w in windows),
        reasons=tuple((name, v) for name, v in shares.items() if not math.isnan(v)),
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
    """Power, SM clock, temperature and clock event reasons of one card, sampled by a
    thread: ``with meter:`` (or ``start()`` … ``stop()``) around the timed run,
    ``window(t0, t1)`` for each window, ``now()`` the clock its readings are stamped with.

    Made by :meth:`open`. Once a power read fails the sampling ends for good:
    :attr:`reason` says why, and ``window()`` returns None from then on; it never raises
    into the benchmark. A failed clock, temperature or reasons read leaves that reading's
    value out."""

    def __init__(
        self,
        nvml: Any,
        handle: Any,
        *,
        instant: bool = True,
        counter: bool = True,
        clock: Callable[[], float] = time.monotonic,
        interval: float = 0.005,
    ) -> None:
        self._nvml, self._handle, self._clock = nvml, handle, clock
        self._instant, self._counter, self.interval = instant, counter, interval
        self.reason = ""
        #: The whole-run cross-check, set by stop(): "" where the counter is missing.
        self.check = ""
        self._readings: list[Reading] = []
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._began: tuple[int, float] | None = None
        self._bits = reason_bits(nvml)
        # newer nvidia-ml-py names it "ClocksEvent", older "ClocksThrottle".
        self._read_reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or (
            getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))  # fmt: skip
        self._gpu_sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)

    @classmethod
    def open(
        cls,
        bus: str,
        *,
        nvml: Any = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float = 0.005,
    ) -> tuple[PowerMeter | None, str]:
        """A meter on the card at PCI bus id `bus` and "", or None and why there is none
        (pynvml not importable, NVML not initialised, no such device, no power reading).
        `nvml`: the pynvml module to use (default: import it); `interval`: seconds
        between polls."""
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
        except nvml.NVMLError as e:
            nvml.nvmlShutdown()
            return None, _why(nvml, e, f"device {bus}")
        try:
            instant = _instant_mw(nvml, handle) > 0  # a driver may answer 0 for "no"
        except (nvml.NVMLError, AttributeError, KeyError):  # no such field, or no API
            instant = False
        try:
            if not instant:
                nvml.nvmlDeviceGetPowerUsage(handle)
        except nvml.NVMLError as e:
            nvml.nvmlShutdown()
            return None, _why(nvml, e, "power usage")
        try:
            nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            counter = True
        except nvml.NVMLError:
            counter = False
        return cls(
            nvml, handle, instant=instant, counter=counter, clock=clock, interval=interval
        ), ""

    @property
    def available(self) -> bool:
        return not self.reason

    @property
    def source(self) -> str:
        """Where the power readings come from."""
        return INSTANT if self._instant else AVERAGE

    def now(self) -> float:
        """The time on the clock the readings are stamped with (a window's ends)."""
        return self._clock()

    def poll_once(self) -> None:
        """One reading: the power, stamped with the time right after it, then the SM clock,
        the GPU temperature and the clock event reasons."""
        if self.reason:
            return
        try:
            mw = _instant_mw(self._nvml, self._handle) if self._instant else (
                self._nvml.nvmlDeviceGetPowerUsage(self._handle))  # fmt: skip
        except self._nvml.NVMLError as e:
            self.reason = _why(self._nvml, e, "the power reading")
            return
        t, mhz, temp, reasons = self._clock(), math.nan, math.nan, None
        nvml, handle = self._nvml, self._handle
        with contextlib.suppress(nvml.NVMLError):
            mhz = float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
        with contextlib.suppress(nvml.NVMLError):
            temp = float(nvml.nvmlDeviceGetTemperature(handle, self._gpu_sensor))
        if self._read_reasons is not None:
            with contextlib.suppress(nvml.NVMLError):
                reasons = int(self._read_reasons(handle))
        with self._lock:
            self._readings.append(Reading(t, float(mw) / 1e3, mhz, temp, reasons))

    def start(self) -> None:
        """Start the sampling thread (and read the energy counter, for :attr:`check`)."""
        if self._thread is not None:
            raise RuntimeError("PowerMeter.start: already sampling")
        self._began = self._energy()
        self._halt.clear()
        self._thread = threading.Thread(target=self._sample, name="PowerMeter", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, join it, and set :attr:`check` from the energy counter."""
        if self._thread is None:
            return
        self._halt.set()
        self._thread.join()
        self._thread = None
        began, self._began = self._began, None
        end = self._energy()
        if began is not None and end is not None:
            self.check = self._cross_check(began, end)

    def _sample(self) -> None:
        # The GIL: the bench's thread spends most of a sample in Event.synchronize(), which
        # releases it (torch/csrc/cuda/Event.cpp: gil_scoped_release around the wait), and
        # this thread polls on time then. While that thread queues launches in Python (a
        # few ms a sample; most of it in a host-bound row), this one gets the GIL back
        # after each pynvml call (ctypes releases it during the call) only when CPython
        # hands it over, every sys.getswitchinterval() (5 ms by default), or when that
        # thread next releases it: readings then come some ms apart, which a window's
        # `readings` shows. A launch blocked on a full launch queue delays it by a kernel.
        while not self._halt.wait(self.interval) and not self.reason:
            self.poll_once()

    def window(self, t0: float, t1: float, *, least: int = LEAST_READINGS) -> PowerWindow | None:
        """The readings stamped in ``(t0, t1]`` (times on :meth:`now`'s clock) as a window,
        or None where the meter has failed or they are fewer than `least`."""
        if self.reason:
            return None
        with self._lock:
            lo = bisect.bisect_right(self._readings, t0, key=lambda r: r.t)
            hi = bisect.bisect_right(self._readings, t1, key=lambda r: r.t)
            inside = self._readings[lo:hi]
        if len(inside) < least:
            return None
        watts = [r.watts for r in inside]
        clocks = [r.mhz for r in inside if not math.isnan(r.mhz)]
        temps = [r.temp for r in inside if not math.isnan(r.temp)]
        masks = [r.reasons for r in inside if r.reasons is not None]
        return PowerWindow(
            watts=statistics.fmean(watts),
            mhz=statistics.fmean(clocks) if clocks else math.nan,
            seconds=t1 - t0,
            readings=len(inside),
            distinct=1 + sum(a != b for a, b in itertools.pairwise(watts)),
            temp_c=statistics.fmean(temps) if temps else math.nan,
            reasons=tuple(
                (name, sum(bool(m & bit) for m in masks) / len(masks)) for name, bit in self._bits
            ) if masks else (),
        )  # fmt: skip

    def poll_gap(self) -> float:
        """The median time between successive readings (s; nan with fewer than two)."""
        with self._lock:
            stamps = [r.t for r in self._readings]
        gaps = [b - a for a, b in itertools.pairwise(stamps)]
        return statistics.median(gaps) if gaps else math.nan

    def close(self) -> None:
        self.stop()
        with contextlib.suppress(self._nvml.NVMLError):
            self._nvml.nvmlShutdown()

    def __enter__(self) -> PowerMeter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _cross_check(self, began: tuple[int, float], end: tuple[int, float]) -> str:
        """The energy counter's W over the run against the mean of its readings."""
        seconds = end[1] - began[1]
        window = self.window(began[1], end[1], least=1)
        if end[0] < began[0] or seconds <= 0 or window is None:
            return ""
        counter_w = (end[0] - began[0]) / 1e3 / seconds
        off = f"{window.watts / counter_w - 1:+.1%}" if counter_w > 0 else "n/a"
        return (
            f"whole-run check: NVML's energy counter over the {seconds:.0f} s run gives "
            f"{counter_w:.0f} W, the mean of its {window.readings} power readings "
            f"{window.watts:.0f} W ({off})"
        )

    def _energy(self) -> tuple[int, float] | None:
        """The total-energy counter (mJ) and the time, or None where it cannot be read."""
        if not self._counter:
            return None
        try:
            return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)), self._clock()
        except self._nvml.NVMLError:
            return None


def _instant_mw(nvml: Any, handle: Any) -> float:
    """NVML's instantaneous power field (mW), its value taken by its declared type."""
    (value,) = nvml.nvmlDeviceGetFieldValues(handle, [nvml.NVML_FI_DEV_POWER_INSTANT])
    if value.nvmlReturn != nvml.NVML_SUCCESS:
        raise nvml.NVMLError(value.nvmlReturn)
    return float(getattr(value.value, _union_members(nvml)[value.valueType]))


@functools.cache
def _union_members(nvml: Any) -> dict[int, str]:
    """`nvml`'s value-type numbers → the member of its value union that holds them (once a
    pynvml, not at every poll)."""
    return {getattr(nvml, f"NVML_VALUE_TYPE_{k}"): v for k, v in _UNION.items()}


def _why(nvml: Any, error: Exception, what: str) -> str:
    if isinstance(error, getattr(nvml, "NVMLError_NotSupported", ())):
        return f"NVML: {what}: not supported on this device"
    return f"NVML: {what}: {type(error).__name__}: {error}"
