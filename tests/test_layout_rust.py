"""The shape of the Rust side: the modules of each crate form a DAG, and the native
module (crates/pyoxide-native) reaches into no Python object's private state."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.fixtures import REPO_DIR
from test_layout import assert_dag

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


NATIVE_SRC = REPO_DIR / "crates" / "pyoxide-native" / "src"
#: What the native module may not read: another object's private attributes (a name
#: `_x` in a string literal), its `__dict__`, or the environment (pyoxide/_manifest/knobs.py is
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
