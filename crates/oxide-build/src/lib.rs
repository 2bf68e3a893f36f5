//! `oxide-build`: a build-script helper that puts a kernel crate's artifacts (PTX per
//! arch, manifest, `.pyi` stubs and, optionally, the CPU emulator library) into a Python
//! package folder, so that `maturin build` (or `pip wheel`) of a pyoxide project produces
//! a complete wheel in one step.
//!
//! It runs pyoxide's own `pyoxide build` (through a Python that has pyoxide) instead of
//! repeating its logic: cargo-oxide, the manifest checks and the stub generator stay in
//! one place each. (pyoxide's own wheel does not use it: its bundling step is
//! scripts/packaging/pyoxide_backend.py, which maturin's build sits behind.) The nested build gets a target dir of its own (`<target>/<profile>/oxide-bundle`)
//! because the outer cargo holds the lock on its own one for the whole build.
//!
//! ```no_run
//! // in build.rs of a `pyoxide new` project (its `wheel` feature is on for maturin only)
//! if std::env::var_os("CARGO_FEATURE_WHEEL").is_some() {
//!     oxide_build::Bundle::new(".", "python/demo/_oxide")
//!         .stub_module("python/demo/kernels.pyi")
//!         .without_emulator() // maturin's own cdylib of this crate is the emulator
//!         .run();
//! }
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use oxide_abi::inputs::{PATH, PYOXIDE_ARCH, PYOXIDE_CARGO_OXIDE, VIRTUAL_ENV};

/// The environment variable naming the Python that runs `pyoxide build` (oxide-abi's
/// table of variables declares every one this crate reads).
pub const PYTHON_ENV: &str = oxide_abi::inputs::PYOXIDE_PYTHON.name;

/// What to bundle and where. Relative paths are relative to the building crate's
/// `CARGO_MANIFEST_DIR`.
#[derive(Debug, Clone)]
pub struct Bundle {
    crate_dir: PathBuf,
    out_dir: PathBuf,
    stub_module: Option<PathBuf>,
    emulator: bool,
    archs: Option<String>,
    cargo_oxide: Option<PathBuf>,
}

impl Bundle {
    /// Build the kernel crate at `crate_dir` into `out_dir`.
    pub fn new(crate_dir: impl Into<PathBuf>, out_dir: impl Into<PathBuf>) -> Bundle {
        Bundle {
            crate_dir: crate_dir.into(),
            out_dir: out_dir.into(),
            stub_module: None,
            emulator: true,
            archs: None,
            cargo_oxide: None,
        }
    }

    /// Also write the stubs as this module's `.pyi` (e.g. `python/demo/kernels.pyi`).
    pub fn stub_module(mut self, path: impl Into<PathBuf>) -> Bundle {
        self.stub_module = Some(path.into());
        self
    }

    /// Skip the emulator library (when the wheel gets it another way).
    pub fn without_emulator(mut self) -> Bundle {
        self.emulator = false;
        self
    }

    /// Target architectures, as `pyoxide build --arch` takes them (`sm_80,sm_90`).
    pub fn archs(mut self, archs: &str) -> Bundle {
        self.archs = Some(archs.to_owned());
        self
    }

    /// Use this cargo-oxide binary rather than the one on PATH.
    pub fn cargo_oxide(mut self, exe: impl Into<PathBuf>) -> Bundle {
        self.cargo_oxide = Some(exe.into());
        self
    }

    /// Run the build; on failure, stop the build script with pyoxide's message and log.
    pub fn run(self) {
        if let Err(message) = self.try_run() {
            // A build script reports by panicking; cargo shows this text.
            panic!("\n\noxide-build: {message}\n");
        }
    }

    /// Run the build, returning pyoxide's message and log on failure.
    pub fn try_run(self) -> Result<(), String> {
        let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
        let abs = |p: &Path| {
            if p.is_absolute() {
                p.to_owned()
            } else {
                manifest_dir.join(p)
            }
        };
        let crate_dir = abs(&self.crate_dir);
        let out_dir = abs(&self.out_dir);
        rerun_if_changed(&crate_dir);
        for var in [
            PYTHON_ENV,
            PYOXIDE_CARGO_OXIDE.name,
            PYOXIDE_ARCH.name,
            VIRTUAL_ENV.name,
        ] {
            println!("cargo:rerun-if-env-changed={var}");
        }

        let run_pyoxide = ["-m", "pyoxide"];
        let python = python(&run_pyoxide);
        let mut cmd = Command::new(&python);
        // Not --quiet: the streamed log (captured here) is what explains a failure.
        cmd.args(run_pyoxide).arg("build").arg(&crate_dir);
        cmd.arg("--out-dir").arg(&out_dir);
        if let Some(stub) = &self.stub_module {
            cmd.arg("--stub-module").arg(abs(stub));
        }
        if !self.emulator {
            cmd.arg("--no-emu");
        }
        if let Some(archs) = &self.archs {
            cmd.args(["--arch", archs]);
        }
        scrub_cargo_env(&mut cmd);
        cmd.env("CARGO_TARGET_DIR", bundle_target_dir()?);
        if let Some(exe) = &self.cargo_oxide {
            cmd.env(PYOXIDE_CARGO_OXIDE.name, exe);
        }
        let output = cmd.output().map_err(|e| {
            format!(
                "cannot run {} ({e}). Fix: install Python with pyoxide, or set {PYTHON_ENV} \
                 to a Python that has it",
                python.to_string_lossy()
            )
        })?;
        if output.status.success() {
            return Ok(());
        }
        let log = String::from_utf8_lossy(&output.stderr);
        let what = format!("pyoxide build {}", crate_dir.display());
        let hint = if log.contains("No module named pyoxide") {
            format!(
                "{} has no pyoxide. Fix: run the build from an environment that has pyoxide \
                 installed (maturin build / pip install --no-build-isolation), or set \
                 {PYTHON_ENV} to a Python that has it",
                python.to_string_lossy()
            )
        } else {
            "Fix: correct the errors in the log above (rustc, the link step or ptxas); \
             `pyoxide doctor` checks the toolchain"
                .to_owned()
        };
        let code = output
            .status
            .code()
            .map_or("a signal".to_owned(), |c| c.to_string());
        Err(format!("`{what}` failed (exit {code}):\n{log}\n{hint}"))
    }
}

/// The Python to run pyoxide with: `PYOXIDE_PYTHON` when set; else the first of the
/// active virtualenv's Python, the Python of the `pyoxide` command on PATH (its
/// shebang) and `python3` that can run pyoxide (`run_pyoxide`). An isolated
/// `pip` build puts its own environment first and tells the backend nothing of the
/// Python that ran pip, hence the search.
fn python(run_pyoxide: &[&str]) -> OsString {
    if let Some(p) = std::env::var_os(PYTHON_ENV).filter(|p| !p.is_empty()) {
        return p;
    }
    let mut candidates: Vec<OsString> = Vec::new();
    if let Some(venv) = std::env::var_os(VIRTUAL_ENV.name).filter(|p| !p.is_empty()) {
        candidates.push(Path::new(&venv).join("bin").join("python").into_os_string());
    }
    if let Some(interpreter) = pyoxide_command_interpreter() {
        candidates.push(interpreter);
    }
    candidates.push(OsString::from("python3"));
    let has_pyoxide = |python: &OsString| {
        Command::new(python)
            .args(run_pyoxide)
            .arg("--help")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    candidates
        .iter()
        .find(|c| has_pyoxide(c))
        .cloned()
        .unwrap_or_else(|| OsString::from("python3"))
}

/// The interpreter in the shebang of the `pyoxide` console script on PATH.
fn pyoxide_command_interpreter() -> Option<OsString> {
    let path = std::env::var_os(PATH.name)?;
    let script = std::env::split_paths(&path)
        .map(|d| d.join("pyoxide"))
        .find(|p| p.is_file())?;
    let text = std::fs::read(&script).ok()?;
    let first = text.split(|b| *b == b'\n').next()?;
    let interpreter = std::str::from_utf8(first.strip_prefix(b"#!")?).ok()?.trim();
    // `#!/usr/bin/env python3` style lines name no particular environment.
    (Path::new(interpreter).is_absolute() && !interpreter.contains(' '))
        .then(|| OsString::from(interpreter))
}

fn env(name: &str) -> Result<OsString, String> {
    std::env::var_os(name).ok_or_else(|| format!("{name} is not set: run me from a build script"))
}

/// `<target dir>/<profile>/oxide-bundle`: `OUT_DIR` is
/// `<target dir>/[<triple>/]<profile>/build/<package>-<hash>/out`. (CACHEDIR.TAG, which
/// marks the target dir, is not there yet when a fresh target dir's first build runs.)
fn bundle_target_dir() -> Result<PathBuf, String> {
    let out = PathBuf::from(env("OUT_DIR")?);
    let profile_dir = out
        .ancestors()
        .find(|d| d.file_name().is_some_and(|n| n == "build"))
        .and_then(Path::parent)
        .ok_or_else(|| format!("OUT_DIR {} is not inside a cargo target dir", out.display()))?;
    Ok(profile_dir.join("oxide-bundle"))
}

fn rerun_if_changed(crate_dir: &Path) {
    for name in ["Cargo.toml", "src", "build.rs"] {
        let p = crate_dir.join(name);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}

/// Remove what cargo tells a build script about *this* build, so that the nested cargo
/// (run by cargo-oxide) configures itself: `RUSTC` would pick the host rustc over the
/// device toolchain, `CARGO_ENCODED_RUSTFLAGS` would leak the outer flags, the jobserver
/// belongs to the outer build.
fn scrub_cargo_env(cmd: &mut Command) {
    const EXACT: &[&str] = &[
        "CARGO",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_MAKEFLAGS",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_CRATE_NAME",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_LINKER",
        "RUSTDOC",
        "TARGET",
        "HOST",
        "OUT_DIR",
        "OPT_LEVEL",
        "DEBUG",
        "PROFILE",
        "NUM_JOBS",
    ];
    const PREFIXES: &[&str] = &["CARGO_PKG_", "CARGO_CFG_", "CARGO_FEATURE_", "DEP_"];
    for (key, _) in std::env::vars_os() {
        let Some(k) = key.to_str() else { continue };
        if EXACT.contains(&k) || PREFIXES.iter().any(|p| k.starts_with(p)) {
            cmd.env_remove(&key);
        }
    }
}
