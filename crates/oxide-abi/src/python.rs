//! `pyoxide/_manifest/abi.py`, generated from this crate: the tables Python needs (scalar types,
//! parameter kinds, limits, exit codes, the reports' keys, versions, the emulator's C
//! ABI, the environment variables and build options, the architecture rule). A test in
//! cargo-oxide (`tests/abi_is_current.rs`) regenerates it and fails when the checked-in
//! file differs, as for the manifest schema.

use std::fmt::Write;

use crate::types::{ParamKind, ScalarType};
use crate::{arch, descriptor, emu, exit, inputs, limits, names, report, shape};

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// Tuning (src/tune.rs): versions, limits, the emulator's device, the launch parameters
/// `#[tune]` takes and the policies that have each.
fn tune_tables(w: &mut String) {
    use crate::tune;
    let _ = writeln!(
        w,
        "# Tuning (src/tune.rs).\n\
         TUNE_REPORT_VERSION = {}\n\
         TUNED_FILE_VERSION = {}\n\
         MAX_TUNE_CANDIDATES = {}\n\
         EMULATOR_DEVICE = \"{}\"\n\
         EMULATOR_ARCH = \"{}\"",
        tune::TUNE_REPORT_VERSION,
        tune::TUNED_FILE_VERSION,
        tune::MAX_TUNE_CANDIDATES,
        tune::EMULATOR_DEVICE,
        tune::EMULATOR_ARCH,
    );
    w.push_str("# Launch parameters #[tune] takes, and the launch policies that have each.\n");
    w.push_str("TUNABLE_LAUNCH: dict[str, frozenset[str]] = {\n");
    for t in tune::TUNABLE_LAUNCH {
        let kinds: Vec<String> = t.policies.iter().map(|k| format!("\"{k}\"")).collect();
        let _ = writeln!(
            w,
            "    \"{}\": frozenset({{{}}}),",
            t.name,
            kinds.join(", ")
        );
    }
    w.push_str("}\n\n");
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
    let _ = writeln!(
        w,
        "# What every ptxas diagnostic of a serialised wgmma pipeline says, whatever its code\n\
         # (src/manifest.rs).\n\
         PTXAS_WGMMA_SERIALIZED = {}\n\
         # How ptxas labels a diagnostic's line (src/manifest.rs).\n\
         PTXAS_LEVELS = ({})\n",
        py_str(crate::manifest::PTXAS_WGMMA_SERIALIZED),
        quoted(&crate::manifest::PtxasLevel::ALL.map(|l| l.name()))
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
            "    \"{n}\": Kind(\"{n}\", {}, {}, {}, {}, {}, {}, \"{}\", \"{}\"),",
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
    // `NAME = value` under each constant's own name (`via` a function that shows it).
    macro_rules! py_constants {
        ($($m:ident::$n:ident $(via $show:ident)?;)*) => {$(
            let _ = writeln!(w, "{} = {}", stringify!($n), $($show)?($m::$n));
        )*};
    }
    w.push_str("# CUDA limits (src/limits.rs).\n");
    py_constants! {
        limits::MAX_THREADS_PER_BLOCK;
        limits::WARP_SIZE;
        limits::MAX_BLOCK_DIM via dim;
        limits::MAX_GRID_DIM via dim;
        limits::DEFAULT_DYNAMIC_SHARED_BYTES;
        limits::MAX_DYNAMIC_SHARED_BYTES;
        limits::MAX_SLICE_BYTES;
        limits::MIN_ARCH;
        names::DYNAMIC_SHARED_ALIGN;
    }
    w.push_str(
        "# The block of a kernel launched without a policy or an explicit block \
         (src/descriptor.rs).\n",
    );
    py_constants! {
        descriptor::DEFAULT_BLOCK;
        shape::MAX_ARRAY_RANK;
        shape::MAX_ARRAY_EXTENT;
        limits::MAX_CLUSTER_SIZE;
        limits::MIN_CLUSTER_ARCH;
        limits::MIN_DEPENDENT_LAUNCH_ARCH;
        limits::TMA_ALIGN_BYTES;
        limits::TMA_MAX_BOX;
        limits::TENSOR_MAP_BYTES;
        descriptor::MAX_BLOCKS_PER_SM;
    }
    w.push('\n');
    let names = |kinds: &[&str]| -> String {
        let quoted: Vec<String> = kinds.iter().map(|k| format!("\"{k}\"")).collect();
        quoted.join(", ")
    };
    let _ = writeln!(
        w,
        "# Launch policies whose launches are 1-D only (src/descriptor.rs).\n\
         ONE_D_POLICIES = frozenset({{{}}})\n",
        names(&crate::descriptor::ONE_D_POLICIES)
    );
    let _ = writeln!(
        w,
        "# Launch policies whose blocks_per_sm may be 0, one block per row \
         (src/descriptor.rs).\n\
         BLOCKS_PER_SM_ZERO_KINDS = frozenset({{{}}})\n",
        names(&crate::descriptor::BLOCKS_PER_SM_ZERO_KINDS)
    );
    tune_tables(w);
    w.push_str(
        "# How a verify case can fail: the report's `what` (src/verify.rs).\nVERIFY_FAILURES = (\n",
    );
    for kind in crate::verify::FailureKind::ALL {
        let _ = writeln!(w, "    \"{}\",", kind.name());
    }
    w.push_str(")\n\n");
    w.push_str("# The keys of `cargo oxide build --json`'s report, all always present.\n");
    let keys: Vec<String> = report::BUILD_REPORT_KEYS
        .iter()
        .map(|k| format!("\"{k}\""))
        .collect();
    let _ = writeln!(w, "BUILD_REPORT_KEYS = ({})", keys.join(", "));
    w.push_str("# The keys of `cargo oxide key`'s report, all always present.\n");
    let _ = writeln!(
        w,
        "KEY_REPORT_KEYS = ({})\n",
        quoted(&report::KEY_REPORT_KEYS)
    );
    emulator_abi(w);
    architectures(w);
    variables(w);
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

fn quoted(items: &[&str]) -> String {
    items
        .iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A Python string literal (the text has no quote or backslash of its own).
fn py_str(text: &str) -> String {
    assert!(!text.contains(['"', '\\', '\n']), "{text}");
    format!("\"{text}\"")
}

/// The emulator library's C ABI (src/emu.rs, src/names.rs).
fn emulator_abi(w: &mut String) {
    let _ = write!(
        w,
        "\n# The emulator library's C ABI (src/emu.rs, src/names.rs).\n\
         HOST_ENTRY_PREFIX = {}\n\
         DESCRIPTOR_SECTION = {}\n\
         OXIDE_ERROR_MESSAGE_BYTES = {}\n\
         EMU_CONFIGURE_SYMBOL = {}\n\
         EMU_CHECK_STRICT = {}\n\n\n\
         class EmuStatus(enum.IntEnum):\n    \
         \"\"\"What a host entry returns (src/emu.rs).\"\"\"\n\n",
        py_str(names::HOST_ENTRY_PREFIX),
        py_str(names::DESCRIPTOR_SECTION),
        emu::OXIDE_ERROR_MESSAGE_BYTES,
        py_str(emu::CONFIGURE_SYMBOL),
        emu::CHECK_STRICT,
    );
    for (name, code) in emu::STATUSES {
        let _ = writeln!(w, "    {name} = {code}");
    }
}

/// The one architecture rule (src/arch.rs), and how it decides its examples.
fn architectures(w: &mut String) {
    let malformed = arch::ArchError::Malformed.message("{name}");
    let too_old = arch::ArchError::TooOld(0).message("{name}");
    let _ = write!(
        w,
        "\n\nclass Arch(NamedTuple):\n    \
         \"\"\"A GPU architecture name, parsed (src/arch.rs).\"\"\"\n\n    \
         number: int\n    \
         suffix: str  # \"\" plain, \"a\" arch-specific (that GPU only), \"f\" family (same major)\n\n\n\
         DEFAULT_ARCHS = ({})\n\n\n\
         def parse_arch(name: str) -> Arch:\n    \
         \"\"\"``sm_NN`` (NN >= MIN_ARCH, no leading zero) with at most one suffix, ``a`` or\n    \
         ``f``: the rule of src/arch.rs. Raises ValueError, whose message gives the fix.\"\"\"\n    \
         rest = name[3:] if name.startswith(\"sm_\") else \"\"\n    \
         suffix = rest[-1] if rest[-1:] in (\"a\", \"f\") else \"\"\n    \
         digits = rest[: len(rest) - len(suffix)]\n    \
         if not (0 < len(digits) <= 4 and digits[0] != \"0\" and digits.isascii() and digits.isdigit()):\n        \
         raise ValueError(f{})\n    \
         if int(digits) < MIN_ARCH:\n        \
         raise ValueError(f{})\n    \
         return Arch(int(digits), suffix)\n\n\n\
         # How src/arch.rs decides each name (None: refused); parse_arch must agree (a test checks).\n\
         ARCH_EXAMPLES: dict[str, Arch | None] = {{\n",
        quoted(&arch::DEFAULT_ARCHS),
        py_str(&malformed),
        py_str(&too_old),
    );
    for name in arch::EXAMPLES {
        let outcome = match arch::parse(name) {
            Ok(a) => format!("Arch({}, \"{}\")", a.number, a.suffix.letter()),
            Err(_) => "None".into(),
        };
        let _ = writeln!(w, "    {}: {outcome},", py_str(name));
    }
    w.push_str("}\n");
}

/// Every environment variable and build option, with its effect on artifacts
/// (src/inputs.rs).
fn variables(w: &mut String) {
    w.push_str(
        "\n\nclass Variable(NamedTuple):\n    \
         \"\"\"An environment variable (or, with `prefix`, every one starting with `name`).\"\"\"\n\n    \
         name: str\n    \
         prefix: bool\n    \
         reader: str  # python, cargo-oxide, both, cargo (run by cargo-oxide), build-script\n    \
         effect: str  # key (its value is keyed), resolved (what it resolves to is), none\n    \
         doc: str\n\n\n\
         # Every environment variable pyoxide reads (src/inputs.rs).\n",
    );
    for v in inputs::VARIABLES {
        let _ = writeln!(
            w,
            "{} = Variable({}, {}, \"{}\", \"{}\", {})",
            v.name.trim_end_matches('_'),
            py_str(v.name),
            py_bool(v.prefix),
            v.reader.name(),
            v.effect.name(),
            py_str(v.doc),
        );
    }
    let names: Vec<&str> = inputs::VARIABLES
        .iter()
        .map(|v| v.name.trim_end_matches('_'))
        .collect();
    let _ = writeln!(w, "VARIABLES = ({})\n", names.join(", "));
    w.push_str(
        "\nclass BuildOption(NamedTuple):\n    \
         \"\"\"An option of `cargo oxide build`.\"\"\"\n\n    \
         flag: str\n    \
         effect: str  # key (it changes the artifacts) or none\n    \
         example: tuple[str, ...]  # for a keyed option: arguments that change the build\n    \
         doc: str\n\n\n\
         BUILD_OPTIONS = (\n",
    );
    for o in inputs::BUILD_OPTIONS {
        let example: Vec<String> = o.example.iter().map(|e| py_str(e)).collect();
        let trailing = if example.len() == 1 { "," } else { "" };
        let _ = writeln!(
            w,
            "    BuildOption({}, \"{}\", ({}{trailing}), {}),",
            py_str(o.flag),
            o.effect.name(),
            example.join(", "),
            py_str(o.doc),
        );
    }
    w.push_str(")\n\n");
}
