"""Test cache folders that share cargo-oxide's `core` sysroot."""

from __future__ import annotations

from pathlib import Path


def cache_folder(folder: Path, sysroot: Path) -> Path:
    """`folder` (made if missing) as a fresh PYOXIDE_CACHE_DIR whose `sysroot` entry is
    the run's shared one. cargo-oxide builds `core` for the GPU target into the cache
    folder once per toolchain (about 40 s on a 2-core machine) and never changes it once
    complete, so a test's own folder need not build it again. Everything else in the
    folder (builds, index, tuned choices) stays the test's own."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    (folder / "sysroot").symlink_to(sysroot, target_is_directory=True)
    return folder
