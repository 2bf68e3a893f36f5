//! Finding every piece of the device toolchain, with the command that installs each
//! missing one. `doctor` prints this; `build` refuses to start without the required
//! pieces.
//!
//! Pieces: a rustc whose `rust-src` matches it exactly (core is built from it), the
//! cargo beside it, `llvm-link`/`opt`/`llc` of the same LLVM major as that rustc (the
//! bitcode rustc writes is read by them), libdevice (CUDA's math library as bitcode;
//! only needed when a kernel calls `__nv_*` functions), ptxas (verifies the PTX; optional)
//! and the CUDA driver (only to run kernels; never needed to build, so only `doctor` looks
//! for it).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::env;

/// Debian 12's packaging of a rustc with matching source and LLVM tools.
pub const APT_RUST: &str = "apt-get install -y rustc-web cargo-web rust-web-src";
pub const PIP_LIBDEVICE: &str = "python3 -m pip install nvidia-nvvm";
pub const PIP_PTXAS: &str = "python3 -m pip install nvidia-cuda-nvcc";

#[derive(Clone, Debug, Serialize)]
pub struct RustcInfo {
    pub path: PathBuf,
    /// `rustc -V`.
    pub version: String,
    pub release: String,
    pub commit: Option<String>,
    pub host: String,
    /// Full LLVM version (`22.1.8`) and its major.
    pub llvm_version: String,
    pub llvm_major: u32,
    pub sysroot: PathBuf,
    /// `<sysroot>/lib/rustlib/src/rust/library`, when rust-src is installed.
    pub library_src: Option<PathBuf>,
    /// Vendored crates.io dependencies of the library (Debian ships them).
    pub library_vendor: Option<PathBuf>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LlvmTools {
    pub llvm_link: PathBuf,
    pub opt: PathBuf,
    pub llc: PathBuf,
    pub version: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Ptxas {
    pub path: PathBuf,
    /// The `Build cuda_…` line of `ptxas --version`.
    pub version: String,
}

/// What was found. Each `Result` holds the piece or the message that says how to get it.
#[derive(Debug)]
pub struct Discovery {
    pub rustc: Result<RustcInfo, String>,
    pub cargo: Result<PathBuf, String>,
    pub llvm: Result<LlvmTools, String>,
    pub libdevice: Result<PathBuf, String>,
    pub ptxas: Result<Ptxas, String>,
}

/// The pieces a build needs, all present.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub rustc: RustcInfo,
    pub cargo: PathBuf,
    pub llvm: LlvmTools,
    pub libdevice: Option<PathBuf>,
    pub ptxas: Option<Ptxas>,
}

impl Discovery {
    pub fn run() -> Discovery {
        let rustc = find_rustc();
        let cargo = match &rustc {
            Ok(r) => find_cargo(&r.path),
            Err(_) => Err("needs a rustc first".into()),
        };
        let llvm = match &rustc {
            Ok(r) => find_llvm_tools(r),
            Err(_) => Err("needs a rustc first (its LLVM major picks the tools)".into()),
        };
        Discovery {
            rustc,
            cargo,
            llvm,
            libdevice: find_libdevice(),
            ptxas: find_ptxas(),
        }
    }

    /// The toolchain for a build, or one message listing every missing required piece.
    pub fn for_build(self) -> Result<Toolchain, String> {
        let mut missing = Vec::new();
        if let Err(e) = &self.rustc {
            missing.push(format!("rustc with rust-src: {e}"));
        }
        if let Ok(r) = &self.rustc
            && r.library_src.is_none()
        {
            missing.push(format!(
                "rust-src for {} (core for the GPU is built from it): install it with \
                 `{APT_RUST}` (Debian 12) or `rustup component add rust-src`",
                r.version
            ));
        }
        if let Err(e) = &self.cargo {
            missing.push(format!("cargo: {e}"));
        }
        if let Err(e) = &self.llvm {
            missing.push(format!("LLVM tools: {e}"));
        }
        // A ptxas the user named must work: without it the PTX would silently go
        // unverified, which is what they set the variable to avoid.
        if let (Err(e), Some(_)) = (&self.ptxas, env::path(env::PTXAS)) {
            missing.push(format!("ptxas: {e}"));
        }
        if !missing.is_empty() {
            return Err(format!(
                "the device toolchain is incomplete:\n  - {}\n(run `cargo oxide doctor` for the full report)",
                missing.join("\n  - ")
            ));
        }
        Ok(Toolchain {
            rustc: self.rustc.unwrap(),
            cargo: self.cargo.unwrap(),
            llvm: self.llvm.unwrap(),
            libdevice: self.libdevice.ok(),
            ptxas: self.ptxas.ok(),
        })
    }
}

impl Discovery {
    /// The files and folders whose change could change what discovery finds: every
    /// piece found, and the folders it searched (a folder's modification time changes
    /// when a tool is added to it or removed). `cargo oxide key` reuses its last answer
    /// while none of them changed.
    pub fn watched(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = Vec::new();
        if let Some(path) = env::var(env::PATH) {
            v.extend(std::env::split_paths(&path));
        }
        v.push(PathBuf::from("/usr/bin/rustc"));
        for home in env::cuda_homes() {
            v.extend([home.join("bin"), home.join("nvvm/libdevice")]);
        }
        for site in python_site_dirs() {
            let nvidia = site.join("nvidia");
            if let Ok(entries) = std::fs::read_dir(&nvidia) {
                v.extend(entries.flatten().map(|e| e.path()));
            }
            v.extend([site.clone(), nvidia]);
        }
        if let Some(python) = env::path(env::PYTHON) {
            v.push(python);
        }
        if let Ok(r) = &self.rustc {
            v.push(r.path.clone());
            v.extend(llvm_tool_dirs(r));
            v.extend(r.library_src.iter().map(|l| l.join("core/src/lib.rs")));
        }
        if let Ok(c) = &self.cargo {
            v.push(c.clone());
        }
        if let Ok(l) = &self.llvm {
            v.extend([l.llvm_link.clone(), l.opt.clone(), l.llc.clone()]);
        }
        v.extend(self.libdevice.iter().cloned());
        v.extend(self.ptxas.iter().map(|p| p.path.clone()));
        v.sort();
        v.dedup();
        v
    }
}

/// Run a tool and return its stdout, or `None` if it cannot run or fails.
fn output_of(program: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every `name` on PATH, in PATH order.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = env::var(env::PATH)?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn rustc_candidates() -> Vec<PathBuf> {
    if let Some(p) = env::path(env::RUSTC) {
        return vec![p];
    }
    let mut v = Vec::new();
    if let Some(p) = which("rustc") {
        v.push(p);
    }
    let debian = PathBuf::from("/usr/bin/rustc");
    if debian.is_file() && !v.contains(&debian) {
        v.push(debian);
    }
    v
}

fn probe_rustc(path: &Path) -> Option<RustcInfo> {
    let vv = output_of(path, &["-vV"])?;
    let field = |key: &str| {
        vv.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|s| s.trim().to_string())
    };
    let version = vv.lines().next()?.trim().to_string();
    let llvm_version = field("LLVM version:")?;
    let llvm_major = llvm_version.split('.').next()?.parse().ok()?;
    let sysroot = PathBuf::from(output_of(path, &["--print", "sysroot"])?.trim());
    let library = sysroot.join("lib/rustlib/src/rust/library");
    let library_src = library
        .join("core/src/lib.rs")
        .is_file()
        .then(|| library.clone());
    let library_vendor = library_src
        .as_ref()
        .map(|l| l.join("vendor"))
        .filter(|v| v.is_dir());
    Some(RustcInfo {
        path: path.to_path_buf(),
        version,
        release: field("release:")?,
        commit: field("commit-hash:").filter(|c| c != "unknown"),
        host: field("host:")?,
        llvm_version,
        llvm_major,
        sysroot,
        library_src,
        library_vendor,
    })
}

fn find_rustc() -> Result<RustcInfo, String> {
    let candidates = rustc_candidates();
    let probed: Vec<RustcInfo> = candidates.iter().filter_map(|c| probe_rustc(c)).collect();
    // Prefer a rustc whose rust-src is installed: core must be built from matching source.
    if let Some(r) = probed.iter().find(|r| r.library_src.is_some()) {
        return Ok(r.clone());
    }
    if let Some(r) = probed.into_iter().next() {
        return Ok(r);
    }
    Err(format!(
        "no working rustc found (looked at {}); install one with `{APT_RUST}` (Debian 12) \
         or rustup, or point {} at it",
        if candidates.is_empty() {
            "PATH".to_string()
        } else {
            candidates
                .iter()
                .map(|c| c.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        },
        env::RUSTC.name
    ))
}

fn find_cargo(rustc: &Path) -> Result<PathBuf, String> {
    if let Some(p) = env::path(env::CARGO) {
        return Ok(p);
    }
    // The cargo shipped with that rustc understands its -Z flags.
    if let Some(sibling) = rustc
        .parent()
        .map(|d| d.join("cargo"))
        .filter(|p| p.is_file())
    {
        return Ok(sibling);
    }
    which("cargo").ok_or_else(|| format!("no cargo found next to {} or on PATH", rustc.display()))
}

fn llvm_tool_dirs(rustc: &RustcInfo) -> Vec<PathBuf> {
    if let Some(dir) = env::path(env::LLVM_BIN) {
        return vec![dir];
    }
    vec![
        PathBuf::from(format!("/usr/lib/llvm-{}/bin", rustc.llvm_major)),
        // rustup's `llvm-tools` component.
        rustc
            .sysroot
            .join("lib/rustlib")
            .join(&rustc.host)
            .join("bin"),
    ]
}

fn llvm_tool_version(path: &Path) -> Option<String> {
    let out = output_of(path, &["--version"])?;
    out.lines()
        .find_map(|l| l.split("LLVM version ").nth(1))
        .map(|v| v.trim().to_string())
}

fn find_llvm_tool(rustc: &RustcInfo, tool: &str) -> Option<(PathBuf, String)> {
    let major = rustc.llvm_major;
    let mut candidates: Vec<PathBuf> = Vec::new();
    if env::var(env::LLVM_BIN).is_none() {
        candidates.extend(which(&format!("{tool}-{major}")));
    }
    for dir in llvm_tool_dirs(rustc) {
        candidates.push(dir.join(tool));
    }
    if env::var(env::LLVM_BIN).is_none() {
        candidates.extend(which(tool));
    }
    candidates
        .into_iter()
        .filter(|p| p.is_file())
        .find_map(|p| {
            let v = llvm_tool_version(&p)?;
            (v.split('.').next()? == major.to_string()).then_some((p, v))
        })
}

fn find_llvm_tools(rustc: &RustcInfo) -> Result<LlvmTools, String> {
    let major = rustc.llvm_major;
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for tool in ["llvm-link", "opt", "llc"] {
        match find_llvm_tool(rustc, tool) {
            Some(t) => found.push(t),
            None => missing.push(tool),
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "{} of LLVM {major} (the LLVM inside {}) not found; install them with \
             `apt-get install -y llvm-{major}` or point {} at their folder",
            missing.join(", "),
            rustc.version,
            env::LLVM_BIN.name
        ));
    }
    let version = found[0].1.clone();
    let mut paths = found.into_iter().map(|(p, _)| p);
    Ok(LlvmTools {
        llvm_link: paths.next().unwrap(),
        opt: paths.next().unwrap(),
        llc: paths.next().unwrap(),
        version,
    })
}

/// site-packages folders of the Python that holds NVIDIA's PyPI wheels. Asked once per
/// process: both libdevice and ptxas are looked up there, and every build runs this.
fn python_site_dirs() -> &'static [PathBuf] {
    static DIRS: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    DIRS.get_or_init(|| {
        let python = env::path(env::PYTHON).unwrap_or_else(|| PathBuf::from("python3"));
        let script =
            "import site,sys;print('\\n'.join(site.getsitepackages()+[site.getusersitepackages()]))";
        let resolved = if python.components().count() > 1 {
            Some(python)
        } else {
            python.to_str().and_then(which)
        };
        resolved
            .and_then(|p| output_of(&p, &["-c", script]))
            .map(|out| {
                out.lines()
                    .map(PathBuf::from)
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// Files under `<site>/nvidia/<any>/<rel>` (the layout of nvidia-* wheels: `cu13/…`,
/// `cuda_nvcc/…`).
fn in_nvidia_wheels(rel: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for site in python_site_dirs() {
        let Ok(entries) = std::fs::read_dir(site.join("nvidia")) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        // Newest CUDA first (cu13 before cu12).
        dirs.reverse();
        v.extend(
            dirs.into_iter()
                .map(|d| d.join(rel))
                .filter(|p| p.is_file()),
        );
    }
    v
}

fn find_libdevice() -> Result<PathBuf, String> {
    if let Some(p) = env::path(env::LIBDEVICE) {
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "{} points at {}, which does not exist",
                env::LIBDEVICE.name,
                p.display()
            ))
        };
    }
    let rel = "nvvm/libdevice/libdevice.10.bc";
    env::cuda_homes()
        .into_iter()
        .map(|h| h.join(rel))
        .filter(|p| p.is_file())
        .chain(in_nvidia_wheels(rel))
        .next()
        .ok_or_else(|| {
            format!(
                "libdevice.10.bc not found (needed only by kernels that call math functions); \
                 install it with `{PIP_LIBDEVICE}` or point {} at it",
                env::LIBDEVICE.name
            )
        })
}

fn probe_ptxas(path: &Path) -> Option<Ptxas> {
    let out = output_of(path, &["--version"])?;
    let version = out
        .lines()
        .find(|l| l.starts_with("Cuda compilation tools"))
        .or_else(|| out.lines().last())?
        .trim()
        .to_string();
    Some(Ptxas {
        path: path.to_path_buf(),
        version,
    })
}

fn find_ptxas() -> Result<Ptxas, String> {
    let candidates: Vec<PathBuf> = match env::path(env::PTXAS) {
        Some(p) => vec![p],
        None => which("ptxas")
            .into_iter()
            .chain(env::cuda_homes().into_iter().map(|h| h.join("bin/ptxas")))
            .chain(in_nvidia_wheels("bin/ptxas"))
            .collect(),
    };
    if let Some(set) = env::path(env::PTXAS) {
        return probe_ptxas(&set).ok_or_else(|| {
            format!(
                "{}={} is not a working ptxas (`{} --version` failed or printed no \
                 version); point {} at CUDA's ptxas (install it with `{PIP_PTXAS}`), or \
                 unset it to build without verifying the PTX",
                env::PTXAS.name,
                set.display(),
                set.display(),
                env::PTXAS.name
            )
        });
    }
    candidates
        .iter()
        .filter(|p| p.is_file())
        .find_map(|p| probe_ptxas(p))
        .ok_or_else(|| {
            format!(
                "ptxas not found (it verifies the PTX; builds without it are unverified); \
                 install it with `{PIP_PTXAS}` or point {} at it",
                env::PTXAS.name
            )
        })
}

/// The CUDA driver's version, through `cuDriverGetVersion` (needs no GPU and no cuInit).
/// Only `doctor` asks: building never needs a driver.
pub fn cuda_driver_version() -> Result<String, String> {
    const NO_DRIVER: &str = "no CUDA driver (libcuda.so.1) on this machine: kernels can be built \
                             here and run on the CPU emulator; running them on a GPU needs the \
                             NVIDIA driver";
    // SAFETY: loading the driver library runs its initialisers, as any CUDA program does.
    let lib =
        unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|_| NO_DRIVER.to_string())?;
    type GetVersion = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: cuDriverGetVersion has this signature in every CUDA version.
    let get: libloading::Symbol<GetVersion> =
        unsafe { lib.get(b"cuDriverGetVersion\0") }.map_err(|e| e.to_string())?;
    let mut v = 0i32;
    // SAFETY: `v` is a valid out-pointer.
    let status = unsafe { get(&mut v) };
    if status != 0 {
        return Err(format!(
            "cuDriverGetVersion failed with CUDA error {status}"
        ));
    }
    Ok(format!("{}.{}", v / 1000, (v % 1000) / 10))
}
