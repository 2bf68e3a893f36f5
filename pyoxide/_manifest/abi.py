"""Generated from crates/oxide-abi (src/python.rs): do not edit.

Regenerate with `OXIDE_BLESS=1 cargo test -p cargo-oxide --test abi_is_current`;
that test fails while this file differs from what the Rust tables generate.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

MANIFEST_SCHEMA_VERSION = 12
DESCRIPTOR_VERSION = 2
VERIFY_REPORT_VERSION = 2

# What every ptxas diagnostic of a serialised wgmma pipeline says, whatever its code
# (src/manifest.rs).
PTXAS_WGMMA_SERIALIZED = "wgmma.mma_async instructions are serialized"
# How ptxas labels a diagnostic's line (src/manifest.rs).
PTXAS_LEVELS = ("info", "warning")


class Scalar(NamedTuple):
    """A scalar or element type, by its Rust (= manifest) name."""

    name: str
    size: int  # bytes at the launch ABI
    kind: str  # NumPy's kind letter: i signed, u unsigned, f float, b bool
    typestr: str  # an array's normalized typestr (bf16: pyoxide's <E2)
    lo: int | None  # an integer type's range; None for floats and bool
    hi: int | None


SCALARS: dict[str, Scalar] = {
    "i8": Scalar("i8", 1, "i", "|i1", -128, 127),
    "i16": Scalar("i16", 2, "i", "<i2", -32768, 32767),
    "i32": Scalar("i32", 4, "i", "<i4", -2147483648, 2147483647),
    "i64": Scalar("i64", 8, "i", "<i8", -9223372036854775808, 9223372036854775807),
    "u8": Scalar("u8", 1, "u", "|u1", 0, 255),
    "u16": Scalar("u16", 2, "u", "<u2", 0, 65535),
    "u32": Scalar("u32", 4, "u", "<u4", 0, 4294967295),
    "u64": Scalar("u64", 8, "u", "<u8", 0, 18446744073709551615),
    "f32": Scalar("f32", 4, "f", "<f4", None, None),
    "f64": Scalar("f64", 8, "f", "<f8", None, None),
    "f16": Scalar("f16", 2, "f", "<f2", None, None),
    "bf16": Scalar("bf16", 2, "f", "<E2", None, None),
    "bool": Scalar("bool", 1, "b", "|b1", None, None),
    "usize": Scalar("usize", 8, "u", "<u8", 0, 18446744073709551615),
    "isize": Scalar("isize", 8, "i", "<i8", -9223372036854775808, 9223372036854775807),
}


class Kind(NamedTuple):
    """A parameter kind, by its manifest name."""

    name: str
    abi_words: int  # words at the launch ABI: 1 (a value, a pointer) or 2 (pointer, length); +2*rank if shaped
    is_array: bool  # given as an array from Python
    is_slice: bool  # passed as (pointer, length); given as a 1-D contiguous array
    always_mutable: bool  # the kernel may write through it, whatever the declaration
    sizes_grid: bool  # its length is the work: it sizes an automatic grid
    is_shaped: bool  # a shaped array: pointer, extents, strides (rank in the manifest)
    rust: str  # how it is written in Rust ({t}: element type, {mut}: mut or const)
    abi: str  # the words it is passed as, for people


PARAM_KINDS: dict[str, Kind] = {
    "scalar": Kind("scalar", 1, False, False, False, False, False, "{t}", "value"),
    "slice": Kind("slice", 2, True, True, False, False, False, "&[{t}]", "pointer, length (u64)"),
    "disjoint_slice": Kind("disjoint_slice", 2, True, True, True, True, False, "DisjointSlice<{t}>", "pointer, length (u64)"),
    "mut_slice": Kind("mut_slice", 2, True, True, True, True, False, "&mut [{t}]", "pointer, length (u64)"),
    "pointer": Kind("pointer", 1, True, False, False, False, False, "*{mut} {t}", "pointer"),
    "atomic_slice": Kind("atomic_slice", 2, True, True, True, False, False, "AtomicSlice<{t}>", "pointer, length (u64)"),
    "array": Kind("array", 1, True, False, False, False, True, "Array{r}<{t}{l}>", "pointer, extents (u64 per dimension), strides in elements (u64 per dimension)"),
    "disjoint_array": Kind("disjoint_array", 1, True, False, True, True, True, "DisjointArray{r}<{t}{l}>", "pointer, extents (u64 per dimension), strides in elements (u64 per dimension)"),
    "value": Kind("value", 1, False, False, False, False, False, "{t}", "its bytes (emulator: their address)"),
}

# CUDA limits (src/limits.rs).
MAX_THREADS_PER_BLOCK = 1024
WARP_SIZE = 32
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2147483647, 65535, 65535)
DEFAULT_DYNAMIC_SHARED_BYTES = 49152
MAX_DYNAMIC_SHARED_BYTES = 232448
MAX_SLICE_BYTES = 9223372036854775807
MIN_ARCH = 75
DYNAMIC_SHARED_ALIGN = 16
# The block of a kernel launched without a policy or an explicit block (src/descriptor.rs).
DEFAULT_BLOCK = 256
MAX_ARRAY_RANK = 3
MAX_ARRAY_EXTENT = 2147483647
MAX_CLUSTER_SIZE = 8
MIN_CLUSTER_ARCH = 90
MIN_DEPENDENT_LAUNCH_ARCH = 90
TMA_ALIGN_BYTES = 16
TMA_MAX_BOX = 256
TENSOR_MAP_BYTES = 128
MAX_BLOCKS_PER_SM = 64

# Launch policies whose launches are 1-D only (src/descriptor.rs).
ONE_D_POLICIES = frozenset({"elementwise", "grid_stride", "block_per_element", "block_per_row", "segments", "columns"})

# Launch policies whose blocks_per_sm may be 0, one block per row (src/descriptor.rs).
BLOCKS_PER_SM_ZERO_KINDS = frozenset({"block_per_row"})

# Tuning (src/tune.rs).
TUNE_REPORT_VERSION = 2
TUNED_FILE_VERSION = 1
MAX_TUNE_CANDIDATES = 64
EMULATOR_DEVICE = "emulator"
EMULATOR_ARCH = "emu"
# Launch parameters #[tune] takes, and the launch policies that have each.
TUNABLE_LAUNCH: dict[str, frozenset[str]] = {
    "block": frozenset({"elementwise", "grid_stride", "block_per_element", "block_per_row"}),
    "per_thread": frozenset({"elementwise", "grid_stride"}),
    "blocks_per_sm": frozenset({"grid_stride", "persistent_tiles", "block_per_row"}),
}

# How a verify case can fail: the report's `what` (src/verify.rs).
VERIFY_FAILURES = (
    "wrong result",
    "unwritten element",
    "input modified",
    "out-of-bounds write",
    "raised",
    "crashed",
    "timed out",
    "spec error",
    "interrupted",
)

# The keys of `cargo oxide build --json`'s report, all always present.
BUILD_REPORT_KEYS = ("manifest", "crate", "artifacts", "emulator")
# The keys of `cargo oxide key`'s report, all always present.
KEY_REPORT_KEYS = ("key", "cache_dir", "cache_error", "inputs")


# The emulator library's C ABI (src/emu.rs, src/names.rs).
HOST_ENTRY_PREFIX = "__oxide_host_"
DESCRIPTOR_SECTION = ".oxide.kernels"
OXIDE_ERROR_MESSAGE_BYTES = 1024
EMU_CONFIGURE_SYMBOL = "__oxide_emu_configure"
EMU_CHECK_STRICT = 1


class EmuStatus(enum.IntEnum):
    """What a host entry returns (src/emu.rs)."""

    OK = 0
    TRAP = 1
    DIVERGENT_BARRIER = 2
    BAD_LAUNCH = 3
    FAULT = 4
    INTERRUPTED = 5
    UNDEFINED = 6


class Arch(NamedTuple):
    """A GPU architecture name, parsed (src/arch.rs)."""

    number: int
    suffix: str  # "" plain, "a" arch-specific (that GPU only), "f" family (same major)


DEFAULT_ARCHS = ("sm_80", "sm_90")


def parse_arch(name: str) -> Arch:
    """``sm_NN`` (NN >= MIN_ARCH, no leading zero) with at most one suffix, ``a`` or
    ``f``: the rule of src/arch.rs. Raises ValueError, whose message gives the fix."""
    rest = name[3:] if name.startswith("sm_") else ""
    suffix = rest[-1] if rest[-1:] in ("a", "f") else ""
    digits = rest[: len(rest) - len(suffix)]
    if not (0 < len(digits) <= 4 and digits[0] != "0" and digits.isascii() and digits.isdigit()):
        raise ValueError(f"`{name}` is not a GPU architecture pyoxide can build for; use sm_NN with NN ≥ 75 and an optional a or f suffix, e.g. sm_80,sm_90")
    if int(digits) < MIN_ARCH:
        raise ValueError(f"`{name}` is older than the GPUs pyoxide builds for: use sm_NN with NN ≥ 75 (the ptxas of CUDA 13 refuses older ones), e.g. sm_80,sm_90")
    return Arch(int(digits), suffix)


# How src/arch.rs decides each name (None: refused); parse_arch must agree (a test checks).
ARCH_EXAMPLES: dict[str, Arch | None] = {
    "sm_75": Arch(75, ""),
    "sm_80": Arch(80, ""),
    "sm_90": Arch(90, ""),
    "sm_90a": Arch(90, "a"),
    "sm_100f": Arch(100, "f"),
    "sm_120": Arch(120, ""),
    "sm_70": None,
    "sm_9": None,
    "sm_": None,
    "sm_a": None,
    "sm_90af": None,
    "sm_090": None,
    "SM_90": None,
    "compute_90": None,
    " sm_90": None,
    "sm_9 0": None,
    "sm_+90": None,
    "sm_99999": None,
}


class Variable(NamedTuple):
    """An environment variable (or, with `prefix`, every one starting with `name`)."""

    name: str
    prefix: bool
    reader: str  # python, cargo-oxide, both, cargo (run by cargo-oxide), build-script
    effect: str  # key (its value is keyed), resolved (what it resolves to is), none
    doc: str


# Every environment variable pyoxide reads (src/inputs.rs).
PYOXIDE_CACHE_DIR = Variable("PYOXIDE_CACHE_DIR", False, "both", "none", "the cache folder (built crates, the GPU's core sysroot); default $XDG_CACHE_HOME/pyoxide, else <home>/.cache/pyoxide. It must be yours and not writable by others")
XDG_CACHE_HOME = Variable("XDG_CACHE_HOME", False, "both", "none", "the cache folder's parent when PYOXIDE_CACHE_DIR is unset")
HOME = Variable("HOME", False, "both", "resolved", "the home folder (when unset or empty: the user database's, never the temp folder); holds the default cache and cargo's ~/.cargo/config.toml, whose contents are keyed")
PATH = Variable("PATH", False, "both", "resolved", "where rustc, cargo, the LLVM tools, ptxas and cargo-oxide are found; the build key holds the tools found, not PATH itself")
OXIDE_RUSTC = Variable("OXIDE_RUSTC", False, "cargo-oxide", "key", "the device rustc (it needs its matching rust-src); default: the first rustc on PATH, then /usr/bin/rustc, that has it")
OXIDE_CARGO = Variable("OXIDE_CARGO", False, "cargo-oxide", "key", "the cargo that drives the device build; default: the one beside the device rustc")
OXIDE_LLVM_BIN = Variable("OXIDE_LLVM_BIN", False, "cargo-oxide", "key", "the folder of llvm-link, opt and llc of the device rustc's LLVM major")
OXIDE_LIBDEVICE = Variable("OXIDE_LIBDEVICE", False, "cargo-oxide", "key", "libdevice.10.bc (CUDA's math library as bitcode); default: a CUDA toolkit's, then the nvidia-nvvm wheel's")
OXIDE_PTXAS = Variable("OXIDE_PTXAS", False, "cargo-oxide", "key", "the ptxas that verifies the PTX (when set, a build fails without it working); default: PATH, a CUDA toolkit, the nvidia-cuda-nvcc wheel")
OXIDE_PYTHON = Variable("OXIDE_PYTHON", False, "cargo-oxide", "key", "the Python whose site-packages hold NVIDIA's wheels (nvidia-nvvm, nvidia-cuda-nvcc); default: python3 on PATH")
CUDA_HOME = Variable("CUDA_HOME", False, "both", "key", "a CUDA toolkit: libdevice and ptxas for builds, compute-sanitizer for `pyoxide verify --sanitize`")
CUDA_PATH = Variable("CUDA_PATH", False, "both", "key", "another name for CUDA_HOME")
OXIDE_NO_FMAD = Variable("OXIDE_NO_FMAD", False, "cargo-oxide", "key", "set (not 0): build as with --no-fmad, every multiply and add rounded apart")
CUDA_OXIDE_NO_FMA = Variable("CUDA_OXIDE_NO_FMA", False, "cargo-oxide", "key", "cuda-oxide's spelling of OXIDE_NO_FMAD, honoured so a ported project keeps its rounding")
OXIDE_KEEP_TEMPS = Variable("OXIDE_KEEP_TEMPS", False, "cargo-oxide", "none", "keep the link step's intermediate LLVM IR files (debugging the link step)")
OXIDE_LINK_CONFIG = Variable("OXIDE_LINK_CONFIG", False, "cargo-oxide", "none", "set by `cargo oxide build` for its own link step (the nvptx linker): the path of its configuration")
CARGO_HOME = Variable("CARGO_HOME", False, "cargo", "key", "cargo's home: its config.toml and the registry of crates.io sources")
CARGO_NET_OFFLINE = Variable("CARGO_NET_OFFLINE", False, "cargo", "none", "true: cargo uses no network (a kernel crate made by `pyoxide new` builds from the sources vendored in the pyoxide wheel)")
RUSTFLAGS = Variable("RUSTFLAGS", False, "cargo", "key", "rustc flags of the host (emulator) build (the device build drops them)")
CARGO_ENCODED_RUSTFLAGS = Variable("CARGO_ENCODED_RUSTFLAGS", False, "cargo", "key", "RUSTFLAGS in cargo's own encoding")
RUSTC_WRAPPER = Variable("RUSTC_WRAPPER", False, "cargo", "key", "a program cargo runs rustc through (the host build)")
RUSTC_WORKSPACE_WRAPPER = Variable("RUSTC_WORKSPACE_WRAPPER", False, "cargo", "key", "a program cargo runs rustc through for workspace members")
CARGO_PROFILE = Variable("CARGO_PROFILE_", True, "cargo", "key", "cargo's profile settings (CARGO_PROFILE_RELEASE_OPT_LEVEL, …)")
CARGO_BUILD = Variable("CARGO_BUILD_", True, "cargo", "key", "cargo's [build] settings (CARGO_BUILD_RUSTFLAGS, …)")
CARGO_TARGET = Variable("CARGO_TARGET_", True, "cargo", "key", "cargo's per-target settings (CARGO_TARGET_<TRIPLE>_RUSTFLAGS, …) and CARGO_TARGET_DIR")
CARGO_UNSTABLE = Variable("CARGO_UNSTABLE_", True, "cargo", "key", "cargo's -Z settings (CARGO_UNSTABLE_BUILD_STD, …)")
PYOXIDE_ARCH = Variable("PYOXIDE_ARCH", False, "python", "key", "comma-separated architectures pyoxide.load builds for (sm_80,sm_90); default: cargo oxide's default")
PYOXIDE_CARGO_OXIDE = Variable("PYOXIDE_CARGO_OXIDE", False, "python", "resolved", "the cargo-oxide binary; default: cargo-oxide on PATH, then ~/.cargo/bin, then the one in the pyoxide wheel (the build key holds the binary's identity)")
PYOXIDE_BACKEND = Variable("PYOXIDE_BACKEND", False, "python", "none", "auto (default: GPU arrays run on cupy, NumPy arrays on the emulator), cupy or emu (one backend; other arrays are refused)")
PYOXIDE_VERBOSE = Variable("PYOXIDE_VERBOSE", False, "python", "none", "0 (default) quiet builds, 1 streams build progress, 2 also prints cache decisions")
PYOXIDE_SYNC = Variable("PYOXIDE_SYNC", False, "python", "none", "1: synchronize after every launch, so a trap is reported by the kernel that caused it (slow; for debugging)")
PYOXIDE_DEPENDENT_LAUNCH = Variable("PYOXIDE_DEPENDENT_LAUNCH", False, "python", "none", "1 (default): pyoxide's compiled launcher starts a #[dependent_launch] kernel with programmatic stream serialisation (its blocks' set-up overlaps the end of the kernel before it); 0: as an ordinary kernel (for debugging, and to measure the difference)")
PYOXIDE_TUNED_FALLBACK = Variable("PYOXIDE_TUNED_FALLBACK", False, "python", "none", "1 (default): a plain call on a GPU model with no tuned choice of its own for its shape bucket runs the choice tuned on another model of the same architecture (an H200's on an H100); 0: only the device's own model's choices, the hand pick elsewhere")
PYOXIDE_EMU_STRICT = Variable("PYOXIDE_EMU_STRICT", False, "python", "none", "1: the emulator runs in strict mode (uninitialised shared memory poisoned, a block's threads in shuffled orders, shuffles outside their mask trapped; slower); 0 (default) off. `pyoxide verify` and `backends.emu.strict()` turn it on too")
PYOXIDE_EMU_SEED = Variable("PYOXIDE_EMU_SEED", False, "python", "none", "strict mode's seed (an integer from 0 to 2**64 - 1, default 0): the same seed runs a block's threads in the same orders again")
PYOXIDE_PYTHON = Variable("PYOXIDE_PYTHON", False, "build-script", "none", "the Python that runs `pyoxide build` in a kernel project's build script; default: the active virtualenv's, the `pyoxide` command's, python3")
VIRTUAL_ENV = Variable("VIRTUAL_ENV", False, "build-script", "none", "the active virtualenv, whose Python a kernel project's build script tries first")
VARIABLES = (PYOXIDE_CACHE_DIR, XDG_CACHE_HOME, HOME, PATH, OXIDE_RUSTC, OXIDE_CARGO, OXIDE_LLVM_BIN, OXIDE_LIBDEVICE, OXIDE_PTXAS, OXIDE_PYTHON, CUDA_HOME, CUDA_PATH, OXIDE_NO_FMAD, CUDA_OXIDE_NO_FMA, OXIDE_KEEP_TEMPS, OXIDE_LINK_CONFIG, CARGO_HOME, CARGO_NET_OFFLINE, RUSTFLAGS, CARGO_ENCODED_RUSTFLAGS, RUSTC_WRAPPER, RUSTC_WORKSPACE_WRAPPER, CARGO_PROFILE, CARGO_BUILD, CARGO_TARGET, CARGO_UNSTABLE, PYOXIDE_ARCH, PYOXIDE_CARGO_OXIDE, PYOXIDE_BACKEND, PYOXIDE_VERBOSE, PYOXIDE_SYNC, PYOXIDE_DEPENDENT_LAUNCH, PYOXIDE_TUNED_FALLBACK, PYOXIDE_EMU_STRICT, PYOXIDE_EMU_SEED, PYOXIDE_PYTHON, VIRTUAL_ENV)


class BuildOption(NamedTuple):
    """An option of `cargo oxide build`."""

    flag: str
    effect: str  # key (it changes the artifacts) or none
    example: tuple[str, ...]  # for a keyed option: arguments that change the build
    doc: str


BUILD_OPTIONS = (
    BuildOption("--manifest-path", "key", ("--manifest-path", "elsewhere/Cargo.toml"), "the kernel crate (and so the cargo config files above it)"),
    BuildOption("--out-dir", "none", (), "where the artifacts go, not what they are"),
    BuildOption("--debug", "key", ("--debug",), "the dev profile: no optimisation, overflow checks"),
    BuildOption("--release", "none", (), "the release profile, which is the default"),
    BuildOption("--features", "key", ("--features", "extra"), "cargo features of the kernel crate"),
    BuildOption("--all-features", "key", ("--all-features",), "every cargo feature of the kernel crate"),
    BuildOption("--no-default-features", "key", ("--no-default-features",), "without the kernel crate's default features"),
    BuildOption("--arch", "key", ("--arch", "sm_75"), "the GPU architectures (one PTX each)"),
    BuildOption("--json", "none", (), "print the build report as JSON"),
    BuildOption("--require-ptxas", "none", (), "fail when no ptxas can verify the PTX (the PTX is the same)"),
    BuildOption("--no-emu", "key", ("--no-emu",), "no host library for the CPU emulator"),
    BuildOption("--no-fmad", "key", ("--no-fmad",), "every multiply and add rounded apart (no fused multiply-add)"),
)


class ExitCode(enum.IntEnum):
    """Exit codes of `pyoxide` and `cargo oxide` (src/exit.rs)."""

    OK = 0
    BUILD_FAILED = 1
    USAGE = 2
    TOOLCHAIN_MISSING = 3
    NOT_FOUND = 4
    LOAD_FAILED = 5
    ERROR = 6
    VERIFY_FAILED = 7
    NO_DEVICE = 8


EXIT_MEANINGS: dict[int, str] = {
    0: "success",
    1: "the build failed (rustc, the link step or ptxas)",
    2: "bad command line (an unknown option, an architecture pyoxide does not build for, a path that is not a kernel crate)",
    3: "a toolchain piece is missing (named, with its install command)",
    4: "no such kernel or architecture in the manifest",
    5: "the manifest or an artifact is unusable (malformed, newer, missing, changed)",
    6: "any other error",
    7: "a kernel failed verification (a wrong result, or a sanitizer error)",
    8: "no CUDA device (or no CuPy) for a command that needs the GPU",
}
