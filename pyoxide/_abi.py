"""Generated from crates/oxide-abi (src/python.rs): do not edit.

Regenerate with `OXIDE_BLESS=1 cargo test -p cargo-oxide --test abi_is_current`;
that test fails while this file differs from what the Rust tables generate.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

MANIFEST_SCHEMA_VERSION = 7
DESCRIPTOR_VERSION = 2
VERIFY_REPORT_VERSION = 1


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
    "scalar": Kind(
        "scalar",
        1,
        False,
        False,
        False,
        False,
        False,
        "{t}",
        "value",
    ),
    "slice": Kind(
        "slice",
        2,
        True,
        True,
        False,
        False,
        False,
        "&[{t}]",
        "pointer, length (u64)",
    ),
    "disjoint_slice": Kind(
        "disjoint_slice",
        2,
        True,
        True,
        True,
        True,
        False,
        "DisjointSlice<{t}>",
        "pointer, length (u64)",
    ),
    "mut_slice": Kind(
        "mut_slice",
        2,
        True,
        True,
        True,
        True,
        False,
        "&mut [{t}]",
        "pointer, length (u64)",
    ),
    "pointer": Kind(
        "pointer",
        1,
        True,
        False,
        False,
        False,
        False,
        "*{mut} {t}",
        "pointer",
    ),
    "atomic_slice": Kind(
        "atomic_slice",
        2,
        True,
        True,
        True,
        False,
        False,
        "AtomicSlice<{t}>",
        "pointer, length (u64)",
    ),
    "array": Kind(
        "array",
        1,
        True,
        False,
        False,
        False,
        True,
        "Array{r}<{t}{l}>",
        "pointer, extents (u64 per dimension), strides in elements (u64 per dimension)",
    ),
    "disjoint_array": Kind(
        "disjoint_array",
        1,
        True,
        False,
        True,
        True,
        True,
        "DisjointArray{r}<{t}{l}>",
        "pointer, extents (u64 per dimension), strides in elements (u64 per dimension)",
    ),
    "value": Kind(
        "value",
        1,
        False,
        False,
        False,
        False,
        False,
        "{t}",
        "its bytes (emulator: their address)",
    ),
}

# CUDA limits (src/limits.rs).
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2147483647, 65535, 65535)
DEFAULT_DYNAMIC_SHARED_BYTES = 49152
MAX_DYNAMIC_SHARED_BYTES = 232448
MAX_SLICE_BYTES = 9223372036854775807
MIN_ARCH = 75
DYNAMIC_SHARED_ALIGN = 16
MAX_ARRAY_RANK = 3
MAX_ARRAY_EXTENT = 2147483647
MAX_CLUSTER_SIZE = 8
MIN_CLUSTER_ARCH = 90
TMA_ALIGN_BYTES = 16
TMA_MAX_BOX = 256
TENSOR_MAP_BYTES = 128

# Launch policies whose launches are 1-D only (src/descriptor.rs).
ONE_D_POLICIES = frozenset({"elementwise", "grid_stride"})

# The keys of `cargo oxide build --json`'s report, all always present.
BUILD_REPORT_KEYS = ("manifest", "crate", "artifacts", "emulator")


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
