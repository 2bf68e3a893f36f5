"""Finding and loading a crate's specs (``specs/*.py``, each defining ``SPECS``), checked
as they load: a file that fails to import, defines no ``SPECS`` or whose ``SPECS`` is not
a list of :class:`~pyoxide.spec.Spec` is a :class:`SpecFileError` naming the file and the
fix, and the other files' specs still load. What a spec's functions return is checked
case by case (pyoxide/verify/_case.py)."""

from __future__ import annotations

import importlib.util
import sysconfig
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..spec import Out, Spec

#: Where a crate keeps its specs: <crate>/specs/*.py, each defining SPECS.
SPECS_DIR = "specs"


@dataclass(frozen=True)
class LoadedSpec:
    """A spec and where it was defined: `index` in the `SPECS` of `file`."""

    spec: Spec
    file: Path
    index: int

    @property
    def key(self) -> tuple[str, int]:
        """What names it to another process that loaded the same files."""
        return (str(self.file), self.index)


@dataclass(frozen=True)
class SpecFileError:
    file: Path
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"file": str(self.file), "message": self.message}


def find_specs(crate: Path | None) -> Path | None:
    """The specs folder of `crate` (a crate folder, its Cargo.toml, or a built
    ``<crate>.manifest.json``: the folder beside it or beside the crate it was built
    from); None: the bundled kernels' (kernels_rs/specs in a source checkout, else the
    copy in pyoxide/_prebuilt/specs)."""
    if crate is not None:
        if crate.name.endswith(".manifest.json"):
            from .._manifest.reader import read_manifest

            origin = Path(read_manifest(crate).crate_manifest_path).parent
            places = [crate.parent, crate.parent.parent, origin]
        else:
            places = [crate.parent if crate.name == "Cargo.toml" else crate]
        found = [p / SPECS_DIR for p in places if (p / SPECS_DIR).is_dir()]
        return found[0] if found else None
    from .._build.layout import PREBUILT
    from ..bundled import bundled_crate_dir

    src = bundled_crate_dir()
    for folder in ([src / SPECS_DIR] if src else []) + [PREBUILT / SPECS_DIR]:
        if folder.is_dir():
            return folder
    return None


def spec_files(where: Path) -> list[Path]:
    """The spec files of a folder (``*.py`` not starting with ``_``: those are helpers),
    or `where` itself when it is a file."""
    if where.is_file():
        return [where.resolve()]
    return [p.resolve() for p in sorted(where.glob("*.py")) if not p.name.startswith("_")]


def read_specs(where: Path) -> tuple[list[LoadedSpec], list[SpecFileError]]:
    """Every spec of the folder's files (or of one file), in file order, and the files
    that gave none usable. Two specs of one kernel: the second is an error."""
    loaded: list[LoadedSpec] = []
    errors: list[SpecFileError] = []
    seen: dict[str, Path] = {}
    for path in spec_files(where):
        specs, error = _read_file(path)
        if error is not None:
            errors.append(SpecFileError(path, error))
            continue
        for i, spec in enumerate(specs):
            if spec.kernel in seen:
                errors.append(SpecFileError(path, (
                    f"SPECS[{i}] specifies {spec.kernel!r}, which {seen[spec.kernel].name} "
                    "already specifies. Fix: keep one spec per kernel."
                )))  # fmt: skip
                continue
            seen[spec.kernel] = path
            loaded.append(LoadedSpec(spec, path, i))
    return loaded, errors


def load_specs(where: Path) -> list[Spec]:
    """Every spec of the folder (or file); a file that gives none usable raises
    SpecError naming it."""
    from ..errors import SpecError

    loaded, errors = read_specs(where)
    if errors:
        raise SpecError("; ".join(f"{e.file}: {e.message}" for e in errors))
    return [s.spec for s in loaded]


def _read_file(path: Path) -> tuple[list[Spec], str | None]:
    name = f"_pyoxide_specs_{path.parent.parent.name}_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        return [], "not a Python file Python can import"
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except BaseException as e:  # SystemExit, or anything the file's code raises
        if isinstance(e, KeyboardInterrupt):
            raise
        return [], f"importing it raised {describe_exception(e)}"
    if not hasattr(module, "SPECS"):
        near = [n for n in vars(module) if n.upper().startswith("SPEC") and n != "Spec"]
        hint = f" (it defines {', '.join(near)}: a misspelling?)" if near else ""
        return [], f"defines no SPECS{hint}. Fix: SPECS = [Spec(...), ...]"
    specs = module.SPECS
    if isinstance(specs, Spec):
        return [], "SPECS is a single Spec. Fix: a list, SPECS = [Spec(...)]"
    if isinstance(specs, Mapping | str | bytes) or not isinstance(specs, list | tuple):
        return [], f"SPECS is {_kind(specs)}, not a list of Spec. Fix: SPECS = [Spec(...), ...]"
    problems = [f"SPECS[{i}]: {p}" for i, s in enumerate(specs) if (p := spec_problem(s))]
    if problems:
        return [], "; ".join(problems)
    return list(specs), None


def spec_problem(spec: object) -> str | None:
    """What makes `spec` unusable (checked before any of its code runs), or None."""
    if not isinstance(spec, Spec):
        return f"is {_kind(spec)}, not a pyoxide.spec.Spec"
    from .._manifest.abi import SCALARS

    if not isinstance(spec.kernel, str) or not spec.kernel:
        return f"kernel= must be the kernel's name (a string), got {spec.kernel!r}"
    who = f"the spec of {spec.kernel}"
    if not isinstance(spec.outputs, Mapping) or not spec.outputs:
        return f"{who}: outputs= must map each output parameter to an Out (nothing to check)"
    for name, out in spec.outputs.items():
        if not isinstance(out, Out):
            return f"{who}: outputs[{name!r}] is {_kind(out)}. Fix: Out() or Out(lambda case: ...)"
    for field in ("inputs", "reference"):
        if not callable(getattr(spec, field)):
            return f"{who}: {field}= must be a function"
    for field in ("shapes", "launch", "observe", "scale"):
        value = getattr(spec, field)
        if value is not None and not callable(value):
            return f"{who}: {field}= must be a function or None"
    tol = spec.tolerance
    if not callable(tol) and (not isinstance(tol, int | float) or isinstance(tol, bool)):
        return f"{who}: tolerance= must be a number or a function of the case"
    if isinstance(spec.dtypes, str) or not spec.dtypes:
        return f"{who}: dtypes= must be a non-empty tuple of type names, e.g. ('f32',)"
    unknown = [d for d in spec.dtypes if d not in SCALARS]
    if unknown:
        return f"{who}: dtypes= names unknown type(s) {unknown} (known: {', '.join(SCALARS)})"
    return None


def _kind(value: object) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def describe_exception(e: BaseException) -> str:
    """``Type: message``, with where in the user's code it was raised (the innermost
    frame outside pyoxide and the standard library)."""
    text = f"{type(e).__name__}: {e}".strip().rstrip(":")
    others = (str(Path(__file__).parent.parent), sysconfig.get_paths()["stdlib"])
    mine = [
        f for f in traceback.extract_tb(e.__traceback__)
        if not f.filename.startswith(others) and "-packages" not in f.filename
        and not f.filename.startswith("<")
    ]  # fmt: skip
    if mine:
        text += f" (at {mine[-1].filename}:{mine[-1].lineno})"
    return text[:600]
