"""The README's quickstart, run line by line in a shell as a new user would paste it:
in a folder holding the checkout as `pyoxide/`, inside a virtualenv that sees this
machine's packages (so its `pip install` goes to the venv, not the machine's Python)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from helpers.bundled import REPO


def quickstart_lines() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the quickstart has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_quickstart_works_pasted_into_a_shell(tmp_path: Path) -> None:
    lines = quickstart_lines()
    assert lines[0].startswith("pyoxide/scripts/setup") and any("pyoxide new" in x for x in lines)
    (tmp_path / "pyoxide").symlink_to(REPO)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = dict(os.environ, VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}:{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    script = "set -euo pipefail\n" + "\n".join(lines) + "\n"
    proc = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, f"quickstart failed:\n{proc.stdout}\n{proc.stderr}"
    assert "[0. 3. 6. 9.]" in proc.stdout  # the `python -c` line, on the CPU emulator
    assert " passed" in proc.stdout  # the project's own tests
    # `maturin build` made the wheel to ship (the editable install leaves one there too).
    wheels = (tmp_path / "my_kernels" / "target" / "wheels").glob("my_kernels-*manylinux*.whl")
    assert len(list(wheels)) == 1
