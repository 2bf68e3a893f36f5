"""File helpers shared by the cache, the manifest reader and the stub writer: hashes,
atomic writes, and the rule that keeps a manifest's artifacts in its folder."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path


def sha256_file(path: Path) -> str | None:
    """The file's sha256, or None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def umask() -> int:
    """The process's umask, read without changing it where /proc tells it (os.umask can
    only be read by setting it, which races with other threads)."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        status = Path("/proc/self/status").read_text().splitlines()
        return int(next(x for x in status if x.startswith("Umask:")).split()[1], 8)
    old = os.umask(0o022)
    os.umask(old)
    return old


#: Bits never set on what pyoxide writes: others may read its caches and outputs, but
#: only their owner may write them (a build in the cache ends up loaded in a process).
NOT_WRITABLE_BY_OTHERS = 0o022


def make_temp_dir(parent: Path, prefix: str) -> Path:
    """``tempfile.mkdtemp`` with the mode ``mkdir`` would give (0o777 less the umask, and
    never writable by others), not 0o700: the folder is renamed into a cache that other
    users may read."""
    path = Path(tempfile.mkdtemp(dir=parent, prefix=prefix))
    os.chmod(path, 0o777 & ~umask() & ~NOT_WRITABLE_BY_OTHERS)
    return path


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the new one, never half.
    The file gets the mode ``open`` would give (0o666 less the umask, and never writable
    by others), not mkstemp's 0o600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~umask() & ~NOT_WRITABLE_BY_OTHERS)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def file_inside(base: Path, text: str) -> Path:
    """The file a manifest's artifact path ``text`` names in the manifest's folder ``base``.
    It must lie inside that folder, after symbolic links: a manifest is data, and one that
    names /usr/lib/x.so or ../x.ptx must not make pyoxide open a file it did not ship with
    (oxide-abi's ``manifest::artifact_file`` is the same rule for cargo-oxide). Raises
    ValueError saying why not."""
    parts = text.split("/")
    if text.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(
            f"{text!r} is absolute or leaves its folder: artifacts must lie inside the "
            "manifest's folder"
        )
    path = base.joinpath(*parts)
    if not path.resolve().is_relative_to(base.resolve()):
        raise ValueError(
            f"{text!r} resolves to {path.resolve()}: artifacts must lie inside the "
            "manifest's folder"
        )
    return path
