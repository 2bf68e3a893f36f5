"""Test isolation only. Shared helpers live in tests/helpers/ (imported by test files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.caches import cache_folder


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        default="all",
        choices=("emu", "cupy", "torch", "gpu", "all"),
        help="array libraries the kernel suite (tests/kernels) runs on: emu (NumPy on the "
        "CPU emulator), cupy, torch, gpu (cupy and torch) or all (default; GPU ones skip "
        "without a CUDA device)",
    )


_VARS = [v for v in os.environ if v.startswith(("PYOXIDE_", "FAKE_OXIDE_"))]


@pytest.fixture(scope="session")
def shared_sysroot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's one folder for cargo-oxide's `core` sysroot (helpers/caches.py)."""
    return tmp_path_factory.mktemp("sysroot")


@pytest.fixture(autouse=True)
def _isolated_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, shared_sysroot: Path
):
    """Every test gets its own cache dir (sharing only the `core` sysroot) and no
    PYOXIDE_* settings from the caller."""
    for name in _VARS:
        monkeypatch.delenv(name, raising=False)
    cache = cache_folder(tmp_path_factory.mktemp("cache"), shared_sysroot)
    monkeypatch.setenv("PYOXIDE_CACHE_DIR", str(cache))
    yield
