"""The README and the guide (docs/guide/*.md) show only code that works.

- Every guide page is linked from the README, and every relative link resolves.
- Every fenced block names its language; ``text`` blocks are output, everything else runs
  or is checked:
  - ``python`` blocks carry a marker comment on the line above: ``<!-- test: emu -->``
    runs the block here in a fresh interpreter (NumPy arrays, the CPU emulator),
    ``<!-- test: gpu -->`` on a GPU machine (``pytest -m gpu``). A ``print(...)  # X``
    line asserts that X is printed.
  - ``rust`` blocks appear verbatim (comments and white space aside) in a crate the test
    suite builds and checks (the fixture crates, kernels_rs), so a kernel the docs show
    is a kernel that compiles and is tested.
  - ``sh`` blocks name scripts that exist and ``pyoxide`` subcommands and options that
    the CLI has (the README's quickstart also runs, in test_readme_quickstart.py).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.caches import cache_folder
from helpers.fixtures import REPO_DIR
from helpers.probes import requires_gpu

README = REPO_DIR / "README.md"
GUIDE = REPO_DIR / "docs" / "guide"
PAGES = [README, *sorted(GUIDE.glob("*.md"))]
#: Where a Rust block of the docs must appear: crates the test suite builds and checks.
RUST_HOMES = [
    REPO_DIR / "crates" / "oxide-device" / "tests" / "fixtures",
    REPO_DIR / "tests" / "fixtures",
    REPO_DIR / "kernels_rs" / "src",
    REPO_DIR / "kernels_sm90a" / "src",
    REPO_DIR / "gallery" / "src",
]
_FENCE = re.compile(r"(?:<!--\s*test:\s*(\w+)\s*-->\n)?```(\w*)\n(.*?)```", re.S)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    marker: str | None
    code: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO_DIR)}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for m in _FENCE.finditer(text):
            line = text.count("\n", 0, m.start(2)) + 1
            found.append(Block(page, line, m.group(2), m.group(1), m.group(3)))
    return found


def _of(lang: str, marker: str | None = None) -> list[Block]:
    return [b for b in blocks() if b.lang == lang and (marker is None or b.marker == marker)]


def test_every_guide_page_is_linked_from_the_readme() -> None:
    readme = README.read_text()
    missing = [p.name for p in GUIDE.glob("*.md") if f"(docs/guide/{p.name})" not in readme]
    assert not missing, f"guide pages the README does not link: {missing}"


def _prose(page: Path) -> str:
    """The page without its code: fenced blocks and inline code spans."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_DIR)))
def test_relative_links_resolve(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", _prose(page)):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_every_block_names_its_language_and_python_its_test() -> None:
    for b in blocks():
        assert b.lang in ("python", "rust", "sh", "text"), f"{b}: fence language {b.lang!r}"
        if b.lang == "python":
            assert b.marker in ("emu", "gpu"), f"{b}: a python block needs <!-- test: ... -->"
    assert _of("python", "emu") and _of("python", "gpu") and _of("rust") and _of("sh")


def _run(block: Block, tmp_path: Path, cache: Path) -> None:
    env = dict(os.environ, PYOXIDE_CACHE_DIR=str(cache))
    script = tmp_path / "snippet.py"
    script.write_text(block.code)
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, f"{block} failed:\n{proc.stdout}\n{proc.stderr}"
    for expected in re.findall(r"^\s*print\(.*\)\s*#\s*(.+)$", block.code, re.M):
        assert expected.strip() in proc.stdout, f"{block}: expected {expected!r} in its output"


@pytest.fixture(scope="module")
def docs_cache(tmp_path_factory: pytest.TempPathFactory, shared_sysroot: Path) -> Path:
    """One cache for every snippet, as one user's machine has (the first builds)."""
    return cache_folder(tmp_path_factory.mktemp("docs-cache"), shared_sysroot)


@pytest.mark.parametrize("block", _of("python", "emu"), ids=str)
def test_python_blocks_run_on_the_emulator(block: Block, tmp_path: Path, docs_cache: Path) -> None:
    _run(block, tmp_path, docs_cache)


@pytest.mark.gpu
@requires_gpu("the block launches on the GPU")
@pytest.mark.parametrize("block", _of("python", "gpu"), ids=str)
def test_python_blocks_run_on_the_gpu(block: Block, tmp_path: Path, docs_cache: Path) -> None:
    _run(block, tmp_path, docs_cache)


def _normalised(code: str) -> str:
    code = re.sub(r"//[^\n]*", "", code)
    return " ".join(code.split())


def _rust_files() -> list[str]:
    return [
        _normalised(p.read_text())
        for home in RUST_HOMES
        for p in home.rglob("*.rs")
        if "target" not in p.relative_to(home).parts
    ]


_HEADER = re.compile(r"^\s*(use [^;]+;|#!\[[^\]]+\])\s*$", re.M)


@pytest.mark.parametrize("block", _of("rust"), ids=str)
def test_rust_blocks_are_in_a_tested_crate(block: Block) -> None:
    """The block's items appear in one file, with its `use` lines and crate attributes
    anywhere in that file (a fixture's header is shared by its kernels)."""
    header = [_normalised(h) for h in _HEADER.findall(block.code)]
    items = _normalised(_HEADER.sub("", block.code))
    homes = [f for f in _rust_files() if items in f and all(h in f for h in header)]
    assert homes, (
        f"{block}: this kernel is in no crate the tests build; copy it into one "
        "(e.g. crates/oxide-device/tests/fixtures/readme/src/lib.rs) and test it there"
    )


def _cli_commands() -> dict[str, set[str]]:
    import click

    from pyoxide.cli import cli

    ctx = click.Context(cli)
    commands = {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}
    return {
        name: {opt for p in cmd.params for opt in getattr(p, "opts", [])}
        for name, cmd in commands.items()
        if cmd is not None
    }


@pytest.mark.parametrize("block", _of("sh"), ids=str)
def test_sh_blocks_name_what_exists(block: Block) -> None:
    cli_commands = _cli_commands()
    for raw in block.code.splitlines():
        lexer = shlex.shlex(raw, posix=True, punctuation_chars=True)
        lexer.commenters = "#"
        tokens = list(lexer)
        commands: list[list[str]] = [[]]
        for token in tokens:
            if token in ("&&", ";", "||", "|"):
                commands.append([])
            else:
                commands[-1].append(token)
        for words in filter(None, commands):
            program = words[0]
            if "/" in program and not program.startswith("/"):
                path = REPO_DIR / program.split("/", 1)[1] if program.startswith("pyoxide/") else (
                    REPO_DIR / program
                )  # fmt: skip
                assert path.is_file() and os.access(path, os.X_OK), f"{block}: no script {program}"
            elif program == "pyoxide":
                sub = words[1]
                assert sub in cli_commands, f"{block}: pyoxide has no command {sub!r}"
                for opt in (w.split("=", 1)[0] for w in words[2:] if w.startswith("-")):
                    assert opt in cli_commands[sub], f"{block}: `pyoxide {sub}` has no {opt}"
