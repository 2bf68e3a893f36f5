"""A stand-in for the cargo-oxide binary, following its command-line contract.

Tests install it with :func:`install`, which writes an executable wrapper and points
PYOXIDE_CARGO_OXIDE at it. Behaviour is steered by environment variables:

FAKE_OXIDE_MODE   ok (default) | fail | usage | toolchain | nojson | newer-schema | old
                  (old: a cargo-oxide of an earlier release, which has no `key`)
FAKE_OXIDE_LOG    file that gets one JSON line (argv) per invocation
FAKE_OXIDE_SLEEP  seconds to sleep while "building"
FAKE_OXIDE_EDIT   a file whose count (lines) of builds edit src/lib.rs after "compiling"
                  it and before hashing it, as a user editing during a build; each such
                  build removes a line; the compiled text goes to compiled.rs in --out-dir

`key` is answered by the real cargo-oxide (found on PATH when the fake is installed), so
the cache's key is the real one; the fake's own file is hashed into it, as the real
binary's identity is.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def install(tmp_path: Path, monkeypatch: object) -> Path:
    exe = tmp_path / "bin" / "cargo-oxide"
    exe.parent.mkdir(parents=True, exist_ok=True)
    real = shutil.which("cargo-oxide")
    assert real is not None, "the real cargo-oxide answers `key` (scripts/setup installs it)"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"sys.path.insert(0, {str(HERE.parent)!r})\n"
        f"os.environ['FAKE_OXIDE_REAL'] = {real!r}\n"
        "from helpers.fake_cargo_oxide import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    exe.chmod(0o755)
    monkeypatch.setenv("PYOXIDE_CARGO_OXIDE", str(exe))  # type: ignore[attr-defined]
    return exe


def _key(args: list[str]) -> int:
    real = subprocess.run(
        [os.environ["FAKE_OXIDE_REAL"], "oxide", "key", *args], capture_output=True, text=True
    )
    sys.stderr.write(real.stderr)
    if real.returncode != 0:
        return real.returncode
    report = json.loads(real.stdout)
    me = Path(sys.argv[0]).read_bytes()
    report["key"] = hashlib.sha256((report["key"] + hashlib.sha256(me).hexdigest()).encode())
    report["key"] = report["key"].hexdigest()
    print(json.dumps(report))
    return 0


def _opt(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def main(argv: list[str]) -> int:
    log = os.environ.get("FAKE_OXIDE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps(argv) + "\n")
    if not argv or argv[0] != "oxide":
        print("error: call me as `cargo oxide …`", file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    mode = os.environ.get("FAKE_OXIDE_MODE", "ok")
    if cmd == "key":
        if mode == "old":
            print("error: unrecognized subcommand 'key'", file=sys.stderr)
            return 2
        return _key(args)
    if cmd == "doctor":
        if mode == "toolchain":
            print("rustc: ok\nllvm-link-22: MISSING", file=sys.stderr)
            return 3
        if "--json" in args:
            print(json.dumps({"rustc": "rustc 1.96.0", "llvm_tools": "22.1.0", "ok": True}))
        else:
            print("rustc: rustc 1.96.0\nllvm tools: 22.1.0\nall good")
        return 0
    if cmd != "build":
        print(f"error: unknown subcommand {cmd}", file=sys.stderr)
        return 2
    if mode == "usage":
        print("error: unexpected argument '--frobnicate'", file=sys.stderr)
        return 2
    if mode == "toolchain":
        print("error: llvm-link-22 not found; install llvm-22", file=sys.stderr)
        return 3
    toml = Path(_opt(args, "--manifest-path") or "Cargo.toml").resolve()
    profile = "debug" if "--debug" in args else "release"
    print(f"   Compiling {toml.parent.name} (nvptx64-nvidia-cuda, {profile})", file=sys.stderr)
    sys.stderr.flush()
    time.sleep(float(os.environ.get("FAKE_OXIDE_SLEEP", "0")))
    if mode == "fail":
        print("error[E0308]: mismatched types\n --> src/lib.rs:3:5", file=sys.stderr)
        print("error: could not compile `kernel crate`", file=sys.stderr)
        return 1
    sys.path.insert(0, str(HERE.parent))
    from helpers.fixtures import manifest_dict, write_manifest

    out = Path(_opt(args, "--out-dir") or toml.parent / "target" / "oxide" / profile)
    out.mkdir(parents=True, exist_ok=True)
    archs = tuple((_opt(args, "--arch") or "sm_80,sm_90").split(","))
    lib = toml.parent / "src" / "lib.rs"
    (out / "compiled.rs").write_bytes(lib.read_bytes())
    edits = Path(os.environ.get("FAKE_OXIDE_EDIT", "/nonexistent"))
    if edits.is_file() and (lines := edits.read_text().splitlines()):
        edits.write_text("".join(f"{x}\n" for x in lines[1:]))
        lib.write_text(lib.read_text() + f"// edited during build {len(lines)}\n")
    sources = [
        (str(p), hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted((toml.parent / "src").rglob("*.rs"))
    ]
    value = manifest_dict(
        out, archs=archs, sources=sources, manifest_path=str(toml),
        profile="release" if profile == "release" else "dev",
    )  # fmt: skip
    value["codegen"]["fmad"] = "--no-fmad" not in args
    if mode == "newer-schema":
        value["schema"] = 99
    manifest = write_manifest(out, value)
    print(f"    Finished {profile} [{', '.join(archs)}]", file=sys.stderr)
    if mode == "nojson":
        print("built!")
        return 0
    artifacts = [str(out / a["path"]) for a in value["artifacts"]]
    if "--json" in args:
        print(
            json.dumps(
                {
                    "manifest": str(manifest),
                    "crate": value["crate"]["name"],
                    "artifacts": artifacts,
                    "emulator": None,
                }
            )
        )
    return 0
