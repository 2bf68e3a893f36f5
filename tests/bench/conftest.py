"""Fixtures of the tuner's tests (test_tune.py, test_tune_keys.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.bundled import tuned_kernels_manifest
from helpers.caches import cache_folder


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_sysroot: Path) -> Path:
    """A fresh PYOXIDE_CACHE_DIR: the test's tuned choices and nothing else's."""
    folder = cache_folder(tmp_path / "cache", shared_sysroot)
    monkeypatch.setenv("PYOXIDE_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def manifest() -> Path:
    """The tuned_kernels fixture crate (tests/fixtures/tuned_kernels)."""
    return tuned_kernels_manifest()
