"""Fixtures of the tuner's tests (test_tune.py, test_tune_keys.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.bundled import tuned_kernels_manifest


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh PYOXIDE_CACHE_DIR: the test's tuned choices and nothing else's."""
    monkeypatch.setenv("PYOXIDE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def manifest() -> Path:
    """The tuned_kernels fixture crate (tests/fixtures/tuned_kernels)."""
    return tuned_kernels_manifest()
