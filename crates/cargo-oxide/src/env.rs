//! Every environment variable cargo-oxide reads, declared once.

use std::ffi::OsString;
use std::path::PathBuf;

/// The device rustc (must have matching `rust-src`). Default: the first of `rustc` on
/// PATH and `/usr/bin/rustc` that has it.
pub const RUSTC: &str = "OXIDE_RUSTC";
/// The cargo to drive the device build with. Default: the one next to the device rustc.
pub const CARGO: &str = "OXIDE_CARGO";
/// Folder holding `llvm-link`, `opt`, `llc` of rustc's LLVM major version.
pub const LLVM_BIN: &str = "OXIDE_LLVM_BIN";
/// Path of `libdevice.10.bc`.
pub const LIBDEVICE: &str = "OXIDE_LIBDEVICE";
/// Path of `ptxas`.
pub const PTXAS: &str = "OXIDE_PTXAS";
/// Python used to find the NVIDIA PyPI wheels (`nvidia-nvvm`, `nvidia-cuda-nvcc`).
pub const PYTHON: &str = "OXIDE_PYTHON";
/// Cache folder for the prebuilt `core` sysroot. Shared with Python's knob.
pub const CACHE_DIR: &str = "PYOXIDE_CACHE_DIR";
/// Keep the link step's intermediate LLVM IR files (for debugging the link step).
pub const KEEP_TEMPS: &str = "OXIDE_KEEP_TEMPS";
/// Set (not `0`): build as with `--no-fmad`, every multiply and add rounded apart.
pub const NO_FMAD: &str = "OXIDE_NO_FMAD";
/// cuda-oxide's spelling of [`NO_FMAD`], honoured so that a ported project's CI keeps
/// the rounding it chose.
pub const CUDA_OXIDE_NO_FMA: &str = "CUDA_OXIDE_NO_FMA";

pub fn var(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

pub fn path(name: &str) -> Option<PathBuf> {
    var(name).map(PathBuf::from)
}

pub fn flag(name: &str) -> bool {
    var(name).is_some_and(|v| v != "0")
}

/// Where caches live: `PYOXIDE_CACHE_DIR`, else `$XDG_CACHE_HOME/pyoxide`, else
/// `~/.cache/pyoxide`.
pub fn cache_dir() -> PathBuf {
    if let Some(p) = path(CACHE_DIR) {
        return p;
    }
    if let Some(p) = path("XDG_CACHE_HOME") {
        return p.join("pyoxide");
    }
    let home = path("HOME").unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("pyoxide")
}

/// The cuda toolkit roots users commonly point at.
pub fn cuda_homes() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|n| path(n))
        .collect();
    v.push(PathBuf::from("/usr/local/cuda"));
    v
}
