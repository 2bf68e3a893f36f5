"""`scripts/chaos --verify`'s case type, the kinds of case that are not a verify run, and
their rows (issue 27's items 5-11; chaos_verify.py holds the verify runs, items 1-4 and 8).

Each runs a child process that does what the probe's hostile user did and prints one
``RESULT`` line, which must hold each of the case's words (`words`, parts joined by " & "):

  python        a block run with K (the fixture crate `crate` names, loaded), np, REPO,
                WORK (the case's folder) and tests/helpers importable, under the case's
                `env`; it sets `result`, or raises (RESULT: the error's type and message)
  rekey         the key `pyoxide.load` files a build of hostile_verify under, with and
                without one changed variable (`env`): it must change, and come back
  reload        the same with real loads: a new build whose PTX differs, then the first
  ctrl-c-print  Ctrl-C inside a printing kernel, then a print (tests/helpers/hostile.py)
  build         tests/fixtures/hostile_kernels copied, `python` appended to its source,
                built with `pyoxide build`: refused with the words, no traceback
  offline       the kit a wheel carries (scripts/packaging), then `pyoxide new` against it
                and `pyoxide build` with an empty CARGO_HOME and CARGO_NET_OFFLINE

good: every word, meh: failed closed (`error`'s type) in other words, bad: anything else
(a signal, a traceback, a hang, a stale build, a missing word). `slow` cases run only in
the full run (build and offline compile oxide-device from scratch the first time).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
VERIFY_CRATE = REPO / "tests" / "fixtures" / "hostile_verify"
KERNELS_CRATE = REPO / "tests" / "fixtures" / "hostile_kernels"
HANDMADE = REPO / "crates" / "cargo-oxide" / "tests" / "fixtures" / "handmade"
#: Where `build` cases compile: kept between runs, so only the first compiles oxide-device.
BUILD_TARGET = REPO / "target" / "chaos_crates"


@dataclass(frozen=True)
class Expect:
    """What good looks like for a verify run: each kernel's failure kind (None: it
    passes) and words its message holds; spec-file errors by file name; the exit status."""

    kernels: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    file_errors: dict[str, str] = field(default_factory=dict)
    exit: int = 7
    stderr: str = ""  # words stderr must hold (a usage error)


NONE = Expect()


@dataclass(frozen=True)
class Case:
    name: str
    item: str  # issue 27's item, or the owner's tag
    specs: str | None  # the spec file (after HEADER); None: the crate's own specs/
    expect: Expect
    args: tuple[str, ...] = ()
    how: str = "verify"  # "verify", "sigint", "reproducer", or a kind of this module
    owner: str = "verify"
    pending: bool = False
    file: str = "specs.py"
    python: str = ""  # how="python": the block; how="build": Rust added to the crate
    words: str = ""  # what the RESULT line must hold (parts joined by " & ")
    crate: str = "verify"  # how="python": "verify", "kernels" (hostile_kernels) or ""
    env: tuple[tuple[str, str | None], ...] = ()  # set ({work}: the case's folder) or unset
    error: str = ""  # the error type that fails closed (meh without the words)
    quiet: bool = False  # stdout must hold the RESULT line only
    slow: bool = False  # full run only


@dataclass
class Outcome:
    code: int | None
    stdout: str
    stderr: str
    report: dict[str, Any] | None = None
    extra: str = ""


KINDS = ("python", "rekey", "reload", "ctrl-c-print", "build", "offline")


def _py(body: str, **names: str) -> str:
    """A python case's block: ``body`` dedented, its ``{name}`` fields filled when given."""
    body = textwrap.dedent(body)
    return (body.format(**names) if names else body).strip()


_PTX = "''.join(a.read().decode() for a in m.manifest.artifacts)"
_EMU_PATH = """
    import hashlib
    from helpers.emu import planted_library, write_emu_manifest
    marker = WORK / "constructor-ran"
    outside = planted_library(WORK / "elsewhere", marker)
    path = write_emu_manifest(WORK / "crate")
    m = json.loads(path.read_text())
    digest = hashlib.sha256(outside.read_bytes()).hexdigest()
    m["emulator"] = {{"path": {where}, "sha256": digest}}
    path.write_text(json.dumps(m))
    try:
        pyoxide.load(path).vecadd(*(np.zeros(4, np.float32) for _ in range(3)))
        result = "launched the planted library"
    except pyoxide.LoadError as e:
        result = f"LoadError {{e}}"
    result += "; its constructor ran" if marker.exists() else "; its constructor never ran"
"""
_INSPECT_PTX = """
    from helpers.fixtures import write_manifest
    secret = WORK / "outside.ptx"
    secret.write_text("// .entry saxpy( a secret\\n")
    manifest = write_manifest(WORK / "m")
    m = json.loads(manifest.read_text())
    m["artifacts"][0]["path"] = {where}
    manifest.write_text(json.dumps(m))
    p = subprocess.run([sys.executable, "-m", "pyoxide", "inspect", "saxpy", str(manifest),
                        "--ptx"], capture_output=True, text=True)
    result = f"exit {{p.returncode}}: {{p.stderr.strip()}}"
    result += "; printed the secret" if "a secret" in p.stdout else "; the secret kept"
"""
_CACHE_REFUSED = """
    cache = Path(os.environ["PYOXIDE_CACHE_DIR"])
    cache.mkdir()
    {make}
    pyoxide.load(REPO / "tests" / "fixtures" / "hostile_verify")
"""
_HALF_WARP = """
    from pyoxide.backends import emu
    out = np.zeros(64, np.uint32)
    with emu.strict(seed=3, enabled={strict}):
        K.half_warp[1, 64](out)
    lane = np.arange(64) % 32
    assert (out == np.where(lane < 16, lane + (lane ^ 8), lane)).all(), out
"""
_STAR_WIDTH = '#[kernel]\npub fn pad(x: u32) {\n    gpu_printf_c!("%*d\\n", 6, x);\n}\n'
_MISMATCH = '#[kernel]\npub fn show(x: f32) {\n    gpu_printf_c!("x = %d\\n", x);\n}\n'

OWNER = "issue 27"
CASES: list[Case] = [
    # 5. pyoxide.load serves stale builds
    *(Case(f"{v}=1 after a fused build", "5", None, NONE, how="reload", owner=OWNER,
           env=((v, "1"),), words="a new build & fma.rn.f32 gone & the first build again")
      for v in ("OXIDE_NO_FMAD", "CUDA_OXIDE_NO_FMA")),
    *(Case(f"{v} changed: a new key", "5", None, NONE, how="rekey", owner=OWNER,
           env=((v, value),), words="a new key & the first key again")
      for v, value in (("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1"),
                       ("OXIDE_LLVM_BIN", "{work}/other-llvm/bin"),
                       ("OXIDE_LIBDEVICE", "{work}/other/libdevice.10.bc"),
                       ("OXIDE_RUSTC", "{work}/other-rust/bin/rustc"))),
    Case("rebuild=True replaces the cached build", "5", None, NONE, how="python", owner=OWNER,
         crate="", words="the new build", python=_py("""
            crate = WORK / "handmade"
            shutil.copytree(REPO / "crates/cargo-oxide/tests/fixtures/handmade", crate)
            first = pyoxide.load(crate).manifest.path
            old = first.parent.stat().st_ino
            again = pyoxide.load(crate, rebuild=True).manifest.path
            fresh = again == first and first.parent.stat().st_ino != old
            result = "the entry names the new build" if fresh else f"kept the old one: {again}"
         """)),
    Case("load(fmad=False), then load()", "5", None, NONE, how="python", owner=OWNER, crate="",
         words="unfused, no fma & the fused build again", python=_py("""
            crate = REPO / "tests" / "fixtures" / "hostile_verify"
            fused = pyoxide.load(crate)
            apart = pyoxide.load(crate, fmad=False)
            ptx = lambda m: {ptx}
            result = "unfused, no fma" if not apart.manifest.fmad and "fma.rn" not in ptx(apart)\\
                else f"fmad={{apart.manifest.fmad}}, fma in PTX: {{'fma.rn' in ptx(apart)}}"
            same = pyoxide.load(crate).manifest.path == fused.manifest.path
            result += "; the fused build again" if same and "fma.rn" in ptx(fused) else ""
         """, ptx=_PTX)),
    # 6. Ctrl-C inside a printing kernel
    Case("Ctrl-C inside a printing kernel, then print", "6", None, NONE, how="ctrl-c-print",
         owner=OWNER, words="interrupted & printed again"),
    # 7. HOME unset; a cache folder others could plant a `core` in
    Case("HOME unset: the user database's home", "7", None, NONE, how="python", owner=OWNER,
         crate="", env=(("HOME", None), ("PYOXIDE_CACHE_DIR", None), ("XDG_CACHE_HOME", None)),
         words="cargo-oxide and Python both use", python=_py("""
            import pwd
            from pyoxide._build.cache import lookup_key
            from pyoxide._manifest import knobs
            home = Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".cache" / "pyoxide"
            toml = REPO / "tests" / "fixtures" / "hostile_verify" / "Cargo.toml"
            got = lookup_key(toml, arch=None, profile="release", fmad=True)[1]
            result = f"cargo-oxide {got}, Python {knobs.cache_dir()}, the user's {home}"
            if got == knobs.cache_dir() == home:
                result = f"cargo-oxide and Python both use {home}"
         """)),
    Case("a world-writable cache folder", "7", None, NONE, how="python", owner=OWNER, crate="",
         env=(("PYOXIDE_CACHE_DIR", "{work}/shared-cache"),), error="ConfigError",
         words="refusing the cache folder & Fix:",
         python=_py(_CACHE_REFUSED, make="cache.chmod(0o777)")),
    Case("another user's cache folder", "7", None, NONE, how="python", owner=OWNER, crate="",
         env=(("PYOXIDE_CACHE_DIR", "{work}/theirs"),), error="ConfigError",
         words="refusing the cache folder & Fix:", python=_py(_CACHE_REFUSED, make=(
             "os.chown(cache, 65534, 65534) if os.geteuid() == 0 else "
             "os.environ.update(PYOXIDE_CACHE_DIR='/')"))),
    # 8. artifact paths in a manifest (the reproducer line: chaos_verify.py)
    *(Case(f"an emulator library at {label}", "8", None, NONE, how="python", owner=OWNER,
           crate="", env=(("PYOXIDE_BACKEND", "emu"),), error="LoadError",
           words="inside the manifest's folder & its constructor never ran",
           python=_py(_EMU_PATH, where=where))
      for label, where in (("an absolute path", "str(outside)"),
                           ("../", "'../elsewhere/' + outside.name"))),
    *(Case(f"inspect --ptx of {label}", "8", None, NONE, how="python", owner=OWNER, crate="",
           words="exit 5 & inside the manifest's folder & the secret kept",
           python=_py(_INSPECT_PTX, where=where))
      for label, where in (("an absolute path", "str(secret)"), ("../", "'../outside.ptx'"))),
    # 9. the emulator shows what a GPU would do (uninitialised shared memory and a missing
    # barrier: chaos_verify.py's verify runs)
    Case("shuffle_xor(0xffff, v, 16) over a whole warp", "9", None, NONE, how="python",
         owner=OWNER, crate="kernels", error="EmulatorError", words="EmulatorError & 0x0000ffff",
         python="K.butterfly_step[1, 32](0xFFFF, np.ones(32, np.float32), "
                "np.zeros(32, np.float32))"),
    *(Case(f"a half-warp shuffles alone, then a barrier{label}", "9", None, NONE, how="python",
           owner=OWNER, crate="kernels", words="no error", python=_py(_HALF_WARP, strict=strict))
      for label, strict in (("", "False"), (" (strict)", "True"))),
    Case('gpu_printf_c!("%*d", 6, x)', "9", None, NONE, how="build", owner=OWNER, slow=True,
         python=_STAR_WIDTH, error="refused", words="refused & `%*d`"),
    Case('gpu_printf_c!("%d", an f32)', "9", None, NONE, how="build", owner=OWNER, slow=True,
         python=_MISMATCH, error="refused", words="refused & `f32` does not match %d"),
    # 10. a gpu_assert! message
    Case("gpu_assert!'s message and line, nothing on stdout", "10", None, NONE, how="python",
         owner=OWNER, crate="kernels", error="EmulatorError", quiet=True,
         words="n = 7 reached the limit 4 & hostile_kernels/src/lib.rs:",
         python="K.bounded[1, 32](7, 4)"),
    # 11. offline
    Case("pyoxide new + build offline, empty CARGO_HOME", "11", None, NONE, how="offline",
         owner=OWNER, slow=True, words="built & nothing fetched"),
]  # fmt: skip


def seed_sysroot(cache: Path, cargo_oxide: str, crate: Path) -> None:
    """Make the fresh cache folder `cache`, with a copy of the user's core sysroot where
    there is one (a build there then skips compiling core). The user's cache folder is
    the one `cargo_oxide` (which decides it) names for `crate`."""
    out = subprocess.run(
        [cargo_oxide, "oxide", "key", "--manifest-path", str(crate / "Cargo.toml")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    seeded = Path(json.loads(out)["cache_dir"]) / "sysroot"
    if seeded.is_dir():
        shutil.copytree(seeded, cache / "sysroot")
    cache.mkdir(exist_ok=True)


class Runner:
    """Runs the cases of this module's kinds; `manifest` is hostile_verify's, built."""

    def __init__(self, work: Path, manifest: Path) -> None:
        self.work, self.manifest = work, manifest
        self._lock = threading.Lock()
        if str(TESTS) not in sys.path:
            sys.path.insert(0, str(TESTS))  # the tests' helpers

    @functools.cached_property
    def cache(self) -> Path:
        """A cache folder of the run's own, its core sysroot copied from the user's."""
        with self._lock:
            cache = self.work / "cache"
            if not cache.is_dir():
                tool = os.environ.get("PYOXIDE_CARGO_OXIDE") or shutil.which("cargo-oxide")
                seed_sysroot(cache, tool or "cargo-oxide", VERIFY_CRATE)
            return cache

    def kernels_manifest(self) -> Path:
        from helpers.hostile import hostile_manifest

        with self._lock:
            return hostile_manifest()

    def env(self, case: Case, folder: Path) -> dict[str, str]:
        env = dict(os.environ, PYOXIDE_CACHE_DIR=str(self.cache))
        env.pop("PYOXIDE_VERBOSE", None)
        for name, value in case.env:
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value.format(work=folder)
        return env

    def run(self, case: Case, folder: Path) -> Outcome:
        folder.mkdir(parents=True)
        try:
            return getattr(self, "_" + case.how.replace("-", "_"))(case, folder)
        except subprocess.TimeoutExpired as e:
            return Outcome(None, "", f"hung: {e}")
        except Exception:  # the probe's own failure: shown as bad, the run goes on
            return Outcome(1, "", traceback.format_exc())

    def _child(self, code: str, case: Case, folder: Path, *args: str) -> Outcome:
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                           timeout=600, cwd=folder, env=self.env(case, folder))  # fmt: skip
        return Outcome(p.returncode, p.stdout, p.stderr)

    def _python(self, case: Case, folder: Path) -> Outcome:
        manifest = self.manifest if case.crate == "verify" else None
        if case.crate == "kernels":
            manifest = self.kernels_manifest()
        code = (
            "import json, os, shutil, subprocess, sys\nfrom pathlib import Path\n"
            "import numpy as np, pyoxide\n"
            f"sys.path.insert(0, {str(TESTS)!r})\n"
            f"REPO, WORK = Path({str(REPO)!r}), Path({str(folder)!r})\n"
            + (f"K = pyoxide.load({str(manifest)!r})\n" if case.crate else "")
            + "result = 'no error'\ntry:\n"
            + textwrap.indent(case.python, "    ")
            + "\nexcept Exception as e:\n    result = f'{type(e).__name__} {e}'\n"
            "print('RESULT', result.replace(chr(10), ' '))\n"
        )
        return self._child(code, case, folder)

    def _rekey(self, case: Case, folder: Path, mode: str = "key") -> Outcome:
        ((name, value),) = case.env  # the child makes the change, and undoes it
        return self._child(_REKEY, replace(case, env=()), folder, mode, str(VERIFY_CRATE), name,
                           str(value).format(work=folder))  # fmt: skip

    def _reload(self, case: Case, folder: Path) -> Outcome:
        return self._rekey(case, folder, "load")

    def _ctrl_c_print(self, case: Case, folder: Path) -> Outcome:
        from helpers.hostile import (
            CTRL_C_IN_PRINTF,
            CTRL_C_IN_PRINTF_LINES,
            CTRL_C_IN_PRINTF_SAYS,
            interrupted,
        )

        try:
            out, err = interrupted(self.kernels_manifest(), CTRL_C_IN_PRINTF, ready_on="stderr")
        except (AssertionError, subprocess.TimeoutExpired) as e:
            return Outcome(1, "", f"the child died or hung: {str(e)[-400:]}")
        said = [line for line in err.splitlines() if line.startswith(("RESULT", "AFTER"))]
        lines = out.count("says 0.50\n")
        fine = said == CTRL_C_IN_PRINTF_SAYS and lines >= CTRL_C_IN_PRINTF_LINES
        got = "interrupted, printed again" if fine else f"said {said}, {lines} lines printed"
        return Outcome(0, f"RESULT {got}\n", err)

    def _build(self, case: Case, folder: Path) -> Outcome:
        crate = folder / KERNELS_CRATE.name
        shutil.copytree(KERNELS_CRATE, crate, ignore=shutil.ignore_patterns("target"))
        (crate / "Cargo.toml").write_text(
            '[package]\nname = "hostile_kernels"\nversion = "0.1.0"\nedition = "2024"\n'
            f"publish = false\n\n[dependencies]\noxide-device = {{ path = "
            f"{str(REPO / 'crates' / 'oxide-device')!r} }}\n\n[workspace]\n"
        )
        shutil.copy2(REPO / "Cargo.lock", crate / "Cargo.lock")  # no registry lookup
        lib = crate / "src" / "lib.rs"
        lib.write_text(lib.read_text() + "\n" + case.python)
        env = dict(self.env(case, folder), CARGO_TARGET_DIR=str(BUILD_TARGET))
        p = subprocess.run([sys.executable, "-m", "pyoxide", "build"], cwd=crate, env=env,
                           capture_output=True, text=True, timeout=1800)  # fmt: skip
        if "Traceback (most recent call last)" in p.stderr:
            return Outcome(1, "", p.stderr)
        said = "built" if p.returncode == 0 else f"refused (exit {p.returncode}): {p.stderr}"
        return Outcome(0, f"RESULT {said.replace(chr(10), ' ')}\n", p.stderr)

    def _offline(self, case: Case, folder: Path) -> Outcome:
        env = dict(self.env(case, folder), CARGO_NET_OFFLINE="true")
        kit = folder / "kit"
        assemble = (
            f"import sys; sys.path.insert(0, {str(REPO / 'scripts' / 'packaging')!r})\n"
            "from pathlib import Path; import pyoxide_backend as b\n"
            "b.assemble_kit(Path(sys.argv[1]))\n"
        )
        p = subprocess.run([sys.executable, "-c", assemble, str(kit)], env=env,
                           capture_output=True, text=True, timeout=600)  # fmt: skip
        if p.returncode != 0:
            return Outcome(p.returncode, "", f"assembling the kit: {p.stderr[-600:]}")
        home = folder / "empty-cargo-home"
        home.mkdir()
        env.update(CARGO_HOME=str(home), HOME=str(folder))
        for cmd, cwd in (
            (["new", "offline_demo", "--crates", str(kit / "crates")], folder),
            (["build"], folder / "offline_demo"),
        ):
            p = subprocess.run([sys.executable, "-m", "pyoxide", *cmd], cwd=cwd, env=env,
                               capture_output=True, text=True, timeout=1800)  # fmt: skip
            if p.returncode != 0:
                return Outcome(0, f"RESULT pyoxide {cmd[0]}: exit {p.returncode}\n", p.stderr)
        fetched = [f.name for f in home.rglob("*") if f.is_file()
                   and f.parent not in (home, home / "registry")]  # fmt: skip
        said = "built" + (f", fetched {fetched[:5]}" if fetched else ", nothing fetched")
        return Outcome(0, f"RESULT {said}\n", p.stdout + p.stderr)


_REKEY = """
import os, sys
from pathlib import Path
import pyoxide
from pyoxide._build.cache import lookup_key
mode, crate, name, value = sys.argv[1:5]
def once():
    if mode == "key":
        toml = Path(crate) / "Cargo.toml"
        return lookup_key(toml, arch=None, profile="release", fmad=True)[0], ""
    m = pyoxide.load(crate)
    return str(m.manifest.path), PTX_OF_M
os.environ.pop(name, None)
first, ptx = once()
os.environ[name] = value
then, other = once()
del os.environ[name]
back, _ = once()
what = "key" if mode == "key" else "build"
said = [f"a new {what}" if then != first else f"the same {what}"]
if mode == "load":
    said.append("fma.rn.f32 gone" if "fma.rn.f32" in ptx and "fma.rn.f32" not in other
                else "PTX changed" if other != ptx else "the same PTX")
said.append(f"the first {what} again" if back == first else f"not the first {what}")
print("RESULT", ", ".join(said))
""".replace("PTX_OF_M", _PTX)


def judge(case: Case, out: Outcome) -> tuple[str, str]:
    """good, meh or bad, and a note, for a case of this module's kinds."""
    lines = out.stdout.splitlines()
    line = next((ln for ln in lines if ln.startswith("RESULT")), "")
    if out.code is None:
        return "bad", out.stderr[-300:]
    if out.code != 0 or not line:
        return "bad", f"the child ended with {out.code}: {out.stderr.strip()[-300:]}"
    missing = [w for w in case.words.split(" & ") if w not in line]
    if not missing:
        chatter = [ln for ln in lines if not ln.startswith("RESULT")]
        if case.quiet and chatter:
            return "bad", f"printed on stdout: {chatter[0][:160]}"
        return "good", ""
    if case.error and line.startswith(f"RESULT {case.error}"):
        return "meh", f"without {missing}: {line[7:200]}"
    return "bad", f"without {missing}: {line[7:300]}"
