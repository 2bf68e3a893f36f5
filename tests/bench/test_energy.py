"""pyoxide.bench.PowerMeter on a fake pynvml (tests/helpers/fake_nvml.py): a window's
energy, length, power and mean SM clock; medians over windows; the device found by its
PCI bus id; and every way NVML can be missing or fail giving a reason, never an error."""

from __future__ import annotations

import math
import sys
from types import SimpleNamespace

import pytest
from helpers.fake_nvml import (
    BUS,
    FakeNvml,
    NVMLError_LibraryNotFound,
    NVMLError_NotSupported,
    readings,
)

from pyoxide.bench import PowerMeter, PowerWindow, bus_id, median_window


def _meter(nvml: FakeNvml, *times: float) -> PowerMeter:
    meter, reason = PowerMeter.open(BUS, nvml=nvml, clock=readings(*times))
    assert meter is not None and reason == "", reason
    return meter


def test_a_window_is_its_energy_over_its_seconds_and_its_clock_reads_mean() -> None:
    # the counter at open (a probe), then at start and stop: 140 J over 0.2 s
    nvml = FakeNvml(energy=(5_000, 1_000_000, 1_140_000), clock=(1_400, 1_500, 1_530))
    meter = _meter(nvml, 10.0, 10.2)
    meter.start()
    for _ in range(3):
        meter.read_clock()
    window = meter.stop()
    assert window is not None
    assert window.joules == pytest.approx(140.0) and window.seconds == pytest.approx(0.2)
    assert window.watts == pytest.approx(700.0) and window.mhz == pytest.approx(1_476.666, 1e-5)
    assert window.mj_per_call(1_000) == pytest.approx(140.0)  # 140 J over 1000 launches
    assert nvml.calls == ["init", f"handle {BUS}"]
    meter.close()
    assert nvml.calls[-1] == "shutdown"


def test_a_window_without_clock_reads_has_no_clock() -> None:
    meter = _meter(FakeNvml(energy=(0, 0, 300)), 1.0, 1.5)
    meter.start()
    window = meter.stop()
    assert window is not None and window.watts == pytest.approx(0.6)
    assert math.isnan(window.mhz)


def test_a_failed_clock_read_is_left_out_of_the_mean() -> None:
    clock = readings(1_400, NVMLError_NotSupported("Not Supported"), 1_600)
    meter = _meter(FakeNvml(energy=(0, 0, 1_000), clock=clock), 0.0, 1.0)
    meter.start()
    for _ in range(3):
        meter.read_clock()
    window = meter.stop()
    assert window is not None and window.mhz == pytest.approx(1_500.0)
    assert meter.available


def test_clock_reads_outside_a_window_are_not_kept() -> None:
    meter = _meter(FakeNvml(energy=(0, 0, 1_000), clock=(900, 1_500)), 0.0, 1.0)
    meter.read_clock()  # no window open: not read
    meter.start()
    meter.read_clock()
    window = meter.stop()
    assert window is not None and window.mhz == 900.0  # the first read, in the window


def test_the_median_window_takes_each_fields_median() -> None:
    windows = [
        PowerWindow(joules=140.0, seconds=0.20, watts=700.0, mhz=1_450.0),
        PowerWindow(joules=150.0, seconds=0.21, watts=690.0, mhz=math.nan),
        PowerWindow(joules=130.0, seconds=0.25, watts=520.0, mhz=1_500.0),
    ]
    got = median_window(windows)
    assert (got.joules, got.seconds, got.watts) == (140.0, 0.21, 690.0)
    assert got.mhz == 1_475.0  # the median of the windows that read the clock
    assert math.isnan(median_window(windows[1:2]).mhz)
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


def test_a_device_without_an_energy_counter_gives_a_reason() -> None:
    nvml = FakeNvml(energy=(NVMLError_NotSupported("Not Supported"),))
    meter, reason = PowerMeter.open(BUS, nvml=nvml)
    assert meter is None and "not supported" in reason and "total-energy counter" in reason
    assert nvml.calls[-1] == "shutdown"


@pytest.mark.parametrize(
    "at_stop", [900, NVMLError_NotSupported("Not Supported")], ids=["backwards", "unsupported"]
)
def test_a_counter_that_goes_backwards_or_fails_ends_the_meter(at_stop: object) -> None:
    """The window is lost, the meter says why and stays off (later windows are None, and
    the counter is not read again); nothing raises into the bench."""
    nvml = FakeNvml(energy=(1_000, 1_000, at_stop, 5_000), clock=(1_500,))
    meter = _meter(nvml, 0.0, 0.2, 0.4, 0.6)
    meter.start()
    meter.read_clock()
    assert meter.stop() is None
    assert not meter.available
    want = "went backwards (1000 → 900 mJ" if at_stop == 900 else "not supported"
    assert want in meter.reason, meter.reason
    nvml.energy = readings(AssertionError("the counter was read after the meter ended"))
    meter.start()
    meter.read_clock()
    assert meter.stop() is None


def test_the_real_binding_reports_a_device_it_cannot_open() -> None:
    """With pynvml itself (nvidia-ml-py, in the dev extra): on a machine without NVML its
    library is not found, on one with a GPU no device has this bus id; either way no
    meter, and a reason."""
    import pynvml

    meter, reason = PowerMeter.open("0000FFFF:FF:1F.0", nvml=pynvml)
    assert meter is None and reason.startswith("NVML"), reason
