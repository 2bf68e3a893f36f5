"""Rows of scripts/bench_gemm, their sustained timing and their power cells: each sample
is `row.launches` back-to-back calls between two CUDA events and, where a
pyoxide.bench.PowerMeter samples the card, a window of its power and SM clock readings
over exactly those calls (the card's W, SM MHz and energy a call, issue 25), and the
second table of why the clocks are where they are (temperature and NVML's clock event
reasons, `clocks_table`)."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyoxide.bench import (
    REASONS,
    PowerMeter,
    PowerWindow,
    Table,
    bus_id,
    calibrated_calls,
    lead_in_calls,
    median_window,
    retaken_calls,
)

#: `turns`' orders, as the table's note says them.
ORDERS = {
    "paired": "a cell's rows (pyoxide's and its peers' at one shape and kind) back to back, "
    "each round starting one cell and one row further on",
    "interleaved": "shapes interleaved (each contestant's turns at every shape in a block), "
    "each round starting one row further on",
}


def mnk(shape: tuple[int, int, int]) -> str:
    """A shape as the tables print it: m×n×k."""
    return "×".join(map(str, shape))


def parse_mnk(text: str) -> tuple[int, int, int]:
    """A shape written as the tables print it (m×n×k) or in ASCII (MxNxK, as in a
    scripts/device_run part name); ValueError for anything else."""
    parts = re.split("[x×]", text)
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"a shape is MxNxK or m×n×k, not {text!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


@dataclass
class Row:
    """One timed row: an implementation of one kind at one shape."""

    shape: tuple[int, int, int]
    kind: str
    who: str  # "pyoxide" or the peer's name
    fn: Callable[[], Any]
    launches: int = 1
    samples: list[float] = field(default_factory=list)  # ms per call
    sample_ms: list[float] = field(default_factory=list)  # each sample's length
    host_us: float = math.nan  # the caller's own host time a call (pyoxide.bench.host_cost)
    power: list[PowerWindow] = field(default_factory=list)  # each sample's power window
    mj: list[float] = field(default_factory=list)  # each sample's mJ a call

    @property
    def ms(self) -> float:
        return statistics.median(self.samples)

    @property
    def metered(self) -> bool:
        """Whether every sample of the row has its power window."""
        return bool(self.samples) and len(self.power) == len(self.samples)

    @property
    def window(self) -> PowerWindow:
        """The median W, MHz (and J, s) of the row's samples."""
        return median_window(self.power)

    @property
    def mj_call(self) -> float:
        """The median over the row's samples of each one's energy over its launches."""
        return statistics.median(self.mj)


def sample(
    torch: Any, row: Row, meter: PowerMeter | None = None
) -> tuple[float, PowerWindow | None]:
    """One sample: `row.launches` back-to-back calls between two CUDA events; its length
    in ms, and with a (sampling) meter the window of its readings from when the GPU
    reached the start event to when it reached the end event (None where the meter has
    too few readings there, or has failed)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    began = 0.0
    if meter is not None:
        # The window opens when the GPU reaches the start event, not when the host queues
        # it: the lead-in's launches (lead_in) run until then. Waiting for it leaves the
        # GPU idle for one wake-up and one launch, tens of µs in a sample of ≥ 200 ms.
        start.synchronize()
        began = meter.now()
    for _ in range(row.launches):
        row.fn()
    end.record()
    # Queuing the launches takes the host a few ms; the GPU runs them for the rest of the
    # sample while this thread waits here with the GIL released, and the meter's thread
    # samples (pyoxide/bench/_energy.py: PowerMeter._sample says how it gets the GIL).
    end.synchronize()
    window = meter.window(began, meter.now()) if meter is not None else None
    return float(start.elapsed_time(end)), window


def calibrate(torch: Any, row: Row, target_ms: float) -> None:
    """Launches per sample: enough for `target_ms` at the rate of a short run, with a
    margin of a fifth for the clock's drop under load (pyoxide.bench's rule)."""
    row.fn()

    def timed(launches: int) -> float:
        row.launches = launches
        return sample(torch, row)[0]

    row.launches = calibrated_calls(timed, target_ms)


def lead_in(row: Row, lead_ms: float, target_ms: float) -> None:
    """About `lead_ms` of the row's launches, untimed, queued just before its sample: the
    card's clocks settle to this row's own power draw, not the row before it's."""
    for _ in range(lead_in_calls(row.launches, lead_ms, target_ms)):
        row.fn()


def cells(rows: list[Row]) -> dict[tuple[tuple[int, int, int], str], dict[str, Row]]:
    """The rows by cell (shape, kind), each cell's by who, in the rows' order. A cell has
    one row a contestant: a second would go untimed (the order walks the cells)."""
    by_cell: dict[tuple[tuple[int, int, int], str], dict[str, Row]] = {}
    for row in rows:
        cell = by_cell.setdefault((row.shape, row.kind), {})
        if row.who in cell:
            raise ValueError(
                f"bench_gemm: two {row.who} rows at {mnk(row.shape)} {row.kind}: one a cell"
            )
        cell[row.who] = row
    return by_cell


def turns(rows: list[Row], r: int, order: str = "paired") -> list[Row]:
    """Round `r`'s order of the rows.

    "paired" (the default): the cells (one shape and kind: pyoxide's row and its cuBLAS
    peers') one after another, the list of cells starting `r` cells further on, and inside
    each cell its rows starting `r` rows further on, so that each contestant takes each
    place in its cell in turn. A cell's rows run back to back: the card's temperature and
    power drift over a minutes-long run under its power limit reach pyoxide's sample and
    its peers' alike.

    "interleaved" (the order before 2026-12-07, kept to compare): the rows' i-th
    contestant at every shape, then the (i+1)-th, ..., starting `r` rows further on, so
    no two turns in a row are of one shape but each contestant's turns sit far from its
    peers' (a tenth of a round and more apart), each after the same neighbour every round.
    """
    if order == "interleaved":
        by_shape: dict[tuple[int, int, int], list[Row]] = {}
        for row in rows:
            by_shape.setdefault(row.shape, []).append(row)
        groups = list(by_shape.values())
        seq = [g[i] for i in range(max(map(len, groups))) for g in groups if i < len(g)]
        return seq[r % len(seq) :] + seq[: r % len(seq)]
    if order != "paired":
        raise ValueError(f"turns: order {order!r}, expected 'paired' or 'interleaved'")
    ring = [list(cell.values()) for cell in cells(rows).values()]
    ring = ring[r % len(ring) :] + ring[: r % len(ring)]
    return [row for cell in ring for row in cell[r % len(cell) :] + cell[: r % len(cell)]]


def sustained(
    torch: Any,
    rows: list[Row],
    rounds: int,
    target_ms: float,
    lead_ms: float = 0.0,
    meter: PowerMeter | None = None,
    order: str = "paired",
) -> None:
    """`rounds` rounds of one sample per row in `turns`' `order`, back to back, each sample
    after `lead_ms` of its own row (`lead_in`). A sample shorter than `target_ms` is taken
    again with more launches (it does not count). With a meter, each sample's energy
    window and mJ a call go to `row.power` and `row.mj`."""
    for row in rows:
        calibrate(torch, row, target_ms)
    for r in range(rounds):
        for row in turns(rows, r, order):
            lead_in(row, lead_ms, target_ms)
            while (taken := sample(torch, row, meter))[0] < target_ms:
                row.launches = retaken_calls(row.launches, taken[0], target_ms)
            elapsed, window = taken
            row.samples.append(elapsed / row.launches)
            row.sample_ms.append(elapsed)
            if window is not None:
                row.power.append(window)
                row.mj.append(window.mj_per_call(row.launches))


def faster_peer(who: dict[str, Row]) -> Row | None:
    """Of one cell's rows (by who), the faster cuBLAS call's: the peer a ratio is against."""
    return min((r for w, r in who.items() if w != "pyoxide"), key=lambda r: r.ms, default=None)


#: What each clock event reason means (nvml.h), for the clocks table's note.
MEANING = {
    "sw_power_cap": "the driver lowers clocks to hold the board under its power limit",
    "hw_slowdown": "hardware slowdown, clocks cut by half or more (thermal, power brake)",
    "hw_power_brake": "the external power brake (the system's power supply)",
    "hw_thermal": "hardware thermal slowdown (too hot)",
    "sw_thermal": "the driver holds clocks down for the GPU's or memory's temperature",
    "sync_boost": "clocks held to a sync-boost group's",
    "gpu_idle": "nothing running",
    "applications_clocks": "clocks held to the applications clocks setting",
}


def clocks_table(rows: list[Row], device: str, unmetered: str = "") -> Table | None:
    """Why the clocks are where they are: one line per cell (shape, kind) with pyoxide's
    row's and the faster cuBLAS call's median W, SM MHz, °C and % of readings with each
    clock event reason set, for the reasons set in some window of the run; None where the
    power was not measured (`unmetered` says why) or no row has all its windows."""
    if unmetered or not any(r.metered for r in rows):
        return None
    windows = [w for r in rows for w in r.power]
    seen = [n for n, _, _ in REASONS if any(w.share(n) > 0 for w in windows)]
    table = Table(
        "bench_gemm-clocks",
        "Why the clocks are where they are (NVML, per row)",
        ["m×n×k", "inputs → result", "W: pyoxide / cuBLAS", "SM MHz: pyoxide / cuBLAS",
         "°C: pyoxide / cuBLAS", *(f"% {n}: pyoxide / cuBLAS" for n in seen)],
        device=device,
    )  # fmt: skip
    for (shape, kind), who in cells(rows).items():
        pair = [r.window if r is not None and r.metered else None
                for r in (who.get("pyoxide"), faster_peer(who))]  # fmt: skip

        def both(value: Callable[[PowerWindow], float], pair: list[Any] = pair) -> str:
            return " / ".join("—" if w is None else _whole(value(w)) for w in pair)

        table.add(
            mnk(shape), kind, both(lambda w: w.watts), both(lambda w: w.mhz),
            both(lambda w: w.temp_c), *(both(lambda w, n=n: 100 * w.share(n)) for n in seen),
        )  # fmt: skip
    never = [n for n, _, _ in REASONS if n not in seen]
    read = any(w.reasons for w in windows)
    table.note(
        "From the same NVML readings as the power cells: each sample's window, the median "
        "over the row's samples; cuBLAS: the faster cuBLAS call. °C: NVML_TEMPERATURE_GPU. "
        "% reason: the share of a window's readings whose clock event reasons "
        "(nvmlDeviceGetCurrentClocksEventReasons, formerly throttle reasons) had it set: "
        + "; ".join(f"{n}: {MEANING[n]}" for n in seen)
        + (f". Never set in any window: {', '.join(never)}." if read else
           ". The clock event reasons were not read (pynvml or the driver lacks them).")
    )  # fmt: skip
    return table


def power_cells(ours: Row | None, peer: Row | None, metered: bool) -> list[str]:
    """W / MHz of pyoxide's row and of its cuBLAS peer's, their mJ a call, and the peer's
    mJ a call over pyoxide's; "—" where a row has no power window for every sample."""
    have = [r if metered and r is not None and r.metered else None for r in (ours, peer)]
    windows = [r.window if r else None for r in have]
    w_mhz = [f"{w.watts:.0f} / {_whole(w.mhz)}" if w else "—" for w in windows]
    mj = [_sig(r.mj_call) if r else "—" for r in have]
    ratio = "—"
    if have[0] and have[1] and have[0].mj_call > 0:
        ratio = f"{have[1].mj_call / have[0].mj_call:.3f}×"
    return [*w_mhz, " / ".join(mj), ratio]


def power_note(rows: list[Row], unmetered: str, meter: PowerMeter | None = None) -> str:
    """The table's note on how the power cells were measured, with the readings'
    resolution (a window's median count of readings and of distinct power values) and,
    where `meter` is given, its power source, its poll gap and its whole-run check."""
    if unmetered:
        return f"Power: not measured ({unmetered})."
    source, every, check = "the card's power", "~5 ms", ""
    if meter is not None:
        source = f"the card's power ({meter.source}, mW)"
        every = f"~{meter.interval * 1e3:g} ms (median gap {meter.poll_gap() * 1e3:.1f} ms)"
        check = f" {meter.check[:1].upper()}{meter.check[1:]}." if meter.check else ""
    seen = "no sample had a window"
    if windows := [w for row in rows for w in row.power]:
        mid = median_window(windows)
        seen = (
            f"a window held a median of {mid.readings} readings and {mid.distinct} "
            "distinct successive power values"
        )
    return (
        f"Power, from NVML: a thread reads {source} and its SM clock every {every} "
        "through the timed run, each reading stamped with the host's monotonic time. A "
        "sample's window runs from when the GPU reached its start event (the host waits "
        "for it, leaving the GPU idle for one launch) to when it reached its end event; W "
        "and MHz are the means of the readings inside it, mJ a call = W × its seconds / its "
        "launches, each the median over the row's samples; a window of fewer than 3 "
        "readings counts as none (its row shows —). Resolution: the driver refreshes the "
        "power value less often than it is read, and a value may lag the load by up to "
        f"one refresh: {seen} (each sample follows its own row's lead-in, so a lagging "
        "value still reads that row's draw). cuBLAS: the faster cuBLAS call. work/J ÷ "
        "cuBLAS: cuBLAS's mJ a call over pyoxide's (> 1: pyoxide does more work a joule). "
        f"The card's draw as NVML reports it, memory and idle SMs included.{check}"
    )


def _whole(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:.0f}"


def _sig(x: float) -> str:
    """Three significant figures, without an exponent (mJ from 0.0x to 10⁴)."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def open_meter(torch: Any) -> tuple[PowerMeter | None, str]:
    """An NVML meter on torch's current device, found by its PCI bus id, or None and why."""
    try:
        bus = bus_id(torch.cuda.get_device_properties(torch.cuda.current_device()))
    except AttributeError as e:  # a torch whose device properties have no PCI ids
        return None, f"no PCI bus id from torch: {e}"
    return PowerMeter.open(bus)
