"""The benchmark scripts without a GPU: docs/performance.md is what scripts/perf_docs
makes of the saved reports in docs/reports, a saved table lands on that page, every
scripts/bench_* explains itself (`--help`), and the GPU ones say plainly that there is
no GPU instead of failing somewhere inside."""

from __future__ import annotations

import argparse
import importlib
import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.fake_nvml import BUS, Clock, FakeNvml
from helpers.scripts import load_script

from pyoxide.bench import REASONS, PowerMeter, PowerWindow, Table

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (REPO / "scripts").glob("bench_*") if p.suffix == "")
#: The scripts that time kernels on a GPU (the rest run on the host).
GPU = {"bench_attention", "bench_gallery", "bench_gemm", "bench_kernels", "bench_launch",
       "bench_natural", "bench_rows"}  # fmt: skip


def _run(script: str, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / script), *args],
        capture_output=True, text=True, cwd=REPO, timeout=120, env=env,
    )  # fmt: skip


def test_performance_md_is_generated_from_the_reports() -> None:
    result = _run("perf_docs", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_saved_table_lands_on_the_page(tmp_path: Path) -> None:
    perf_docs = load_script("perf_docs")
    table = Table("bench_gemm", "GEMM", ["shape", "÷ cuBLAS"], device="NVIDIA H200")
    table.add("4096×4096×4096", "1.010×")
    table.note("Bar: met.")
    table.save(tmp_path)
    page = perf_docs.page(tmp_path)
    assert "## GEMM\n" in page and "| 4096×4096×4096 | 1.010× |" in page
    assert "NVIDIA H200" in page and "Bar: met." in page
    missing = page.split("## Not measured yet")[1]
    assert "scripts/bench_gemm" not in missing and "scripts/bench_rows --report" in missing
    assert set(perf_docs.COMMANDS) <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_script_explains_itself(script: str) -> None:
    result = _run(script, "--help")
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout and "--smoke" in result.stdout
    # A script that saves a table has its command on the performance page.
    assert ("--report" in result.stdout) == (script in load_script("perf_docs").COMMANDS)


@pytest.mark.parametrize("script", sorted(GPU))
def test_a_gpu_bench_says_there_is_no_gpu(script: str) -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no device, on any machine
    result = _run(script, "--smoke", env=env)
    assert result.returncode == 1
    assert f"scripts/{script} times kernels on a CUDA GPU" in result.stderr, result.stderr


def test_the_stall_ledger_ranks_sass_lines_by_their_samples(
    capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """scripts/ncu_ledger.py on a source page as ncu prints it (`--page source --csv
    --print-source sass`: the kernel's name, then a header with Address, Source, the
    sampling columns and one `stall_*` column per reason): the lines most sampled first,
    until they cover the share asked for, each with its top reasons."""
    ledger = load_script("ncu_ledger.py")
    header = (
        '"Address","Source","Instructions Executed","Warp Stall Sampling (All Samples)",'
        '"Warp Stall Sampling (Not-issued Samples)","stall_long_sb","stall_wait"'
    )
    page = "\n".join([
        '"attention_sm90_bf16_1_1_128"', header,
        '"0x10","HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT ;","64","300","250","0","300"',
        '"0x20","SYNCS.PHASECHK.TRANS64 P0, [R1+URZ], R2 ;","64","1,200","1,100","900","300"',
        '"0x30","FFMA R1, R2, R3, R4 ;","8192","500","20","0","0"',
        '"sgemm_256"', header,
        '"0x10","LDS.128 R4, [R2] ;","8","5","5","0","5"',
    ])  # fmt: skip
    tables = ledger.tables(page)
    assert [(t[0], len(t[2])) for t in tables] == [
        ("attention_sm90_bf16_1_1_128", 3), ("sgemm_256", 1)
    ]  # fmt: skip
    assert ledger.ledger(*tables[0], 0.8, 60)
    out = capsys.readouterr().out.splitlines()
    assert "3 SASS lines, 2000 stall samples" in out[0]
    rows = out[2:]
    # 1200 of 2000 samples, then 500: 85 % >= 80 %, so the HGMMA line is not listed
    assert len(rows) == 2 and "SYNCS.PHASECHK" in rows[0] and "FFMA" in rows[1]
    assert rows[0].split()[:2] == ["60.0%", "60.0%"] and "stall_long_sb 75%" in rows[0]
    assert rows[1].split()[:2] == ["25.0%", "85.0%"]
    # a page without the sampling columns is not read as a ledger
    assert not ledger.ledger("k", ["Address", "Source"], [["0x10", "NOP ;"]], 0.8, 60)
    # a page saved on the GPU's machine (--save) is read back without ncu
    saved, again = tmp_path / "page.csv", tmp_path / "again.csv"
    saved.write_text(page, encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["ncu_ledger.py", str(saved), "--save", str(again)])
    assert ledger.main() == 0
    assert "3 SASS lines, 2000 stall samples" in capsys.readouterr().out
    assert again.read_text(encoding="utf-8") == page


def test_the_stall_ledger_prices_each_region_of_lines_that_ran_equally_often(
    capsys: Any,
) -> None:
    """The ledger's regions: lines grouped by their runs (a loop body's lines all ran as
    often as it iterated), most sampled first, with their share of the samples, samples
    per 1000 runs and the reasons that dominate the region."""
    ledger = load_script("ncu_ledger.py")
    header = ["Address", "Source", "Instructions Executed",
              "Warp Stall Sampling (All Samples)", "stall_wait", "stall_barrier",
              "stall_barrier (Not Issued)"]  # fmt: skip
    rows = [
        ["0x10", "HGMMA ;", "3000", "90", "90", "0", "0"],  # the loop: 3 iterations a tile
        ["0x20", "MUFU.EX2 ;", "3000", "30", "10", "20", "20"],
        ["0x30", "BAR.SYNC ;", "1000", "200", "0", "200", "200"],  # a tile's code
        ["0x40", "EXIT ;", "1", "0", "0", "0", "0"],
    ]
    assert ledger.regions("attention", header, rows)
    out = capsys.readouterr().out.splitlines()
    assert "attention by region" in out[0]
    tile, loop, block = (line.split() for line in out[2:5])
    assert tile[:4] == ["1000", "1", "62.5%", "200.00"] and "stall_barrier 100%" in out[2]
    assert loop[:4] == ["3000", "2", "37.5%", "40.00"]
    assert "stall_wait 83%" in out[3] and "stall_barrier 17%" in out[3]
    assert block[:4] == ["1", "1", "0.0%", "0.00"] and len(out) == 5
    assert "Not Issued" not in "\n".join(out)  # a reason's subset is not a reason
    # a page without the runs column has no regions
    assert not ledger.regions("k", header[:2] + header[3:], [r[:2] + r[3:] for r in rows])


def test_sass_loops_finds_the_innermost_loops_and_their_chains() -> None:
    """scripts/sass_loops on a listing as nvdisasm prints it: an outer loop holding an
    inner one and a spin wait; only the inner loop of enough instructions is reported,
    with its dependent FADD chain (three deep: R2 -> R3 -> R4; R6 is independent), its
    uniform-datapath instructions and its spills."""
    sass = load_script("sass_loops")
    listing = "\n".join([
        ".L_x_0:",
        "        /*0000*/                   IADD3 R9, R9, 0x1, RZ ;",
        ".L_x_1:",
        "        /*0010*/                   LDL R1, [R1+0x4] ;",
        "        /*0020*/                   FADD R3, R2, R1 ;",
        "        /*0030*/                   FADD R6, R7, R8 ;",
        "        /*0040*/                   FADD R4, R3, R5 ;",
        "        /*0050*/                   FADD R10, R4, R0 ;",
        "        /*0060*/                   UIADD3 UR4, UR4, 0x1, URZ ;",
        "        /*0070*/                   MUFU.EX2 R11, R10 ;",
        "        /*0080*/              @P0 BRA `(.L_x_1) ;",
        ".L_x_2:",
        "        /*0090*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R4+URZ], R5 ;",
        "        /*00a0*/              @!P1 BRA `(.L_x_2) ;",
        "        /*00b0*/                   NOP ;",
        "        /*00c0*/              @P2 BRA `(.L_x_0) ;",
    ])  # fmt: skip
    ins = sass.parse(listing)
    assert len(ins) == 12  # the NOP left out
    found = sass.loops(ins, 3)
    assert [(hex(x.start), hex(x.end)) for x in found] == [("0x10", "0x80")]
    row = found[0].row().split("|")[2:-1]
    # instructions, MUFU, HGMMA, FFMA, uniform, spills, FMNMX chain, FADD chain
    assert [c.strip() for c in row] == ["8", "1", "0", "0", "1", "1", "0", "3"]
    # the spin wait counts as a loop only when small loops are asked for
    assert [hex(x.start) for x in sass.loops(ins, 1)] == ["0x10", "0x90"]


class _Timeline:
    """A fake torch for bench_gemm's sustained timing: each launch and each event is an
    entry of one log; an event pair's elapsed time is 1 ms a launch between them."""

    def __init__(self) -> None:
        self.log: list[Any] = []
        timeline = self

        class Event:
            def __init__(self, enable_timing: bool) -> None:
                assert enable_timing

            def record(self) -> None:
                self.at = len(timeline.log)
                timeline.log.append(self)

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Any) -> float:
                return float(sum(isinstance(e, str) for e in timeline.log[self.at : end.at]))

        self.cuda = type("cuda", (), {"Event": Event})

    def launch(self, row: str) -> Any:
        return lambda: self.log.append(row)


def test_a_sustained_gemm_sample_follows_its_own_rows_lead_in_untimed() -> None:
    bench = load_script("bench_gemm")
    torch = _Timeline()
    rows = [bench.Row((n, n, n), "bf16→bf16", who, torch.launch(f"{n}:{who}"))
            for n in (64, 128) for who in ("pyoxide", "torch")]  # fmt: skip
    bench.sustained(torch, rows, rounds=3, target_ms=10.0, lead_ms=5.0)
    starts = [i for i, e in enumerate(torch.log) if not isinstance(e, str)][::2]
    timed = [s for s in starts if s >= 6 and isinstance(torch.log[s - 1], str)]
    timed = timed[-3 * len(rows) :]  # the rounds' samples (calibration's came first)
    for start in timed:
        row = torch.log[start + 1]
        assert torch.log[start - 6 : start] == [row] * 6, torch.log[start - 7 : start + 1]
    for row in rows:  # 12 launches a sample (calibrated), 1 ms each: the lead-in untimed
        assert row.launches == 12 and row.samples == [1.0] * 3, (row.launches, row.samples)


def test_gemm_turns_pair_a_cells_contestants_and_rotate_their_places() -> None:
    """--order paired: each round runs a cell's rows (pyoxide's and its peers' at one shape
    and kind) back to back, and over rounds each contestant takes each place in its cell;
    --order interleaved (the old order) never puts two turns of one shape together."""
    load_script("bench_gemm")  # (puts scripts/ on the path for its rows module)
    bench = importlib.import_module("bench_gemm_rows")
    rows = [bench.Row((n, n, n), kind, who, lambda: None)
            for n in (64, 128) for kind in ("bf16→f32", "bf16→bf16")
            for who in ("pyoxide", "torch", "cupy")]  # fmt: skip
    places: dict[int, set[int]] = {id(r): set() for r in rows}
    for r in range(3):
        seq = bench.turns(rows, r)
        assert sorted(map(id, seq)) == sorted(map(id, rows))
        cells = [seq[i : i + 3] for i in range(0, len(seq), 3)]
        for cell in cells:
            assert len({(row.shape, row.kind) for row in cell}) == 1, cell
            for place, row in enumerate(cell):
                places[id(row)].add(place)
    assert all(p == {0, 1, 2} for p in places.values()), places
    old = bench.turns(rows, 1, "interleaved")
    assert sorted(map(id, old)) == sorted(map(id, rows))
    assert all(a.shape != b.shape for a, b in itertools.pairwise(old))
    with pytest.raises(ValueError, match="paired"):
        bench.turns(rows, 0, "shuffled")


def test_gemm_plan_times_each_cell_once_and_a_second_row_of_a_cell_is_refused() -> None:
    """The LLM shapes include m = 4096 against a 4096×4096 weight, the 4096³ square: the
    plan times it once. Two rows of one cell and contestant are refused, not left untimed
    (the paired order walks cells, so one of the two never got a sample)."""
    bench = load_script("bench_gemm")
    timed = bench.plan(argparse.Namespace(smoke=False))
    planned = [(shape, kind) for shape, kinds in timed for kind in kinds]
    assert len(planned) == len(set(planned)), planned
    assert {shape for shape, _ in planned} == set(bench.SQUARE) | set(bench.LLM)
    rows_module = importlib.import_module("bench_gemm_rows")
    rows = [rows_module.Row((64, 64, 64), "bf16→bf16", who, lambda: None)
            for who in ("pyoxide", "torch", "pyoxide")]  # fmt: skip
    with pytest.raises(ValueError, match="two pyoxide rows at 64×64×64 bf16→bf16"):
        rows_module.turns(rows, 0)


def test_a_gemm_shape_is_read_as_the_tables_print_it_or_in_ascii() -> None:
    """`bench_gemm --profile` takes the shape as scripts/device_run's part names spell it
    (4096x4096x4096) or as the tables and `--only` do (4096×4096×4096)."""
    rows_module = importlib.import_module("bench_gemm_rows")
    for text in ("16x4096x14336", "16×4096×14336"):
        assert rows_module.parse_mnk(text) == (16, 4096, 14336)
    assert rows_module.mnk(rows_module.parse_mnk("4096x14336x4096")) == "4096×14336×4096"
    for bad in ("4096x4096", "4096x4096x4096x1", "mxnxk", "4096,4096,4096", "-1x2x3"):
        with pytest.raises(ValueError, match="a shape is MxNxK or m×n×k"):
            rows_module.parse_mnk(bad)


def test_a_metered_gemm_sample_is_a_power_window_over_its_own_launches_alone() -> None:
    """With a sampling meter, each sample of bench_gemm's sustained timing is the window of
    the readings taken while the GPU ran its own launches: not calibration's, not the
    lead-in's queued before it. Here each launch takes 1 ms of the meter's clock and is
    followed by one reading of the power of whichever row launched last (100 W for
    pyoxide's rows, 300 W for torch's), so every window holds 12 readings of its own row
    and lasts 12 ms: 100 (300) mJ a call (a window opened before the 6 lead-in launches
    would last 18 ms and read 150 mJ)."""
    bench = load_script("bench_gemm")
    torch = _Timeline()
    launched = lambda: sum(isinstance(e, str) for e in torch.log)  # noqa: E731
    last = lambda: next((e for e in reversed(torch.log) if isinstance(e, str)), "")  # noqa: E731
    power = lambda: 100_000 if last().endswith("pyoxide") else 300_000  # noqa: E731
    nvml = FakeNvml(instant=power, clock=lambda: 1455)
    meter, reason = PowerMeter.open(BUS, nvml=nvml, clock=lambda: launched() / 1e3)
    assert meter is not None, reason

    def launch(row: str) -> Any:
        def call() -> None:
            torch.log.append(row)
            meter.poll_once()

        return call

    rows = [bench.Row((n, n, n), "bf16→bf16", who, launch(f"{n}:{who}"))
            for n in (64, 128) for who in ("pyoxide", "torch")]  # fmt: skip
    bench.sustained(torch, rows, rounds=3, target_ms=10.0, lead_ms=5.0, meter=meter)
    for row in rows:
        watts = 100.0 if row.who == "pyoxide" else 300.0
        assert row.launches == 12 and row.metered, (row.launches, row.power)
        assert row.mj == pytest.approx([watts] * 3), row.mj
        w = row.window
        assert (w.watts, w.mhz, w.seconds, w.readings, w.distinct) == pytest.approx(
            (watts, 1455, 0.012, 12, 1)
        )
    assert meter.available


def _gemm_table(
    bench: Any,
    power: dict[str, tuple[float, float, float]],
    unmetered: str = "",
    meter: PowerMeter | None = None,
) -> tuple[Table, dict[str, str]]:
    """bench_gemm's table of one bf16 shape: pyoxide and two cuBLAS calls, 1 sample each,
    `power`: who -> (W, MHz, mJ a call) of its one sample."""
    shape, kind = (4096, 4096, 4096), "bf16→bf16"
    rows = []
    for who, ms in (("pyoxide", 0.20), ("torch.matmul", 0.21), ("cupy.matmul", 0.22)):
        row = bench.Row(shape, kind, who, lambda: None, samples=[ms], host_us=5.0)
        row.sample_ms.append(200.0)
        if who in power:
            w, mhz, mj = power[who]
            window = PowerWindow(watts=w, mhz=mhz, seconds=0.2, readings=40, distinct=5)
            row.power.append(window)
            row.mj.append(mj)
        rows.append(row)
    args = type("Args", (), {"rounds": 1, "sample_ms": 200.0, "lead_ms": 100.0, "order": "paired"})
    table = bench.results_table(
        rows, {(shape, kind): "gemm_x"}, "NVIDIA H100", args, unmetered, meter
    )
    (cells,) = table.rows
    return table, dict(zip(table.columns, cells, strict=True))


def test_the_gemm_table_gives_power_and_work_a_joule_against_the_faster_cublas() -> None:
    """W / MHz of pyoxide's row and of the faster cuBLAS call's (torch.matmul here, not
    cupy's), their mJ a call, and work/J ÷ cuBLAS (cuBLAS's mJ a call over pyoxide's);
    the notes say where the numbers come from. Without a meter the cells are blank and
    the note says why; so are they for a row missing a sample's window."""
    bench = load_script("bench_gemm")
    power = {"pyoxide": (699.6, 1455.2, 140.0), "torch.matmul": (700.0, 1470.0, 147.0),
             "cupy.matmul": (650.0, 1500.0, 1.0)}  # fmt: skip
    table, row = _gemm_table(bench, power)
    assert row["÷ cuBLAS"] == "1.050×"
    assert row["W / MHz: pyoxide"] == "700 / 1455" and row["W / MHz: cuBLAS"] == "700 / 1470"
    assert row["mJ a call: pyoxide / cuBLAS"] == "140 / 147"
    assert row["work/J ÷ cuBLAS"] == "1.050×"
    (note,) = [n for n in table.notes if n.startswith("Power")]
    assert "NVML" in note and "SM clock" in note and "mean" in note
    assert "median of 40 readings and 5 distinct successive power values" in note
    assert table.as_dict()["columns"] == table.columns  # the report carries them
    # No meter: every power cell blank, and the note says why.
    table, row = _gemm_table(bench, power, "no NVML")
    assert [row[c] for c in table.columns[-4:]] == ["—", "—", "— / —", "—"]
    assert [n for n in table.notes if n.startswith("Power")] == ["Power: not measured (no NVML)."]
    # With the meter that measured: its source, its poll gap and its whole-run check.
    clock = Clock(10.0)
    nvml = FakeNvml(energy=(0, 0, 3_030_000))  # 3030 J over the 10 s run
    meter, _ = PowerMeter.open(BUS, nvml=nvml, clock=clock, interval=3600.0)  # the test polls
    assert meter is not None
    with meter:
        for clock.t in (11.0, 12.0, 13.0, 14.0):
            meter.poll_once()
        clock.t = 20.0
    table, row = _gemm_table(bench, power, meter=meter)
    (note,) = [n for n in table.notes if n.startswith("Power")]
    assert "(NVML_FI_DEV_POWER_INSTANT, mW)" in note and "median gap 1000.0 ms" in note
    assert note.endswith(
        "Whole-run check: NVML's energy counter over the 10 s run gives 303 W, the mean of "
        "its 4 power readings 300 W (-1.0%)."
    ), note
    # A peer missing a window: its cells and the ratio blank, pyoxide's given.
    table, row = _gemm_table(bench, {"pyoxide": power["pyoxide"]})
    assert row["W / MHz: pyoxide"] == "700 / 1455" and row["W / MHz: cuBLAS"] == "—"
    assert row["mJ a call: pyoxide / cuBLAS"] == "140 / —" and row["work/J ÷ cuBLAS"] == "—"


def test_the_clocks_table_gives_temperature_and_only_the_clock_event_reasons_seen() -> None:
    """bench_gemm's second table: per cell, pyoxide's and the faster cuBLAS call's W, MHz,
    °C and % of readings with each reason set, for the reasons set in some window of the
    run (here the power cap, and hardware thermal slowdown in cupy's row alone: seen in the
    run, though neither compared row had it); None when the power was not measured."""
    load_script("bench_gemm")  # (puts scripts/ on the path for its rows module)
    bench = importlib.import_module("bench_gemm_rows")
    shape, kind = (4096, 4096, 4096), "bf16→bf16"
    zero = tuple((name, 0.0) for name, _, _ in REASONS)
    power = {"pyoxide": (677.0, 1344.0, 71.0, {"sw_power_cap": 0.9}),
             "torch.matmul": (704.0, 1415.0, 66.0, {"sw_power_cap": 0.5}),
             "cupy.matmul": (690.0, 1400.0, 68.0, {"hw_thermal": 0.1})}  # fmt: skip
    rows = []
    for who, ms in (("pyoxide", 0.20), ("torch.matmul", 0.21), ("cupy.matmul", 0.22)):
        w, mhz, temp, set_ = power[who]
        row = bench.Row(shape, kind, who, lambda: None, samples=[ms])
        reasons = tuple((n, set_.get(n, v)) for n, v in zero)
        row.power.append(PowerWindow(w, mhz, 0.2, 40, 5, temp_c=temp, reasons=reasons))
        rows.append(row)
    table = bench.clocks_table(rows, "NVIDIA H100")
    assert table is not None and table.name == "bench_gemm-clocks"
    assert table.columns == [
        "m×n×k", "inputs → result", "W: pyoxide / cuBLAS", "SM MHz: pyoxide / cuBLAS",
        "°C: pyoxide / cuBLAS", "% sw_power_cap: pyoxide / cuBLAS",
        "% hw_thermal: pyoxide / cuBLAS",
    ]  # fmt: skip
    assert table.rows == [
        ["4096×4096×4096", kind, "677 / 704", "1344 / 1415", "71 / 66", "90 / 50", "0 / 0"]
    ]
    (note,) = table.notes
    assert "sw_power_cap: the driver lowers clocks" in note and "hw_slowdown" in note
    assert bench.clocks_table(rows, "NVIDIA H100", "no NVML") is None
    assert bench.clocks_table([bench.Row(shape, kind, "pyoxide", lambda: None)], "x") is None


def test_a_gemm_row_whose_host_time_fills_its_call_is_named_host_bound() -> None:
    """bench_gemm's table gives pyoxide's sustained and host µs a call, and names every
    caller whose own host time is ≥ 90 % of its sustained time a call (its rate is the
    host's): here pyoxide's (9.5 of 10 µs), not cuBLAS's through torch (5 of 12)."""
    bench = load_script("bench_gemm")
    shape, kind = (16, 256, 256), "bf16→bf16"
    ours = bench.Row(shape, kind, "pyoxide", lambda: None, samples=[0.010], host_us=9.5)
    peer = bench.Row(shape, kind, "torch.matmul", lambda: None, samples=[0.012], host_us=5.0)
    for row in (ours, peer):
        row.sample_ms.append(200.0)
    args = type("Args", (), {"rounds": 1, "sample_ms": 200.0, "lead_ms": 100.0, "order": "paired"})
    table = bench.results_table([ours, peer], {(shape, kind): "gemm_x"}, "NVIDIA H200", args)
    (row,) = table.rows
    assert row[table.columns.index("pyoxide µs: call / host")] == "10.0 / 9.5"
    (note,) = [n for n in table.notes if n.startswith("Host-bound")]
    assert "16×256×256 bf16→bf16 pyoxide" in note and "torch.matmul" not in note


def test_host_cost_times_bursts_from_an_idle_gpu() -> None:
    """pyoxide.bench.host_cost: each burst of calls starts after a synchronisation (so the
    launch queue never fills), and the answer is the median burst's µs a call."""
    from pyoxide.bench import host_cost

    log: list[str] = []
    us = host_cost(lambda: log.append("call"), lambda: log.append("sync"), launches=3, reps=2)
    assert log == ["sync", "call", "call", "call"] * 2 + ["sync"]
    assert 0 < us < 1e4
