"""Rows of scripts/bench_kernels for the row kernels (softmax_rows, layernorm_rows) and
transpose, run when the bundled crate has them. Their signatures are read from the
manifest and arguments given by parameter name (x/out, a row length `cols`/`n`, a row
count `rows`/`m`, `weight`/`gamma`, `bias`/`beta`, `eps`); a kernel whose signature is
not understood, or whose plain call is refused, gets a row saying so."""

from __future__ import annotations

from typing import Any

import numpy as np

INPUT = {"x", "input", "inp", "src", "a"}
OUTPUT = {"out", "y", "dst", "output"}
WEIGHT = {"weight", "w", "gamma"}
BIAS = {"bias", "b", "beta"}
COLS = {"cols", "n", "ncols", "n_cols", "width", "row_len"}
ROWS = {"rows", "m", "nrows", "n_rows", "height"}
EPS = {"eps", "epsilon"}


def _args(spec: Any, arrays: dict[str, Any], rows: int, cols: int, eps: float) -> list[Any]:
    args = []
    for p in spec.params:
        name = p.name
        shaped = getattr(p, "array", None) is not None  # Array2<f32>: the matrix itself
        if name in INPUT:
            args.append(arrays["x2" if shaped else "x"])
        elif name in OUTPUT:
            args.append(arrays["out2" if shaped else "out"])
        elif name in WEIGHT:
            args.append(arrays["w"])
        elif name in BIAS:
            args.append(arrays["b"])
        elif name in COLS:
            args.append(cols)
        elif name in ROWS:
            args.append(rows)
        elif name in EPS:
            args.append(eps)
        else:
            raise KeyError(f"parameter {name!r} not understood")
    return args


def rows_benchmarks(
    cp: Any, kernels: Any, peers: Any, timer: Any, measure: Any
) -> list[dict[str, Any]]:
    names = {k.name for k in kernels.manifest.kernels}
    torch = peers.torch
    out_rows: list[dict[str, Any]] = []
    eps = 1e-5
    for kernel_name in ("softmax_rows", "layernorm_rows"):
        if kernel_name not in names:
            continue
        kern = getattr(kernels, kernel_name)
        for rows, cols in ((16384, 4096), (4096, 16384)):
            x = cp.random.standard_normal((rows, cols), dtype=cp.float32)
            w = cp.random.standard_normal(cols, dtype=cp.float32)
            b = cp.random.standard_normal(cols, dtype=cp.float32)
            out = cp.empty_like(x)
            flat = {"x": x.reshape(-1), "out": out.reshape(-1), "w": w, "b": b}
            flat.update(x2=x, out2=out)
            sample = np.sort(np.random.default_rng().choice(rows, 64, replace=False))
            xs = cp.asnumpy(x[cp.asarray(sample)]).astype(np.float64)
            if kernel_name == "softmax_rows":
                e = np.exp(xs - xs.max(axis=1, keepdims=True))
                want = e / e.sum(axis=1, keepdims=True)
            else:
                mu, var = xs.mean(axis=1, keepdims=True), xs.var(axis=1, keepdims=True)
                want = (xs - mu) / np.sqrt(var + eps) * cp.asnumpy(w) + cp.asnumpy(b)
            peer_out: dict[str, Any] = {}

            def check(
                who: str,
                want: Any = want,
                sample: Any = sample,
                out: Any = out,
                peer_out: dict[str, Any] = peer_out,
                kernel_name: str = kernel_name,
            ) -> None:
                got = out if who == "pyoxide" else cp.asarray(peer_out[who])
                g = cp.asnumpy(got[cp.asarray(sample)]).astype(np.float64)
                err = np.linalg.norm(g - want) / np.linalg.norm(want)
                if not err < 1e-5:
                    raise AssertionError(f"{kernel_name} {who}: relative error {err:.2e}")

            ops: dict[str, Any] = {}
            if torch is not None:
                tx, tw, tb = peers.t(x), peers.t(w), peers.t(b)
                if kernel_name == "softmax_rows":
                    ops["torch.softmax"] = lambda tx=tx, po=peer_out: po.__setitem__(
                        "torch.softmax", torch.softmax(tx, dim=-1)
                    )
                else:
                    ops["torch layer_norm"] = lambda tx=tx, tw=tw, tb=tb, c=cols, po=peer_out: (
                        po.__setitem__(
                            "torch layer_norm",
                            torch.nn.functional.layer_norm(tx, (c,), tw, tb, eps),
                        )
                    )
            row = {"kernel": kernel_name, "size": f"{rows}×{cols}", "bytes": 8 * rows * cols}
            try:
                args = _args(kern.spec, flat, rows, cols, eps)
                kern(*args)  # a plain call: the kernel's launch policy
            except Exception as e:
                row.update(
                    ms=float("nan"), peers={"pyoxide": f"n/a ({type(e).__name__}: {str(e)[:80]})"}
                )
                out_rows.append(row)
                continue
            try:
                out_rows.append(
                    measure(timer, row, lambda kern=kern, args=args: kern(*args), ops, check)
                )
            except AssertionError as e:  # a wrong result: reported in the table, not timed
                row.update(ms=float("nan"), peers={"pyoxide": f"n/a (wrong result: {e})"})
                out_rows.append(row)

    if "transpose" in names:
        n = 16384
        x = cp.random.standard_normal((n, n), dtype=cp.float32)
        out = cp.empty_like(x)
        peer_out: dict[str, Any] = {}
        sample = np.sort(np.random.default_rng().choice(n, 64, replace=False))
        want = cp.asnumpy(x[:, cp.asarray(sample)]).T.astype(np.float64)

        def check_t(who: str) -> None:
            got = out if who == "pyoxide" else cp.asarray(peer_out[who])
            g = cp.asnumpy(got[cp.asarray(sample)]).astype(np.float64)
            if not np.array_equal(g, want):
                raise AssertionError(f"transpose {who}: wrong elements")

        ops = {
            "cupy ascontiguousarray(x.T)": lambda: peer_out.__setitem__(
                "cupy ascontiguousarray(x.T)", cp.ascontiguousarray(x.T)
            )
        }
        if torch is not None:
            tx, to = peers.t(x), peers.t(out)
            ops["torch copy_(x.t())"] = lambda: peer_out.__setitem__(
                "torch copy_(x.t())", to.copy_(tx.t())
            )
        row = {"kernel": "transpose", "size": f"{n}×{n}", "bytes": 8 * n * n}
        # The instance of the generic kernel a plain call picks for these arrays (its
        # parameter names come from its spec), called plainly: its `tiles` policy gives
        # (32, 8) blocks over 64×64 tiles, or the tuned choice's where one was kept.
        kern, _ = kernels.transpose.dispatch((x, out))
        spec = kern.spec
        try:
            flat = {"x": x.reshape(-1), "out": out.reshape(-1), "x2": x, "out2": out}
            args = _args(spec, flat, n, n, eps)
            kern(*args)
        except Exception as e:
            row.update(
                ms=float("nan"), peers={"pyoxide": f"n/a ({type(e).__name__}: {str(e)[:80]})"}
            )
            return [*out_rows, row]
        try:
            try:
                out_rows.append(measure(timer, row, lambda: kern(*args), ops, check_t))
            except AssertionError as e:
                row.update(ms=float("nan"), peers={"pyoxide": f"n/a (wrong result: {e})"})
                out_rows.append(row)
        except AssertionError as e:
            row.update(ms=float("nan"), peers={"pyoxide": f"n/a (wrong result: {e})"})
            out_rows.append(row)
    return out_rows
