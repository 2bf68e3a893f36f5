"""``pyoxide bench``: every kernel with a spec (:mod:`pyoxide.spec`) timed on the GPU at
its bench shapes, against the hardware's limits and the spec's peers, in one run.

Per kernel and shape: CUDA-event times after warm-up, the L2 cache flushed before each
repetition, median/min/max (pyoxide/bench/_timing.py); the bytes and FLOPs the spec
declares; the fraction of the roofline, ``max(bytes / copy bandwidth, flops / peak) /
time``, with the copy bandwidth measured in the same run and the peak FLOP rate read from
the device; and the ratio to each peer (peer time / pyoxide time: > 1, pyoxide is
faster). The result is a dict (``pyoxide bench --json``) that ``--plot`` draws."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..spec import Case, Shape, Spec
from ..verify import instance
from ..verify._case import compare, param_names
from ._energy import REASONS, PowerMeter, PowerWindow, bus_id, median_window
from ._peers import Peers
from ._plot import plot
from ._report import Table, require_gpu
from ._report import render as render_report
from ._timing import (
    SustainedTimer,
    Timer,
    calibrated_calls,
    copy_bandwidth,
    host_cost,
    lead_in_calls,
    peak_flops,
    profiled_call,
    retaken_calls,
)

__all__ = [
    "REASONS", "Peers", "PowerMeter", "PowerWindow", "SustainedTimer", "Table", "Timer",
    "bench_crate", "bench_spec",
    "bus_id", "calibrated_calls", "copy_bandwidth", "host_cost", "lead_in_calls",
    "median_window", "plot", "profiled_call", "progress_bar", "render_report",
    "require_gpu", "retaken_calls", "table",
]  # fmt: skip

BENCH_REPORT_VERSION = 1
#: The copy that sets the bandwidth ceiling: 2^26 float32 (256 MiB), far past the L2.
COPY_ELEMENTS = 1 << 26


def parse_sizes(values: Sequence[str]) -> list[Shape]:
    """``--sizes``: ``1048576``, ``1e6``, ``2^20`` or ``4096x1024`` (a 2-D shape)."""
    shapes = []
    for v in values:
        for part in v.split(","):
            dims = []
            for d in part.lower().split("x"):
                d = d.strip()
                dims.append(2 ** int(d[2:]) if d.startswith("2^") else int(float(d)))
            shapes.append(tuple(dims))
    return shapes


def _peak_key(case: Case) -> str:
    return {"bf16": "bf16", "f64": "f64"}.get(case.dtype, "f32")


def bench_spec(
    cp: Any,
    module: Any,
    spec: Spec,
    shape: Shape,
    timer: Timer,
    ceilings: dict[str, Any],
    *,
    check: bool,
    seed: int = 0,
) -> dict[str, Any]:
    """One row: `spec`'s kernel at `shape` (its first dtype), checked against the
    reference when `check`, then timed with its peers."""
    case = Case(tuple(shape), spec.dtypes[0], 0, seed)
    host = spec.inputs(case, np.random.default_rng(seed))
    outs = {name: out.make(case) for name, out in spec.outputs.items()}
    dev = {
        k: cp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in {**host, **outs}.items()
    }
    launcher, entry = instance(module, spec, case.dtype)
    args = [dev[n] for n in param_names(entry)]
    zeroed = [dev[n] for n, o in spec.outputs.items() if o.init == "zeros"]

    def run() -> None:
        for z in zeroed:  # an accumulator starts at 0 each time: part of the operation
            z.fill(0)
        if spec.launch is not None:
            spec.launch(launcher, args, case)
        else:
            launcher(*args)

    row: dict[str, Any] = {"kernel": spec.kernel, "shape": list(shape), "dtype": case.dtype}
    run()
    if check:
        got = {n: cp.asnumpy(dev[n]).reshape(outs[n].shape) for n in outs}
        outcome = compare(spec, case, host, got)
        row["checked_error"] = outcome.error
        if outcome.failure is not None:
            row["error"] = f"wrong result: {outcome.failure.message}"
            return row
    times = timer.times(run)
    nbytes = spec.bytes(case) if spec.bytes else 0
    flops = spec.flops(case) if spec.flops else 0
    peak = ceilings["peak_flops"][_peak_key(case)]
    bound_s = max(nbytes / (ceilings["copy_gbs"] * 1e9), flops / peak)
    row.update(
        ms=times.as_dict(),
        bytes=nbytes,
        flops=flops,
        gbs=nbytes / (times.median * 1e6),
        gflops=flops / (times.median * 1e6),
        roofline_fraction=bound_s / (times.median * 1e-3),
        bound="memory" if nbytes / (ceilings["copy_gbs"] * 1e9) >= flops / peak else "compute",
    )
    peers: dict[str, Any] = {}
    for group, factory in spec.peers.items():
        try:
            made = factory(dev)  # one callable, or {name: callable} for several peers
        except Exception as e:  # a peer library that is absent: reported, not fatal
            peers[group] = {"error": f"{type(e).__name__}: {str(e)[:80]}"}
            continue
        for name, op in (made if isinstance(made, dict) else {group: made}).items():
            try:
                peer_ms = timer.times(op)
                peers[name] = {"ms": peer_ms.as_dict(), "ratio": peer_ms.median / times.median}
            except Exception as e:  # a peer that cannot do this shape: reported
                peers[name] = {"error": f"{type(e).__name__}: {str(e)[:80]}"}
    row["peers"] = peers
    timed = {k: v["ratio"] for k, v in peers.items() if "ratio" in v}
    row["best_peer"] = min(timed, key=timed.__getitem__) if timed else None
    row["ratio_to_best_peer"] = min(timed.values()) if timed else None
    return row


def _terminal_tqdm() -> Any:
    """tqdm's bar class where stderr is a terminal and tqdm is installed, else None."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def progress_bar(total: int) -> Callable[[str], None]:
    """A tqdm bar on stderr when it is a terminal and tqdm is installed, else one line
    per step, flushed (a log, which a bar's carriage returns would garble, keeps every
    step, also when a time limit cuts the run short)."""
    tqdm = _terminal_tqdm()
    if tqdm is None:
        done = [0]

        def step_plain(label: str) -> None:
            done[0] += 1
            print(f"[{done[0]}/{total}] {label}", file=sys.stderr, flush=True)

        return step_plain
    bar = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)

    def step(label: str) -> None:
        bar.set_description(label)
        bar.update(1)
        if bar.n >= total:
            bar.close()

    return step


def bench_crate(
    module: Any,
    specs: list[Spec],
    *,
    sizes: list[Shape] | None = None,
    reps: int = 20,
    warmup: int = 3,
    progress: bool = True,
) -> dict[str, Any]:
    from .. import backends

    cp = backends.gpu().xp

    plan: list[tuple[Spec, Shape]] = []
    for spec in specs:
        shapes = list(spec.bench_shapes)
        if sizes:
            ndim = len(shapes[0]) if shapes else 1
            shapes = [s for s in sizes if len(s) == ndim] or shapes
        plan += [(spec, s) for s in shapes]
    timer = Timer(cp, reps, warmup, flush_l2=True)
    copy_gbs, copy_how = copy_bandwidth(cp, Timer(cp, reps, warmup), COPY_ELEMENTS)
    peaks = peak_flops(cp)
    peaks["f64"] = peaks["f32"] / 2  # sm_80/sm_90 data-centre parts: FP64 at half FP32
    ceilings = {"copy_gbs": copy_gbs, "copy_how": copy_how, "peak_flops": peaks}
    step = progress_bar(len(plan)) if progress else (lambda label: None)
    rows = []
    first: set[str] = set()
    for spec, shape in plan:
        check = spec.kernel not in first  # the smallest shape: checked against float64
        first.add(spec.kernel)
        try:
            rows.append(bench_spec(cp, module, spec, shape, timer, ceilings, check=check))
        except Exception as e:  # reported in the table, the run goes on
            rows.append({"kernel": spec.kernel, "shape": list(shape), "error": f"{e}"[:200]})
        step(f"{spec.kernel} {'×'.join(map(str, shape))}")
    device = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(device.id)
    return {
        "version": BENCH_REPORT_VERSION,
        "crate": module.manifest.crate_name,
        "device": backends.gpu().device_identity(device.id)[0],
        "sms": int(device.attributes["MultiProcessorCount"]),
        "l2_bytes": int(props["l2CacheSize"]),
        "host": platform.node(),
        "cupy": cp.__version__,
        "reps": reps,
        "warmup": warmup,
        **ceilings,
        "rows": rows,
    }


def table(report: dict[str, Any]) -> str:
    """The report as a Markdown table."""
    lines = [
        f"device: {report['device']}; copy {report['copy_gbs']:.0f} GB/s ({report['copy_how']}); "
        f"peak f32 {report['peak_flops']['f32'] / 1e12:.1f} TFLOP/s, "
        f"bf16 {report['peak_flops']['bf16'] / 1e12:.0f} TFLOP/s (read)",
        "",
        "| kernel | shape | median ms (min–max) | GB/s | GFLOP/s | of roofline | best peer | "
        "peer time ÷ pyoxide |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        shape = "×".join(map(str, r["shape"]))
        if "error" in r:
            lines.append(f"| {r['kernel']} | {shape} | {r['error']} | | | | | |")
            continue
        ms = r["ms"]
        ratio = f"{r['ratio_to_best_peer']:.3f}" if r["ratio_to_best_peer"] else "—"
        lines.append(
            f"| {r['kernel']} | {shape} | {ms['median']:.4f} ({ms['min']:.4f}–{ms['max']:.4f}) "
            f"| {r['gbs']:.0f} | {r['gflops']:.0f} | {r['roofline_fraction']:.3f} ({r['bound']}) "
            f"| {r['best_peer'] or '—'} | {ratio} |"
        )
    return "\n".join(lines)
