"""The content-addressed build cache behind ``pyoxide.load(crate)``.

Layout under ``PYOXIDE_CACHE_DIR``::

    index/<lookup>.json     which build last served this (crate, arch, profile, toolchain)
    builds/<crate>-<key>/   one finished build: manifest + PTX, never modified
    locks/<lookup>.lock     serializes builds of one lookup key across processes
    tmp/                    builds in progress

``lookup`` hashes the crate's Cargo.toml path and cargo-oxide's build key
(``cargo oxide key`` with the same options: the toolchain it resolves, the options, every
variable of oxide-abi's input table that changes artifacts, the cargo config files), plus
the variables of that table only Python reads; ``rebuild=True`` replaces the entry. The
cache folder is cargo-oxide's answer too. A cached build
is fresh while every source file its manifest lists, the crate's Cargo.toml and
the workspace Cargo.lock still hash the same. ``key`` hashes ``lookup`` plus those
content hashes, so equal inputs give the same folder. cargo-oxide hashes the sources
after compiling them, so the crate's files are hashed here before the build too: a
build whose sources changed while it ran is thrown away and built again, never cached
under the new sources' hash. Every write is a rename of a
finished temporary (``os.replace``), so two processes loading at once both succeed:
the lock (where the OS has ``fcntl``) makes the second wait and reuse the first's
build; without it, both build and the first rename wins.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from .._manifest import knobs as _knobs
from .cargo import Echo, Profile, build, build_key, cargo_args, crate_manifest
from .._manifest.fs import atomic_write, make_temp_dir, sha256_file
from .._manifest.reader import Manifest, read_manifest
from ..errors import BuildError, ConfigError, LoadError, ManifestError

LAYOUT_VERSION = 1


def lookup_key(
    toml: Path, *, arch: Sequence[str] | None, profile: Profile, fmad: bool
) -> tuple[str, Path]:
    """The index key of a build of the crate at ``toml`` and the cache folder: derived
    from cargo-oxide's key of the same options and the Python-read variables of the
    input table, never from a list kept here."""
    options = cargo_args(toml, arch=arch, profile=profile, fmad=fmad)
    asked = build_key(options)
    if asked.cache_error is not None:
        raise ConfigError(
            "PYOXIDE_CACHE_DIR", str(asked.cache_dir),
            f"a writable folder of your own that others cannot write to ({asked.cache_error})",
        )  # fmt: skip
    content = json.dumps([LAYOUT_VERSION, str(toml), asked.key, sorted(_knobs.keyed().items())])
    return hashlib.sha256(content.encode()).hexdigest()[:32], asked.cache_dir


def _extra_inputs(toml: Path) -> dict[str, str | None]:
    """Cargo.toml of the crate and the nearest Cargo.lock: not in rustc's dep-info."""
    inputs = {str(toml): sha256_file(toml)}
    for folder in [toml.parent, *toml.parent.parents]:
        lock = folder / "Cargo.lock"
        if lock.is_file():
            inputs[str(lock)] = sha256_file(lock)
            break
    return inputs


#: Builds of one load whose sources kept changing while they ran, before giving up.
BUILD_ATTEMPTS = 3
_SNAPSHOT_MAX_BYTES = 16 << 20


def _snapshot(crate_dir: Path, also: Sequence[str]) -> dict[str, str | None]:
    """sha256 of the crate's files (not target/ or hidden folders) and of ``also`` (the
    last build's sources, which may lie outside the crate), by absolute path."""
    paths: list[Path] = [Path(p) for p in also]
    for folder, dirs, files in os.walk(crate_dir):
        dirs[:] = [d for d in dirs if d != "target" and not d.startswith(".")]
        paths += [Path(folder) / f for f in files]
    out: dict[str, str | None] = {}
    for p in paths:
        with contextlib.suppress(OSError):
            if p.stat().st_size > _SNAPSHOT_MAX_BYTES:
                continue
        out[str(p.resolve())] = sha256_file(p)
    return out


def _changed_during_build(
    manifest: Manifest, crate_dir: Path, before: dict[str, str | None]
) -> list[str]:
    """Sources whose hash in the manifest (taken after the build) differs from the
    hash they had before it started."""
    changed = []
    for path, digest in manifest.sources:
        p = Path(path) if Path(path).is_absolute() else crate_dir / path
        key = str(p.resolve())
        if key in before and before[key] != digest:
            changed.append(path)
    return changed


def is_fresh(manifest: Manifest, crate_dir: Path, extra: dict[str, str | None]) -> bool:
    for path, digest in manifest.sources:
        p = Path(path)
        if not p.is_absolute():
            p = crate_dir / p
        if sha256_file(p) != digest:
            return False
    return all(sha256_file(Path(p)) == d for p, d in extra.items())


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":  # no fcntl: rely on atomic renames alone
        yield
        return
    import fcntl

    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _say(echo: Echo | None, level: int, text: str) -> None:
    if echo is not None and _knobs.verbose() >= level:
        echo(text)


def ensure_built(
    crate: str | Path,
    *,
    arch: Sequence[str] | None = None,
    profile: Profile = "release",
    fmad: bool = True,
    rebuild: bool = False,
    echo: Echo | None = None,
) -> Path:
    """The manifest of a fresh build of ``crate``, building it if needed; with
    ``rebuild``, a new build that replaces the cached one."""
    toml = crate_manifest(crate)
    lookup, cache_dir = lookup_key(toml, arch=arch, profile=profile, fmad=fmad)
    root = _usable_cache_dir(cache_dir)
    index = root / "index" / f"{lookup}.json"
    extra = _extra_inputs(toml)
    with _locked(root / "locks" / f"{lookup}.lock"):
        if not rebuild:
            cached = _cached_manifest(root, index, toml.parent, extra)
            if cached is not None:
                _say(echo, 2, f"pyoxide: {toml.parent.name} is fresh in {cached.parent}")
                return cached
        _say(echo, 1, f"pyoxide: building {toml.parent.name} ({profile})")
        (root / "tmp").mkdir(parents=True, exist_ok=True)
        for attempt in range(1, BUILD_ATTEMPTS + 1):
            before = _snapshot(toml.parent, _last_sources(root, index, toml.parent))
            tmp = make_temp_dir(root / "tmp", "build-")
            try:
                manifest = _build_into(tmp, toml, arch, profile, fmad, echo)
                changed = _changed_during_build(manifest, toml.parent, before)
                if before.get(str(toml.resolve())) != sha256_file(toml):
                    changed.append(str(toml))
                if not changed:
                    break
                _say(echo, 1, f"pyoxide: {', '.join(changed)} changed during the build; again")
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            shutil.rmtree(tmp, ignore_errors=True)
            if attempt == BUILD_ATTEMPTS:
                raise BuildError(
                    f"the sources of {toml.parent.name} changed during each of "
                    f"{BUILD_ATTEMPTS} builds ({', '.join(changed)}), so no build matches "
                    "them. Fix: load the crate again once its files stop changing."
                )
        try:
            # Hash the inputs again: the build itself may have written the Cargo.lock
            # (a crate built for the first time), and the next load will see it.
            extra = _extra_inputs(toml)
            content = json.dumps([lookup, sorted(manifest.sources), sorted(extra.items())])
            key = hashlib.sha256(content.encode()).hexdigest()[:24]
            final = root / "builds" / f"{manifest.crate_name}-{key}"
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(tmp, final)
            except OSError:
                if not final.is_dir():
                    raise
                # Same inputs, already there: keep it unless it is damaged, or a rebuild
                # was asked for (a build loaded elsewhere keeps its open files).
                if rebuild or not _usable(final / manifest.path.name):
                    trash = Path(tempfile.mkdtemp(dir=root / "tmp", prefix="replaced-"))
                    os.rename(final, trash / "entry")
                    os.rename(tmp, final)
                    shutil.rmtree(trash, ignore_errors=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        entry = {"build": final.name, "manifest": manifest.path.name, "inputs": extra}
        atomic_write(index, json.dumps(entry, indent=1))
        return final / manifest.path.name


def _usable_cache_dir(root: Path) -> Path:
    """``root`` (cargo-oxide created it and checked that it is the user's own), with its
    folders; a ConfigError (not a traceback) when they cannot be made. Like the files in
    them, they are readable by others but writable only by the user: a build in them is
    loaded into this process."""
    try:
        for part in ("index", "builds", "locks", "tmp"):
            (root / part).mkdir(mode=0o755, exist_ok=True)
        if not os.access(root / "tmp", os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable")
    except OSError as e:
        what = "is a file, not a folder" if root.is_file() else (e.strerror or str(e))
        raise ConfigError(
            "PYOXIDE_CACHE_DIR", str(root), f"a writable folder for the build cache ({what})"
        ) from None
    return root


def _build_into(
    tmp: Path,
    toml: Path,
    arch: Sequence[str] | None,
    profile: Profile,
    fmad: bool,
    echo: Echo | None,
) -> Manifest:
    result = build(
        toml, arch=arch, profile=profile, out_dir=tmp, fmad=fmad,
        echo=echo if _knobs.verbose() >= 1 else None,
    )  # fmt: skip
    manifest = read_manifest(result.manifest)
    if manifest.path.parent != tmp.resolve():
        raise ManifestError(
            f"cargo-oxide wrote its manifest to {manifest.path}, not to the "
            f"requested --out-dir {tmp}. Fix: update cargo-oxide."
        )
    return manifest


def _last_sources(root: Path, index: Path, crate_dir: Path) -> list[str]:
    """The source files of the build the index last named (may be outside the crate)."""
    try:
        entry = json.loads(index.read_text(encoding="utf-8"))
        manifest = read_manifest(root / "builds" / entry["build"] / entry["manifest"])
    except (OSError, ValueError, KeyError, TypeError, LoadError):
        return []
    return [p if Path(p).is_absolute() else str(crate_dir / p) for p, _ in manifest.sources]


def _usable(path: Path) -> bool:
    try:
        manifest = read_manifest(path)
        for artifact in manifest.artifacts:
            artifact.read()
        manifest.read_emulator()
    except LoadError:
        return False
    return True


def _cached_manifest(
    root: Path, index: Path, crate_dir: Path, extra: dict[str, str | None]
) -> Path | None:
    try:
        entry = json.loads(index.read_text(encoding="utf-8"))
        path: Path = root / "builds" / entry["build"] / entry["manifest"]
        manifest = read_manifest(path)
    except (OSError, ValueError, KeyError, TypeError, ManifestError):
        return None
    if entry.get("inputs") != extra or not is_fresh(manifest, crate_dir, extra):
        return None
    try:
        for artifact in manifest.artifacts:
            artifact.read()  # present and unchanged
        manifest.read_emulator()
    except LoadError:
        return None
    return path
