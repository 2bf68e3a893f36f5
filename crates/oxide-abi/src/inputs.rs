//! Every environment variable pyoxide reads (its Python package, `cargo oxide`, the cargo
//! and rustc that `cargo oxide` runs, the `oxide-build` build-script helper), and every
//! option of `cargo oxide build`, each with what it does to a build's artifacts.
//!
//! One table, read by both languages: cargo-oxide's `env.rs` reads variables only
//! through these entries, Python's `pyoxide/_manifest/knobs.py` through their generated copies
//! in `abi.py` beside it, and the build key (`cargo oxide key`, which `pyoxide.load`'s cache asks)
//! is derived from the entries whose [`Effect`] is not [`Effect::None`], so a variable
//! added here cannot be left out of it. Triton's `knobs` keeps its cache-invalidating
//! variables the same way.

/// Who reads a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// The Python package (`pyoxide/_manifest/knobs.py`).
    Python,
    /// `cargo oxide` itself.
    CargoOxide,
    /// Both of the above.
    Both,
    /// The cargo and rustc that `cargo oxide` runs (it passes them on).
    Cargo,
    /// The `oxide-build` helper in a kernel project's build script.
    BuildScript,
}

impl Reader {
    pub const fn name(self) -> &'static str {
        match self {
            Reader::Python => "python",
            Reader::CargoOxide => "cargo-oxide",
            Reader::Both => "both",
            Reader::Cargo => "cargo",
            Reader::BuildScript => "build-script",
        }
    }

    /// Whether `cargo oxide` (or the cargo it runs) sees it during a build.
    pub const fn reaches_cargo_oxide(self) -> bool {
        matches!(self, Reader::CargoOxide | Reader::Both | Reader::Cargo)
    }

    /// Whether the Python package reads it.
    pub const fn reaches_python(self) -> bool {
        matches!(self, Reader::Python | Reader::Both)
    }
}

/// What a variable or an option does to the artifacts a build writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// It changes what is built: its value, as written, is part of the build key.
    Key,
    /// It decides which tools or files are used; the build key holds what it resolved to
    /// (each tool's path and version, libdevice's hash, the cargo config files' contents),
    /// so an unrelated change (a new PATH entry) does not force a rebuild.
    Resolved,
    /// It changes nothing a build writes (where caches live, verbosity, launching).
    None,
}

impl Effect {
    pub const fn name(self) -> &'static str {
        match self {
            Effect::Key => "key",
            Effect::Resolved => "resolved",
            Effect::None => "none",
        }
    }
}

/// One environment variable, or a family of them (`prefix`: every variable whose name
/// starts with `name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variable {
    pub name: &'static str,
    pub prefix: bool,
    pub reader: Reader,
    pub effect: Effect,
    pub doc: &'static str,
}

const fn var(name: &'static str, reader: Reader, effect: Effect, doc: &'static str) -> Variable {
    Variable {
        name,
        prefix: false,
        reader,
        effect,
        doc,
    }
}

const fn family(name: &'static str, doc: &'static str) -> Variable {
    Variable {
        name,
        prefix: true,
        reader: Reader::Cargo,
        effect: Effect::Key,
        doc,
    }
}

use Effect::{Key, Resolved};
use Reader::{Both, BuildScript, Cargo, CargoOxide, Python};

/// The variables: each a constant named as the variable (`var(reader, effect, doc)`, or
/// `family(doc)` for a prefix) and an entry of [`VARIABLES`], in the order the docs list
/// them.
macro_rules! variables {
    ($($name:ident = $ctor:ident($($arg:expr),* $(,)?);)*) => {
        $(pub const $name: Variable = $ctor(stringify!($name), $($arg),*);)*

        /// Every variable, in the order the docs list them.
        pub const VARIABLES: [Variable; [$(stringify!($name)),*].len()] = [$($name),*];
    };
}

variables! {
    // ---- where things live -----------------------------------------------------------
    PYOXIDE_CACHE_DIR = var(
        Both,
        Effect::None,
        "the cache folder (built crates, the GPU's core sysroot); default \
         $XDG_CACHE_HOME/pyoxide, else <home>/.cache/pyoxide. It must be yours and not \
         writable by others"
    );
    XDG_CACHE_HOME = var(
        Both,
        Effect::None,
        "the cache folder's parent when PYOXIDE_CACHE_DIR is unset"
    );
    HOME = var(
        Both,
        Resolved,
        "the home folder (when unset or empty: the user database's, never the temp folder); \
         holds the default cache and cargo's ~/.cargo/config.toml, whose contents are keyed"
    );
    // ---- the device toolchain --------------------------------------------------------
    PATH = var(
        Both,
        Resolved,
        "where rustc, cargo, the LLVM tools, ptxas and cargo-oxide are found; the build key \
         holds the tools found, not PATH itself"
    );
    OXIDE_RUSTC = var(
        CargoOxide,
        Key,
        "the device rustc (it needs its matching rust-src); default: the first rustc on \
         PATH, then /usr/bin/rustc, that has it"
    );
    OXIDE_CARGO = var(
        CargoOxide,
        Key,
        "the cargo that drives the device build; default: the one beside the device rustc"
    );
    OXIDE_LLVM_BIN = var(
        CargoOxide,
        Key,
        "the folder of llvm-link, opt and llc of the device rustc's LLVM major"
    );
    OXIDE_LIBDEVICE = var(
        CargoOxide,
        Key,
        "libdevice.10.bc (CUDA's math library as bitcode); default: a CUDA toolkit's, then \
         the nvidia-nvvm wheel's"
    );
    OXIDE_PTXAS = var(
        CargoOxide,
        Key,
        "the ptxas that verifies the PTX (when set, a build fails without it working); \
         default: PATH, a CUDA toolkit, the nvidia-cuda-nvcc wheel"
    );
    OXIDE_PYTHON = var(
        CargoOxide,
        Key,
        "the Python whose site-packages hold NVIDIA's wheels (nvidia-nvvm, nvidia-cuda-nvcc); \
         default: python3 on PATH"
    );
    CUDA_HOME = var(
        Both,
        Key,
        "a CUDA toolkit: libdevice and ptxas for builds, compute-sanitizer for \
         `pyoxide verify --sanitize`"
    );
    CUDA_PATH = var(
        Both,
        Key,
        "another name for CUDA_HOME"
    );
    // ---- code generation -------------------------------------------------------------
    OXIDE_NO_FMAD = var(
        CargoOxide,
        Key,
        "set (not 0): build as with --no-fmad, every multiply and add rounded apart"
    );
    CUDA_OXIDE_NO_FMA = var(
        CargoOxide,
        Key,
        "cuda-oxide's spelling of OXIDE_NO_FMAD, honoured so a ported project keeps its rounding"
    );
    OXIDE_KEEP_TEMPS = var(
        CargoOxide,
        Effect::None,
        "keep the link step's intermediate LLVM IR files (debugging the link step)"
    );
    OXIDE_LINK_CONFIG = var(
        CargoOxide,
        Effect::None,
        "set by `cargo oxide build` for its own link step (the nvptx linker): the path of its \
         configuration"
    );
    // ---- what cargo and rustc read -----------------------------------------------------
    CARGO_HOME = var(
        Cargo,
        Key,
        "cargo's home: its config.toml and the registry of crates.io sources"
    );
    CARGO_NET_OFFLINE = var(
        Cargo,
        Effect::None,
        "true: cargo uses no network (a kernel crate made by `pyoxide new` builds from the \
         sources vendored in the pyoxide wheel)"
    );
    RUSTFLAGS = var(
        Cargo,
        Key,
        "rustc flags of the host (emulator) build (the device build drops them)"
    );
    CARGO_ENCODED_RUSTFLAGS = var(
        Cargo,
        Key,
        "RUSTFLAGS in cargo's own encoding"
    );
    RUSTC_WRAPPER = var(
        Cargo,
        Key,
        "a program cargo runs rustc through (the host build)"
    );
    RUSTC_WORKSPACE_WRAPPER = var(
        Cargo,
        Key,
        "a program cargo runs rustc through for workspace members"
    );
    CARGO_PROFILE_ = family("cargo's profile settings (CARGO_PROFILE_RELEASE_OPT_LEVEL, …)");
    CARGO_BUILD_ = family("cargo's [build] settings (CARGO_BUILD_RUSTFLAGS, …)");
    CARGO_TARGET_ = family("cargo's per-target settings (CARGO_TARGET_<TRIPLE>_RUSTFLAGS, …) and CARGO_TARGET_DIR");
    CARGO_UNSTABLE_ = family("cargo's -Z settings (CARGO_UNSTABLE_BUILD_STD, …)");
    // ---- the Python package -------------------------------------------------------------
    PYOXIDE_ARCH = var(
        Python,
        Key,
        "comma-separated architectures pyoxide.load builds for (sm_80,sm_90); default: \
         cargo oxide's default"
    );
    PYOXIDE_CARGO_OXIDE = var(
        Python,
        Resolved,
        "the cargo-oxide binary; default: cargo-oxide on PATH, then ~/.cargo/bin, then the \
         one in the pyoxide wheel (the build key holds the binary's identity)"
    );
    PYOXIDE_BACKEND = var(
        Python,
        Effect::None,
        "auto (default: GPU arrays run on cupy, NumPy arrays on the emulator), cupy or emu \
         (one backend; other arrays are refused)"
    );
    PYOXIDE_VERBOSE = var(
        Python,
        Effect::None,
        "0 (default) quiet builds, 1 streams build progress, 2 also prints cache decisions"
    );
    PYOXIDE_SYNC = var(
        Python,
        Effect::None,
        "1: synchronize after every launch, so a trap is reported by the kernel that caused \
         it (slow; for debugging)"
    );
    PYOXIDE_DEPENDENT_LAUNCH = var(
        Python,
        Effect::None,
        "1 (default): pyoxide's compiled launcher starts a #[dependent_launch] kernel with \
         programmatic stream serialisation (its blocks' set-up overlaps the end of the kernel \
         before it); 0: as an ordinary kernel (for debugging, and to measure the difference)"
    );
    PYOXIDE_TUNED_FALLBACK = var(
        Python,
        Effect::None,
        "1 (default): a plain call on a GPU model with no tuned choice of its own for its shape \
         bucket runs the choice tuned on another model of the same architecture (an H200's on \
         an H100); 0: only the device's own model's choices, the hand pick elsewhere"
    );
    PYOXIDE_EMU_STRICT = var(
        Python,
        Effect::None,
        "1: the emulator runs in strict mode (uninitialised shared memory poisoned, a block's \
         threads in shuffled orders, shuffles outside their mask trapped; slower); 0 (default) \
         off. `pyoxide verify` and `backends.emu.strict()` turn it on too"
    );
    PYOXIDE_EMU_SEED = var(
        Python,
        Effect::None,
        "strict mode's seed (an integer from 0 to 2**64 - 1, default 0): the same seed runs a \
         block's threads in the same orders again"
    );
    // ---- a kernel project's build script (oxide-build) ------------------------------------
    PYOXIDE_PYTHON = var(
        BuildScript,
        Effect::None,
        "the Python that runs `pyoxide build` in a kernel project's build script; default: \
         the active virtualenv's, the `pyoxide` command's, python3"
    );
    VIRTUAL_ENV = var(
        BuildScript,
        Effect::None,
        "the active virtualenv, whose Python a kernel project's build script tries first"
    );
}

/// One option of `cargo oxide build` (by its long name, as clap spells the argument id
/// with `-` for `_`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildOption {
    pub flag: &'static str,
    pub effect: Effect,
    /// For a [`Effect::Key`] option: arguments that, added to a default command line,
    /// change the build (a test flips each and sees the key change).
    pub example: &'static [&'static str],
    pub doc: &'static str,
}

const fn opt(
    flag: &'static str,
    effect: Effect,
    example: &'static [&'static str],
    doc: &'static str,
) -> BuildOption {
    BuildOption {
        flag,
        effect,
        example,
        doc,
    }
}

/// Every option of `cargo oxide build`. A test in cargo-oxide fails when its command line
/// has an option this table lacks.
pub const BUILD_OPTIONS: [BuildOption; 12] = [
    opt(
        "--manifest-path",
        Key,
        &["--manifest-path", "elsewhere/Cargo.toml"],
        "the kernel crate (and so the cargo config files above it)",
    ),
    opt(
        "--out-dir",
        Effect::None,
        &[],
        "where the artifacts go, not what they are",
    ),
    opt(
        "--debug",
        Key,
        &["--debug"],
        "the dev profile: no optimisation, overflow checks",
    ),
    opt(
        "--release",
        Effect::None,
        &[],
        "the release profile, which is the default",
    ),
    opt(
        "--features",
        Key,
        &["--features", "extra"],
        "cargo features of the kernel crate",
    ),
    opt(
        "--all-features",
        Key,
        &["--all-features"],
        "every cargo feature of the kernel crate",
    ),
    opt(
        "--no-default-features",
        Key,
        &["--no-default-features"],
        "without the kernel crate's default features",
    ),
    opt(
        "--arch",
        Key,
        &["--arch", "sm_75"],
        "the GPU architectures (one PTX each)",
    ),
    opt(
        "--json",
        Effect::None,
        &[],
        "print the build report as JSON",
    ),
    opt(
        "--require-ptxas",
        Effect::None,
        &[],
        "fail when no ptxas can verify the PTX (the PTX is the same)",
    ),
    opt(
        "--no-emu",
        Key,
        &["--no-emu"],
        "no host library for the CPU emulator",
    ),
    opt(
        "--no-fmad",
        Key,
        &["--no-fmad"],
        "every multiply and add rounded apart (no fused multiply-add)",
    ),
];

/// The entry of `name`: the variable itself, or the family it belongs to.
pub fn variable(name: &str) -> Option<&'static Variable> {
    VARIABLES.iter().find(|v| {
        if v.prefix {
            name.starts_with(v.name)
        } else {
            v.name == name
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_families_end_in_an_underscore() {
        for (i, v) in VARIABLES.iter().enumerate() {
            assert!(
                VARIABLES[..i].iter().all(|w| w.name != v.name),
                "{} twice",
                v.name
            );
            assert_eq!(v.prefix, v.name.ends_with('_'), "{}", v.name);
        }
        for (i, o) in BUILD_OPTIONS.iter().enumerate() {
            assert!(BUILD_OPTIONS[..i].iter().all(|p| p.flag != o.flag));
            assert_eq!(o.effect == Key, !o.example.is_empty(), "{}", o.flag);
        }
    }

    #[test]
    fn a_family_member_finds_its_family() {
        assert_eq!(
            variable("CARGO_PROFILE_RELEASE_OPT_LEVEL").map(|v| v.name),
            Some("CARGO_PROFILE_")
        );
        assert_eq!(variable("OXIDE_NO_FMAD"), Some(&OXIDE_NO_FMAD));
        assert_eq!(variable("NOT_OURS"), None);
    }
}
