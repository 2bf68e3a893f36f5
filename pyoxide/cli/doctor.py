"""``pyoxide doctor``: what this machine has for building and running kernels.

Works with no CUDA at all: each piece is reported, none is required except
cargo-oxide (for building), whose absence gives exit code 3.
"""

from __future__ import annotations

import json
import platform
from typing import Any

import click

from .. import __version__
from .._build.cargo import find_cargo_oxide, run_tool
from .._manifest import knobs as _knobs
from ..errors import PyoxideError, ToolchainError
from ._exit import ExitCode


def _numpy() -> str | None:
    try:
        import numpy
    except ImportError:
        return None
    return str(numpy.__version__)


def _cupy() -> dict[str, Any]:
    from .. import backends

    try:
        gpu = backends.gpu()
    except Exception as e:  # no CuPy, or a CUDA library that fails to load
        return {"available": False, "reason": f"cannot import cupy: {e}"}
    info: dict[str, Any] = {"available": True, "version": gpu.xp.__version__, "devices": []}
    try:
        info["driver"] = gpu.driver_version()
        info["devices"] = gpu.devices()
    except Exception as e:
        info["reason"] = f"no usable CUDA device: {e}"
    return info


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def doctor_command(as_json: bool) -> None:
    """Report Python-side pieces and cargo-oxide's toolchain check."""
    report: dict[str, Any] = {
        "pyoxide": __version__,
        "python": platform.python_version(),
        "numpy": _numpy(),
        "cupy": _cupy(),
    }
    code = ExitCode.OK
    try:
        report["backend"] = _knobs.backend()
        tool = find_cargo_oxide()
    except (ToolchainError, PyoxideError) as e:
        tool = None
        report["cargo_oxide"] = {"path": None, "problem": str(e)}
        code = ExitCode.TOOLCHAIN_MISSING
    if tool is not None:
        echo = None if as_json else (lambda line: click.echo(line))
        if not as_json:
            _print_python_side(report)
            click.echo(f"cargo-oxide: {tool}")
        rc, out, err = run_tool(["doctor", *(["--json"] if as_json else [])], echo)
        entry: dict[str, Any] = {"path": str(tool), "exit_code": rc}
        if as_json:
            try:
                entry["report"] = json.loads(out)
            except ValueError:
                entry["report"] = None
                entry["output"] = out + err
        elif out:
            click.echo(out.rstrip("\n"))
        report["cargo_oxide"] = entry
        if rc != 0:
            code = ExitCode.TOOLCHAIN_MISSING if rc == 3 else ExitCode.ERROR
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif tool is None:
        _print_python_side(report)
        click.echo(f"cargo-oxide: MISSING: {report['cargo_oxide']['problem']}")
    raise SystemExit(int(code))


def _print_python_side(report: dict[str, Any]) -> None:
    click.echo(f"pyoxide {report['pyoxide']} on Python {report['python']}")
    click.echo(f"numpy: {report['numpy'] or 'MISSING (pip install numpy)'}")
    cupy = report["cupy"]
    if not cupy["available"]:
        click.echo(
            f"cupy: not available ({cupy['reason']}); GPU launches need "
            "pip install 'pyoxide[cuda]' (CUDA 13 drivers) or 'pyoxide[cuda12]'"
        )
    else:
        click.echo(f"cupy: {cupy['version']}, driver {cupy.get('driver', '?')}")
        for d in cupy["devices"]:
            click.echo(f"  device {d['id']}: {d['name']} (sm {d['compute_capability']})")
        if "reason" in cupy:
            click.echo(f"  {cupy['reason']}")
    if "backend" in report:
        click.echo(f"backend: {report['backend']} (PYOXIDE_BACKEND)")
