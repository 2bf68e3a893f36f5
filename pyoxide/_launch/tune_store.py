"""Where tuned choices live: ``pyoxide tune``'s cache, and the manifest.

``<cache>/tuned/<crate>-<key>.json`` (oxide-abi ``TunedFile``) holds the choices measured
on one build: :func:`tuning_key` is the manifest's toolchain hash (every tool and library
that made the code) with the hashes of the sources it was made from and the code
generation options, so a changed source, compiler or option finds no choices (and a
retune), while moving the crate or rebuilding it unchanged keeps them. A choice is kept
per kernel, GPU model, architecture and shape bucket (``TunedChoice.place``); a new one
replaces the old one at its place and leaves the others.

``pyoxide build --tuned`` copies the choices of the build it just made into its manifest
(:func:`embed`), so a wheel carries them; a loaded module runs the manifest's choices and
the cache's, the cache's first where both have one (:func:`choices_for`).

A crate ships choices in its source tree: ``tuned.json`` beside its Cargo.toml
(:data:`SHIPPED_FILE`, the cache file's format; the bundled crates' come from a GPU run,
scripts/ship_tuned). ``pyoxide build`` always puts them in the manifest, under the
cache's with ``--tuned``, and a module loaded from the crate's folder reads them under the
manifest's and the cache's. Unlike the cache's, they are not tied to one build: the key
they carry names the build that measured them, and a choice whose entry or launch values
the crate no longer has is dropped at load (pyoxide/_launch/tuned.py), so a source edit
costs at most the speed of a stale choice, never a launch of something that is not there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .._manifest import abi as _abi
from .._manifest import knobs as _knobs
from .._manifest.fs import atomic_write
from .._manifest.json_checker import JsonChecker
from .._manifest.reader import Manifest, read_manifest
from .._manifest.tune_spec import TunedChoice, layered, merged, read_choices
from ..errors import ManifestError

#: The cache's folder of tuned choices (beside the build cache's folders).
TUNED_DIR = "tuned"
#: A crate's shipped choices, beside its Cargo.toml.
SHIPPED_FILE = "tuned.json"


def tuning_key(manifest: Manifest) -> str:
    """What a choice was measured on: the toolchain (the manifest's toolchain hash), the
    sources' contents and the code generation options (fmad, profile)."""
    digests = sorted(digest for _, digest in manifest.sources)
    content = json.dumps([manifest.toolchain.hash, digests, manifest.fmad, manifest.profile])
    return hashlib.sha256(content.encode()).hexdigest()[:24]


def tuned_dir() -> Path:
    return _knobs.cache_dir() / TUNED_DIR


def cache_file(manifest: Manifest) -> Path:
    return tuned_dir() / f"{manifest.crate_name}-{tuning_key(manifest)}.json"


def file_fields(path: Path, value: Any) -> tuple[JsonChecker, dict[str, Any]]:
    """A tuned-choices file's JSON (the cache's, a crate's tuned.json: oxide-abi's
    TunedFile) checked for its fields: the checker (read_choices takes it) and the
    fields."""
    c = JsonChecker(path)
    return c, c.obj(value, "$", ["version", "crate", "key", "choices"])


def read_file(path: Path, crate: str, key: str) -> tuple[TunedChoice, ...]:
    """The choices of a tuned-choices file; none when it is absent. A file of another
    crate or key (renamed by hand) or another version is ignored; a damaged one raises."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ()
    except (OSError, ValueError) as e:
        raise ManifestError(
            f"the tuned choices {path} cannot be read ({e}). Fix: delete the file and tune "
            "again (`pyoxide tune`)."
        ) from None
    c, v = file_fields(path, value)
    if v["version"] != _abi.TUNED_FILE_VERSION or v["crate"] != crate or v["key"] != key:
        return ()
    return read_choices(c, v["choices"], "choices")


def shipped_file(crate_dir: Path) -> Path:
    return crate_dir / SHIPPED_FILE


def read_shipped(crate_dir: Path, crate: str) -> tuple[TunedChoice, ...]:
    """The choices a crate ships in its source tree (none without the file). A file of
    another crate or version raises: it is checked in, and wrong."""
    path = shipped_file(crate_dir)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ()
    except (OSError, ValueError) as e:
        raise ManifestError(f"the shipped tuned choices {path} cannot be read ({e}). Fix: "
                            "write it again with scripts/ship_tuned.") from None  # fmt: skip
    c, v = file_fields(path, value)
    if v["version"] != _abi.TUNED_FILE_VERSION or v["crate"] != crate:
        raise ManifestError(
            f"{path} holds choices of crate {v['crate']!r}, version {v['version']}, where "
            f"{crate!r}, version {_abi.TUNED_FILE_VERSION} was expected. Fix: write it again "
            "with scripts/ship_tuned."
        )
    c.str_(v["key"], "$.key")
    return read_choices(c, v["choices"], "choices")


def shipped_for(manifest: Manifest) -> tuple[Path, tuple[TunedChoice, ...]]:
    """The shipped file of the crate ``manifest`` was built from, and its choices."""
    crate_dir = Path(manifest.crate_manifest_path).parent
    return shipped_file(crate_dir), read_shipped(crate_dir, manifest.crate_name)


def shipped_text(crate: str, key: str, choices: Sequence[TunedChoice]) -> str:
    """A crate's shipped choices as its file holds them (sorted, so a refresh diffs by
    place)."""
    ordered = sorted(choices, key=lambda c: (c.kernel, c.arch, c.device, c.bucket))
    return _file_text(crate, key, ordered)


def write_shipped(crate_dir: Path, crate: str, key: str, choices: Sequence[TunedChoice]) -> Path:
    path = shipped_file(crate_dir)
    atomic_write(path, shipped_text(crate, key, choices))
    return path


def cached_choices(manifest: Manifest) -> tuple[TunedChoice, ...]:
    return read_file(cache_file(manifest), manifest.crate_name, tuning_key(manifest))


#: Where a choice a module runs comes from (:func:`choices_for`), lowest layer first.
SOURCES = ("shipped", "manifest", "cache")


def choices_for(
    manifest: Manifest, shipped: tuple[TunedChoice, ...] = ()
) -> list[tuple[TunedChoice, str]]:
    """The choices a module of ``manifest`` runs, each with its source (:data:`SOURCES`):
    ``shipped`` (the crate's own file, for a module loaded from its folder), the
    manifest's over them, the cache's over those (:func:`layered`)."""
    layers = layered(shipped, manifest.tuned, cached_choices(manifest))
    return [(choice, SOURCES[i]) for choice, i in layers]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serializes the read-merge-write of one file across processes (where the OS has
    ``fcntl``; elsewhere the atomic rename alone, and the last writer wins)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":
        yield
        return
    import fcntl

    with path.with_name(path.name + ".lock").open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def save(
    manifest: Manifest, choices: Sequence[TunedChoice], measured: Sequence[tuple[Any, ...]] = ()
) -> Path:
    """Keep ``choices`` in the cache beside the ones measured before on this build; the
    old choices at the ``measured`` places (kernel, GPU, architecture, bucket) go, where a
    new measurement kept the hand pick."""
    path = cache_file(manifest)
    key = tuning_key(manifest)
    gone = set(measured)
    with _locked(path):
        try:
            kept = read_file(path, manifest.crate_name, key)
        except ManifestError:
            kept = ()  # a damaged file: replaced
        kept = tuple(c for c in kept if c.place not in gone)
        atomic_write(path, _file_text(manifest.crate_name, key, merged(kept, tuple(choices))))
    return path


def _file_text(crate: str, key: str, choices: Sequence[TunedChoice]) -> str:
    value: dict[str, Any] = {
        "version": _abi.TUNED_FILE_VERSION,
        "crate": crate,
        "key": key,
        "choices": [c.as_json() for c in choices],
    }
    return json.dumps(value, indent=1) + "\n"


def embed(manifest_path: Path, cache: bool = True) -> tuple[int, Path | None] | None:
    """Put the crate's shipped choices (:func:`shipped_for`) and, with ``cache``, the
    cached choices of the build at ``manifest_path`` over them into its manifest (beside
    those it has): how many it holds then, and the shipped file if it had any; None (the
    manifest untouched) when there is neither."""
    manifest = read_manifest(manifest_path)
    path, shipped = shipped_for(manifest)
    if not shipped and not cache:
        return None
    choices = merged(shipped, manifest.tuned, cached_choices(manifest) if cache else ())
    value = json.loads(manifest_path.read_text(encoding="utf-8"))
    if choices:
        value["tuned"] = [c.as_json() for c in choices]
    else:
        value.pop("tuned", None)
    atomic_write(manifest_path, json.dumps(value, indent=2) + "\n")
    read_manifest(manifest_path)  # what was written reads back
    return len(choices), path if shipped else None
