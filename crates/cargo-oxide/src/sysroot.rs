//! The `core` sysroot for the GPU target, built once per toolchain and reused.
//!
//! rustc ships no prebuilt `core` for `nvptx64-nvidia-cuda`, so it is built from the
//! rust-src that matches the device rustc (with `-Zbuild-std=core` on a throwaway
//! crate) and its rlibs are laid out as a sysroot under the cache folder, keyed by the
//! rustc's identity. Kernel crates are then built with `--sysroot` pointing there: a
//! warm build never rebuilds core, and neither does a build of another crate.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use oxide_abi::inputs;
use oxide_abi::names::DEVICE_TARGET;

use crate::env;
use crate::fsutil::sha256_hex;
use crate::toolchain::Toolchain;

const COMPLETE_MARKER: &str = "oxide-sysroot-complete";

/// The crates a `#![no_std]` device crate links against.
const SYSROOT_CRATES: [&str; 2] = ["core", "compiler_builtins"];

/// Folder of the sysroot for this toolchain (it may not exist yet), in the checked cache
/// folder.
pub fn sysroot_dir(tc: &Toolchain) -> Result<PathBuf> {
    let identity = format!(
        "{}\n{}\n{}\n{}",
        tc.rustc.version,
        tc.rustc.commit.as_deref().unwrap_or(""),
        tc.rustc.host,
        tc.rustc
            .library_src
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    let key = &sha256_hex(identity.as_bytes())[..16];
    let parent = env::cache_dir()?.join("sysroot");
    env::private_dir(&parent)?;
    Ok(parent.join(format!("{}-{key}", tc.rustc.release)))
}

fn target_lib_dir(sysroot: &Path) -> PathBuf {
    sysroot.join("lib/rustlib").join(DEVICE_TARGET).join("lib")
}

/// The sysroot's `core` rlib, which a crate without `#![no_std]` also gets as `std`
/// (see the device build), so cuda-oxide kernels' `std::ops::Add`-style paths resolve
/// on nvptx as they do there: to `core`, the only part of `std` a GPU has.
pub fn core_rlib(sysroot: &Path) -> Option<PathBuf> {
    std::fs::read_dir(target_lib_dir(sysroot))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libcore-") && n.ends_with(".rlib"))
        })
}

/// Whether the sysroot was finished and its rlibs still have the sizes recorded in the
/// marker: a truncated rlib (a full disk, a killed copy, a damaged cache) makes it
/// incomplete, so it is built again rather than failing every build with rustc's
/// "found invalid metadata files".
pub fn is_complete(sysroot: &Path) -> bool {
    let Ok(marker) = std::fs::read_to_string(sysroot.join(COMPLETE_MARKER)) else {
        return false;
    };
    let lib_dir = target_lib_dir(sysroot);
    // Line 1: the rustc version; then "<size> <sha256> <file name>" per rlib.
    marker.lines().skip(1).all(|line| {
        let Some((size, _, name)) = marker_line(line) else {
            return false;
        };
        std::fs::metadata(lib_dir.join(name)).is_ok_and(|m| m.len() == size)
    })
}

fn marker_line(line: &str) -> Option<(u64, &str, &str)> {
    let mut parts = line.splitn(3, ' ');
    let size = parts.next()?.parse().ok()?;
    Some((size, parts.next()?, parts.next()?))
}

/// Whether every rlib still has the sha256 its marker records (read in full: called
/// only when a build failed, to tell a damaged cache from a broken crate).
pub fn is_intact(sysroot: &Path) -> bool {
    let Ok(marker) = std::fs::read_to_string(sysroot.join(COMPLETE_MARKER)) else {
        return false;
    };
    let lib_dir = target_lib_dir(sysroot);
    marker.lines().skip(1).all(|line| {
        marker_line(line).is_some_and(|(_, sha, name)| {
            crate::fsutil::sha256_file(&lib_dir.join(name)).is_ok_and(|h| h == sha)
        })
    })
}

/// Return the sysroot, building it first if needed. Safe when two processes race:
/// each builds in its own temp folder and the first rename wins.
pub fn ensure(tc: &Toolchain, log: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let dir = sysroot_dir(tc)?;
    if dir.exists() {
        // Its rlibs are linked into every kernel: only a folder of this user's, which no
        // one else may write to, is trusted.
        env::private_dir(&dir)?;
    }
    if is_complete(&dir) {
        return Ok(real_path(dir));
    }
    if dir.join(COMPLETE_MARKER).exists() {
        log(&format!(
            "the cached core in {} is damaged (an rlib changed size); building it again",
            dir.display()
        ));
    }
    let Some(library) = &tc.rustc.library_src else {
        bail!("rust-src is missing for {}", tc.rustc.version);
    };
    log(&format!(
        "building core for {DEVICE_TARGET} from {} (once per toolchain)",
        library.display()
    ));
    let parent = dir.parent().expect("sysroot dir has a parent");
    let work = crate::fsutil::umask_respecting(&mut tempfile::Builder::new(), 0o755)
        .prefix(".build-")
        .tempdir_in(parent)
        .context("creating a temp folder for the sysroot build")?;
    let rlibs = build_core(tc, work.path())?;

    let staged = work.path().join("sysroot");
    let lib_dir = target_lib_dir(&staged);
    env::private_dir(&lib_dir)?;
    for rlib in &rlibs {
        let name = rlib.file_name().expect("rlib has a file name");
        std::fs::copy(rlib, lib_dir.join(name))
            .with_context(|| format!("copying {}", rlib.display()))?;
    }
    let mut marker = format!("{}\n", tc.rustc.version);
    for rlib in &rlibs {
        let name = rlib.file_name().expect("rlib has a file name");
        let path = lib_dir.join(name);
        let len = std::fs::metadata(&path)?.len();
        let sha = crate::fsutil::sha256_file(&path)?;
        marker += &format!("{len} {sha} {}\n", name.to_string_lossy());
    }
    std::fs::write(staged.join(COMPLETE_MARKER), marker)?;
    match std::fs::rename(&staged, &dir) {
        Ok(()) => {}
        // Another process finished first; its sysroot is as good as ours.
        Err(_) if is_complete(&dir) => {}
        Err(_) => {
            // A stale incomplete folder from a killed build: replace it.
            std::fs::remove_dir_all(&dir).ok();
            std::fs::rename(&staged, &dir)
                .with_context(|| format!("moving the sysroot into {}", dir.display()))?;
        }
    }
    Ok(real_path(dir))
}

/// The sysroot's path with links resolved: it goes into rustc's flags, which cargo
/// fingerprints, so cache folders that reach one sysroot through a link (the test suite
/// gives each test its own folder linked to one) build with the same flags and reuse each
/// other's compiled crates instead of compiling them again.
fn real_path(dir: PathBuf) -> PathBuf {
    dir.canonicalize().unwrap_or(dir)
}

/// Remove a damaged sysroot (the next `ensure` builds it again).
pub fn discard(sysroot: &Path) -> Result<()> {
    match std::fs::remove_dir_all(sysroot) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", sysroot.display()))
        }
        _ => Ok(()),
    }
}

/// Build core with -Zbuild-std on an empty crate; return the rlibs to keep.
fn build_core(tc: &Toolchain, work: &Path) -> Result<Vec<PathBuf>> {
    let krate = work.join("core-builder");
    std::fs::create_dir_all(krate.join("src"))?;
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"oxide-core-builder\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
         [workspace]\n\n[profile.release]\npanic = \"abort\"\n",
    )?;
    std::fs::write(krate.join("src/lib.rs"), "#![no_std]\n")?;
    if let Some(vendor) = &tc.rustc.library_vendor {
        // Distro rust-src vendors the library's crates.io dependencies; use them so the
        // build needs no network and gets exactly the versions the library was tested with.
        std::fs::create_dir_all(krate.join(".cargo"))?;
        std::fs::write(
            krate.join(".cargo/config.toml"),
            format!(
                "[source.crates-io]\nreplace-with = \"oxide-vendored-std\"\n\n\
                 [source.oxide-vendored-std]\ndirectory = \"{}\"\n",
                vendor.display()
            ),
        )?;
    }
    let target_dir = work.join("target");
    let out = Command::new(&tc.cargo)
        .current_dir(&krate)
        .args([
            "build",
            "--release",
            "--target",
            DEVICE_TARGET,
            "-Zbuild-std=core",
        ])
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTC", &tc.rustc.path)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove(inputs::RUSTFLAGS.name)
        .env_remove(inputs::CARGO_ENCODED_RUSTFLAGS.name)
        .env_remove(inputs::RUSTC_WRAPPER.name)
        .output()
        .with_context(|| format!("running {}", tc.cargo.display()))?;
    if !out.status.success() {
        bail!(
            "building core for {DEVICE_TARGET} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let deps = target_dir.join(DEVICE_TARGET).join("release/deps");
    let mut rlibs = Vec::new();
    for entry in std::fs::read_dir(&deps).with_context(|| format!("reading {}", deps.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let is_wanted = SYSROOT_CRATES
            .iter()
            .any(|c| name.starts_with(&format!("lib{c}-")) && name.ends_with(".rlib"));
        if is_wanted {
            rlibs.push(path);
        }
    }
    if rlibs.len() != SYSROOT_CRATES.len() {
        bail!(
            "building core produced {} of the expected rlibs in {}",
            rlibs.len(),
            deps.display()
        );
    }
    Ok(rlibs)
}

#[cfg(test)]
mod damage_tests {
    use super::*;

    #[test]
    fn a_truncated_rlib_makes_the_sysroot_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        let lib = target_lib_dir(dir.path());
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libcore-x.rlib"), vec![7u8; 1000]).unwrap();
        let marker = dir.path().join(COMPLETE_MARKER);
        let sha = sha256_hex(&[7u8; 1000]);
        std::fs::write(
            &marker,
            format!("rustc 1.96.0\n1000 {sha} libcore-x.rlib\n"),
        )
        .unwrap();
        assert!(is_complete(dir.path()) && is_intact(dir.path()));
        let mut garbled = vec![7u8; 1000];
        garbled[500] = 8;
        std::fs::write(lib.join("libcore-x.rlib"), &garbled).unwrap();
        assert!(is_complete(dir.path()) && !is_intact(dir.path()));
        std::fs::write(lib.join("libcore-x.rlib"), vec![7u8; 10]).unwrap();
        assert!(!is_complete(dir.path()));
        std::fs::remove_file(lib.join("libcore-x.rlib")).unwrap();
        assert!(!is_complete(dir.path()));
        // A marker from before sizes were recorded still counts as complete.
        std::fs::write(&marker, "rustc 1.96.0").unwrap();
        assert!(is_complete(dir.path()));
    }
}
