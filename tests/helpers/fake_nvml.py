"""A fake pynvml module (the part pyoxide.bench.PowerMeter uses), passed to
``PowerMeter.open(bus, nvml=...)``: one device at one PCI bus id, whose energy counter and
SM clock give the readings a test scripts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

BUS = "00000000:19:00.0"


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class NVMLError_NotFound(NVMLError):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    pass


def readings(*values: Any) -> Callable[[], Any]:
    """A reader that returns `values` in turn (an exception among them is raised), then
    keeps returning the last."""
    left = list(values)

    def read() -> Any:
        value = left.pop(0) if len(left) > 1 else left[0]
        if isinstance(value, BaseException):
            raise value
        return value

    return read


class FakeNvml:
    """pynvml with one device at `bus`: `energy()` is its total-energy counter (mJ),
    `clock()` its SM clock (MHz); `init_error`, when given, is what nvmlInit raises.
    `calls` records init, shutdown and the bus ids looked up."""

    NVML_CLOCK_SM = 1
    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported

    def __init__(
        self,
        energy: Callable[[], Any] | Iterable[Any] = (0,),
        clock: Callable[[], Any] | Iterable[Any] = (1500,),
        *,
        bus: str = BUS,
        init_error: Exception | None = None,
    ) -> None:
        self.energy = energy if callable(energy) else readings(*energy)
        self.clock = clock if callable(clock) else readings(*clock)
        self.bus, self.init_error = bus, init_error
        self.calls: list[str] = []

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlDeviceGetHandleByPciBusId(self, bus: str) -> str:
        self.calls.append(f"handle {bus}")
        if bus != self.bus:
            raise NVMLError_NotFound("Not Found")
        return "handle"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        assert handle == "handle"
        return int(self.energy())

    def nvmlDeviceGetClockInfo(self, handle: str, which: int) -> int:
        assert handle == "handle" and which == self.NVML_CLOCK_SM
        return int(self.clock())
