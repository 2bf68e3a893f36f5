"""``pyoxide bench --plot FILE.png``: a roofline chart (achieved FLOP/s against arithmetic
intensity under the copy-bandwidth and peak-FLOP ceilings) beside bandwidth-vs-size
curves (GB/s against bytes moved, under the copy bandwidth), from a bench report
(pyoxide/bench.py) — fresh, or a saved ``--json`` file drawn on another machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["rows"] if "error" not in r]
    bw = report["copy_gbs"] * 1e9
    peaks = report["peak_flops"]
    fig, (roof, curves) = plt.subplots(1, 2, figsize=(16, 7.5), dpi=110)
    kernels = sorted({r["kernel"] for r in rows})
    cmap = plt.get_cmap("tab20")
    color = {k: cmap(i % 20) for i, k in enumerate(kernels)}

    # Roofline: each kernel at its largest shape (the one furthest from launch overheads).
    ai_lo, ai_hi = 1 / 16, 4096
    xs = [ai_lo * (ai_hi / ai_lo) ** (i / 200) for i in range(201)]
    for key, style in (("f32", "-"), ("bf16", "--")):
        label = f"roof: copy {bw / 1e9:.0f} GB/s, {key} peak {peaks[key] / 1e12:.0f} TFLOP/s"
        ys = [min(peaks[key], x * bw) for x in xs]
        roof.plot(xs, ys, style, color="0.3", lw=1.5, label=label)
    largest: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["flops"] and r["bytes"]:
            k = r["kernel"]
            if k not in largest or r["bytes"] > largest[k]["bytes"]:
                largest[k] = r
    markers = "osD^vP*Xh<>p"
    for i, (k, r) in enumerate(sorted(largest.items())):
        ai = r["flops"] / r["bytes"]
        label = f"{k}: {r['roofline_fraction']:.2f}"
        roof.scatter([ai], [r["gflops"] * 1e9], s=70, color=color[k], edgecolor="black",
                     marker=markers[i % len(markers)], zorder=3, label=label)  # fmt: skip
    roof.set_xscale("log", base=2)
    roof.set_yscale("log")
    roof.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    roof.set_ylabel("achieved FLOP/s")
    roof.set_title("roofline: each kernel at its largest shape (legend: fraction of the roof)")
    roof.grid(True, which="both", alpha=0.3)
    roof.legend(loc="upper left", fontsize=7.5, ncol=2)

    # Bandwidth against size, for the kernels with more than one bench size.
    for k in kernels:
        pts = sorted((r["bytes"], r["gbs"]) for r in rows if r["kernel"] == k and r["bytes"])
        if len(pts) < 2 or all(r["bound"] == "compute" for r in rows if r["kernel"] == k):
            continue
        # Shapes of equal size (rows × cols both ways) are points, not a curve.
        style = "o-" if len({p[0] for p in pts}) == len(pts) else "o"
        curves.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color[k], label=k, ms=5)
    curves.axhline(bw / 1e9, color="0.3", ls="--", lw=1.5, label="device-to-device copy")
    curves.set_xscale("log", base=2)
    curves.set_xlabel("bytes moved per call")
    curves.set_ylabel("GB/s (bytes moved / median time)")
    curves.set_title("bandwidth against size (memory-bound kernels)")
    curves.grid(True, which="both", alpha=0.3)
    curves.legend(fontsize=8, ncol=2, loc="center left")
    fig.suptitle(f"pyoxide bench: {report['crate']} on {report['device']}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
