"""The shape of the package: no import cycle among pyoxide's modules (imports at any
depth, TYPE_CHECKING ones too); at most 12 top-level modules, packages that import only
from the layers below them, CuPy imported by the backends alone, scripts and specs that
use public names only, tests that mirror the packages; no Python file over 450 lines,
every error class pickles, and the kernel suite lists the same tests for every backend.
The Rust side's shape: tests/test_layout_rust.py."""

from __future__ import annotations

import ast
import inspect
import pickle
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomllib
from helpers.fixtures import REPO_DIR

import pyoxide.errors

PACKAGE = REPO_DIR / "pyoxide"


def sources(pattern: str) -> list[Path]:
    """The package's files matching `pattern`, less what the build generates into it (the
    bundled kernels' specs are copied there from kernels_rs/specs)."""
    from pyoxide._build import layout

    generated = (layout.PREBUILT, layout.KIT, layout.BIN)
    return [p for p in PACKAGE.rglob(pattern) if not any(g in p.parents for g in generated)]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_DIR).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the pyoxide modules it imports (a `from . import x` of a submodule counts
    as importing that submodule; the implicit import of a parent package does not)."""
    # A compiled module is a node too, through its stub (pyoxide/_launch/_native.pyi).
    stubs = [p for p in sources("*.pyi") if not p.with_suffix(".py").exists()]
    modules = {_module_name(p): p for p in [*sources("*.py"), *stubs]}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = (f"{base}.{node.module}" if node.module else base) if node.level else (
                    node.module or ""
                )  # fmt: skip
                targets = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets = targets or [base]
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    graph[name].add(t)
    return graph


def assert_dag(graph: dict[Any, set[Any]], name: Callable[[Any], str] = str) -> None:
    """Fail with the first cycle found in `graph` (node -> nodes it depends on)."""
    state: dict[Any, int] = {}

    def visit(m: Any, path: list[Any]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = [*path[path.index(n) :], n] if n in path else [m, n]
                raise AssertionError("cycle: " + " -> ".join(name(c) for c in cycle))
            if n not in state:
                visit(n, [*path, n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_the_package_imports_form_a_dag() -> None:
    graph = import_graph()
    assert graph.get("pyoxide._launch.kernel")
    assert_dag(graph)


def test_the_graph_sees_every_kind_of_import() -> None:
    """The graph sees relative imports at any depth (so the DAG test can fail)."""
    graph = import_graph()
    assert "pyoxide._launch.args" in graph["pyoxide._launch.kernel"]
    assert "pyoxide._manifest.reader" in graph["pyoxide.backends.cupy"]  # a TYPE_CHECKING import
    assert "pyoxide.backends.cupy._native" in graph["pyoxide.backends.cupy"]  # in a function
    # a compiled module, by its stub
    assert "pyoxide._launch._native" in graph["pyoxide._launch.kernel"]


# --- the rooms: packages, each importing only from the ones below it ----------------------

#: pyoxide's top-level modules and packages, lowest first; each imports only from its own
#: layer and the ones below ("" is pyoxide/__init__.py).
LAYERS: list[set[str]] = [
    {"errors", "_manifest"},  # what oxide-abi defines: its tables, the manifest, the knobs
    {"_build"},  # cargo oxide, the build cache, the package layout, scaffolds, stubs
    {"_launch", "backends"},  # the launch runtime: modules of kernels, launchers, backends
    # the bundled kernels' own Python (and kernels.pyi, the stubs of pyoxide.kernels, which
    # pyoxide build --bundled writes); PyTorch ops; types for annotations
    {"bundled", "kernels", "torch", "typing"},
    {"spec", "verify", "bench"},  # the testing harness
    {"", "__main__", "cli"},  # the front doors
]
HARNESS = LAYERS[4]


def top_level(module: str) -> str:
    """``pyoxide._launch.kernel`` -> ``_launch``; ``pyoxide`` -> ``""``."""
    return module.split(".")[1] if "." in module else ""


def layer_breaches(graph: dict[str, set[str]]) -> list[str]:
    """The imports of `graph` that reach a layer above the importer's."""
    layer = {name: i for i, names in enumerate(LAYERS) for name in names}
    return sorted(
        f"{m} -> {t}" for m, targets in graph.items() for t in targets
        if layer[top_level(t)] > layer[top_level(m)]
    )  # fmt: skip


def top_level_modules() -> list[str]:
    """The modules of the package's top level: its .py files but the package's own
    ``__init__`` and ``__main__`` (``python -m pyoxide``), its packages, and its compiled
    modules by their stubs (kernels.pyi, generated, describes the ``pyoxide.kernels``
    attribute: no module)."""
    packages = [p.name + "/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()]
    modules = [p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    stubs = [p.name for p in PACKAGE.glob("*.pyi") if not p.with_suffix(".py").exists()]
    return sorted([*packages, *modules, *[s for s in stubs if s != "kernels.pyi"]])


def test_the_package_has_at_most_12_top_level_modules() -> None:
    assert len(top_level_modules()) <= 12, top_level_modules()


def test_every_top_level_module_has_a_layer() -> None:
    names = {m.removesuffix("/").removesuffix(".py") for m in top_level_modules()}
    assert names <= set().union(*LAYERS), names - set().union(*LAYERS)


def test_each_package_imports_only_from_the_layers_below() -> None:
    """The manifest reader needs nothing of the build, the build nothing of the runtime,
    the runtime nothing of the bundled kernels nor of the testing harness."""
    assert layer_breaches(import_graph()) == []


def test_the_launch_runtime_imports_nothing_of_the_testing_harness() -> None:
    runtime = {m: t for m, t in import_graph().items() if top_level(m) in ("_launch", "backends")}
    assert len(runtime) > 15
    reached = {t for targets in runtime.values() for t in targets if top_level(t) in HARNESS}
    assert reached == set()


def test_the_layer_rule_can_fail() -> None:
    graph = {"pyoxide._launch.kernel": {"pyoxide.verify._case"}, "pyoxide.verify": set()}
    assert layer_breaches(graph) == ["pyoxide._launch.kernel -> pyoxide.verify._case"]
    assert layer_breaches({"pyoxide.cli.build": {"pyoxide._build.cargo"}}) == []


def test_tests_mirror_the_packages() -> None:
    """tests/NAME holds the tests of pyoxide/NAME (or pyoxide/_NAME); beside them, the
    kernel suite (kernels), GPU-only tests (gpu), fixtures and helpers."""
    packages = {m.strip("/_") for m in top_level_modules() if m.endswith("/")}
    folders = {p.name for p in (REPO_DIR / "tests").iterdir() if p.is_dir()}
    assert folders - {"kernels", "gpu", "fixtures", "helpers", "__pycache__"} == packages


def cupy_imports(path: Path) -> list[int]:
    """The lines of `path` that import CuPy (any form, at any depth)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        )  # fmt: skip
        if any(n.split(".")[0] == "cupy" for n in names):
            lines.append(node.lineno)
    return lines


def test_only_the_backends_import_cupy() -> None:
    """Everything else asks ``backends.gpu()`` (its arrays: ``.xp``; its devices' facts),
    so a test substitutes the GPU in one place."""
    found = {
        str(p.relative_to(REPO_DIR)): lines
        for p in sources("*.py")
        if "backends" not in p.relative_to(PACKAGE).parts and (lines := cupy_imports(p))
    }
    assert found == {}
    assert cupy_imports(PACKAGE / "backends" / "cupy" / "__init__.py")  # the rule can fail


#: Scripts that may import pyoxide's private modules, and why.
PRIVATE_IMPORTERS = {
    # A white-box benchmark of the compiled launcher itself (pyoxide._launch._native).
    "scripts/bench_native_launch",
    # The wheel's bundling step, a part of the build: the package layout's one home is
    # pyoxide/_build/layout.py.
    "scripts/packaging/pyoxide_backend.py",
}


def private_imports(path: Path) -> list[str]:
    """The private pyoxide modules (a segment starting with ``_``) `path` imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found += [n for n in names if n.startswith("pyoxide.") and "._" in f".{n[8:]}"]
    return found


def python_scripts() -> list[Path]:
    scripts = [p for p in (REPO_DIR / "scripts").rglob("*") if p.is_file()]
    shebang = b"#!/usr/bin/env python"
    return [p for p in scripts if p.suffix == ".py" or p.read_bytes().startswith(shebang)]


def test_scripts_and_specs_import_only_public_names() -> None:
    specs = [*REPO_DIR.glob("kernels_rs/specs/*.py"), *REPO_DIR.glob("gallery/specs/*.py")]
    files = [*python_scripts(), *specs]
    assert len(files) > 20
    found = {
        rel: names
        for p in files
        if (rel := str(p.relative_to(REPO_DIR))) not in PRIVATE_IMPORTERS
        and (names := private_imports(p))
    }
    assert found == {}
    assert private_imports(REPO_DIR / "scripts" / "bench_native_launch")  # the rule can fail


def test_no_python_file_is_over_450_lines() -> None:
    long = {
        str(p.relative_to(REPO_DIR)): n
        for p in sources("*.py")
        if (n := len(p.read_text().splitlines())) > 450
    }
    assert long == {}


ERRORS = [getattr(pyoxide.errors, n) for n in pyoxide.errors.__all__]


@pytest.mark.parametrize("cls", ERRORS, ids=[c.__name__ for c in ERRORS])
def test_every_error_class_round_trips_pickle(cls: type[Exception]) -> None:
    params = [
        p for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind is not p.VAR_KEYWORD and p.kind is not p.VAR_POSITIONAL
    ]  # fmt: skip
    args = [f"value of {p.name}" for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    kwargs = {
        p.name: (1, 2, 3) if p.name in ("block", "thread") else 7 if p.name == "returncode"
        else ["cargo", "oxide"] if p.name == "command" else f"value of {p.name}"
        for p in params if p.kind is p.KEYWORD_ONLY
    }  # fmt: skip
    e = cls(*(args or ["a message. Fix: something"]), **kwargs)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(e, protocol))
        assert type(back) is cls and str(back) == str(e) and back.args == e.args
        assert vars(back) == vars(e)


def test_remedies_name_only_extras_that_exist() -> None:
    extras = set(re.findall(r"^(\w+) = \[", _optional_dependencies(), re.MULTILINE))
    assert {"cuda", "cuda12"} <= extras
    named: set[str] = set()
    for p in [*sources("*.py"), REPO_DIR / "README.md"]:
        named |= set(re.findall(r"pyoxide\[(\w+)\]", p.read_text()))
    assert named and named <= extras, named - extras


def _optional_dependencies() -> str:
    text = (REPO_DIR / "pyproject.toml").read_text()
    return text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]


def _collected(backend: str) -> list[str]:
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
         "--backend", backend, str(REPO_DIR / "tests" / "kernels")],
        capture_output=True, text=True, cwd=REPO_DIR, check=True,
    )  # fmt: skip
    ids = [line for line in r.stdout.splitlines() if "::" in line]
    return sorted(re.sub(rf"\[{backend}-|-{backend}\]|\[{backend}\]", "[", i) for i in ids)


def test_the_kernel_suite_lists_the_same_tests_for_every_backend() -> None:
    emu, cupy = _collected("emu"), _collected("cupy")
    assert len(emu) > 50 and emu == cupy


def test_skip_on_emu_skips_only_the_emulator() -> None:
    """skip_on_emu on a test function (test_gemm_sm90) or on one of its params (the
    attention test's sm_90a schedules, beside the call that the emulator runs) skips the
    emulator's run of it, with the mark's reason; the emulator runs the rest."""
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "--backend", "emu", "-m", "gpu or not gpu",
         "tests/kernels/test_attention.py::test_gqa_causal_and_lse",
         "tests/kernels/test_gemm_sm90.py::test_every_tuned_instance_computes_the_same_product"],
        capture_output=True, text=True, cwd=REPO_DIR,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    skipped = re.findall(r"SKIPPED \[(\d+)\] [^:]+:\d+: (.*)", r.stdout)
    reasons = {reason: int(n) for n, reason in skipped}
    # Two dtypes × the 12 sm_90a instances (PINGPONG 0/1 × PERSISTENT 0/1/2 × D64_ROWS).
    assert reasons.get("not on the emulator: sm_90a code") == 24, r.stdout
    assert any(reason.startswith("not on the emulator: the wgmma") for reason in reasons)
    assert sum(reasons.values()) == int(re.search(r"(\d+) skipped", r.stdout)[1])  # type: ignore[index]
    assert re.search(r"\b2 passed", r.stdout), r.stdout  # the call, both dtypes


# --- the package layout: named in one module per language ---------------------------------

LAYOUT_SEGMENT = re.compile(r"(?:^|/)(_prebuilt|_rust|_bin)(?:/|$)")
RUST_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def _python_strings(path: Path) -> list[str]:
    """A Python file's string constants, less docstrings (which may describe the layout)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }  # fmt: skip
    return [
        n.value for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]  # fmt: skip


def _rust_strings(path: Path) -> list[str]:
    code = "\n".join(x for x in path.read_text().splitlines() if not x.lstrip().startswith("//"))
    return RUST_STRING.findall(code)


def _naming_layout(files: list[Path], strings: Callable[[Path], list[str]]) -> list[str]:
    return sorted(
        str(p.relative_to(REPO_DIR)) for p in files
        if any(LAYOUT_SEGMENT.search(s) for s in strings(p))
    )  # fmt: skip


def test_the_package_layout_is_named_in_one_module_per_language() -> None:
    """`_prebuilt`, `_rust`, `_bin` are spelled in pyoxide/_build/layout.py only (the bundling
    step and the runtime both take them from there); no Rust code names them (the wheel's
    bundling step is Python, and no build script packages anything)."""
    python = [*sources("*.py"), *python_scripts()]
    python = [p for p in python if not LAYOUT_SEGMENT.search(p.relative_to(REPO_DIR).as_posix())]
    assert len(python) > 50
    assert _naming_layout(python, _python_strings) == ["pyoxide/_build/layout.py"]
    rust = [p for p in REPO_DIR.glob("*/**/src/**/*.rs") if "target" not in p.parts]
    rust = [p for p in rust if not LAYOUT_SEGMENT.search(p.relative_to(REPO_DIR).as_posix())]
    assert len(rust) > 50
    assert _naming_layout(rust, _rust_strings) == []
    assert not (REPO_DIR / "crates" / "pyoxide-native" / "build.rs").exists()


def test_the_wheel_includes_what_the_layout_generates() -> None:
    from pyoxide._build import layout as _layout

    maturin = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())["tool"]["maturin"]
    included = sorted(i["path"] for i in maturin["include"])
    assert included == sorted(f"pyoxide/{part}" for part in _layout.WHEEL_PARTS)


def test_architecture_names_are_parsed_by_one_rule() -> None:
    """oxide-abi's rule (src/arch.rs) and its generated Python copy decide the same, and no
    other module parses an `sm_` name."""
    from pyoxide._manifest import abi as _abi

    for name, want in _abi.ARCH_EXAMPLES.items():
        try:
            got: Any = _abi.parse_arch(name)
        except ValueError:
            got = None
        assert got == want, name
    parsing = re.compile(r"""startswith\(\s*["']sm_|["']\^?sm_[\\(\[]""")
    files = [p for p in sources("*.py") if p != PACKAGE / "_manifest" / "abi.py"]
    assert [p.name for p in files if parsing.search(p.read_text())] == []


def test_device_run_collect_builds_every_fixture_crate_the_gpu_suite_loads() -> None:
    """Each ``*_manifest`` builder in tests/helpers is in gpu_carry.BUILDERS, which
    ``scripts/device_run collect`` runs: a builder left out is a crate the GPU machine,
    which has no Rust toolchain, would not have."""
    from helpers import gpu_carry

    builders = {
        f"{path.stem}.{node.name}"
        for path in (REPO_DIR / "tests" / "helpers").glob("*.py")
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef) and node.name.endswith("_manifest")
        # a builder takes nothing and returns the manifest's path (write_manifest(out_dir)
        # writes one; load_manifest() reads kernels_rs's)
        and not node.args.args and ast.unparse(node.returns or ast.Constant(None)) == "Path"
    }  # fmt: skip
    listed = {f"{b.__module__.rsplit('.', 1)[-1]}.{b.__name__}" for b in gpu_carry.BUILDERS}
    assert builders == listed
    assert (
        "from helpers.gpu_carry import build_all"
        in (REPO_DIR / "scripts" / "device_run").read_text()
    )
