//! The host half of `cargo oxide build`: the kernel crate as a host `cdylib`, whose
//! `#[kernel]` host entries (`oxide_abi::emu`) are the CPU emulator's kernels.
//!
//! Built in release mode whatever the device profile (the emulator runs every GPU
//! thread on the CPU; a debug build is many times slower), into cargo's usual
//! `<target>/release`, then copied next to the PTX as `<crate>.emu.so`. A crate that
//! does not depend on `oxide-device` has no host entries and no engine (the
//! handmade test fixture spells its entries out for the GPU only): it gets none.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// Build the host library and place it in the output folder.
pub fn build(tc: &Toolchain, project: &Project) -> Result<(PathBuf, FileArtifact)> {
    let mut cmd = Command::new(&tc.cargo);
    cmd.arg("rustc")
        .arg("--manifest-path")
        .arg(&project.manifest_path)
        .args(["--lib", "--crate-type", "cdylib", "--release"])
        .env("RUSTC", &tc.rustc.path)
        // Progress and diagnostics go to stderr: stdout carries `--json`.
        .stdout(Stdio::from(
            std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .context("duplicating stderr")?,
        ))
        .stderr(Stdio::inherit());
    let status = cmd
        .status()
        .with_context(|| format!("running {}", tc.cargo.display()))?;
    if !status.success() {
        bail!(
            "the host (emulator) build of {} failed (rustc's messages are above); \
             pass --no-emu to build for the GPU only",
            project.name
        );
    }
    let built = project
        .target_dir
        .join("release")
        .join(format!("lib{}.so", project.crate_name));
    let dest = project.out_dir.join(file_name(&project.crate_name));
    copy_atomic(&built, &dest)?;
    let artifact = FileArtifact {
        path: file_name(&project.crate_name),
        sha256: sha256_file(&dest)?,
    };
    Ok((dest, artifact))
}

fn copy_atomic(from: &Path, to: &Path) -> Result<()> {
    let bytes = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    write_atomic(to, &bytes)
}
