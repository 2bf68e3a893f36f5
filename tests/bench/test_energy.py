"""pyoxide.bench.PowerMeter on a fake pynvml (tests/helpers/fake_nvml.py) and a fake clock,
polled by hand (poll_once): a window's mean power and clock over the readings stamped
inside it, how many readings and distinct values it holds, too few readings giving None;
the fallback from the instantaneous power field to the averaged reading; the whole-run
cross-check against the energy counter; the temperature and the share of readings with
each clock event reason set, a failed read of either left out; medians over windows; the
device found by its PCI bus id; every way NVML can be missing or fail giving a reason,
never an error; and the sampling thread itself, once, on the real clock."""

from __future__ import annotations

import math
import pickle
import sys
import threading
import time
from types import SimpleNamespace

import pytest
from helpers.fake_nvml import (
    BUS,
    Clock,
    FakeNvml,
    NVMLError_LibraryNotFound,
    NVMLError_NotSupported,
    readings,
)

from pyoxide.bench import REASONS, PowerMeter, PowerWindow, bus_id, median_window


def _meter(nvml: FakeNvml, clock: Clock, interval: float = 3600.0) -> PowerMeter:
    """A meter whose thread (if started) never polls on its own: the test polls."""
    meter, reason = PowerMeter.open(BUS, nvml=nvml, clock=clock, interval=interval)
    assert meter is not None and reason == "", reason
    return meter


def _poll(meter: PowerMeter, clock: Clock, *stamps: float) -> None:
    for t in stamps:
        clock.t = t
        meter.poll_once()


def test_a_window_is_the_mean_of_the_readings_stamped_inside_it() -> None:
    """Readings at 0, 5, ..., 40 ms; the window (10 ms, 30 ms] holds those at 15-30 ms: the
    one at its start belongs to what came before, the one at its end to it."""
    mw = (100_000, 100_000, 100_000, 690_000, 690_000, 710_000, 710_000, 50_000, 50_000)
    mhz = (900, 900, 900, 1_400, 1_500, 1_500, 1_600, 800, 800)
    nvml = FakeNvml(instant=(300_000, *mw), clock=mhz)  # the first: open's probe
    clock = Clock()
    meter = _meter(nvml, clock)
    _poll(meter, clock, *(i * 0.005 for i in range(9)))
    window = meter.window(0.010, 0.030)
    assert window is not None
    assert (window.readings, window.distinct) == (4, 2)  # 690, 690, 710, 710: 2 values
    assert window.watts == pytest.approx(700.0) and window.mhz == pytest.approx(1_500.0)
    assert window.seconds == pytest.approx(0.020) and window.joules == pytest.approx(14.0)
    assert window.mj_per_call(100) == pytest.approx(140.0)  # 14 J over 100 launches
    assert meter.poll_gap() == pytest.approx(0.005)
    assert meter.source == "NVML_FI_DEV_POWER_INSTANT" and meter.available
    assert nvml.calls == ["init", f"handle {BUS}"]
    meter.close()
    assert nvml.calls[-1] == "shutdown"


def test_distinct_counts_the_runs_of_equal_successive_values() -> None:
    """A value that comes back after another counts again: 7 readings, 4 runs."""
    nvml = FakeNvml(instant=(1, 700_000, 700_000, 650_000, 650_000, 700_000, 600_000, 600_000))
    clock = Clock()
    meter = _meter(nvml, clock)
    _poll(meter, clock, *(i / 100 for i in range(1, 8)))
    window = meter.window(0.0, 1.0)
    assert window is not None and (window.readings, window.distinct) == (7, 4)


def test_a_window_with_fewer_than_three_readings_is_too_short_to_say() -> None:
    clock = Clock()
    meter = _meter(FakeNvml(), clock)
    _poll(meter, clock, 0.1, 0.2, 0.3)
    assert meter.window(0.15, 0.3) is None  # two readings
    assert meter.window(0.15, 0.3, least=2) is not None
    assert meter.window(0.0, 0.3) is not None
    assert meter.window(0.3, 0.5) is None  # none


def test_a_failed_clock_read_is_left_out_of_the_mean() -> None:
    clock = Clock()
    nvml = FakeNvml(clock=readings(1_400, NVMLError_NotSupported("Not Supported"), 1_600))
    meter = _meter(nvml, clock)
    _poll(meter, clock, 1.0, 2.0, 3.0)
    window = meter.window(0.0, 3.0)
    assert window is not None and window.mhz == pytest.approx(1_500.0) and window.readings == 3
    assert meter.available
    nvml.clock = readings(NVMLError_NotSupported("Not Supported"))
    _poll(meter, clock, 4.0, 5.0, 6.0)
    window = meter.window(3.0, 6.0)
    assert window is not None and math.isnan(window.mhz) and window.watts == 300.0


CAP, HW_THERMAL, IDLE = 0x4, 0x40, 0x1  # nvml.h's bits


def test_a_window_gives_the_mean_temperature_and_each_reasons_share() -> None:
    """4 readings: the power cap set in 3, hardware thermal slowdown in 1 (with the cap),
    nothing else; every reason of REASONS gets its share, in REASONS' order."""
    clock = Clock()
    nvml = FakeNvml(temp=(60, 62, 64, 66), reasons=(CAP, CAP | HW_THERMAL, 0, CAP))
    meter = _meter(nvml, clock)
    _poll(meter, clock, 1.0, 2.0, 3.0, 4.0)
    window = meter.window(0.0, 4.0)
    assert window is not None and window.temp_c == pytest.approx(63.0)
    assert [name for name, _ in window.reasons] == [name for name, _, _ in REASONS]
    assert window.share("sw_power_cap") == 0.75 and window.share("hw_thermal") == 0.25
    assert window.share("hw_slowdown") == window.share("gpu_idle") == 0.0
    assert pickle.loads(pickle.dumps(window)) == window  # frozen, picklable


def test_a_failed_reasons_or_temperature_read_is_left_out_and_the_meter_goes_on() -> None:
    """The share counts only the readings that read the reasons; with none read the
    window has no reasons (share: nan). Likewise the temperature."""
    clock = Clock()
    bad = NVMLError_NotSupported("Not Supported")
    nvml = FakeNvml(temp=readings(50, bad, 70), reasons=readings(CAP, bad, 0, IDLE))
    meter = _meter(nvml, clock)
    _poll(meter, clock, 1.0, 2.0, 3.0, 4.0)
    window = meter.window(0.0, 4.0)
    assert window is not None and window.readings == 4 and meter.available
    assert window.temp_c == pytest.approx(190 / 3)  # 50, 70, 70: the failed one left out
    assert window.share("sw_power_cap") == window.share("gpu_idle") == pytest.approx(1 / 3)
    nvml.temp, nvml.reasons = readings(bad), readings(bad)
    _poll(meter, clock, 5.0, 6.0, 7.0)
    window = meter.window(4.0, 7.0)
    assert window is not None and window.watts == 300.0
    assert math.isnan(window.temp_c) and window.reasons == ()
    assert math.isnan(window.share("sw_power_cap"))


@pytest.mark.parametrize(("api", "read"), [("Throttle", True), (None, False)])
def test_an_older_pynvml_names_them_throttle_reasons(api: str | None, read: bool) -> None:
    """An older nvidia-ml-py has nvmlDeviceGetCurrentClocksThrottleReasons; a pynvml
    with neither call gives windows without reasons."""
    clock = Clock()
    meter = _meter(FakeNvml(reasons=(CAP,), reasons_api=api), clock)
    _poll(meter, clock, 1.0, 2.0, 3.0)
    window = meter.window(0.0, 3.0)
    assert window is not None
    assert window.reasons if read else window.reasons == ()
    if read:
        assert window.share("sw_power_cap") == 1.0


def test_a_double_power_field_is_read_as_a_double() -> None:
    """NVML declares each field value's type; the meter reads the union member it names."""
    clock = Clock()
    meter = _meter(FakeNvml(instant=(650_500.5,)), clock)
    _poll(meter, clock, 1.0, 2.0, 3.0)
    window = meter.window(0.0, 3.0)
    assert window is not None and window.watts == pytest.approx(650.5005)


@pytest.mark.parametrize(
    "fake",
    [
        {"instant": (NVMLError_NotSupported("Not Supported"),)},  # the field's own status
        {"field_values": False},  # a driver without nvmlDeviceGetFieldValues
        {"instant": (0,)},  # a driver that answers 0 for "not measured"
    ],
    ids=["field-unsupported", "no-field-values", "field-zero"],
)
def test_without_the_instant_field_the_meter_reads_the_averaged_power_and_says_so(
    fake: dict[str, object],
) -> None:
    clock = Clock()
    meter = _meter(FakeNvml(usage=(420_000,), **fake), clock)  # type: ignore[arg-type]
    assert "nvmlDeviceGetPowerUsage" in meter.source and "1-s average" in meter.source
    _poll(meter, clock, 1.0, 2.0, 3.0)
    window = meter.window(0.0, 3.0)
    assert window is not None and window.watts == 420.0


def test_a_device_without_any_power_reading_gives_a_reason() -> None:
    nvml = FakeNvml(field_values=False, usage=(NVMLError_NotSupported("Not Supported"),))
    meter, reason = PowerMeter.open(BUS, nvml=nvml)
    assert meter is None and reason == "NVML: power usage: not supported on this device"
    assert nvml.calls[-1] == "shutdown"


def test_a_failed_power_read_ends_the_meter() -> None:
    """The meter says why and stays off: later windows are None, and power is not read
    again; nothing raises into the bench."""
    clock = Clock()
    nvml = FakeNvml(instant=(300_000, 300_000, 300_000, 300_000))
    meter = _meter(nvml, clock)
    _poll(meter, clock, 1.0, 2.0, 3.0)
    nvml.field_values = False
    _poll(meter, clock, 4.0)
    assert not meter.available and "the power reading" in meter.reason, meter.reason
    assert meter.window(0.0, 3.0) is None
    nvml.instant = readings(AssertionError("power was read after the meter ended"))
    nvml.field_values = True
    _poll(meter, clock, 5.0)


def test_the_whole_run_check_compares_the_energy_counter_with_the_readings_mean() -> None:
    """start() and stop() read the energy counter: 10 kJ over the 20 s run, 500 W, against
    the readings' mean, 505 W: +1.0 %."""
    clock = Clock(100.0)
    nvml = FakeNvml(energy=(7, 1_000_000, 11_000_000), instant=(1, 500_000, 510_000))
    meter = _meter(nvml, clock)
    meter.start()
    _poll(meter, clock, 105.0, 110.0)
    clock.t = 120.0
    meter.stop()
    assert meter.check == (
        "whole-run check: NVML's energy counter over the 20 s run gives 500 W, the mean of "
        "its 2 power readings 505 W (+1.0%)"
    )


def test_without_an_energy_counter_there_is_no_check_but_a_meter() -> None:
    clock = Clock()
    meter = _meter(FakeNvml(energy=(NVMLError_NotSupported("Not Supported"),)), clock)
    with meter:
        _poll(meter, clock, 1.0, 2.0, 3.0)
    assert meter.check == "" and meter.window(0.0, 3.0) is not None


def test_the_sampling_thread_polls_until_stopped() -> None:
    """On the real clock, every millisecond: it polls while the test waits, stops and is
    joined when the `with` ends, and polls no more."""
    nvml = FakeNvml()
    meter, reason = PowerMeter.open(BUS, nvml=nvml, interval=0.001)
    assert meter is not None, reason
    began = meter.now()
    with meter:
        assert "PowerMeter" in [t.name for t in threading.enumerate()]
        deadline = time.monotonic() + 10.0
        while meter.window(began, meter.now(), least=5) is None:
            assert time.monotonic() < deadline, "the sampler did not poll"
            time.sleep(0.002)
    assert "PowerMeter" not in [t.name for t in threading.enumerate()]
    done = meter.window(began, meter.now())
    time.sleep(0.01)
    after = meter.window(began, meter.now())
    assert done is not None and after is not None
    assert after.readings == done.readings  # none after the stop
    meter.close()


def test_the_median_window_takes_each_fields_median() -> None:
    windows = [
        PowerWindow(watts=700.0, mhz=1_450.0, seconds=0.20, readings=40, distinct=4),
        PowerWindow(watts=690.0, mhz=math.nan, seconds=0.21, readings=42, distinct=5),
        PowerWindow(watts=520.0, mhz=1_500.0, seconds=0.25, readings=50, distinct=6),
    ]
    got = median_window(windows)
    assert (got.watts, got.seconds, got.readings, got.distinct) == (690.0, 0.21, 42, 5)
    assert got.mhz == 1_475.0  # the median of the windows that read the clock
    assert math.isnan(median_window(windows[1:2]).mhz)
    assert math.isnan(got.temp_c) and got.reasons == ()  # no window read them


def test_the_median_window_takes_each_reasons_median_share_and_the_median_temperature() -> None:
    """Over the windows that read them: a window without reasons (or °C) is left out."""
    base = {"watts": 700.0, "mhz": 1_400.0, "seconds": 0.2, "readings": 40, "distinct": 4}
    windows = [
        PowerWindow(**base, temp_c=60.0, reasons=(("sw_power_cap", 0.2), ("hw_thermal", 0.0))),
        PowerWindow(**base, temp_c=math.nan, reasons=()),
        PowerWindow(**base, temp_c=64.0, reasons=(("sw_power_cap", 0.6), ("hw_thermal", 0.1))),
        PowerWindow(**base, temp_c=70.0, reasons=(("sw_power_cap", 1.0), ("hw_thermal", 0.5))),
    ]
    got = median_window(windows)
    assert got.temp_c == 64.0
    assert got.reasons == (("sw_power_cap", 0.6), ("hw_thermal", 0.1))  # REASONS' order
    assert math.isnan(got.share("sync_boost"))
    with pytest.raises(ValueError, match="no windows"):
        median_window([])


def test_the_device_is_found_by_its_pci_bus_id() -> None:
    torch_props = SimpleNamespace(pci_domain_id=0, pci_bus_id=0x19, pci_device_id=0)
    assert bus_id(torch_props) == BUS
    assert bus_id(SimpleNamespace(pci_domain_id=1, pci_bus_id=0xBA, pci_device_id=0x1F)) == (
        "00000001:BA:1F.0"
    )
    assert bus_id(SimpleNamespace(pci_bus_id="0000:19:00.0")) == "0000:19:00.0"  # CuPy's
    nvml = FakeNvml()
    meter, reason = PowerMeter.open("00000000:3B:00.0", nvml=nvml)
    assert meter is None and "00000000:3B:00.0" in reason and "NotFound" in reason
    assert nvml.calls == ["init", "handle 00000000:3B:00.0", "shutdown"]


def test_no_pynvml_gives_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError
    meter, reason = PowerMeter.open(BUS)
    assert meter is None and "pynvml is not importable" in reason and "nvidia-ml-py" in reason


def test_nvml_that_does_not_initialise_gives_a_reason() -> None:
    nvml = FakeNvml(init_error=NVMLError_LibraryNotFound("NVML Shared Library Not Found"))
    meter, reason = PowerMeter.open(BUS, nvml=nvml)
    assert meter is None and reason == "NVML did not initialise: NVML Shared Library Not Found"


def test_the_real_binding_reports_a_device_it_cannot_open() -> None:
    """With pynvml itself (nvidia-ml-py, in the dev extra): on a machine without NVML its
    library is not found, on one with a GPU no device has this bus id; either way no
    meter, and a reason."""
    import pynvml

    meter, reason = PowerMeter.open("0000FFFF:FF:1F.0", nvml=pynvml)
    assert meter is None and reason.startswith("NVML"), reason
