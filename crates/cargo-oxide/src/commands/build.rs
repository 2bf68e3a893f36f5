//! `cargo oxide build`: the device build of one kernel crate.
//!
//! 1. find the toolchain and the crate; make sure the `core` sysroot exists;
//! 2. `cargo rustc --crate-type cdylib --target nvptx64-nvidia-cuda` with this binary
//!    as the linker (the link step writes the optimised module and the descriptors);
//! 3. `llc` per architecture, `ptxas` on each PTX; unless `--no-emu`, the host library
//!    for the CPU emulator (`crate::emulator`);
//! 4. the manifest, written last and atomically: a reader sees the old build or the
//!    new one, never half of one.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use oxide_abi::descriptor::{ConstantDescriptor, KernelDescriptor};
use oxide_abi::inputs;
use oxide_abi::manifest::{self, CrateInfo, Manifest, PtxArtifact, SourceFile};
use oxide_abi::names::{DEVICE_TARGET, LINK_CONFIG_ENV};
use oxide_abi::report::BuildReport;

use super::link::LinkConfig;
use crate::cli::{BuildArgs, Profile};
use crate::fsutil::{sha256_file, sha256_hex, write_atomic};
use crate::project::Project;
use crate::toolchain::{Discovery, Toolchain};
use crate::{env, exit, ptx, sysroot};

pub fn run(args: &BuildArgs) -> i32 {
    // The command line first: a bad --arch is a usage error whatever the toolchain.
    for arch in &args.arch {
        if let Err(e) = ptx::parse_arch(arch.trim()) {
            return super::fail(&e.context(exit::Code(exit::USAGE)));
        }
    }
    let tc = match Discovery::run().for_build() {
        Ok(tc) => tc,
        Err(msg) => {
            eprintln!("error: {msg}");
            return exit::TOOLCHAIN_MISSING;
        }
    };
    match build(args, &tc) {
        Ok(outcome) => {
            if args.json {
                println!("{}", outcome.to_json());
            }
            exit::OK
        }
        Err(e) => super::fail(&e),
    }
}

/// What a build produced (the `--json` output).
pub struct Outcome {
    pub manifest: PathBuf,
    pub crate_name: String,
    pub artifacts: Vec<PathBuf>,
    /// The emulator library, when built.
    pub emulator: Option<PathBuf>,
}

impl Outcome {
    fn to_json(&self) -> String {
        BuildReport {
            manifest: self.manifest.clone(),
            krate: self.crate_name.clone(),
            artifacts: self.artifacts.clone(),
            emulator: self.emulator.clone(),
        }
        .to_json()
    }
}

fn progress(stage: &str, detail: &str) {
    eprintln!("{stage:>12} {detail}");
}

pub fn build(args: &BuildArgs, tc: &Toolchain) -> Result<Outcome> {
    let started = Instant::now();
    let archs: Vec<String> = {
        let mut seen = BTreeSet::new();
        args.arch
            .iter()
            .map(|a| a.trim().to_string())
            .filter(|a| seen.insert(a.clone()))
            .collect()
    };
    for arch in &archs {
        exit::coded(ptx::parse_arch(arch), exit::USAGE)?;
    }
    if args.require_ptxas && tc.ptxas.is_none() {
        bail!(
            "--require-ptxas was given but ptxas is missing; install it with `{}`",
            crate::toolchain::PIP_PTXAS
        );
    }
    let project = exit::coded(Project::locate(&args.krate, &tc.cargo), exit::USAGE)?;
    let mut sysroot = sysroot::ensure(tc, &mut |m| progress("Sysroot", m))?;

    let link_dir = project.link_dir();
    std::fs::create_dir_all(&link_dir)?;
    let config = LinkConfig {
        llvm_link: tc.llvm.llvm_link.clone(),
        opt: tc.llvm.opt.clone(),
        libdevice: tc.libdevice.clone(),
        optimize: project.profile == Profile::Release,
        out_module: link_dir.join("module.bc"),
        out_descriptors: link_dir.join("descriptors.json"),
        error_file: link_dir.join("link-error.txt"),
        work_dir: link_dir.join("work"),
        keep_temps: env::flag(env::KEEP_TEMPS),
    };
    let config_path = link_dir.join("config.json");
    write_atomic(
        &config_path,
        serde_json::to_string_pretty(&config)?.as_bytes(),
    )?;

    std::fs::create_dir_all(&project.out_dir)?;
    let host_build = if args.no_emu {
        None
    } else if crate::emulator::wanted(&project) {
        Some(crate::emulator::start(tc, &project)?)
    } else {
        progress(
            "Emulator",
            &format!("skipped: {} does not use oxide-device", project.name),
        );
        None
    };
    let mut sources = match cargo_device_build(tc, &project, &sysroot, &config, &config_path) {
        // A damaged cached core (same size, other bytes): build it again, once.
        Err(e) if e.downcast_ref::<DamagedSysroot>().is_some() => {
            progress("Sysroot", &format!("{e}; building core again"));
            sysroot::discard(&sysroot)?;
            sysroot = sysroot::ensure(tc, &mut |m| progress("Sysroot", m))?;
            cargo_device_build(tc, &project, &sysroot, &config, &config_path)?
        }
        other => other?,
    };
    if !config.out_module.is_file() || !config.out_descriptors.is_file() {
        // cargo found the crate fresh but the link step's outputs are gone (e.g. after
        // `cargo oxide clean --out-dir`): make rustc link again.
        progress("Relinking", &project.name);
        force_relink(tc, &project)?;
        sources = cargo_device_build(tc, &project, &sysroot, &config, &config_path)?;
    }
    let descriptors: Vec<KernelDescriptor> =
        serde_json::from_str(&std::fs::read_to_string(&config.out_descriptors)?)?;
    let constants_path = crate::commands::link::constants_file(&config.out_descriptors);
    let constants: Vec<ConstantDescriptor> = match std::fs::read_to_string(&constants_path) {
        Ok(text) => serde_json::from_str(&text)?,
        Err(_) => Vec::new(),
    };
    if descriptors.is_empty() {
        eprintln!("warning: {} defines no #[kernel] functions", project.name);
    }

    ptx::check_feature_archs(&descriptors, &archs)?;
    let codegen = manifest::Codegen { fmad: args.fmad() };
    let artifacts = compile_archs(
        tc,
        &project,
        &config.out_module,
        &archs,
        codegen.fmad,
        &descriptors,
    )?;
    for a in &artifacts {
        let verified = if a.ptxas.is_some() {
            "verified by ptxas"
        } else {
            "NOT verified (no ptxas)"
        };
        progress(
            "PTX",
            &format!(
                "{} ({} kernels, PTX {}, {verified}{})",
                project.out_dir.join(&a.path).display(),
                descriptors.len(),
                a.ptx_version,
                if codegen.fmad { "" } else { ", --no-fmad" }
            ),
        );
    }
    for a in &artifacts {
        warn_of_ptxas_diagnostics(a);
    }
    if tc.ptxas.is_none() {
        eprintln!(
            "warning: ptxas not found, so the PTX was not verified; install it with `{}`",
            crate::toolchain::PIP_PTXAS
        );
    }

    let emulator = match host_build {
        Some(host) => {
            let (path, artifact) = host.finish()?;
            progress("Emulator", &path.display().to_string());
            Some((path, artifact))
        }
        None => None,
    };

    let manifest = Manifest {
        schema: oxide_abi::MANIFEST_SCHEMA_VERSION,
        krate: CrateInfo {
            name: project.crate_name.clone(),
            version: project.version.clone(),
            manifest_path: project.manifest_path.display().to_string(),
        },
        profile: project.profile.dir_name().to_string(),
        toolchain: toolchain_record(tc)?,
        sources: hash_sources(&mut sources, &project)?,
        artifacts: artifacts.clone(),
        emulator: emulator.as_ref().map(|(_, a)| a.clone()),
        kernels: descriptors,
        constants,
        codegen,
        tuned: Vec::new(), // `pyoxide build --tuned` adds them
    };
    let manifest_path = project.manifest_file();
    write_atomic(&manifest_path, manifest.to_json().as_bytes())?;
    progress(
        "Manifest",
        &format!(
            "{} ({:.2}s)",
            manifest_path.display(),
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(Outcome {
        manifest: manifest_path,
        crate_name: project.crate_name.clone(),
        artifacts: artifacts
            .iter()
            .map(|a| project.out_dir.join(&a.path))
            .collect(),
        emulator: emulator.map(|(path, _)| path),
    })
}

/// A warning for each diagnostic ptxas gave (they are in the manifest too, and in
/// `cargo oxide inspect`): a serialised wgmma pipeline is correct but slow, and nothing
/// else says so before a GPU run.
fn warn_of_ptxas_diagnostics(a: &PtxArtifact) {
    let entries = a.ptxas.iter().flatten();
    for (entry, d) in entries.flat_map(|(e, r)| r.diagnostics.iter().map(move |d| (e, d))) {
        if d.serializes_wgmma() {
            eprintln!(
                "warning: ptxas serialised the wgmmas of kernel `{entry}` ({}): correct, but \
                 each waits for the one before. ptxas: {d}. Fix: no call (a panic's check, a \
                 division) in its setmaxnreg regions, no accumulator read before its wait",
                a.arch
            );
        } else {
            eprintln!("warning: ptxas on kernel `{entry}` ({}): {d}", a.arch);
        }
    }
    for d in &a.ptxas_diagnostics {
        eprintln!("warning: ptxas on {} ({}): {d}", a.path, a.arch);
    }
}

/// rustc found invalid metadata in the cached core: the sysroot is damaged.
#[derive(Debug)]
struct DamagedSysroot {
    sysroot: PathBuf,
    manifest: PathBuf,
}

impl std::fmt::Display for DamagedSysroot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the cached core sysroot {} is damaged (an rlib's contents changed). \
             Fix: run `cargo oxide clean --sysroot --manifest-path {}` and build again",
            self.sysroot.display(),
            self.manifest.display()
        )
    }
}

impl std::error::Error for DamagedSysroot {}

/// Run cargo for the device; return the dep-info files of the crate and its local
/// dependencies (for the manifest's source list).
fn cargo_device_build(
    tc: &Toolchain,
    project: &Project,
    sysroot: &Path,
    config: &LinkConfig,
    config_path: &Path,
) -> Result<BTreeSet<PathBuf>> {
    std::fs::remove_file(&config.error_file).ok();
    let self_exe = std::env::current_exe().context("locating the cargo-oxide binary")?;
    // The location goes to every unit of the device build (path dependencies share the
    // kernel crate's hazard); cargo rustc's `--` arguments would reach the crate alone.
    let rustflags = [format!("--sysroot={}", sysroot.display())]
        .into_iter()
        .chain(project.location_args())
        .map(|f| toml_string(&f))
        .collect::<Vec<_>>()
        .join(", ");
    let color = std::io::stderr().is_terminal();
    let mut cmd = Command::new(&tc.cargo);
    cmd.current_dir(project.dir())
        .arg("rustc")
        .arg("--manifest-path")
        .arg(&project.manifest_path)
        .args(["--lib", "--crate-type", "cdylib", "--target", DEVICE_TARGET])
        .args(&project.feature_args)
        .arg("--config")
        .arg(format!("target.{DEVICE_TARGET}.rustflags=[{rustflags}]"))
        .arg(if color {
            "--message-format=json-diagnostic-rendered-ansi"
        } else {
            "--message-format=json"
        });
    if project.profile == Profile::Release {
        cmd.arg("--release");
    }
    if color {
        cmd.args(["--color", "always"]);
    }
    cmd.arg("--")
        .arg("-C")
        .arg(format!("linker={}", self_exe.display()))
        // Cargo's fingerprint sees these arguments but not the linker's contents: naming
        // this cargo-oxide's identity here re-links an unchanged crate after cargo-oxide
        // itself changed (else its link step's output, the PTX, would be stale).
        .arg("--check-cfg=cfg(oxide_link_step, values(any()))")
        .arg(format!(
            "--cfg=oxide_link_step=\"{}\"",
            crate::fsutil::file_identity(&self_exe)
        ));
    if !project.declares_no_std() {
        // nvptx has no `std`: a crate written for cuda-oxide (no `#![no_std]`) builds
        // against `core` alone, as there. Only the kernel crate gets it (after `--`).
        cmd.arg("-Zcrate-attr=no_std");
        // `std::` paths name `core`'s items there too (`use std::ops::Add`): `std`
        // is `core` under its other name, as `extern crate core as std;` would make it.
        if let Some(core) = crate::sysroot::core_rlib(sysroot) {
            cmd.arg("--extern").arg(format!("std={}", core.display()));
        }
    }
    cmd.env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTC", &tc.rustc.path)
        .env(LINK_CONFIG_ENV, config_path)
        // Host RUSTFLAGS would override the target's sysroot flag and rarely suit nvptx.
        .env_remove(inputs::RUSTFLAGS.name)
        .env_remove(inputs::CARGO_ENCODED_RUSTFLAGS.name)
        .env_remove(format!("{}RUSTFLAGS", inputs::CARGO_BUILD_.name))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("running {}", tc.cargo.display()))?;
    let mut dep_infos = BTreeSet::new();
    let mut bad_metadata = false;
    let stdout = child.stdout.take().expect("stdout is piped");
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            println_stderr(&line);
            continue;
        };
        match msg["reason"].as_str() {
            Some("compiler-message") => {
                let text = msg["message"]["message"].as_str().unwrap_or("");
                // The link step's own message replaces rustc's linker-invocation dump.
                if text.starts_with("linking with") && config.error_file.is_file() {
                    continue;
                }
                bad_metadata |= text.contains("invalid metadata");
                if let Some(rendered) = msg["message"]["rendered"].as_str() {
                    eprint!("{rendered}");
                }
            }
            Some("compiler-artifact") => {
                let local = msg["package_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("path+"));
                if local {
                    for f in msg["filenames"].as_array().into_iter().flatten() {
                        if let Some(dep) = f.as_str().map(|f| Path::new(f).with_extension("d")) {
                            dep_infos.insert(dep);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let status = child.wait()?;
    if !status.success() {
        if let Ok(text) = std::fs::read_to_string(&config.error_file) {
            bail!("linking the kernels of {} failed:\n{text}", project.name);
        }
        // rustc reports a damaged core as invalid metadata, or crashes on it.
        if bad_metadata || !sysroot::is_intact(sysroot) {
            return Err(DamagedSysroot {
                sysroot: sysroot.to_path_buf(),
                manifest: project.manifest_path.clone(),
            }
            .into());
        }
        bail!(
            "the device build of {} failed (rustc's messages are above)",
            project.name
        );
    }
    Ok(dep_infos)
}

fn println_stderr(line: &str) {
    eprintln!("{line}");
}

/// Quote a value for cargo's `--config` TOML.
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn force_relink(tc: &Toolchain, project: &Project) -> Result<()> {
    let mut cmd = Command::new(&tc.cargo);
    cmd.current_dir(project.dir())
        .args(["clean", "--manifest-path"])
        .arg(&project.manifest_path)
        .args(["-p", &project.name, "--target", DEVICE_TARGET]);
    if project.profile == Profile::Release {
        cmd.arg("--release");
    }
    let status = cmd.env("RUSTC", &tc.rustc.path).status()?;
    if !status.success() {
        bail!("`cargo clean -p {}` failed", project.name);
    }
    Ok(())
}

/// `llc` and `ptxas` for every architecture, in parallel.
fn compile_archs(
    tc: &Toolchain,
    project: &Project,
    module: &Path,
    archs: &[String],
    fmad: bool,
    kernels: &[KernelDescriptor],
) -> Result<Vec<PtxArtifact>> {
    let optimize = project.profile == Profile::Release;
    let results: Vec<Result<PtxArtifact>> = std::thread::scope(|s| {
        let handles: Vec<_> = archs
            .iter()
            .map(|arch| {
                s.spawn(move || compile_arch(tc, project, module, arch, optimize, fmad, kernels))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("arch compile thread panicked"))
            .collect()
    });
    results.into_iter().collect()
}

fn compile_arch(
    tc: &Toolchain,
    project: &Project,
    module: &Path,
    arch: &str,
    optimize: bool,
    fmad: bool,
    kernels: &[KernelDescriptor],
) -> Result<PtxArtifact> {
    let file_name = manifest::ptx_file_name(&project.crate_name, arch);
    let final_path = project.out_dir.join(&file_name);
    let staging = crate::fsutil::umask_respecting(&mut tempfile::Builder::new(), 0o666)
        .prefix(&format!(".{file_name}."))
        .suffix(".ptx")
        .tempfile_in(&project.out_dir)?;
    ptx::llc(&tc.llvm.llc, module, arch, optimize, fmad, staging.path())?;
    // Read once: the checks, the version and the hash all look at the same text (ptxas
    // only reads the file).
    let text = std::fs::read_to_string(staging.path())?;
    ptx::check_arch_specific(&text, arch)?;
    ptx::check_dependent_waits(&text, kernels)?;
    let (ptxas, ptxas_diagnostics) = match &tc.ptxas {
        Some(ptxas) => {
            let report = ptx::verify(ptxas, staging.path(), arch)?;
            (Some(report.entries), report.unattributed)
        }
        None => (None, Vec::new()),
    };
    let ptx_version = ptx::ptx_version(&text).unwrap_or_default();
    staging
        .persist(&final_path)
        .with_context(|| format!("writing {}", final_path.display()))?;
    Ok(PtxArtifact {
        arch: arch.to_string(),
        path: file_name,
        sha256: sha256_hex(text.as_bytes()),
        ptx_version,
        ptxas,
        ptxas_diagnostics,
    })
}

fn toolchain_record(tc: &Toolchain) -> Result<oxide_abi::manifest::Toolchain> {
    let libdevice_sha256 = tc.libdevice.as_deref().map(sha256_file).transpose()?;
    let mut record = oxide_abi::manifest::Toolchain {
        rustc: tc.rustc.version.clone(),
        llvm: tc.rustc.llvm_version.clone(),
        llvm_tools: tc.llvm.version.clone(),
        ptxas: tc.ptxas.as_ref().map(|p| p.version.clone()),
        libdevice_sha256,
        cargo_oxide: env!("CARGO_PKG_VERSION").to_string(),
        hash: String::new(),
    };
    record.hash = sha256_hex(serde_json::to_string(&record)?.as_bytes());
    Ok(record)
}

/// Every source file named in the dep-info files, hashed; plus the crate's Cargo.toml.
fn hash_sources(dep_infos: &mut BTreeSet<PathBuf>, project: &Project) -> Result<Vec<SourceFile>> {
    let mut files = BTreeSet::new();
    files.insert(project.manifest_path.clone());
    for dep in dep_infos.iter() {
        let Ok(text) = std::fs::read_to_string(dep) else {
            continue;
        };
        files.extend(parse_dep_info(&text));
    }
    files
        .into_iter()
        .filter(|f| f.is_file())
        .map(|f| {
            Ok(SourceFile {
                sha256: sha256_file(&f)?,
                path: f.display().to_string(),
            })
        })
        .collect()
}

/// The prerequisites of a Makefile-style dep-info file (`out: a.rs b\ c.rs`).
fn parse_dep_info(text: &str) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let Some((_, deps)) = line.split_once(": ") else {
            continue;
        };
        let mut current = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    current.push(' ');
                    chars.next();
                }
                ' ' => {
                    if !current.is_empty() {
                        out.insert(PathBuf::from(std::mem::take(&mut current)));
                    }
                }
                c => current.push(c),
            }
        }
        if !current.is_empty() {
            out.insert(PathBuf::from(current));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dep_info_prerequisites_are_read() {
        let text = "/t/libk.rlib: /src/lib.rs /src/a\\ b.rs\n\n/src/lib.rs:\n";
        let deps = parse_dep_info(text);
        assert_eq!(
            deps.into_iter().collect::<Vec<_>>(),
            [PathBuf::from("/src/a b.rs"), PathBuf::from("/src/lib.rs")]
        );
    }

    #[test]
    fn toml_strings_are_escaped() {
        assert_eq!(
            toml_string("--sysroot=/a \"b\"\\c"),
            "\"--sysroot=/a \\\"b\\\"\\\\c\""
        );
    }
}
