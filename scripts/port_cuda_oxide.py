"""Port NVIDIA cuda-oxide's examples to pyoxide the way a user would, and measure.

A port changes an example only by (1) renaming the crate `cuda_device` to
`oxide_device` (and `cuda_host::cuda_module`, a re-export of the same attribute, to
`oxide_device::cuda_module`) and (2) deleting the host code: `fn main`, the `use` lines
of host crates (`cuda_core`, `cuda_host`, `cuda_async`, and `std` but for the modules
`core` has too, `std::ops` and the like), and top-level items that only the host uses
(they name a host crate, `std`, `Vec` or `println!`, or implement a host crate's trait
such as `DeviceCopy`), and the helpers only such items use (a function, or a `use` of
another crate like `half`, named by host code alone). Everything else, kernels
included, is left as written; the example's crates.io dependencies that the port still
names (`libm`) stay in its Cargo.toml.

    python scripts/port_cuda_oxide.py --mirror DIR --out DIR [--build] [NAME ...]

`--mirror` is a git checkout or bare clone of NVlabs/cuda-oxide. Without `--build`
it writes one crate per eligible example under `--out`; with `--build` it also runs
`cargo oxide build` on each (device and emulator) and prints a table of what built.
Examples that need tensor cores, TMA, clusters, nightly features, several crates or
foreign code are not eligible and are listed with the reason.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = "crates/rustc-codegen-cuda/examples"
HOST_CRATES = ("cuda_core", "cuda_host", "cuda_async", "std", "cuda_bindings")
# What makes an example ineligible, checked in order against its main.rs.
INELIGIBLE = [
    ("tensor cores", r"wgmma|tcgen05|\bmma\b|mma_sync|ldmatrix|stmatrix|movmatrix|wmma"),
    ("TMA", r"\btma\b|cp_async_bulk|TmaDescriptor|tensor_map"),
    ("clusters", r"\bcluster\b|cluster::|multicast|nvls|\bclc\b"),
    ("nightly features", r"#!\[feature"),
    ("foreign code", r"extern\s+\"C\"|mathdx"),
]
# Examples whose point is something other than a kernel crate that builds.
NOT_KERNEL_EXAMPLES = {
    "error": "expected to fail (compile-error example)",
    "cpp_consumes_rust_device": "C++ caller",
    "cutile_inter_kernel": "cuTile host pipeline",
    "rustlantis-smoke": "fuzzer harness",
    "toolchain_pairing_smoke": "toolchain check",
}


def strip_comments_and_strings(src: str) -> str:
    """The source with comments, strings and char literals blanked (same length)."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif m := re.compile(r'b?r(#*)"').match(src, i):
            end = src.find('"' + m.group(1), m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            blank(i, j)
            i = j
        elif c == '"' or src.startswith('b"', i):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'" and (m := re.compile(r"'(\\.[^']*|[^\\'])'").match(src, i)):
            blank(i, m.end())
            i = m.end()
        else:
            i += 1
    return "".join(out)


def top_level_items(src: str) -> list[tuple[int, int]]:
    """(start, end) of each top-level item, attributes and doc comments included."""
    code = strip_comments_and_strings(src)
    items, depth, start, i = [], 0, None, 0
    while i < len(code):
        c = code[i]
        if depth == 0 and start is None and not c.isspace():
            start = i
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
            if depth == 0 and c == "]" and start is not None and code.startswith("#!", start):
                items.append((start, i + 1))
                start = None
            if depth == 0 and c == "}" and start is not None:
                # An item ends at its closing brace unless a `;` follows (a struct
                # literal in a static) -- peek past whitespace.
                j = i + 1
                while j < len(code) and code[j] in " \t":
                    j += 1
                if j < len(code) and code[j] == ";":
                    i = j
                items.append((start, i + 1))
                start = None
        elif c == ";" and depth == 0 and start is not None:
            items.append((start, i + 1))
            start = None
        i += 1
    # Attach leading comments/doc comments: an item's span starts after the previous.
    spans, prev = [], 0
    for _, b in items:
        spans.append((prev, b))
        prev = b
    return spans


def host_imports(src: str) -> set[str]:
    """Names the example imports from host crates (`use cuda_core::{DeviceCopy, …}`),
    but for `cuda_module`, which the port takes from `oxide_device`."""
    names: set[str] = set()
    code = strip_comments_and_strings(src)
    cuda_host_crates = [c for c in HOST_CRATES if c != "std"]  # std: see STD_FOR_CORE
    for m in re.finditer(r"\buse\s+(?:" + "|".join(cuda_host_crates) + r")::([^;]*);", code):
        names.update(re.findall(r"\b([A-Za-z_]\w*)\b(?!\s*::)", m.group(1)))
    return names - {"cuda_module", "self", "as"}


def is_host_item(text: str, host_names: frozenset[str] = frozenset()) -> bool:
    code = strip_comments_and_strings(text)
    head = code.strip()
    if STD_FOR_CORE.match(head):
        return False  # `use std::ops::Add`: a kernel's import of what core has too
    if re.match(r"(pub\s+)?use\s+(::)?(" + "|".join(HOST_CRATES) + r")\b", head):
        return not HOST_CUDA_MODULE.match(head)
    if head.startswith("#![") or head.startswith("#!["):
        return False
    if re.search(r"\bfn\s+main\s*\(", code) and not re.search(r"#\[\s*(kernel|device)", code):
        return True
    if re.search(r"#\[\s*(kernel|device|cuda_module)", code):
        return False
    # Any other item (function, struct, impl, static) that names the host API is host
    # code: `fn main`'s helpers, `unsafe impl cuda_core::DeviceCopy for …` (or
    # `unsafe impl DeviceCopy for …` with `DeviceCopy` imported from cuda_core).
    if host_names and re.search(r"\b(" + "|".join(map(re.escape, host_names)) + r")\b", code):
        return True
    return bool(HOST_MARKERS.search(code))


HOST_MARKERS = re.compile(
    r"\b(" + "|".join(HOST_CRATES) + r")::|\bVec\b|\bArc\b|\bString\b|\bBox\b|println!|"
    r"eprintln!|format!|vec!|\bCudaContext\b|\bCudaStream\b|\bDeviceBuffer\b|\bLaunchConfig\b|"
    r"\bCudaModule\b|\bCudaFunction\b"
)


# `use std::…` of a module that `core` has under the same path: the kernels use it, and
# the device build names `core` `std` as well (cargo-oxide, for crates without
# `#![no_std]`), so the import stays.
STD_FOR_CORE = re.compile(
    r"(pub\s+)?use\s+(::)?std::(ops|cmp|marker|mem|ptr|num|convert|iter|option|result|hint|"
    r"slice|array|f32|f64|cell|char|primitive|any|borrow|clone|default|hash|sync::atomic)\b"
)

# `use cuda_host::cuda_module;` or `use cuda_host::{cuda_module, ltoir};`: cuda_host
# re-exports the attribute that cuda_device also exports; the port keeps that name only.
HOST_CUDA_MODULE = re.compile(
    r"(pub\s+)?use\s+cuda_host::(\{[^}]*\bcuda_module\b[^}]*\}|cuda_module)\s*;"
)


# What a top-level helper defines: `fn name`, or the names a `use` of another crate
# (not the device crate, `core`, `std`, `crate`, `self`, `super`) brings in.
HELPER_FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:unsafe\s+)?fn\s+(\w+)")
OTHER_CRATE_USE = re.compile(
    r"^\s*use\s+(?!(?:cuda_device|oxide_device|core|std|alloc|crate|self|super)\b)\w+::(.*);",
    re.S,
)


def defined_names(code: str) -> set[str]:
    if re.search(r"#\[\s*(kernel|device|cuda_module)", code):
        return set()
    if m := HELPER_FN.match(code.strip()):
        return {m.group(1)}
    if m := OTHER_CRATE_USE.match(code.strip()):
        return set(re.findall(r"\b([A-Za-z_]\w*)\b(?!\s*::)", m.group(1))) - {"self", "as"}
    return set()


def drop_host_only_helpers(kept: list[str], dropped: list[str]) -> list[str]:
    """Also drop the helpers only host code uses: a function, or a `use` of another
    crate, whose names appear in dropped (host) items and in no kept one but itself."""
    while True:
        codes = [strip_comments_and_strings(t) for t in kept]
        gone = "\n".join(strip_comments_and_strings(t) for t in dropped)
        for i, code in enumerate(codes):
            names = defined_names(code)
            pattern = (
                re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b") if names else None
            )
            if (
                pattern
                and pattern.search(gone)
                and not any(pattern.search(c) for j, c in enumerate(codes) if j != i)
            ):
                dropped.append(kept.pop(i))
                break
        else:
            return kept


def port_source(src: str) -> str:
    """cuda-oxide example source -> pyoxide crate source (rename + host code removed)."""
    names = frozenset(host_imports(src))
    items = [src[a:b] for a, b in top_level_items(src)]
    kept = [t for t in items if not is_host_item(t, names)]
    dropped = [t for t in items if is_host_item(t, names)]
    kept = drop_host_only_helpers(kept, dropped)
    out = "".join(kept).rstrip() + "\n"
    out = HOST_CUDA_MODULE.sub("use oxide_device::cuda_module;", out)
    return re.sub(r"\bcuda_device\b", "oxide_device", out)


def git_show(mirror: Path, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(mirror), "show", f"HEAD:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def list_examples(mirror: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(mirror), "ls-tree", "--name-only", "HEAD", EXAMPLES + "/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return sorted(Path(p).name for p in out.split())


def eligibility(mirror: Path, name: str) -> str | None:
    """None when eligible, else why not."""
    files = subprocess.run(
        ["git", "-C", str(mirror), "ls-tree", "-r", "--name-only", "HEAD", f"{EXAMPLES}/{name}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    if name in NOT_KERNEL_EXAMPLES or name.startswith("error_"):
        return NOT_KERNEL_EXAMPLES.get(name, "expected to fail (compile-error example)")
    if f"{EXAMPLES}/{name}/src/main.rs" not in files:
        return "no src/main.rs"
    if sum(f.endswith("Cargo.toml") for f in files) > 1:
        return "several crates"
    raw = git_show(mirror, f"{EXAMPLES}/{name}/src/main.rs")
    # Patterns match code, not comments (strings kept: `extern "C"` is one).
    src = "\n".join(ln for ln in raw.splitlines() if not ln.lstrip().startswith("//"))
    for reason, pattern in INELIGIBLE:
        if re.search(pattern, src):
            return reason
    return None


def example_source(mirror: Path, name: str) -> str:
    """The example's kernel source: `src/lib.rs` where it has one (its `main.rs` is then
    host code using the library), else `src/main.rs`."""
    try:
        return git_show(mirror, f"{EXAMPLES}/{name}/src/lib.rs")
    except subprocess.CalledProcessError:
        return git_show(mirror, f"{EXAMPLES}/{name}/src/main.rs")


def registry_deps(toml: str, source: str) -> list[str]:
    """The example's `[dependencies]` lines for crates.io crates (`libm = "0.2"`) that
    its port still names: a port keeps its crate's own dependencies, only cuda-oxide's
    crates (path dependencies) give way to oxide-device."""
    section = re.search(r"^\[dependencies\]\n(.*?)(?=^\[|\Z)", toml, re.M | re.S)
    lines = []
    for line in (section.group(1) if section else "").splitlines():
        m = re.match(r"\s*([A-Za-z0-9_-]+)\s*=", line)
        if m and "path" not in line and re.search(rf"\b{m.group(1).replace('-', '_')}::", source):
            lines.append(line.strip())
    return lines


def write_crate(
    out: Path, name: str, source: str, device_crate: Path, edition: str, deps: list[str]
) -> Path:
    crate = out / name
    (crate / "src").mkdir(parents=True, exist_ok=True)
    extra = "".join(f"{d}\n" for d in deps)
    (crate / "Cargo.toml").write_text(
        f'[package]\nname = "{name.replace("-", "_")}"\nversion = "0.1.0"\n'
        f'edition = "{edition}"\npublish = false\n\n[dependencies]\n{extra}'
        f'oxide-device = {{ path = "{device_crate}" }}\n\n[workspace]\n'
    )
    (crate / "src" / "lib.rs").write_text(source)
    return crate


def write_fixture(mirror: Path, crate: Path, names: list[str]) -> None:
    """One crate holding several ports, one module file each (`src/<example>.rs`)."""
    (crate / "src").mkdir(parents=True, exist_ok=True)
    for name in names:
        source = port_source(git_show(mirror, f"{EXAMPLES}/{name}/src/main.rs"))
        (crate / "src" / f"{name}.rs").write_text(source)


def build(crate: Path, cargo_oxide: str, emu: bool) -> tuple[bool, str]:
    # One arch: what fails to build fails on every arch these examples are eligible for.
    extra = [] if emu else ["--no-emu"]
    proc = subprocess.run(
        [
            cargo_oxide,
            "oxide",
            "build",
            "--arch",
            "sm_80",
            *extra,
            "--manifest-path",
            str(crate / "Cargo.toml"),
        ],
        capture_output=True,
        text=True,
    )
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error")]
    return proc.returncode == 0, "; ".join(dict.fromkeys(errors))[:300]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirror", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--build", action="store_true")
    ap.add_argument("--cargo", default="cargo")
    ap.add_argument("--no-emu", action="store_true", help="device build only (faster)")
    ap.add_argument("names", nargs="*")
    ap.add_argument("--fixture", type=Path, help="write NAMEs as modules of this crate")
    args = ap.parse_args()
    if args.fixture:
        write_fixture(args.mirror, args.fixture, args.names)
        return 0
    device_crate = (Path(__file__).resolve().parents[1] / "crates" / "oxide-device").resolve()
    names = args.names or list_examples(args.mirror)
    built, failed, skipped = [], [], []
    for name in names:
        reason = eligibility(args.mirror, name)
        if reason:
            skipped.append((name, reason))
            continue
        toml = git_show(args.mirror, f"{EXAMPLES}/{name}/Cargo.toml")
        edition = m.group(1) if (m := re.search(r'edition\s*=\s*"(\d+)"', toml)) else "2021"
        source = port_source(example_source(args.mirror, name))
        deps = registry_deps(toml, source)
        crate = write_crate(args.out, name, source, device_crate, edition, deps)
        if args.build:
            ok, why = build(crate, args.cargo, not args.no_emu)
            (built if ok else failed).append((name, why))
            print(f"{'ok  ' if ok else 'FAIL'} {name} {why}", flush=True)
    for name, reason in skipped:
        print(f"skip {name}: {reason}")
    if args.build:
        eligible = len(built) + len(failed)
        print(f"\nbuilt {len(built)}/{eligible} eligible examples ({len(skipped)} not eligible)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
