"""Tuning on the emulator with planted times (tests/fixtures/tuned_kernels): the tuner
run on one fixture kernel, and choices planted in the cache as `pyoxide tune` keeps them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyoxide
from pyoxide._launch import tune_space as _tune_space
from pyoxide._launch import tune_store as _tune_store
from pyoxide._manifest import abi as _abi
from pyoxide.bench import tune as _tune
from pyoxide.spec import Spec
from pyoxide.verify import load_specs

from .bundled import TUNED_KERNELS
from .fake_cupy import FakeCuda

#: Where choices were tuned, for plant_choices: another model of the fake GPU's
#: architecture (sm_90), and the fake GPU's own model.
H200 = {"device": "NVIDIA H200", "arch": "sm_90"}
OWN = {"device": FakeCuda.device_name, "arch": f"sm_{FakeCuda.compute_capability}"}
#: What ``which``'s hand pick runs: (entry, block).
HAND = ("which_0", 128)


def spec(name: str) -> Spec:
    return next(s for s in load_specs(TUNED_KERNELS / "specs") if s.kernel == name)


def planted(times: dict[str, float], default: float = 100.0) -> _tune.Timing:
    """Microseconds by candidate label (``which_1 block=256``); each run is called once."""

    def timing(candidate: _tune_space.Candidate, shape: Any, run: Callable[[], None]) -> float:
        run()
        return times.get(candidate.label, default)

    return timing


def tune(manifest: Path, name: str, times: dict[str, float], *shapes: tuple[int, ...],
         backend: str = "emu", **kw: Any) -> dict[str, Any]:  # fmt: skip
    module = pyoxide.load(manifest, tuned=False)
    return _tune.tune_crate(module, [spec(name)], backend=backend, timing=planted(times),
                            sizes=list(shapes) or None, **kw)  # fmt: skip


def plant_choices(manifest: Path, choices: list[dict[str, Any]]) -> None:
    """Cache ``which``'s choices (each: which_1 for 512 < n <= 1024 unless it says
    otherwise) as `pyoxide tune` would."""
    base = {"kernel": "which_0", "entry": "which_1", "bucket": [1024]}
    cache_choices(manifest, [{**base, **c} for c in choices])


def cache_choices(manifest: Path, choices: list[dict[str, Any]]) -> None:
    """Cache the crate's ``choices`` (kernel, entry, bucket, device, arch, launch; the
    times made up) as `pyoxide tune` would."""
    mod = pyoxide.load(manifest, tuned=False)
    why = {"time_us": 1.0, "hand_us": 2.0, "shape": [1000], "candidates": 4, "rejected": 0}
    path = _tune_store.cache_file(mod.manifest)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = _tune_store.tuning_key(mod.manifest)
    file = {"version": _abi.TUNED_FILE_VERSION, "crate": mod.manifest.crate_name, "key": key}
    path.write_text(json.dumps({**file, "choices": [{**why, **c} for c in choices]}))
