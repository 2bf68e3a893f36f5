"""The shape of the package: no import cycle among pyoxide's modules (imports at any
depth, TYPE_CHECKING ones too), no Python file over 450 lines, every error class
pickles, and the kernel suite lists the same tests for every backend."""

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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_DIR).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the pyoxide modules it imports (a `from . import x` of a submodule counts
    as importing that submodule; the implicit import of a parent package does not)."""
    # A compiled module is a node too, through its stub (pyoxide/_native.pyi).
    stubs = [p for p in PACKAGE.rglob("*.pyi") if not p.with_suffix(".py").exists()]
    modules = {_module_name(p): p for p in [*PACKAGE.rglob("*.py"), *stubs]}
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
    assert graph.get("pyoxide._launch")
    assert_dag(graph)


def test_the_graph_sees_every_kind_of_import() -> None:
    """The graph sees relative imports at any depth (so the DAG test can fail)."""
    graph = import_graph()
    assert "pyoxide._args" in graph["pyoxide._launch"]
    assert "pyoxide._manifest" in graph["pyoxide.backends.cupy"]  # a TYPE_CHECKING import
    assert "pyoxide.backends.cupy._native" in graph["pyoxide.backends.cupy"]  # in a function
    assert "pyoxide._native" in graph["pyoxide._launch"]  # a compiled module, by its stub


RUST_PATH = re.compile(r"\b((?:crate|super|self)(?:::(?:super|\w+))*)(?:::\{([^}]*)\})?")


def _rust_modules(src: Path) -> dict[tuple[str, ...], Path]:
    """A crate's module files: src/lib.rs is (), src/a.rs and src/a/mod.rs are ("a",)."""
    modules = {}
    for path in src.rglob("*.rs"):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] in ("lib", "main", "mod"):
            parts = parts[:-1]
        modules[parts] = path
    return modules


def rust_module_graph(src: Path) -> dict[tuple[str, ...], set[tuple[str, ...]]]:
    """module -> the modules of the same crate it names through `crate::`, `super::` or
    `self::` paths, leaving out a module's own ancestors and descendants (a parent
    declares its children; a child may use its parent's items)."""
    modules = _rust_modules(src)
    graph: dict[tuple[str, ...], set[tuple[str, ...]]] = {m: set() for m in modules}
    for module, path in modules.items():
        text = re.sub(r"//[^\n]*", "", path.read_text())
        for m in RUST_PATH.finditer(text):
            segments = m.group(1).split("::")
            heads = [[*segments, s.strip().split("::")[0]] for s in (m.group(2) or "").split(",")]
            for full in heads if m.group(2) else [segments]:
                base: tuple[str, ...] = () if full[0] == "crate" else module
                rest = full[1:] if full[0] in ("crate", "self") else full
                while rest and rest[0] == "super":
                    base, rest = base[:-1], rest[1:]
                target = (*base, *[r for r in rest if r])
                while target not in modules:
                    target = target[:-1]
                related = target[: len(module)] == module or module[: len(target)] == target
                if not related:
                    graph[module].add(target)
    return graph


RUST_CRATES = sorted(
    p.parent for p in [*REPO_DIR.glob("crates/*/src"), REPO_DIR / "kernels_rs/src"]
)


@pytest.mark.parametrize("crate", RUST_CRATES, ids=lambda p: p.name)
def test_the_rust_modules_of_a_crate_form_a_dag(crate: Path) -> None:
    assert_dag(rust_module_graph(crate / "src"), "::".join)


def test_the_rust_graph_sees_crate_super_and_grouped_paths() -> None:
    """The Rust graph follows `crate::a::b`, `super::x` and `use crate::{a, b}` (so the
    DAG test can fail)."""
    graph = rust_module_graph(REPO_DIR / "crates" / "oxide-macros" / "src")
    assert ("call",) in graph[("expand",)]  # use crate::call::{call_kernel, turbofish}
    assert ("validate",) in graph[("host",)]
    device = rust_module_graph(REPO_DIR / "crates" / "oxide-device" / "src")
    assert ("arch", "host", "block") in device[("arch", "host", "engine")]  # super::block


def test_no_python_file_is_over_450_lines() -> None:
    long = {
        str(p.relative_to(REPO_DIR)): n
        for p in PACKAGE.rglob("*.py")
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
    for p in [*PACKAGE.rglob("*.py"), REPO_DIR / "README.md"]:
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
    from helpers.arraylibs import array_lib

    def skips(param: Any) -> list[str]:
        return [m.kwargs["reason"] for m in param.marks if m.name == "skip"]

    assert skips(array_lib("emu", "reads a texture")) == ["not on the emulator: reads a texture"]
    assert skips(array_lib("emu")) == []
    assert skips(array_lib("cupy", "reads a texture")) == []


NATIVE_SRC = REPO_DIR / "crates" / "pyoxide-native" / "src"
#: What the native module may not read: another object's private attributes (a name
#: `_x` in a string literal), its `__dict__`, or the environment (pyoxide/_knobs.py is
#: the one reader; the launchers get a knob generation).
_PRIVATE_NAME = re.compile(r'"_[A-Za-z]\w*"')
_REACH_INS = re.compile(r"__dict__|\benviron\b|\bgetenv\b")


def native_reach_ins(text: str) -> list[str]:
    """Private attribute names, `__dict__` and environment reads in Rust source `text`,
    leaving out comments and the names the module defines for itself (`m.add("_x", …)`,
    `#[pyo3(name = "_native")]`)."""
    code = re.sub(r"//[^\n]*", "", text)
    code = re.sub(r'\b(m\.add\(|name\s*=)\s*"_\w+"', r"\1", code)
    return _PRIVATE_NAME.findall(code) + _REACH_INS.findall(code)


def test_the_native_module_reaches_into_nothing() -> None:
    """The launch contract is passed in (a plan, a runtime, hooks, a knob generation):
    crates/pyoxide-native reads no private attribute, no `__dict__`, no environment."""
    found = {
        str(p.relative_to(REPO_DIR)): hits
        for p in NATIVE_SRC.rglob("*.rs")
        if (hits := native_reach_ins(p.read_text()))
    }
    assert found == {}


def test_the_native_reach_in_rule_can_fail() -> None:
    assert native_reach_ins('k.getattr(intern!(py, "_last_kernel"))') == ['"_last_kernel"']
    assert native_reach_ins('let d = b.getattr("__dict__");') == ["__dict__"]
    assert native_reach_ins('py.import("os")?.getattr("environ")') == ["environ"]
    assert native_reach_ins('m.add("_build_stamp", 1)?; // "_note"') == []
    assert native_reach_ins('#[pyo3(name = "_native")]') == []


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
    """`_prebuilt`, `_rust`, `_bin` are spelled in pyoxide/_layout.py only (the bundling
    step and the runtime both take them from there); no Rust code names them (the wheel's
    bundling step is Python, and no build script packages anything)."""
    scripts = [p for p in (REPO_DIR / "scripts").rglob("*") if p.is_file()]
    python = [
        p for p in [*PACKAGE.rglob("*.py"), *scripts]
        if p.suffix == ".py" or p.read_bytes().startswith(b"#!/usr/bin/env python")
    ]  # fmt: skip
    python = [p for p in python if not LAYOUT_SEGMENT.search(p.relative_to(REPO_DIR).as_posix())]
    assert len(python) > 50
    assert _naming_layout(python, _python_strings) == ["pyoxide/_layout.py"]
    rust = [p for p in REPO_DIR.glob("*/**/src/**/*.rs") if "target" not in p.parts]
    rust = [p for p in rust if not LAYOUT_SEGMENT.search(p.relative_to(REPO_DIR).as_posix())]
    assert len(rust) > 50
    assert _naming_layout(rust, _rust_strings) == []
    assert not (REPO_DIR / "crates" / "pyoxide-native" / "build.rs").exists()


def test_the_wheel_includes_what_the_layout_generates() -> None:
    from pyoxide import _layout

    maturin = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())["tool"]["maturin"]
    included = sorted(i["path"] for i in maturin["include"])
    assert included == sorted(f"pyoxide/{part}" for part in _layout.WHEEL_PARTS)


def test_architecture_names_are_parsed_by_one_rule() -> None:
    """oxide-abi's rule (src/arch.rs) and its generated Python copy decide the same, and no
    other module parses an `sm_` name."""
    from pyoxide import _abi

    for name, want in _abi.ARCH_EXAMPLES.items():
        try:
            got: Any = _abi.parse_arch(name)
        except ValueError:
            got = None
        assert got == want, name
    parsing = re.compile(r"""startswith\(\s*["']sm_|["']\^?sm_[\\(\[]""")
    files = [p for p in PACKAGE.rglob("*.py") if p.name != "_abi.py"]
    assert [p.name for p in files if parsing.search(p.read_text())] == []
