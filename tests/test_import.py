"""`import pyoxide` stays cheap: no CuPy, no NumPy, no click, no native library, no subprocess."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from helpers.fixtures import TESTS_DIR

#: The imports `import pyoxide` must not make.
HEAVY = ("cupy", "numpy", "click", "torch", "cffi")

_BLOCKER = """
import sys

class Blocker:
    # Refuse the imports outright: an attempt fails the import, not just a check after it.
    def find_spec(self, name, path=None, target=None):
        if any(name == r or name.startswith(r + ".") for r in {refused!r}):
            raise ImportError(f"pyoxide imported {{name}} too early")
        return None

sys.meta_path.insert(0, Blocker())
"""


def run(code: str, refused: tuple[str, ...] = HEAVY) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter that refuses to import ``refused`` (and their
    submodules)."""
    script = _BLOCKER.format(refused=refused) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


def test_import_pyoxide_loads_nothing_heavy() -> None:
    r = run("""
        import subprocess
        real_popen = subprocess.Popen
        def no_popen(*a, **k):
            raise AssertionError("subprocess at import")
        subprocess.Popen = no_popen
        import pyoxide, pyoxide.errors, pyoxide.typing, pyoxide.backends
        subprocess.Popen = real_popen
        # The launch runtime's native module loads with the first Module (or Kernel).
        assert "pyoxide._launch._native" not in sys.modules, "the native module loaded at import"
        print(pyoxide.__version__, len(pyoxide.__all__))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("0.1.0")


def test_loading_a_manifest_still_imports_nothing_heavy() -> None:
    r = run(f"""
        import sys, tempfile, pathlib
        sys.path.insert(0, {str(TESTS_DIR)!r})
        from helpers.fixtures import write_manifest
        import pyoxide
        m = pyoxide.load(write_manifest(pathlib.Path(tempfile.mkdtemp())))
        print(sorted(m), m.saxpy, m.scale)
    """)
    assert r.returncode == 0, r.stderr
    assert "saxpy" in r.stdout


def test_with_cupy_unimportable_the_first_gpu_call_says_how_to_fix_it() -> None:
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, tempfile, pathlib
            sys.modules["cupy"] = None  # unimportable
            sys.path.insert(0, {str(TESTS_DIR)!r})
            from helpers.fixtures import write_manifest
            from helpers.fakes import cuda
            import pyoxide
            m = pyoxide.load(write_manifest(pathlib.Path(tempfile.mkdtemp())))
            try:
                m.scale_f32(1.0, cuda(4), cuda(4))
            except pyoxide.BackendUnavailableError as e:
                print("OK", e)
        """)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.stdout.startswith("OK") and "pip install 'pyoxide[cuda]'" in r.stdout, r.stderr
    assert "cuda13" not in r.stdout  # no such extra


def test_pyoxide_build_runs_before_the_native_module_is_built() -> None:
    # The wheel's build backend runs `pyoxide build --bundled` from the source tree before
    # maturin compiles pyoxide._launch._native (scripts/packaging/pyoxide_backend.py).
    r = run("""
        import pyoxide.cli.build, pyoxide._launch.tune_store
        from pyoxide.cli import main
        sys.argv = ["pyoxide", "build", "--help"]
        main()
    """, refused=("pyoxide._launch._native",))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "--bundled" in r.stdout
