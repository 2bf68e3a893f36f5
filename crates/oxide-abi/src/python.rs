//! `pyoxide/_abi.py`, generated from this crate: the tables Python needs (scalar types,
//! parameter kinds, limits, exit codes, the build report's keys, versions). A test in
//! cargo-oxide (`tests/abi_is_current.rs`) regenerates it and fails when the checked-in
//! file differs, as for the manifest schema.

use std::fmt::Write;

use crate::types::{ParamKind, ScalarType};
use crate::{exit, limits, names, report};

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// The module's source text (formatted as `ruff format` leaves it).
pub fn module_source() -> String {
    let mut s = String::new();
    let w = &mut s;
    w.push_str(
        "\"\"\"Generated from crates/oxide-abi (src/python.rs): do not edit.\n\n\
         Regenerate with `OXIDE_BLESS=1 cargo test -p cargo-oxide --test abi_is_current`;\n\
         that test fails while this file differs from what the Rust tables generate.\n\
         \"\"\"\n\n\
         from __future__ import annotations\n\n\
         import enum\n\
         from typing import NamedTuple\n\n",
    );
    let _ = writeln!(
        w,
        "MANIFEST_SCHEMA_VERSION = {}\nDESCRIPTOR_VERSION = {}\nVERIFY_REPORT_VERSION = {}\n",
        crate::MANIFEST_SCHEMA_VERSION,
        crate::DESCRIPTOR_VERSION,
        crate::verify::VERIFY_REPORT_VERSION
    );
    w.push_str(
        "\nclass Scalar(NamedTuple):\n    \
         \"\"\"A scalar or element type, by its Rust (= manifest) name.\"\"\"\n\n    \
         name: str\n    \
         size: int  # bytes at the launch ABI\n    \
         kind: str  # NumPy's kind letter: i signed, u unsigned, f float, b bool\n    \
         typestr: str  # an array's normalized typestr (bf16: pyoxide's <E2)\n    \
         lo: int | None  # an integer type's range; None for floats and bool\n    \
         hi: int | None\n\n\n",
    );
    w.push_str("SCALARS: dict[str, Scalar] = {\n");
    for t in ScalarType::ALL {
        let (lo, hi) = match t.int_range() {
            Some((lo, hi)) => (lo.to_string(), hi.to_string()),
            None => ("None".into(), "None".into()),
        };
        let _ = writeln!(
            w,
            "    \"{n}\": Scalar(\"{n}\", {}, \"{}\", \"{}\", {lo}, {hi}),",
            t.size(),
            t.class(),
            t.typestr(),
            n = t.rust_name()
        );
    }
    w.push_str("}\n\n\n");
    w.push_str(
        "class Kind(NamedTuple):\n    \
         \"\"\"A parameter kind, by its manifest name.\"\"\"\n\n    \
         name: str\n    \
         abi_words: int  # words at the launch ABI: 1 (a value, a pointer) or 2 (pointer, length); +2*rank if shaped\n    \
         is_array: bool  # given as an array from Python\n    \
         is_slice: bool  # passed as (pointer, length); given as a 1-D contiguous array\n    \
         always_mutable: bool  # the kernel may write through it, whatever the declaration\n    \
         sizes_grid: bool  # its length is the work: it sizes an automatic grid\n    \
         is_shaped: bool  # a shaped array: pointer, extents, strides (rank in the manifest)\n    \
         rust: str  # how it is written in Rust ({t}: element type, {mut}: mut or const)\n    \
         abi: str  # the words it is passed as, for people\n\n\n",
    );
    w.push_str("PARAM_KINDS: dict[str, Kind] = {\n");
    for k in ParamKind::ALL {
        let _ = writeln!(
            w,
            "    \"{n}\": Kind(\n        \"{n}\",\n        {},\n        {},\n        {},\n        {},\n        {},\n        {},\n        \"{}\",\n        \"{}\",\n    ),",
            k.abi_words(),
            py_bool(k.is_array()),
            py_bool(k.is_slice()),
            py_bool(k.always_mutable()),
            py_bool(k.sizes_grid()),
            py_bool(k.is_shaped()),
            k.rust_template(),
            k.abi_text(),
            n = k.name()
        );
    }
    w.push_str("}\n\n");
    let dim = |d: [u32; 3]| format!("({}, {}, {})", d[0], d[1], d[2]);
    let _ = write!(
        w,
        "# CUDA limits (src/limits.rs).\n\
         MAX_THREADS_PER_BLOCK = {}\n\
         MAX_BLOCK_DIM = {}\n\
         MAX_GRID_DIM = {}\n\
         DEFAULT_DYNAMIC_SHARED_BYTES = {}\n\
         MAX_DYNAMIC_SHARED_BYTES = {}\n\
         MAX_SLICE_BYTES = {}\n\
         MIN_ARCH = {}\n\
         DYNAMIC_SHARED_ALIGN = {}\n\
         MAX_ARRAY_RANK = {}\n\
         MAX_ARRAY_EXTENT = {}\n\
         MAX_CLUSTER_SIZE = {}\n\
         MIN_CLUSTER_ARCH = {}\n\
         TMA_ALIGN_BYTES = {}\n\
         TMA_MAX_BOX = {}\n\
         TENSOR_MAP_BYTES = {}\n\n",
        limits::MAX_THREADS_PER_BLOCK,
        dim(limits::MAX_BLOCK_DIM),
        dim(limits::MAX_GRID_DIM),
        limits::DEFAULT_DYNAMIC_SHARED_BYTES,
        limits::MAX_DYNAMIC_SHARED_BYTES,
        limits::MAX_SLICE_BYTES,
        limits::MIN_ARCH,
        names::DYNAMIC_SHARED_ALIGN,
        crate::shape::MAX_ARRAY_RANK,
        crate::shape::MAX_ARRAY_EXTENT,
        limits::MAX_CLUSTER_SIZE,
        limits::MIN_CLUSTER_ARCH,
        limits::TMA_ALIGN_BYTES,
        limits::TMA_MAX_BOX,
        limits::TENSOR_MAP_BYTES,
    );
    let one_d: Vec<String> = crate::descriptor::ONE_D_POLICIES
        .iter()
        .map(|k| format!("\"{k}\""))
        .collect();
    let _ = writeln!(
        w,
        "# Launch policies whose launches are 1-D only (src/descriptor.rs).\n\
         ONE_D_POLICIES = frozenset({{{}}})\n",
        one_d.join(", ")
    );
    w.push_str("# The keys of `cargo oxide build --json`'s report, all always present.\n");
    let keys: Vec<String> = report::BUILD_REPORT_KEYS
        .iter()
        .map(|k| format!("\"{k}\""))
        .collect();
    let _ = writeln!(w, "BUILD_REPORT_KEYS = ({})\n", keys.join(", "));
    w.push_str(
        "\nclass ExitCode(enum.IntEnum):\n    \
         \"\"\"Exit codes of `pyoxide` and `cargo oxide` (src/exit.rs).\"\"\"\n\n",
    );
    for e in exit::ALL {
        let _ = writeln!(w, "    {} = {}", e.name, e.code);
    }
    w.push_str("\n\nEXIT_MEANINGS: dict[int, str] = {\n");
    for e in exit::ALL {
        let _ = writeln!(w, "    {}: \"{}\",", e.code, e.meaning);
    }
    w.push_str("}\n");
    s
}
