"""A fake pynvml module (the part pyoxide.bench.PowerMeter uses), passed to
``PowerMeter.open(bus, nvml=...)``: one device at one PCI bus id, whose instantaneous
power field, averaged power, energy counter, SM clock, temperature and clock event
reasons give the readings a test scripts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import SimpleNamespace
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


def _reader(values: Callable[[], Any] | Iterable[Any]) -> Callable[[], Any]:
    return values if callable(values) else readings(*values)


class FakeNvml:
    """pynvml with one device at `bus`: `instant()` is its NVML_FI_DEV_POWER_INSTANT field
    (mW; an int is answered as an unsigned int, a float as a double; an NVMLError as that
    field's own status, the call succeeding), `usage()` its nvmlDeviceGetPowerUsage (mW),
    `energy()` its total-energy counter (mJ), `clock()` its SM clock (MHz), `temp()` its
    GPU temperature (°C), `reasons()` its clock event reasons (a bitmask), read through
    `reasons_api`'s name (``"Event"``, ``"Throttle"`` as in older pynvml, or None: no
    such call);
    `init_error`, when given, is what nvmlInit raises; `field_values=False`: a pynvml
    without nvmlDeviceGetFieldValues. `calls` records init, shutdown and the bus ids
    looked up."""

    NVML_CLOCK_SM = 1
    NVML_SUCCESS = 0
    NVML_FI_DEV_POWER_INSTANT = 186
    NVML_VALUE_TYPE_DOUBLE = 0
    NVML_VALUE_TYPE_UNSIGNED_INT = 1
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4
    NVML_VALUE_TYPE_SIGNED_INT = 5
    NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
    NVML_TEMPERATURE_GPU = 0
    # nvml.h's bits
    nvmlClocksEventReasonGpuIdle = 0x1
    nvmlClocksEventReasonApplicationsClocksSetting = 0x2
    nvmlClocksEventReasonSwPowerCap = 0x4
    nvmlClocksEventReasonHwSlowdown = 0x8
    nvmlClocksEventReasonSyncBoost = 0x10
    nvmlClocksEventReasonSwThermalSlowdown = 0x20
    nvmlClocksEventReasonHwThermalSlowdown = 0x40
    nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x80
    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported

    def __init__(
        self,
        energy: Callable[[], Any] | Iterable[Any] = (0,),
        clock: Callable[[], Any] | Iterable[Any] = (1500,),
        *,
        instant: Callable[[], Any] | Iterable[Any] = (300_000,),
        usage: Callable[[], Any] | Iterable[Any] = (250_000,),
        bus: str = BUS,
        init_error: Exception | None = None,
        field_values: bool = True,
        temp: Callable[[], Any] | Iterable[Any] = (60,),
        reasons: Callable[[], Any] | Iterable[Any] = (0,),
        reasons_api: str | None = "Event",
    ) -> None:
        self.energy, self.clock = _reader(energy), _reader(clock)
        self.temp, self.reasons = _reader(temp), _reader(reasons)
        if reasons_api is not None:
            setattr(self, f"nvmlDeviceGetCurrentClocks{reasons_api}Reasons", self._reasons)
        self.instant, self.usage = _reader(instant), _reader(usage)
        self.bus, self.init_error = bus, init_error
        self.calls: list[str] = []
        self.field_values = field_values

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

    def nvmlDeviceGetTemperature(self, handle: str, sensor: int) -> int:
        assert handle == "handle" and sensor == self.NVML_TEMPERATURE_GPU
        return int(self.temp())

    def _reasons(self, handle: str) -> int:
        assert handle == "handle"
        return int(self.reasons())

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:
        assert handle == "handle"
        return int(self.usage())

    def nvmlDeviceGetFieldValues(self, handle: str, fields: list[int]) -> list[Any]:
        """As pynvml's: one c_nvmlFieldValue_t a field, each with its own status."""
        assert handle == "handle" and fields == [self.NVML_FI_DEV_POWER_INSTANT]
        if not self.field_values:  # a driver without it: pynvml raises FunctionNotFound
            raise NVMLError("Function Not Found")
        try:
            mw = self.instant()
        except NVMLError as e:
            return [SimpleNamespace(nvmlReturn=3, valueType=0, value=None, error=e)]  # 3: N/S
        value = SimpleNamespace(dVal=None, uiVal=None)
        if isinstance(mw, float):
            value.dVal, kind = mw, self.NVML_VALUE_TYPE_DOUBLE
        else:
            value.uiVal, kind = int(mw), self.NVML_VALUE_TYPE_UNSIGNED_INT
        return [SimpleNamespace(nvmlReturn=self.NVML_SUCCESS, valueType=kind, value=value)]


class Clock:
    """A monotonic clock a test moves by hand (`clock.t = ...`)."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t
