//! The host half of `cargo oxide build`: the kernel crate as a host `cdylib`, whose
//! `#[kernel]` host entries (`oxide_abi::emu`) are the CPU emulator's kernels.
//!
//! Built in release mode whatever the device profile (the emulator runs every GPU
//! thread on the CPU; a debug build is many times slower), into
//! `<target>/oxide/emu-target/release`, then copied next to the PTX as `<crate>.emu.so`. A crate that
//! does not depend on `oxide-device` has no host entries and no engine (the
//! handmade test fixture spells its entries out for the GPU only): it gets none.

use std::io::{BufRead, BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{Context, Result, bail};
use oxide_abi::manifest::FileArtifact;

use crate::fsutil::{sha256_file, write_atomic};
use crate::project::Project;
use crate::toolchain::Toolchain;

/// The package through which kernel crates get host entries.
const DEVICE_CRATE: &str = "oxide-device";

/// Whether `project` can have an emulator library.
pub fn wanted(project: &Project) -> bool {
    project.dependencies.iter().any(|d| d == DEVICE_CRATE)
}

/// File name of the emulator library beside the PTX.
pub fn file_name(crate_name: &str) -> String {
    format!("{crate_name}.emu.so")
}

/// cargo's target dir for the host (emulator) build.
fn host_target_dir(project: &Project) -> PathBuf {
    project.target_dir.join("oxide").join("emu-target")
}

/// The host build, started beside the device build (the two use separate target dirs,
/// so they run at once: a warm rebuild costs the longer of the two, not their sum).
/// Dropping it unfinished (the device build failed) stops it.
pub struct HostBuild {
    child: Option<Child>,
    /// rustc's rendered diagnostics, held back: the device build compiles the same code
    /// and prints the same errors and warnings, so these are shown only when the host
    /// build alone fails (code under `cfg(not(target_arch = "nvptx64"))`).
    diagnostics: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
    built: PathBuf,
    dest: PathBuf,
    crate_name: String,
    package: String,
}

/// Start building the host library.
pub fn start(tc: &Toolchain, project: &Project) -> Result<HostBuild> {
    let mut cmd = Command::new(&tc.cargo);
    cmd.current_dir(project.dir())
        .arg("rustc")
        .arg("--manifest-path")
        .arg(&project.manifest_path)
        .args(["--lib", "--crate-type", "cdylib", "--release"])
        .args(&project.feature_args)
        .env("RUSTC", &tc.rustc.path)
        // A target dir of its own: the device build compiles the same host crates (the
        // proc macros) with other settings, and sharing one dir made each build
        // invalidate the other's, recompiling them on every `cargo oxide build`.
        .env("CARGO_TARGET_DIR", host_target_dir(project))
        // Progress goes to stderr (stdout carries `--json`); diagnostics come as JSON.
        .arg(if std::io::stderr().is_terminal() {
            "--message-format=json-diagnostic-rendered-ansi"
        } else {
            "--message-format=json"
        })
        // The crate's location in its fingerprint, as in the device build (there through
        // the target's rustflags, which a user's RUSTFLAGS would replace here).
        .arg("--")
        .args(project.location_args())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("running {}", tc.cargo.display()))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let diagnostics = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&diagnostics);
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
                eprintln!("{line}");
                continue;
            };
            if msg["reason"] == "compiler-message"
                && let Some(rendered) = msg["message"]["rendered"].as_str()
            {
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_str(rendered);
            }
        }
    });
    Ok(HostBuild {
        child: Some(child),
        diagnostics,
        reader: Some(reader),
        built: host_target_dir(project)
            .join("release")
            .join(format!("lib{}.so", project.crate_name)),
        dest: project.out_dir.join(file_name(&project.crate_name)),
        crate_name: project.crate_name.clone(),
        package: project.name.clone(),
    })
}

impl HostBuild {
    /// Wait for the host build and place the library in the output folder.
    pub fn finish(mut self) -> Result<(PathBuf, FileArtifact)> {
        let status = self.child.take().expect("finished once").wait()?;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        if !status.success() {
            eprint!(
                "{}",
                self.diagnostics.lock().unwrap_or_else(|p| p.into_inner())
            );
            bail!(
                "the host (emulator) build of {} failed (rustc's messages are above); \
                 pass --no-emu to build for the GPU only",
                self.package
            );
        }
        copy_atomic(&self.built, &self.dest)?;
        let artifact = FileArtifact {
            path: file_name(&self.crate_name),
            sha256: sha256_file(&self.dest)?,
        };
        Ok((self.dest.clone(), artifact))
    }
}

impl Drop for HostBuild {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn copy_atomic(from: &Path, to: &Path) -> Result<()> {
    let bytes = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    write_atomic(to, &bytes)
}
